"""Blind de-identification test sets 1-3: synthetic clinical notes with character-offset gold.

Written without reading dptext's detect/, deid/ or targeted/ code (nor their tests): from the
category list, the scoring rules of issue 44 and a free hand over styles and name origins.

    .venv/bin/pip install -c constraints.txt faker names-dataset   # generator only
    .venv/bin/python benchmarks/blind/make_sets.py                 # writes set1..set3.jsonl

Each line: {"id", "patient_id", "note", "doctor", "phi": [{start, end, category, text}],
"keep": [{start, end, kind, text}]}. Patients have several notes (patient_id repeats).
The three sets differ in seed, in the mix of ten note styles and in the mix of name origins.
The scorer is benchmarks/bench_deid_blind.py.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _core import Doc, NamePools  # noqa: E402
from _ctx import Patient, World  # noqa: E402
from _templates import STYLES, Note  # noqa: E402

SETS = {
    "set1": {
        "seed": 101,
        "n": 200,
        "styles": {
            "discharge": 4,
            "radiology": 3,
            "referral": 3,
            "progress": 2,
            "kvheader": 1,
            "nursing": 1,
            "telephone": 1,
            "table": 1,
            "billing": 1,
            "triage": 1,
        },
        "origins": {
            "anglo": 2,
            "hispanic": 3,
            "chinese": 2,
            "vietnamese": 2,
            "indian": 2,
            "nigerian": 2,
            "arabic": 2,
            "polish": 1,
            "korean": 1,
            "russian": 1,
            "filipino": 1,
        },
    },
    "set2": {
        "seed": 202,
        "n": 200,
        "styles": {
            "nursing": 4,
            "telephone": 3,
            "triage": 4,
            "progress": 3,
            "discharge": 1,
            "radiology": 1,
            "referral": 1,
            "kvheader": 1,
            "table": 1,
            "billing": 1,
        },
        "origins": {
            "anglo": 1,
            "hispanic": 2,
            "chinese": 3,
            "vietnamese": 3,
            "indian": 1,
            "nigerian": 3,
            "arabic": 1,
            "polish": 2,
            "korean": 2,
            "russian": 2,
            "ghanaian": 1,
            "ethiopian": 1,
        },
    },
    "set3": {
        "seed": 303,
        "n": 200,
        "styles": {
            "table": 4,
            "billing": 4,
            "kvheader": 4,
            "referral": 1,
            "discharge": 1,
            "radiology": 1,
            "nursing": 1,
            "telephone": 1,
            "triage": 1,
            "progress": 1,
        },
        "origins": {
            "anglo": 2,
            "hispanic": 2,
            "chinese": 2,
            "vietnamese": 1,
            "indian": 3,
            "nigerian": 2,
            "arabic": 3,
            "polish": 2,
            "korean": 1,
            "russian": 1,
            "iranian": 1,
            "bangladeshi": 1,
            "turkish": 1,
        },
    },
}


def doctor_column(r: random.Random, p) -> str:
    return r.choice(
        [
            f"{p.first} {p.last}",
            f"{p.last}, {p.first} {p.cred or 'MD'}",
            f"Dr. {p.first} {p.last}",
            f"{p.last.upper()}, {p.first.upper()}",
        ]
    )


def make_set(name: str, cfg: dict, pools: NamePools) -> list[dict]:
    r = random.Random(cfg["seed"])
    world = World(cfg["seed"] + 7, cfg["origins"], pools)
    styles, sw = zip(*sorted(cfg["styles"].items()), strict=False)
    records = []
    k = 0
    while len(records) < cfg["n"]:
        k += 1
        pt = Patient(world, f"{name}-p{k:03d}", r)
        for _ in range(min(r.choice([1, 2, 3, 3, 4, 5]), cfg["n"] - len(records))):
            note = Note(r, world, pt)
            style = r.choices(styles, sw)[0]
            doc = Doc()
            STYLES[style](note, doc)
            text = doc.text()
            att = next(
                (c for c in (note.att, pt.pcp, note.nurse, note.other) if c.last in text), note.att
            )
            rec = {
                "id": f"{name}-{len(records):04d}",
                "patient_id": pt.pid,
                "style": style,
                "origin": pt.p.origin,
                "note": text,
                "doctor": doctor_column(r, att),
                "phi": doc.phi,
                "keep": doc.keep,
            }
            for s in rec["phi"] + rec["keep"]:
                assert text[s["start"] : s["end"]] == s["text"], (rec["id"], s)
            records.append(rec)
    return records


def summary(records: list[dict]) -> dict:
    return {
        "records": len(records),
        "patients": len({r["patient_id"] for r in records}),
        "styles": dict(collections.Counter(r["style"] for r in records)),
        "origins": dict(collections.Counter(r["origin"] for r in records)),
        "phi": dict(collections.Counter(s["category"] for r in records for s in r["phi"])),
        "keep": dict(collections.Counter(s["kind"] for r in records for s in r["keep"])),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--sets", default="set1,set2,set3")
    a = ap.parse_args(argv)
    pools = NamePools(seed=11)
    for name in a.sets.split(","):
        recs = make_set(name, SETS[name], pools)
        path = Path(a.out) / f"{name}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for rec in recs:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        print(name, json.dumps(summary(recs)))


if __name__ == "__main__":
    main()
