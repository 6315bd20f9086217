"""Can an attacker tell a real name that slipped through from the surrogates around it?
(issue 45, "hiding in plain sight").

A release of ``--names`` person names: each is a surrogate ("First Last", drawn by
:func:`dptext.targeted.surrogates.surrogate_name`, or by the old short-list baseline: a first
name and a surname uniform over Faker's en_US lists, 690 + 1,000 names, as before issue 45),
except a share ``--real`` of them, put back at random, which are real names that the detector
missed. A classifier (gradient boosting, 5-fold cross-validated) is given per name what an
attacker knows: frequency (the log-probability of each word under the surrogate law and under
the US Census/SSA frequencies that Faker's en_US lists carry), list membership (on the
surrogate lists, on Faker's en_US lists), origin (on which of 12 Faker locales' name lists each
word stands), shape (word lengths) and context (the sentence template around the name: the same
templates for real names and surrogates here, as in a release, where a missed name and a
surrogate stand in the same kind of sentence). It prints the ROC AUC of telling real from
surrogate: 0.5 is chance.

The real names come from sources other than the surrogate lists (names-dataset, Facebook
ranks): ``census``: first names and surnames drawn by the US Census/SSA frequencies of Faker's
en_US provider (the head of the US population: its 1,000 commonest surnames); ``fng``: the
3,000 identities of FakeNameGenerator that presidio-evaluator ships (30 name sets from 40
countries: Russian, Danish, Czech, Japanese, ...); ``mixed``: each word from ``census`` with
the probability the surrogate law gives the census head, else from ``fng`` (a US population
with a tail of other origins, the tail from a source other than the surrogates'). A surrogate
law matched to one population hides the real names of that population, not of another: the
``fng`` row says how far.

    python benchmarks/bench_surrogate_attack.py [--names 4000] [--real 0.1] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import sys
import time
from pathlib import Path

import numpy as np

LOCALES = ("en_US", "en_GB", "es_MX", "es_ES", "de_DE", "fr_FR", "it_IT", "pl_PL", "pt_BR",
           "en_IN", "nl_NL", "cs_CZ")
TEMPLATES = ("Pt {} seen today.", "Spoke with {} about results.", "Daughter {} called.",
             "{} was admitted.", "Dear {},", "Seen by {} in clinic.")


def _locale_names(locale: str) -> tuple[set[str], set[str]]:
    import importlib

    prov = importlib.import_module(f"faker.providers.person.{locale}").Provider
    first = set()
    for attr in ("first_names", "first_names_female", "first_names_male"):
        first |= set(getattr(prov, attr, ()) or ())
    return first, set(getattr(prov, "last_names", ()) or ())


def _census():
    from faker.providers.person.en_US import Provider as P

    first = {**P.first_names_female, **P.first_names_male}
    fn, fw = list(first), np.array(list(first.values()), float)
    ln, lw = list(P.last_names), np.array(list(P.last_names.values()), float)
    return (fn, fw / fw.sum()), (ln, lw / lw.sum())


def real_names(source: str, n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    if source == "mixed":  # each word from the census head at the head's share, else FNG
        from dptext.targeted.surrogates import name_law

        (fn, _), (ln, _) = _census()
        share = [float(name_law(r)[1][np.isin(name_law(r)[0], names)].sum())
                 for r, names in (("first", fn), ("last", ln))]
        head, tail = real_names("census", n, rng), real_names("fng", n, rng)
        return [(h[0] if rng.random() < share[0] else t[0],
                 h[1] if rng.random() < share[1] else t[1])
                for h, t in zip(head, tail, strict=True)]
    if source == "census":
        (fn, fp), (ln, lp) = _census()
        return [(fn[rng.choice(len(fn), p=fp)], ln[rng.choice(len(ln), p=lp)])
                for _ in range(n)]
    spec = importlib.util.find_spec("presidio_evaluator")
    path = Path(spec.submodule_search_locations[0]) / "data_generator/raw_data/" \
        "FakeNameGenerator.com_3000.csv"
    with open(path, encoding="utf-8-sig") as f:
        rows = [(r["GivenName"], r["Surname"]) for r in csv.DictReader(f)
                if r["GivenName"].isalpha() and r["Surname"].isalpha()]
    return [rows[i] for i in rng.integers(len(rows), size=n)]


def baseline_name(rng: np.random.Generator) -> tuple[str, str]:
    from faker.providers.person.en_US import Provider as P

    first = sorted({n for n in (*P.first_names_female, *P.first_names_male) if n.isalpha()})
    last = sorted(n for n in P.last_names if n.isalpha())
    return first[rng.integers(len(first))], last[rng.integers(len(last))]


def new_name(rng: np.random.Generator) -> tuple[str, str]:
    from dptext.targeted.surrogates import surrogate_name

    a, b = surrogate_name("John Smith", rng).split()
    return a, b


def features(names, templates, lists) -> np.ndarray:
    from dptext.targeted.surrogates import name_law

    law = {r: dict(zip(*name_law(r), strict=True)) for r in ("first", "last")}
    (fn, fp), (ln, lp) = _census()
    census = {"first": dict(zip(fn, fp, strict=True)), "last": dict(zip(ln, lp, strict=True))}
    base_first, base_last = lists["en_US"]
    rows = []
    for (first, last), t in zip(names, templates, strict=True):
        row = []
        for role, w in (("first", first), ("last", last)):
            p = law[role].get(w, 0.0)
            c = census[role].get(w, 0.0)
            row += [math.log(p) if p else -30.0, float(p > 0), math.log(c) if c else -30.0,
                    float(c > 0), len(w)]
            row += [float(w in (lists[loc][0] if role == "first" else lists[loc][1]))
                    for loc in LOCALES]
        row += [float(first in base_first), float(last in base_last), float(t)]
        rows.append(row)
    return np.array(rows)


def attack(draw, source: str, n: int, share: float, seed: int, lists) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    rng = np.random.default_rng(seed)
    is_real = rng.random(n) < share
    reals = iter(real_names(source, int(is_real.sum()), rng))
    names = [next(reals) if r else draw(rng) for r in is_real]
    templates = rng.integers(len(TEMPLATES), size=n)
    x = features(names, templates, lists)
    clf = HistGradientBoostingClassifier(max_iter=200, random_state=seed)
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    score = cross_val_predict(clf, x, is_real, cv=folds, method="predict_proba")[:, 1]
    return float(roc_auc_score(is_real, score))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=4000)
    ap.add_argument("--real", type=float, default=0.1, help="share of real names put back")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    lists = {loc: _locale_names(loc) for loc in LOCALES}
    t = time.perf_counter()
    print(f"{args.names} names, {args.real:.0%} real put back at random, seed {args.seed}; "
          "ROC AUC of a gradient-boosting attacker (5-fold), 0.5 = chance")
    print(f"{'real names from':<18}{'new surrogates':>16}{'short-list baseline':>22}")
    for source in ("census", "mixed", "fng"):
        new = attack(new_name, source, args.names, args.real, args.seed, lists)
        old = attack(baseline_name, source, args.names, args.real, args.seed, lists)
        print(f"{source:<18}{new:>16.3f}{old:>22.3f}")
    print(f"({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
