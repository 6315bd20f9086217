"""Privacy-facing measurements on the default space (issue 11, item 3): the rate of unchanged
words per epsilon for every word mechanism (the N_w / M of `dptext evaluate`'s deniability cells,
Feyisetan et al. 2020), and SanText+'s frequent names.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_privacy.py unchanged \
        --mechanisms custext santext laplace gumbel [--words 200 --runs 100] \
        [--space glove-6b-50d] [--grid santext=1,2,4 ...]
    .venv/bin/python benchmarks/bench_privacy.py santext-names

``unchanged``: a fixed sample of ``--words`` words (seed 0) drawn uniformly from the 10,000 most
frequent words of the space (public wordfreq order; ``--space``: the default space or a named
one such as ``glove-6b-50d``, whose distances - and so whose metric-DP epsilons - are on another
scale: ``--grid`` gives a mechanism other epsilons), each privatized ``--runs`` times
through the vectorized sampler (`dptext.evaluation.deniability.plausible_deniability`); per
epsilon the mean fraction of runs that return the word itself (N_w / M) and the mean number of
distinct outputs S_w. Fitted tables go to the shared cache (~/.cache/dptext/fitted).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GRIDS = {
    "custext": [0.5, 1, 2, 3, 4, 6, 8, 12, 16],
    "santext": [2, 4, 8, 10, 12, 14, 16, 20, 24, 32],
    "laplace": [10, 25, 50, 75, 100, 150, 200, 300, 500],
    "gumbel": [200, 300, 500, 1000, 2000, 5000],
}
# common given names and places (the probe list)
NAMES = ["john", "mary", "anna", "james", "david", "michael", "sarah", "paul", "peter", "linda",
         "obama", "trump", "london", "paris", "berlin", "chicago", "boston", "texas", "google",
         "microsoft", "amazon", "china", "india", "smith"]


def _sample_words(space, n: int, seed: int) -> list[str]:
    from dptext.mechanisms.frequency import frequency_order

    order = frequency_order(space)  # most frequent first
    top = order[: min(10_000, len(order))]
    rng = np.random.default_rng(seed)
    return [space.words[i] for i in rng.choice(top, n, replace=False)]


def unchanged(mechanisms: list[str], n_words: int, runs: int, seed: int,
              space_name: str | None = None, grids: dict | None = None) -> None:
    import dptext
    from dptext.evaluation.deniability import plausible_deniability
    from dptext.resources import named_space

    grids = {**GRIDS, **(grids or {})}
    space = named_space(space_name)
    words = _sample_words(space, n_words, seed)
    print(f"{n_words} words x {runs} runs, space {space.name} ({len(space)} words)")
    print("| mechanism | epsilon | unchanged (N_w/M) | S_w | fit s |")
    print("|---|---|---|---|---|")
    for name in mechanisms:
        if name == "santext":
            from dptext.mechanisms.santext import SanText

            start = time.perf_counter()
            fitted = SanText.fit_many(grids[name], space=space)
            fit_s = (time.perf_counter() - start) / len(fitted)
        else:
            fitted = None
        for j, eps in enumerate(grids[name]):
            start = time.perf_counter()
            m = fitted[j] if fitted else dptext.mechanism(name, epsilon=eps, space=space).fit()
            seconds = fit_s if fitted else time.perf_counter() - start
            d = plausible_deniability(m, words, runs=runs, rng=np.random.default_rng(seed + 1))
            s = d.summary()
            print(f"| {name} | {eps:g} | {s['N_w_fraction']:.3f} | {s['S_w_mean']:.1f} | "
                  f"{seconds:.0f} |", flush=True)


def santext_names(p: float = 0.3) -> None:
    """Which common names SanText+ (w = 0.9) treats as non-sensitive on the default space, and
    its reported vs really verbatim count on a text of them."""
    import dptext
    from dptext.accounting.report import PrivacyReport
    from dptext.mechanisms.frequency import frequency_order
    from dptext.resources import default_space

    space = default_space()
    order = frequency_order(space)
    n_public = len(space) - int(round(0.9 * len(space)))
    public = {space.words[i] for i in order[:n_public]}
    inside = [w for w in NAMES if space.lookup(w) >= 0]
    hits = [w for w in inside if w in public]
    print(f"SanText+ (w=0.9): {n_public} non-sensitive words; {len(hits)} of {len(inside)} "
          f"probe names/places among them: {', '.join(hits)}")
    m = dptext.mechanism("santext+", epsilon=2.0, p=p).fit()
    text = " ".join(w.capitalize() for w in hits)
    results = m.privatize_batch([text] * 200, rng=0)
    report = PrivacyReport.combine([r.report for r in results])
    really = sum(o.lower() == w for r in results
                 for o, w in zip(r.text.split(), hits, strict=True))
    print(f"200 texts of {len(hits)} names: reported verbatim {report.kept.get('non_sensitive')}, "
          f"really verbatim {really}, redrawn "
          f"{report.resampled_unprotected.get('non_sensitive_resampled')}; warnings: "
          f"{report.warning_lines()}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("unchanged", "santext-names"))
    ap.add_argument("--mechanisms", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    ap.add_argument("--words", type=int, default=200)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--space", help="a named space (default: the default space)")
    ap.add_argument("--grid", action="append", default=[], metavar="NAME=EPS,EPS",
                    help="epsilons of one mechanism instead of its default grid (repeatable)")
    args = ap.parse_args()
    grids = {}
    for item in args.grid:
        name, _, values = item.partition("=")
        if name not in GRIDS or not values:
            ap.error(f"--grid takes NAME=EPS,EPS with NAME one of {', '.join(GRIDS)}")
        grids[name] = [float(v) for v in values.split(",")]
    import torch

    torch.set_num_threads(1)
    if args.what == "unchanged":
        unchanged(args.mechanisms, args.words, args.runs, args.seed, args.space, grids)
    else:
        santext_names()


if __name__ == "__main__":
    main()
