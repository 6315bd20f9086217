"""The de-identification leak check anyone can run, and the i2b2-format gold figures
(docs/deid.md, "Leak check and i2b2 figures").

1. ``leaks``: 200 notes of ``dptext.deid.notes.generate_notes(200, seed=7)`` (fields ``id``,
   ``patient_id``, ``text``) released by the command line exactly as a user would::

       dptext sanitize -m custext -e 2 --entities PHI --detector spacy -i notes.jsonl \\
           -o out.jsonl --field text --keep id --hash patient_id --pseudonym-key k.key
       dptext check --original notes.jsonl --released out.jsonl --id-field id

   and once more with ``--check`` (records withheld, then the check again); prints the check's
   output (survivors per category) and the exit codes. ``--records adversarial``: 300 records
   of ``dptext.deid.adversarial.generate_adversarial(300, seed=7)`` instead.
2. ``i2b2``: the 5 i2b2-2014-format notes philter-lite ships (46 gold PHI), released with the
   same settings in Python (``build_deid("custext", epsilon=2, detector="spacy")``: PHI,
   rules, residual net protect, name and place surrogates): token recall per gold category,
   the share of gold identifiers released verbatim (the leak check's rules on each gold span:
   whole surface, name parts, digits) and of gold tokens released as they were, readability
   (:mod:`dptext.deid.gold`: the share of non-identifier tokens released as they were, by token
   alignment), and the leak check on the release. ``--why`` lists the non-identifier tokens
   the release changed, by the category of the span that took them (what readability loses).

    python benchmarks/bench_deid_leaks.py [--only leaks|i2b2] [--seed 0] [--why]
        [--records notes|adversarial]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_deid import _pkg, machine  # noqa: E402


def leaks(args) -> None:
    from dptext.deid.adversarial import generate_adversarial
    from dptext.deid.notes import generate_notes

    records = generate_notes(200, seed=7) if args.records == "notes" else \
        generate_adversarial(300, seed=7)
    n = len(records)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        notes = tmp / "notes.jsonl"
        with open(notes, "w", encoding="utf-8") as f:
            for i, r in enumerate(records):
                f.write(json.dumps({"id": i, "patient_id": f"p{i % 50}", "text": r.text}) + "\n")
        cli = [sys.executable, "-m", "dptext.cli"]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        for extra in ([], ["--check"]):
            out = tmp / f"out{len(extra)}.jsonl"
            run = subprocess.run(
                [*cli, "sanitize", "-m", "custext", "-e", "2", "--entities", "PHI",
                 "--detector", "spacy", "-i", str(notes), "-o", str(out), "--field", "text",
                 "--keep", "id", "--hash", "patient_id", "--pseudonym-key", str(tmp / "k.key"),
                 "--no-progress", "--seed", str(args.seed), *extra],
                capture_output=True, text=True, env=env, check=False)
            released = sum(1 for _ in open(out, encoding="utf-8")) if out.exists() else 0
            report = run.stdout + run.stderr
            spans = [line.strip() for line in report.splitlines()
                     if line.startswith("    ") and " spans, " in line]
            print(f"## sanitize --entities PHI --detector spacy {' '.join(extra)}: exit "
                  f"{run.returncode}, {released} of {n} records released")
            for line in spans:
                print(f"   {line.split(':')[0]}")
            chk = subprocess.run([*cli, "check", "--original", str(notes), "--released",
                                  str(out), "--id-field", "id"],
                                 capture_output=True, text=True, env=env, check=False)
            print(f"## dptext check: exit {chk.returncode}")
            print(chk.stdout.rstrip() or chk.stderr.rstrip())


def i2b2(args) -> None:
    from dptext.deid.check import check_records
    from dptext.deid.gold import Scores, kept_tokens, read_gold, tokens
    from dptext.detect.leaks import survivors
    from dptext.targeted import build_deid

    root = _pkg("philter_lite")
    if root is None:
        print("## i2b2: philter-lite is not installed (requirements-nodeps.txt)")
        return
    records = read_gold(root / "data" / "i2b2_xml")
    m = build_deid("custext", epsilon=2, detector="spacy").fit()
    texts = [r.text for r in records]
    results = m.privatize_batch(texts, rng=args.seed)
    released = [r.text for r in results]
    detected = m.detect(texts)
    spans = [list(d) + m.residual_tokens(t, d) for t, d in zip(texts, detected, strict=True)]
    s = Scores()
    verbatim: collections.Counter = collections.Counter()
    total: collections.Counter = collections.Counter()
    for rec, found, rel in zip(records, spans, released, strict=True):
        s.add(rec, found, rel)
        left = {(x.start, x.end) for x in survivors(rec.text, rel, rec.spans, numbers=False)}
        for g in rec.spans:
            total[g.category] += 1
            verbatim[g.category] += (g.start, g.end) in left
    check = check_records(((i, [o], [r]) for i, (o, r) in
                           enumerate(zip(texts, released, strict=True))),
                          m._detector, m._residual)
    print(f"## i2b2 (philter-lite, {len(records)} notes, {sum(total.values())} gold PHI): "
          "build_deid('custext', epsilon=2, detector='spacy')")
    print(f"recall (tokens) {s.recall():.3f}: " + ", ".join(
        f"{c} {s.recall(c):.3f} ({s.gold[c]} tokens)" for c in sorted(s.gold)))
    print(f"precision {s.precision():.3f}; readability {s.readability:.3f} "
          f"(non-identifier tokens released as they were)")
    print("gold identifiers released verbatim: " + ", ".join(
        f"{c} {verbatim[c]}/{total[c]}" for c in sorted(total))
        + f"; all {sum(verbatim.values())}/{sum(total.values())}")
    print("gold tokens released as they were: " + ", ".join(
        f"{c} {s.verbatim_share(c):.3f}" for c in sorted(s.gold)))
    print(f"leak check on the release: {check.leaks} surviving identifiers "
          f"{dict(sorted(check.by_category.items()))}")
    if args.why:
        lost: collections.Counter = collections.Counter()
        for rec, found, rel in zip(records, spans, released, strict=True):
            kept = kept_tokens(rec.text, rel)
            for (a, b), k in zip(tokens(rec.text), kept, strict=True):
                if k or any(g.start < b and a < g.end for g in rec.spans):
                    continue
                cat = next((f.category for f in found if f.start < b and a < f.end), "-")
                lost[(cat, rec.text[a:b])] += 1
        by_cat: collections.Counter = collections.Counter()
        for (cat, _), n in lost.items():
            by_cat[cat] += n
        print(f"non-identifier tokens changed, by the category that took them: {dict(by_cat)}")
        for (cat, tok), n in lost.most_common(60):
            print(f"   {cat:<15} {tok!r} x{n}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", choices=("leaks", "i2b2"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--why", action="store_true")
    p.add_argument("--records", choices=("notes", "adversarial"), default="notes",
                   help="leaks: 200 generated notes, or 300 adversarial records (seed 7)")
    args = p.parse_args()
    print(f"# bench_deid_leaks; {machine()}")
    if args.only in (None, "i2b2"):
        i2b2(args)
    if args.only in (None, "leaks"):
        leaks(args)


if __name__ == "__main__":
    main()
