"""Augmented training data (truncated_gumbel_metric_dp.txt, section 4 "Learning with
Adversarial Examples"): each example plus ``copies`` perturbed copies (four in the paper), every
word perturbed by the mechanism, labels kept."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dptext.mechanisms.base import Mechanism
from dptext.rng import RngLike, as_generator
from dptext.validation import check_int


def augment(dataset: Any, mechanism: Mechanism, copies: int = 4, *, rng: RngLike = None) -> Any:
    """The originals followed by ``copies`` rounds of perturbed copies (one vectorized
    ``privatize_batch`` over all of them), as the same type as ``dataset`` (a dataclass with
    ``texts`` and ``labels``; ``authors``, when present, is repeated too)."""
    copies = check_int(copies, "copies", minimum=0)
    gen = as_generator(rng)
    texts, labels = list(dataset.texts), list(dataset.labels)
    noisy = [r.text for r in mechanism.privatize_batch(texts * copies, rng=gen)]
    changes: dict[str, Any] = {
        "texts": _like(dataset.texts, texts + noisy),
        "labels": _like(dataset.labels, labels * (copies + 1)),
    }
    authors = getattr(dataset, "authors", None)
    if authors is not None:
        changes["authors"] = _like(authors, list(authors) * (copies + 1))
    return dataclasses.replace(dataset, **changes)


def _like(original: Any, values: list) -> Any:
    """``values`` in the container type of ``original`` (numpy array, tuple or list)."""
    if isinstance(original, np.ndarray):
        return np.asarray(values, dtype=original.dtype)
    return tuple(values) if isinstance(original, tuple) else values
