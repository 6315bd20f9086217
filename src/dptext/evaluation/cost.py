"""Cost: tokens per second of a mechanism's batch privatization (wall clock, this process)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from dptext.mechanisms.base import Mechanism, Result


def timed_privatize(m: Mechanism, texts: Sequence[str], rng: np.random.Generator
                    ) -> tuple[list[Result], dict[str, float]]:
    """Privatize ``texts`` in one batch; returns the results and tokens, seconds, tokens/s
    (tokens as counted by the privacy reports: every token of the text)."""
    start = time.perf_counter()
    results = m.privatize_batch(list(texts), rng=rng)
    seconds = time.perf_counter() - start
    tokens = sum(r.report.tokens_total for r in results)
    return results, {"tokens": tokens, "seconds": seconds,
                     "tokens_per_s": tokens / seconds if seconds > 0 else float("inf")}
