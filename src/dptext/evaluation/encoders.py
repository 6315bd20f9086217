"""Sentence encoders for the utility and attribute metrics, with a per-run cache.

The default is the packaged all-MiniLM-L6-v2 (frozen, CPU, unit-norm mean-pooled embeddings).
Texts are embedded once per run: the same clean test set, the originals for cosine similarity
and any sanitized text seen twice hit the cache. ``hashing`` is a cheap deterministic bag of
words (signed feature hashing) for tests and quick smoke runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from dptext.errors import DPTextError
from dptext.evaluation import ENCODERS


class CachedEncoder:
    """``encode(texts) -> (n, d)`` float32 unit rows; each distinct text is embedded once."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], name: str) -> None:
        self._embed = embed
        self.name = name
        self._cache: dict[str, np.ndarray] = {}
        self.calls = 0  # texts actually embedded (cache misses)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = np.asarray(self._embed(missing), dtype=np.float32)
            self.calls += len(missing)
            for text, vec in zip(missing, vectors, strict=True):
                self._cache[text] = vec
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def _minilm(batch_size: int = 64) -> Callable[[list[str]], np.ndarray]:
    model = None

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal model
        if model is None:
            from sentence_transformers import SentenceTransformer

            from dptext.lm.quiet import quiet_loading
            from dptext.resources import minilm_dir

            with quiet_loading():
                model = SentenceTransformer(str(minilm_dir()), device="cpu")
        # sorted by length so batches carry little padding
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = model.encode([texts[i] for i in order], batch_size=batch_size,
                           normalize_embeddings=True, show_progress_bar=False,
                           convert_to_numpy=True)
        result = np.empty_like(out)
        result[order] = out
        return result

    return embed


def _hashing(dim: int = 512) -> Callable[[list[str]], np.ndarray]:
    from dptext.text import normalize_word, split_words

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in split_words(text)[1::2]:
                h = int.from_bytes(hashlib.blake2b(normalize_word(word).encode(),
                                                   digest_size=8).digest(), "little")
                out[i, h % dim] += 1.0 if (h >> 32) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    return embed


def make_encoder(name: str = "minilm") -> CachedEncoder:
    if name == "minilm":
        return CachedEncoder(_minilm(), "minilm")
    if name == "hashing":
        return CachedEncoder(_hashing(), "hashing")
    raise DPTextError(f"unknown encoder {name!r}; choose one of {', '.join(ENCODERS)}")
