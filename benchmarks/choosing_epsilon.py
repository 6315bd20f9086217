"""The tables of docs/choosing-epsilon.md: what a note costs under each mechanism, and what a
person's notes add up to - computed from the code, not copied by hand.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/choosing_epsilon.py [--notes 200]

Table 1: per-record cost (basic composition - what the ledger charges - and, for the
exponential-mechanism ones, the bounded-range (epsilon, 1e-6) of the same record) of notes of 30,
100 and 300 words under each mechanism at its default epsilon and at the ends of its typical
range. The notes are the first 30 / 100 / 300 words of the packaged news articles that are long
enough (a stand-in for clinical notes: real text with real stopwords and out-of-vocabulary
words); a note's charged tokens come from ``Mechanism.token_counts`` on the default space (no
fitting: a dry run, as ``--estimate`` does), the median over the notes is shown.

Table 2: one person's yearly total for N notes of 100 words at a document epsilon E per note:
basic (N * E, what the ledger enforces by default) and bounded-range composition at delta 1e-6
(CusText / DP-MLM tokens; E / 100 per token).

Nothing here depends on randomness; the figures change only with the default space, the
stopword list, the packaged articles or the code.
"""

from __future__ import annotations

import argparse
import statistics

import dptext
from dptext.accounting.composition import br_epsilon, per_token_epsilon
from dptext.accounting.events import PrivacyEvent
from dptext.datasets import load_dataset
from dptext.mechanisms.registry import REQUIRED, parameters, registered
from dptext.text import split_words

LENGTHS = (30, 100, 300)
DELTA = 1e-6
LM_WITHOUT_MODEL = ("dpmlm",)  # counts its word slots without loading the model


def notes(n_notes: int) -> dict[int, list[str]]:
    """The first 30/100/300 words of the first ``n_notes`` articles with at least 300 words."""
    out: dict[int, list[str]] = {n: [] for n in LENGTHS}
    for text in load_dataset("news_articles", split="all").texts:
        parts = split_words(text)
        if len(parts) // 2 < max(LENGTHS):
            continue
        for n in LENGTHS:
            out[n].append("".join(parts[: 2 * n]))
        if len(out[LENGTHS[0]]) >= n_notes:
            break
    return out


def _eps(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def per_record_table(texts: dict[int, list[str]]) -> list[str]:
    rows = ["| mechanism | per-token epsilon | charged per token | "
            + " | ".join(f"{n} words: basic (BR at 1e-6)" for n in LENGTHS) + " |",
            "|---|---|---|" + "---|" * len(LENGTHS)]
    for name, cls in registered().items():
        if name == "dpprompt":
            continue  # counted in the tokenizer's tokens: needs the model (docs say so)
        typical = cls.typical_epsilon
        default = parameters(cls)["epsilon"]
        grid = sorted({e for e in (typical.low, default if default != REQUIRED else None,
                                   typical.high) if e is not None})
        if typical.high is None:  # gumbel: just above the bound, and the default
            grid = [g for g in grid if g > typical.low] or [default]
        for eps in grid:
            m = dptext.mechanism(name, epsilon=eps)
            g = m.guarantee
            charge = g.worst_case_epsilon
            cells = []
            for n in LENGTHS:
                counts = m.token_counts(texts[n])
                tokens = statistics.median(counts)
                basic = tokens * charge
                cell = _eps(basic)
                if g.bounded_range:
                    ev = [PrivacyEvent("pure", eps, count=int(tokens), bounded_range=True)]
                    cell += f" ({_eps(br_epsilon(ev, DELTA, pld=False))})"
                cells.append(f"{cell} [{tokens:g} tokens]")
            mark = " (default)" if eps == default else ""
            rows.append(f"| `{name}` | {eps:g}{mark} | {charge:.4g} | " + " | ".join(cells)
                        + " |")
    return rows


def yearly_table() -> list[str]:
    words = 100
    rows = ["| document epsilon per note | per-token epsilon (100 words) | "
            "notes per year | basic total | bounded-range total at 1e-6 |",
            "|---|---|---|---|---|"]
    for e in (5, 20, 50):
        per_token = per_token_epsilon(e, words)
        for n in (1, 12, 52, 365):
            ev = [PrivacyEvent("pure", per_token, count=n * words, bounded_range=True)]
            rows.append(f"| {e:g} | {per_token:.3g} | {n} | {_eps(n * e)} | "
                        f"{_eps(br_epsilon(ev, DELTA, pld=False))} |")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=200, help="articles per note length")
    args = p.parse_args()
    texts = notes(args.notes)
    print(f"notes: {len(texts[30])} per length (packaged news_articles)\n")
    print("\n".join(per_record_table(texts)))
    print()
    print("\n".join(yearly_table()))


if __name__ == "__main__":
    main()
