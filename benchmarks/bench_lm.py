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
        [--precision fp32|int8] [--draws sequential|independent]
    python benchmarks/bench_lm.py --long 500 [--busy]     # one long document (issue 19)
    python benchmarks/bench_lm.py --hostile               # head-of-line blocking check
    python benchmarks/bench_lm.py --utility 300 [--epsilons 25,50] [--seeds 2]
    python benchmarks/bench_lm.py --quantization 300      # int8, bf16 vs fp32 scores, bounds

``--long N``: the first N words of the headlines as ONE text, the causal backend's variants
(sequential, independent draws; each fp32 and int8) with the thread policy of dptext.lm.threads,
on the machine as it is and, with ``--busy``, beside a busy loop this script starts on one
core and kills afterwards. ``--hostile``: 32 headlines, one text "Alice" + 300 emoji + " Bob
met Carol.", and both in one call (the ratio to the two run apart should be <= 1.5).
Every mode prints ``uptime`` load before and after.
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

    def rewrite_batch(texts, choose, batch_size=64, generator=None):
        chosen = []
        for t, (ids, slots) in enumerate(texts):
            cols: list[int] = []
            rewrite(ids, slots, lambda row, cols=cols, t=t: cols.append(
                int(choose([t], row[None], generator)[0])) or cols[-1])
            chosen.append(cols)
        return chosen

    mech.draws = "sequential"  # the baseline is the one-pass-per-word implementation
    backend.rewrite_batch = rewrite_batch


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


def _load() -> str:
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def long_document(n_words: int, busy: bool, modes: list[str]) -> None:
    import subprocess
    import sys


    text = long_text(n_words)
    mechs = {k: _fitted(k, epsilon=50) for k in modes}
    for m in mechs.values():
        m.privatize("A warm-up text.")
    for competing in ([False, True] if busy else [False]):
        spin = (subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if competing
                else None)
        try:
            print(f"one text of {n_words} words, {'with' if competing else 'without'} a "
                  f"competing process; load: {_load()}", flush=True)
            for name, m in mechs.items():
                r, n = rate(m, [text])
                print(f"  {name:16s} {r:7.0f} privatized words/min ({n} words)", flush=True)
        finally:
            if spin is not None:
                spin.kill()
                spin.wait()


def long_text(n_words: int) -> str:
    return " ".join(" ".join(t.rstrip(".") + "." for t in sample_texts(n_words)).split()[:n_words])


MODES = {"sequential": {}, "sequential int8": {"precision": "int8"},
         "sequential bf16": {"precision": "bf16"},
         "independent": {"draws": "independent"},
         "independent int8": {"draws": "independent", "precision": "int8"},
         "independent bf16": {"draws": "independent", "precision": "bf16"},
         "sequential 4seg": {}}  # the segments before issue 19 part 3 (4, a 64-token tail)


def _fitted(name: str, **kw):
    from dptext import mechanism

    m = mechanism("dpmlm", keep_stopwords=False, **kw, **MODES[name]).fit()
    if name.endswith("4seg"):
        m._backend.max_segments, m._backend.SEGMENT_TAIL = 4, 64
    return m


def utility(n_words: int, epsilons: list[float], seeds: int, modes: list[str]) -> None:
    """Utility of the causal modes on one long text: the share of privatized words released
    unchanged and the mean cosine similarity (default embedding space) between each privatized
    word and its replacement, over ``seeds`` runs."""
    import numpy as np

    from dptext.resources import default_space
    from dptext.text import split_words

    text = long_text(n_words)
    words = split_words(text)[1::2]
    space = default_space()
    print(f"utility on one text of {n_words} words, {seeds} seeded runs per cell; load: "
          f"{_load()}")
    print("| mode | epsilon | unchanged | cosine (orig, new) | words/min |")
    print("|---|---|---|---|---|")
    for name in modes:
        m = _fitted(name, epsilon=1)
        for eps in epsilons:
            m.epsilon = eps
            same, cos, start, n = [], [], time.perf_counter(), 0
            for seed in range(seeds):
                new = split_words(m.privatize(text, rng=seed).text)[1::2]
                for a, b in zip(words, new, strict=True):
                    same.append(a.lower() == b.lower())
                    ia, ib = space.lookup(a.lower()), space.lookup(b.lower())
                    if ia is not None and ib is not None and ia >= 0 and ib >= 0:
                        va, vb = space.vectors[ia], space.vectors[ib]
                        cos.append(float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb))))
                n += len(new)
            rate_ = n / (time.perf_counter() - start) * 60
            print(f"| {name} | {eps:g} | {np.mean(same):.3f} | {np.mean(cos):.3f} | "
                  f"{rate_:.0f} |", flush=True)


def quantization(n_words: int) -> None:
    """int8 and bf16 against fp32 on the same slots (independent scoring of the long text):
    score change, top-1 agreement, total variation of the clipped exponential mechanism at
    epsilon 50, and the bounds the calibration rule gives for each (the shipped ones are
    fp32's)."""
    import numpy as np
    import torch

    from dptext import mechanism
    from dptext.lm.bounds import percentile_rule
    from dptext.lm.sampling import clipped_log_probs

    text = long_text(n_words)
    scores = {}
    for precision in ("fp32", "int8", "bf16"):
        m = mechanism("dpmlm", epsilon=50, keep_stopwords=False, draws="independent",
                      precision=precision).fit()
        aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
        job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
        scores[precision] = m._backend.score_independent(job)[0].float()
    lo, hi = m.bounds
    a = scores["fp32"]
    pa = clipped_log_probs(a, epsilon=50, lo=lo, hi=hi).exp()
    for name in ("int8", "bf16"):
        b = scores[name]
        pb = clipped_log_probs(b, epsilon=50, lo=lo, hi=hi).exp()
        tv = 0.5 * (pa - pb).abs().sum(1)
        print(f"{name} vs fp32 on {len(a)} slots x {a.shape[1]} candidates of a {n_words}-word "
              f"text: max |diff| {float((a - b).abs().max()):.3f}, mean |diff| "
              f"{float((a - b).abs().mean()):.4f} (score std {float(a.std()):.2f}); top-1 "
              f"agreement {float((a.argmax(1) == b.argmax(1)).float().mean()):.3f}; total "
              f"variation of the eps-50 draw: mean {float(tv.mean()):.4f}, max "
              f"{float(tv.max()):.4f}")
    for name, x in scores.items():
        print(f"  calibration rule on these slots, {name}: lo {percentile_rule(x.numpy())[0]:.4f} "
              f"hi {percentile_rule(x.numpy())[1]:.4f}   (shipped, fp32 calibration: lo "
              f"{lo:.4f} hi {hi:.4f})")
    del torch


def hostile() -> None:
    from dptext import mechanism

    normal = sample_texts(400)[:32]
    bad = "Alice" + "\U0001F600" * 300 + " Bob met Carol."
    m = mechanism("dpmlm", epsilon=50).fit()
    m.privatize("A warm-up text.")
    times = []
    for texts in (normal, [bad], normal + [bad]):
        start = time.perf_counter()
        m.privatize_batch(texts, rng=0)
        times.append(time.perf_counter() - start)
    print(f"32 headlines {times[0]:.1f}s, hostile text {times[1]:.1f}s, together "
          f"{times[2]:.1f}s: ratio to apart {times[2] / (times[0] + times[1]):.2f} "
          f"(load: {_load()})")


def main() -> None:
    import torch

    from dptext import mechanism

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=2000)
    p.add_argument("--baseline-words", type=int, default=400)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--backends", default="causal,mlm", help="causal, mlm and/or dpprompt")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--draws", default="sequential")
    p.add_argument("--long", type=int, default=0, help="one text of this many words")
    p.add_argument("--busy", action="store_true", help="--long: also beside a busy loop")
    names = [m.replace(" ", "-") for m in MODES]
    p.add_argument("--modes", default=",".join(names),
                   help="--long/--utility: which of " + ", ".join(names))
    p.add_argument("--hostile", action="store_true")
    p.add_argument("--utility", type=int, default=0, help="utility of the modes, N words")
    p.add_argument("--epsilons", default="25,50")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--quantization", type=int, default=0,
                   help="int8 and bf16 vs fp32 on N words")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"device: cpu, torch threads (ceiling of the thread policy) {torch.get_num_threads()}"
          f"; load: {_load()}")
    modes = [m.replace("-", " ") for m in args.modes.split(",")]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        p.error(f"unknown --modes {unknown}")
    if args.long:
        return long_document(args.long, args.busy, modes)
    if args.hostile:
        return hostile()
    if args.utility:
        return utility(args.utility, [float(e) for e in args.epsilons.split(",")], args.seeds,
                       modes)
    if args.quantization:
        return quantization(args.quantization)
    texts = sample_texts(args.words)
    subset = sample_texts(args.baseline_words)
    print(f"{sum(len(t.split()) for t in texts)} words in {len(texts)} headlines (baseline: "
          f"first {len(subset)} headlines); torch threads {torch.get_num_threads()}")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "causal":
                fast, slow = (mechanism("dpmlm", epsilon=50, keep_stopwords=False,
                                        batch_size=args.batch_size, precision=args.precision,
                                        draws=args.draws).fit() for _ in range(2))
                naive_causal(slow)
            elif backend == "dpprompt":  # baseline: the same decoder, one text at a time
                fast, slow = (mechanism("dpprompt", epsilon=50, batch_size=b,
                                        precision=args.precision).fit()
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
