"""Tokens and their features for the learned detector: a regular-expression tokenizer that cuts
at every change between letters, digits and other characters (so every label boundary of the
training data falls between tokens), and hashed token features (word, prefixes, suffixes,
shape, character trigrams). Pure Python and numpy; no torch here."""

from __future__ import annotations

import re
import zlib

import numpy as np

# a run of letters, a run of digits, or one other visible character
TOKEN = re.compile(r"[^\W\d_]+|\d+|\S")
BUCKETS = 1 << 15  # rows of the hashed embedding (row 0 is padding)
FEATURES = 16  # hashed features per token (padded with row 0)
POSITION = 4  # dense features per position: space before, newline before, wide gap, title
_SHAPE_RUN = re.compile(r"(.)\1{3,}")


def tokenize(text: str) -> tuple[list[str], np.ndarray]:
    """Tokens of ``text`` and their character spans (an int array of shape (n, 2))."""
    words, spans = [], []
    for m in TOKEN.finditer(text):
        words.append(m.group())
        spans.append(m.span())
    return words, np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def shape(word: str) -> str:
    out = []
    for ch in word:
        if ch.isdigit():
            out.append("d")
        elif ch.isalpha():
            out.append("X" if ch.isupper() else "x")
        else:
            out.append(ch)
    return _SHAPE_RUN.sub(r"\1\1\1\1", "".join(out))


def _bucket(key: str) -> int:
    return 1 + zlib.crc32(key.encode("utf-8", "surrogatepass")) % (BUCKETS - 1)


def token_features(word: str) -> list[int]:
    """The hashed features of one token (at most :data:`FEATURES` bucket ids)."""
    low = word.casefold()
    keys = ["w:" + low, "sh:" + shape(word), "p1:" + word[:1], "p3:" + low[:3],
            "s2:" + low[-2:], "s3:" + low[-3:], "s4:" + low[-4:], f"n:{min(len(word), 12)}"]
    if not word[:1].isdigit() and len(low) > 1:
        padded = f"<{low}>"
        grams = sorted({padded[i:i + 3] for i in range(len(padded) - 2)})
        keys.extend("g:" + g for g in grams[:FEATURES - len(keys)])
    return [_bucket(k) for k in keys]


class Featurizer:
    """Maps texts to padded arrays of hashed features, caching each distinct token."""

    def __init__(self, cache_size: int = 200_000) -> None:
        self._cache: dict[str, list[int]] = {}
        self._cache_size = cache_size

    def _features(self, word: str) -> list[int]:
        got = self._cache.get(word)
        if got is None:
            got = token_features(word)
            if len(self._cache) < self._cache_size:
                self._cache[word] = got
        return got

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids (n, FEATURES) int64, dense (n, POSITION) float32, spans (n, 2))."""
        words, spans = tokenize(text)
        n = len(words)
        ids = np.zeros((n, FEATURES), dtype=np.int64)
        dense = np.zeros((n, POSITION), dtype=np.float32)
        prev_end = 0
        for i, word in enumerate(words):
            f = self._features(word)
            ids[i, :len(f)] = f
            start = spans[i, 0]
            gap = text[prev_end:start]
            dense[i, 0] = start > prev_end or i == 0
            dense[i, 1] = "\n" in gap or i == 0
            dense[i, 2] = "\t" in gap or "  " in gap
            dense[i, 3] = word[:1].isupper()
            prev_end = spans[i, 1]
        return ids, dense, spans
