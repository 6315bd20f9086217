"""Whole-word fill-mask accuracy of the packaged masked LM vs SmolLM2 next-word prediction.

Texts: (a) held out: the test splits (seed 0) of the corpora minilm-mlm was trained on
(``dptext.lm.mlm_build.RECIPE["corpora"]``), taken round-robin; (b) never seen: Guardian
headlines (scattertext), every 7th row. Each text is cut to its first ``--max-words`` words.
Positions: up to ``--per-text`` words per text (seeded choice), never the first word (the
causal LM needs a prefix), and only words that are ONE whole-word token of both models (the
MiniLM WordPiece candidate set and SmolLM2's ``Ġword`` tokens, compared lower-cased), so the
two models are asked the same question about the same words.

* masked LM (minilm-mlm): the text with the word replaced by one ``[MASK]`` (single sequence,
  no concatenated copy), its candidate scores at the mask;
* causal LM (SmolLM2-135M-Instruct): the text's own prefix up to the word, its next-token
  scores (one teacher-forced pass per text gives every position).

Top-k: the word (lower case) is among the k best candidate tokens (lower-cased surfaces) of the
model's DP-MLM candidate set. ``content`` rows: the words DP-MLM privatizes (not stopwords).

    OMP_NUM_THREADS=1 python benchmarks/bench_mlm.py [--texts 200] [--per-text 3]
        [--mlm DIR] [--no-causal]

``--mlm``: another masked LM (an ``AutoModelForMaskedLM`` directory, e.g. a head from
``dptext resources build mlm --assemble DIR``) in place of the packaged minilm-mlm;
``--no-causal``: skip SmolLM2 (its figures do not depend on the masked LM). The shared
whole-word vocabulary needs both tokenizers, so SmolLM2's tokenizer is loaded either way.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import io
import json
import time

import numpy as np


def held_out_texts(n: int) -> list[str]:
    from dptext.lm.mlm_build import RECIPE, corpus_texts, interleave

    per = corpus_texts("test", RECIPE)
    out = interleave({k: [[t] for t in v[: n]] for k, v in per.items()}, seed=1)
    return [t[0] for t in out[:n]]


def guardian_texts(n: int) -> list[str]:
    from dptext.resources import package_dir

    path = package_dir("scattertext") / "data" / "guardian_headlines.csv.bz2"
    rows = csv.reader(io.TextIOWrapper(bz2.open(path), encoding="utf-8"))
    next(rows)
    return [row[1] for i, row in enumerate(rows) if i % 7 == 0][:n]


def positions(texts, max_words, per_text, shared, seed=0):
    """(text cut to max_words, [(char start, char end, word)]) per text."""
    from dptext.text import split_words

    rng = np.random.default_rng(seed)
    out = []
    for t in texts:
        parts = split_words(t)[: 2 * max_words + 1]
        text = "".join(parts)
        starts = np.cumsum([0] + [len(p) for p in parts])
        cand = [i for i in range(1, len(parts) // 2) if parts[2 * i + 1].lower() in shared]
        pick = sorted(rng.choice(cand, size=min(per_text, len(cand)), replace=False)) if cand \
            else []
        out.append((text, [(int(starts[2 * i + 1]), int(starts[2 * i + 2]),
                            parts[2 * i + 1].lower()) for i in pick]))
    return out


def rank_hits(scores, target_rows, cand_lower, ks=(1, 10)):
    import torch

    top = torch.topk(scores, max(ks), dim=1).indices.numpy()
    hits = {k: [] for k in ks}
    for row, word in zip(top, target_rows, strict=True):
        words = [cand_lower[j] for j in row]
        for k in ks:
            hits[k].append(word in words[:k])
    return hits


def masked_scores(model, tok, cands, items, batch=64):
    import torch

    from dptext.lm.masked import MaskedBackend

    backend = MaskedBackend(model, tok, cands.ids, context="none", max_length=None,
                            batch_size=batch)
    inputs, words = [], []
    for text, pos in items:
        for s, e, w in pos:
            inputs.append(tok(text[:s] + tok.mask_token + text[e:])["input_ids"])
            words.append(w)
    return backend.scores(inputs) if inputs else torch.zeros(0, len(cands)), words


def causal_scores(model, tok, cands, items):
    import torch

    ids_c = torch.as_tensor(cands.ids)
    rows, words = [], []
    for text, pos in items:
        if not pos:
            continue
        enc = tok(text, return_offsets_mapping=True)
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([enc["input_ids"]])).logits[0]
        for s, _, w in pos:
            # the token that starts at the word (its leading space included) is predicted
            # from the position before it
            at = next(i for i, (a, b) in enumerate(offsets) if b > s)
            rows.append(logits[at - 1, ids_c])
            words.append(w)
    return torch.stack(rows), words


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--per-text", type=int, default=3)
    ap.add_argument("--max-words", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mlm", help="masked LM directory (default: the packaged minilm-mlm)")
    ap.add_argument("--no-causal", action="store_true", help="skip SmolLM2's scores")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from dptext.lm.candidates import candidate_set
    from dptext.lm.loading import load_model, resolve_model
    from dptext.text import resolve_stopwords

    mlm, mtok = load_model(args.mlm or resolve_model(None, causal=False), causal=False)
    if args.no_causal:
        from transformers import AutoTokenizer

        from dptext.lm.loading import default_causal_dir

        clm, ctok = None, AutoTokenizer.from_pretrained(str(default_causal_dir()))
    else:
        clm, ctok = load_model(resolve_model(None, causal=True), causal=True)
    mc, cc = candidate_set(mtok), candidate_set(ctok)
    m_lower = [w.lower() for w in mc.words]
    c_lower = [w.lower() for w in cc.words]
    shared = set(m_lower) & set(c_lower)
    stop = resolve_stopwords(None)
    report = {"shared_whole_word_vocabulary": len(shared)}
    for name, texts in (("held_out", held_out_texts(args.texts)),
                        ("guardian_never_seen", guardian_texts(args.texts))):
        items = positions(texts, args.max_words, args.per_text, shared)
        res = {}
        for kind, fn, model, tok, cands, lower in (
                ("masked_minilm_mlm", masked_scores, mlm, mtok, mc, m_lower),
                ("causal_smollm2", causal_scores, clm, ctok, cc, c_lower)):
            if model is None:
                continue
            start = time.perf_counter()
            scores, words = fn(model, tok, cands, items)
            hits = rank_hits(scores, words, lower)
            content = np.array([w not in stop for w in words])
            res[kind] = {
                "top1": float(np.mean(hits[1])), "top10": float(np.mean(hits[10])),
                "top1_content": float(np.mean(np.array(hits[1])[content])),
                "top10_content": float(np.mean(np.array(hits[10])[content])),
                "seconds": round(time.perf_counter() - start, 1)}
            n = len(words)
        res["positions"] = n
        res["content_positions"] = int(content.sum())
        res["texts"] = len(texts)
        report[name] = res
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
