"""Score the learned detector alone on blind test sets (benchmarks/blind/setN.jsonl: a note,
its gold identifier spans ``phi`` and its clinical look-alikes ``keep``), by the detector's
own spans, whatever their category:

- token recall: the word tokens (letters or digits) of the gold spans inside a detected span,
  overall and per gold category;
- records with a survivor: records with a gold token outside every detected span;
- look-alikes kept, per kind: ``keep`` spans that no detected span touches;
- precision by tokens: detected word tokens that lie inside a gold span.

    .venv/bin/python benchmarks/train_detector_blind.py benchmarks/blind/set1.jsonl ...
    ... --rules   # also the de-identification's detection (PHI, --detector both, the rule
                  # recognizers; no residual net) alone and in union with the learned spans

This reads only the sets' JSONL files (never their generator)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from dptext.detect.learned.detector import WEIGHTS, LearnedDetector  # noqa: E402

WORD = re.compile(r"[^\W_]+")


def covered(start: int, end: int, spans) -> bool:
    return any(s.start <= start and end <= s.end for s in spans)


def score(records, found) -> dict:
    hit, tot = Counter(), Counter()
    keep_kept, keep_tot = Counter(), Counter()
    leaky = 0
    det_tokens = det_in_gold = 0
    for rec, spans in zip(records, found, strict=True):
        text = rec["note"]
        leak = False
        for g in rec["phi"]:
            for m in WORD.finditer(text, g["start"], g["end"]):
                tot[g["category"]] += 1
                ok = covered(m.start(), m.end(), spans)
                hit[g["category"]] += ok
                leak |= not ok
        leaky += leak
        for k in rec.get("keep", []):
            keep_tot[k["kind"]] += 1
            keep_kept[k["kind"]] += not any(s.start < k["end"] and k["start"] < s.end
                                            for s in spans)
        gold = [(g["start"], g["end"]) for g in rec["phi"]]
        for s in spans:
            for m in WORD.finditer(text, s.start, s.end):
                det_tokens += 1
                det_in_gold += any(a <= m.start() and m.end() <= b for a, b in gold)
    return {"records": len(records),
            "token_recall": round(sum(hit.values()) / max(sum(tot.values()), 1), 4),
            "per_category": {c: round(hit[c] / tot[c], 3) for c in sorted(tot)},
            "records_with_survivor": leaky,
            "token_precision": round(det_in_gold / max(det_tokens, 1), 4),
            "lookalikes_kept": {k: f"{keep_kept[k]}/{keep_tot[k]}" for k in sorted(keep_tot)}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--weights", type=Path, default=WEIGHTS)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--rules", action="store_true", help="ablation: rules, learned, both")
    args = ap.parse_args(argv)
    det = LearnedDetector(args.weights, threshold=args.threshold)
    rules = None
    if args.rules:
        from dptext.detect.categories import resolve_categories
        from dptext.detect.entities import EntityDetector
        from dptext.detect.recognizers import builtin_recognizers

        rules = EntityDetector(resolve_categories(["PHI"]), "both",
                               recognizers=builtin_recognizers())
    for path in args.sets:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        texts = [r["note"] for r in records]
        t0 = time.process_time()
        found = det.find_many(texts)
        rate = len(texts) / (time.process_time() - t0)
        print(json.dumps({"set": path.name, "detector": "learned",
                          "notes_per_cpu_s": round(rate, 1), **score(records, found)}))
        if rules is not None:
            t0 = time.process_time()
            ruled = rules.detect(texts)
            rate = len(texts) / (time.process_time() - t0)
            print(json.dumps({"set": path.name, "detector": "rules+ner",
                              "notes_per_cpu_s": round(rate, 1), **score(records, ruled)}))
            both = [a + b for a, b in zip(ruled, found, strict=True)]
            print(json.dumps({"set": path.name, "detector": "both", **score(records, both)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
