"""Privatized words per minute of DP-MLM's backends vs a one-forward-pass-per-word baseline.

Causal backend: the packaged SmolLM2-135M with its shipped bounds (texts decoded side by side,
key/value cache of the shared prefix reused, candidate-only output projection). Masked backend:
no English MLM with its head ships offline (RESOURCES.md), so a randomly initialised
roberta-base-sized model (12 layers, 768 wide) over SmolLM2's 49k-token vocabulary stands in -
speed does not depend on the weights.
The baseline of each backend is the straightforward implementation with the same model and the
same sampler: one plain ``model(input_ids).logits`` call per word, one text at a time (causal:
the whole prefix, original + separator + output so far, every word, no key/value cache;
masked: the masked pair, full logits). Because it is slow, it runs on the first
``--baseline-words`` words of the sample (the headlines are independent short texts, so the
rate per word does not depend on which of them are measured).
Text: public Guardian headlines (scattertext) up to ``--words`` words; every word privatized
(stopwords too). ``--backends dpprompt`` adds DP-Prompt: generated tokens per minute, texts side
by side against the same decoder one text at a time.

    python benchmarks/bench_lm.py [--words 2000] [--baseline-words 400] [--threads N]
"""

from __future__ import annotations

import argparse
import bz2
import csv
import io
import tempfile
import time


def sample_texts(n_words: int) -> list[str]:
    from dptext.resources import package_dir
    from dptext.text import split_words

    path = package_dir("scattertext") / "data" / "guardian_headlines.csv.bz2"
    rows = csv.reader(io.TextIOWrapper(bz2.open(path), encoding="utf-8"))
    next(rows)
    texts, total = [], 0
    for row in rows:
        texts.append(row[1])
        total += len(split_words(row[1])[1::2])
        if total >= n_words:
            break
    return texts


def stand_in_mlm(directory: str) -> str:
    """A random roberta-base-sized MLM with SmolLM2's tokenizer plus a mask token."""
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM

    from dptext.lm.loading import default_causal_dir, load_model

    _, tok = load_model(str(default_causal_dir()), causal=True)
    tok.add_special_tokens({"mask_token": "<mask>", "pad_token": "<|endoftext|>",
                            "sep_token": "<|im_end|>"})
    torch.manual_seed(0)
    model = RobertaForMaskedLM(RobertaConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id))
    tok.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def naive_causal(mech) -> None:
    """Swap in the straightforward implementation: no cache, the full prefix every word."""
    import torch

    backend = mech._backend

    def rewrite(ids, slots, choose):
        out: list[int] = []
        for glue, centre in slots:
            out.extend(backend.encode(glue[:-1] if glue.endswith(" ") else glue))
            with torch.inference_mode():
                logits = backend.model(input_ids=torch.as_tensor([backend._prefix(
                    ids, centre, out)])).logits
            out.append(int(backend.candidate_ids[choose(logits[0, -1, backend.candidate_ids])]))

    backend.rewrite = rewrite
    backend.fits = lambda ids, slots: False  # never the side-by-side batch path


def naive_masked(mech) -> None:
    """Swap in the straightforward implementation: one masked input per call, full logits."""
    import torch

    backend = mech._backend
    mask_id = backend.tokenizer.mask_token_id

    def scores(inputs):
        rows = []
        for ids in inputs:
            with torch.inference_mode():
                logits = backend.model(input_ids=torch.as_tensor([ids])).logits[0]
            rows.append(logits[ids.index(mask_id), backend.candidate_ids])
        return torch.stack(rows)

    backend.scores = scores


def rate(mech, texts) -> tuple[float, int]:
    """Privatized words (DP-Prompt: generated tokens) per minute, and their number."""
    start = time.perf_counter()
    results = mech.privatize_batch(texts)
    seconds = time.perf_counter() - start
    words = sum(r.report.privatized_by_reason.get("mechanism", 0)
                + r.report.privatized_by_reason.get("generated", 0) for r in results)
    return words / seconds * 60.0, words


def main() -> None:
    import torch

    from dptext import mechanism

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=2000)
    p.add_argument("--baseline-words", type=int, default=400)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--backends", default="causal,mlm", help="causal, mlm and/or dpprompt")
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    texts = sample_texts(args.words)
    subset = sample_texts(args.baseline_words)
    print(f"{sum(len(t.split()) for t in texts)} words in {len(texts)} headlines (baseline: "
          f"first {len(subset)} headlines); torch threads {torch.get_num_threads()}")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "causal":
                fast, slow = (mechanism("dpmlm", epsilon=50, keep_stopwords=False,
                                        batch_size=args.batch_size).fit() for _ in range(2))
                naive_causal(slow)
            elif backend == "dpprompt":  # baseline: the same decoder, one text at a time
                fast, slow = (mechanism("dpprompt", epsilon=50, batch_size=b).fit()
                              for b in (args.batch_size, 1))
            else:
                path = stand_in_mlm(tmp)
                fast, slow = (mechanism("dpmlm", epsilon=50, backend="mlm", model=path,
                                        keep_stopwords=False, clip_low=-3.0, clip_high=3.0,
                                        batch_size=args.batch_size).fit() for _ in range(2))
                naive_masked(slow)
            rate(fast, texts[:4])  # warm-up: first-call allocations
            fast_rate, n = rate(fast, texts)
            slow_rate, m = rate(slow, subset)
            unit = "tokens" if backend == "dpprompt" else "words"
            print(f"{backend:6s} {n} {unit}: {fast_rate:8.0f} {unit}/min   one at a time "
                  f"({m} {unit}) {slow_rate:8.0f} {unit}/min   speed-up "
                  f"{fast_rate / slow_rate:5.1f}x", flush=True)


if __name__ == "__main__":
    main()
