"""The learned detector's categories (the project's names, :mod:`dptext.detect.categories`),
its BIO tags and the decoding of tag sequences into character spans."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Every category is a name of dptext.detect.categories (PHI_CATEGORIES); ID_NUMBER covers
# record, account, plan, licence, device, vehicle and social security numbers alike.
CATEGORIES = ("PERSON", "DATE", "AGE", "PHONE_NUMBER", "EMAIL_ADDRESS", "URL", "ID_NUMBER",
              "STREET_ADDRESS", "GPE", "ZIP_CODE", "ORG", "IP_ADDRESS")
TAGS = ("O",) + tuple(f"{p}-{c}" for c in CATEGORIES for p in ("B", "I"))
TAG_INDEX = {t: i for i, t in enumerate(TAGS)}


class LearnedSpan(NamedTuple):
    """A span found by the learned detector: characters ``start:end``, a category of
    :data:`CATEGORIES`, and the mean probability of its tokens' tags."""

    start: int
    end: int
    category: str
    score: float


def bio_targets(spans: np.ndarray, labels: list[tuple[int, int, str]]) -> np.ndarray:
    """Tag index per token (token character ``spans`` (n, 2)) for gold ``labels`` (start, end,
    category): a token inside a label gets its tag, the first one B-, the rest I-."""
    out = np.zeros(len(spans), dtype=np.int64)
    if not len(spans):
        return out
    starts = spans[:, 0]
    for start, end, cat in labels:
        lo = int(np.searchsorted(starts, start, side="left"))
        if lo > 0 and spans[lo - 1, 1] > start:
            lo -= 1  # the label begins inside a token: the token is part of it
        first = True
        i = lo
        while i < len(spans) and spans[i, 0] < end:
            out[i] = TAG_INDEX[("B-" if first else "I-") + cat]
            first = False
            i += 1
    return out


def decode(tags: np.ndarray, probs: np.ndarray, spans: np.ndarray) -> list[LearnedSpan]:
    """Character spans of a tag sequence: a B- tag, or an I- tag whose category differs from
    the open span's, opens a span; I- of the same category extends it; O closes it."""
    out: list[LearnedSpan] = []
    cur_cat, cur_start, cur_end, cur_p = None, 0, 0, []
    for i, t in enumerate(tags.tolist()):
        if t == 0:
            cat, begin = None, False
        else:
            cat, begin = CATEGORIES[(t - 1) // 2], (t - 1) % 2 == 0
        if cur_cat is not None and (cat != cur_cat or begin):
            out.append(LearnedSpan(cur_start, cur_end, cur_cat, float(np.mean(cur_p))))
            cur_cat = None
        if cat is None:
            continue
        if cur_cat is None:
            cur_cat, cur_start, cur_p = cat, int(spans[i, 0]), []
        cur_end = int(spans[i, 1])
        cur_p.append(float(probs[i]))
    if cur_cat is not None:
        out.append(LearnedSpan(cur_start, cur_end, cur_cat, float(np.mean(cur_p))))
    return out
