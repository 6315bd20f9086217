"""Measure LM scores on PUBLIC text and derive clip bounds (rule: :mod:`dptext.lm.bounds`).

The scores are taken exactly where DP-MLM takes them: the candidate scores at every word it
would privatize (stopwords kept), with the same context. For the causal backend the prefix is
the greedy rewrite (the mechanism's high-epsilon limit), so the measured scores are those of
the conditions the mechanism runs in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.errors import DPTextError


def measure_scores(texts: Sequence[str], *, backend: str, model: str | None,
                   context: str = "concat", max_slots: int = 2000) -> np.ndarray:
    """(slots x candidates) scores of DP-MLM's candidates on ``texts`` (at most ``max_slots``)."""
    import torch

    from dptext.mechanisms.dpmlm import DPMLM

    # bounds do not affect scoring: any placeholder lets the model load without shipped ones
    mech = DPMLM(epsilon=1.0, backend=backend, model=model, context=context,
                 clip_low=0.0, clip_high=1.0).fit()
    gen = np.random.default_rng(0)  # no coins are thrown: p_add = p_del = 0
    rows: list = []
    for text in texts:
        if len(rows) >= max_slots:
            break
        aligned, _, slots, _ = mech._plan(text, gen)
        if not slots:
            continue
        if mech.causal:
            def greedy(row):
                rows.append(row.clone())
                return int(torch.argmax(row))

            mech._backend.rewrite(aligned.ids, [(s.glue, s.start) for s in slots], greedy)
        else:
            scores = mech._backend.scores(
                [mech._backend.input_ids(aligned.ids, s.start, s.end) for s in slots])
            rows.extend(scores)
    if not rows:
        raise DPTextError("the public text has no word to score")
    return torch.stack(rows[:max_slots]).numpy()
