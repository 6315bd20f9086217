"""Masked DP-MLM: dptext's masked backend against dpmlm 1.3.0's approach, one side per process.

Model: no English MLM with its head ships offline (RESOURCES.md), so both sides load the same
randomly initialised roberta-base-shaped model (12 layers, 768 wide, SmolLM2's 49k-token
vocabulary plus a mask token; :func:`bench_lm.stand_in_mlm`) - speed does not depend on the
weights. ``--build DIR`` writes it once; ``--side`` then loads it from DIR.

Text: the first ``--words`` words (default 100) of the public Guardian headlines as ONE text
(``--texts N``: the first N headlines as N texts instead). Both sides privatize the same words:
dptext's slots (every word but spaCy's stopwords, as dpmlm's default ``STOP=False`` keeps its
NLTK stopwords), with the concatenated context at epsilon 50.

* ``--side dptext``: ``mechanism("dpmlm", backend="mlm", model=DIR).privatize_batch(texts)``,
  every slot of every text in length-sorted batches, the last layer and the vocabulary
  projection at the masks only, the thread policy of :mod:`dptext.lm.threads`.
* ``--side dpmlm``: dpmlm 1.3.0's ``DPMLM.privatize_batch`` (PyPI ``dpmlm==1.3.0``, MIT,
  ``dpmlm/core.py``; reproduced here line for line without its NLTK/Presidio imports, which are
  not installed: :class:`DPMLM130`): per text, batches of 16 masked positions; per position
  the text detokenized with the mask, encoded, windowed, decoded and re-encoded as the
  (original, masked) pair;
  ``tokenizer.pad``; the full ``[batch, length, vocabulary]`` logits; numpy clip, softmax and
  ``np.random.choice`` per position. Torch threads: torch's default (as dpmlm leaves them).

Each side prints its privatized words, seconds and CPU seconds. The comparison is two
whole-process timings of the two commands, interleaved (A B A B ...), median of >= 3 runs,
their ratio pair by pair, with ``uptime`` and the CPU model/flags beside it (docs/performance
notes; e.g. ``/usr/bin/time -v`` on each side in turn).

    python benchmarks/bench_mlm_speed.py --build /tmp/roberta-stand-in
    python benchmarks/bench_mlm_speed.py --side dptext --model /tmp/roberta-stand-in
    python benchmarks/bench_mlm_speed.py --side dpmlm --model /tmp/roberta-stand-in
    python benchmarks/bench_mlm_speed.py --compare 3 --model /tmp/roberta-stand-in [--busy]

``--compare N``: both sides as child processes in turn (dptext, dpmlm, dptext, ...), N each;
per run the wall and CPU seconds of the child (``RUSAGE_CHILDREN``), then the medians and the
median of the pairwise ratios, with ``uptime`` and the CPU model/flags (``lscpu``) before and
after. ``--busy``: beside a busy loop started here on one core (killed afterwards).

``--inprocess N``: the compute part alone. One process loads both sides, warms each up on an
8-word text, then times ``privatize`` of the same text(s) N times each, interleaved (dptext,
dpmlm, dptext, ...): wall and process CPU seconds per run, their medians, the median of the
pairwise ratios, and the arithmetic of each side - model FLOPs per privatized word (from the
config and the lengths each side feeds, padding included; dpmlm's full vocabulary projection at
every position) and the GFLOP/s that gives. Imports and model loading are outside the timings,
so the whole-process figures minus these are the fixed start-up. ``--threads T``: torch's
thread count (the ceiling of dptext's thread policy; dpmlm runs at it too). ``--precision
bf16``: dptext's opt-in bfloat16 products (a different model function: measured separately,
never the default). ``--profile``: one more dptext run under torch.profiler, its top operators.

    python benchmarks/bench_mlm_speed.py --inprocess 3 --model /tmp/roberta-stand-in [--busy]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_lm import long_text, sample_texts, stand_in_mlm  # noqa: E402

EPSILON = 50.0
CLIP = (-3.0, 3.0)


def texts_of(args) -> list[str]:
    return sample_texts(10**6)[: args.texts] if args.texts else [long_text(args.words)]


def dptext_mechanism(model: str, batch_size: int, precision: str = "fp32"):
    from dptext import mechanism

    return mechanism("dpmlm", backend="mlm", model=model, epsilon=EPSILON, clip_low=CLIP[0],
                     clip_high=CLIP[1], batch_size=batch_size, precision=precision).fit()


def dptext_side(model: str, texts: list[str], batch_size: int, precision: str = "fp32") -> int:
    results = dptext_mechanism(model, batch_size, precision).privatize_batch(texts)
    return sum(r.report.privatized_by_reason.get("mechanism", 0) for r in results)


def slot_words(model: str, texts: list[str]) -> list[tuple[list[str], list[int]]]:
    """Per text: its pieces (:func:`dptext.text.split_words`: the glue before each word - spaces
    and punctuation - and the words, alternating, so that ``"".join`` gives the text back) and
    the indices of the pieces dptext privatizes (the same words on both sides)."""
    from dptext.text import normalize_word, resolve_stopwords, split_words

    stop = resolve_stopwords(None)
    out = []
    for t in texts:
        parts = split_words(t)
        out.append((parts, [k for k in range(1, len(parts), 2)
                            if normalize_word(parts[k]) not in stop]))
    return out


class DPMLM130:
    """dpmlm 1.3.0's ``privatize_batch`` and ``sliding_window`` (core.py), NLTK's tokenizer
    and detokenizer replaced by dptext's pieces (:func:`slot_words`) and ``"".join``, which
    gives the text back as the detokenizer does: both sides see the same text, punctuation
    included. (Until 6 December 2026 the pieces were the words alone joined by spaces: the
    punctuation was dropped, 128 instead of 148 tokens on the 100-word text, so the reference
    did less work per word than dpmlm does.)"""

    def __init__(self, model: str) -> None:
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.lm_model = AutoModelForMaskedLM.from_pretrained(model).eval()
        self.clip_min, self.clip_max = CLIP
        self.sensitivity = abs(self.clip_max - self.clip_min)
        self.device = torch.device("cpu")
        torch.set_grad_enabled(False)
        # dpmlm reads model_max_length (512 for roberta-base); the stand-in's tokenizer says
        # SmolLM2's 8k, which would not fit the 514 positions
        self.tokenizer.model_max_length = 512

    detokenize = staticmethod("".join)

    def privatize_batch(self, tokens, indices, epsilon, CONCAT=True, batch_size=16):  # noqa: N803
        import numpy as np
        import torch

        predictions = {}
        clean_sent_full = self.detokenize(tokens)
        encoded_clean = (self.tokenizer.encode(clean_sent_full, add_special_tokens=False)
                         if CONCAT else None)
        budget = ((self.tokenizer.model_max_length - 8) // 2 if CONCAT
                  else (self.tokenizer.model_max_length - 4))
        for k in range(0, len(indices), batch_size):
            batch_indices = indices[k: k + batch_size]
            batch_eps = epsilon[k: k + batch_size]
            batch_input_ids, batch_mask_positions = [], []
            for idx in batch_indices:
                masked_tokens = list(tokens)
                masked_tokens[idx] = self.tokenizer.mask_token
                masked_sent_full = self.detokenize(masked_tokens)
                encoded_masked = self.tokenizer.encode(masked_sent_full, add_special_tokens=False)
                try:
                    m_sub_idx = encoded_masked.index(self.tokenizer.mask_token_id)
                except ValueError:
                    m_sub_idx = len(encoded_masked) // 2
                lower, upper = self.sliding_window(encoded_masked, m_sub_idx, budget)
                masked_chunk_sent = self.tokenizer.decode(encoded_masked[lower:upper],
                                                          skip_special_tokens=False)
                if not CONCAT:
                    input_ids = self.tokenizer.encode(
                        " " + masked_chunk_sent, add_special_tokens=True, truncation=True,
                        max_length=self.tokenizer.model_max_length)
                else:
                    clean_chunk_sent = self.tokenizer.decode(encoded_clean[lower:upper],
                                                             skip_special_tokens=False)
                    input_ids = self.tokenizer.encode(
                        " " + clean_chunk_sent, " " + masked_chunk_sent, add_special_tokens=True,
                        truncation="longest_first", max_length=self.tokenizer.model_max_length)
                try:
                    m_pos = input_ids.index(self.tokenizer.mask_token_id)
                except ValueError:
                    m_pos = 0
                batch_input_ids.append(input_ids)
                batch_mask_positions.append(m_pos)
            inputs = self.tokenizer.pad({"input_ids": batch_input_ids}, padding=True,
                                        return_tensors="pt").to(self.device)
            with torch.no_grad():
                logits_output = self.lm_model(**inputs).logits
            for i, (idx, eps) in enumerate(zip(batch_indices, batch_eps, strict=True)):
                mask_logits = logits_output[i, batch_mask_positions[i]].cpu().numpy()
                mask_logits = np.clip(mask_logits, self.clip_min, self.clip_max)
                mask_logits = mask_logits / (2 * self.sensitivity / eps)
                shifted = mask_logits - np.max(mask_logits)
                scores = np.exp(shifted)
                scores /= scores.sum()
                chosen_idx = np.random.choice(len(scores), p=scores)
                predictions[f"{tokens[idx]}_{idx}"] = self.tokenizer.decode(chosen_idx).strip()
        return predictions

    def lengths(self, tokens, indices, batch_size=16):
        """The padded width of each of ``privatize_batch``'s forward passes (for the FLOPs)."""
        clean = self.tokenizer.encode(self.detokenize(tokens), add_special_tokens=False)
        budget = (self.tokenizer.model_max_length - 8) // 2
        widths = []
        for k in range(0, len(indices), batch_size):
            n = []
            for idx in indices[k: k + batch_size]:
                masked = list(tokens)
                masked[idx] = self.tokenizer.mask_token
                enc = self.tokenizer.encode(self.detokenize(masked), add_special_tokens=False)
                at = enc.index(self.tokenizer.mask_token_id) if (
                    self.tokenizer.mask_token_id in enc) else len(enc) // 2
                lo, hi = self.sliding_window(enc, at, budget)
                n.append(len(self.tokenizer.encode(
                    " " + self.tokenizer.decode(clean[lo:hi]),
                    " " + self.tokenizer.decode(enc[lo:hi]), add_special_tokens=True,
                    truncation="longest_first", max_length=self.tokenizer.model_max_length)))
            widths.append((len(n), max(n)))
        return widths

    @staticmethod
    def sliding_window(tokens, target_idx, max_len):
        length = len(tokens)
        if length <= max_len:
            return 0, length
        half_window = max_len // 2
        lower, upper = target_idx - half_window, target_idx + half_window
        if lower < 0:
            upper -= lower
            lower = 0
        elif upper > length:
            lower -= upper - length
            upper = length
        return int(max(0, lower)), int(min(length, upper))


def dpmlm_side(model: str, texts: list[str]) -> int:
    return dpmlm_run(DPMLM130(model), texts)


def _shell(cmd: list[str]) -> str:
    import subprocess

    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""


def compare(args) -> None:
    import subprocess

    cpu_lines = [line for line in _shell(["lscpu"]).splitlines()
                 if line.startswith(("Model name", "Flags"))]
    print("\n".join(cpu_lines))
    print(f"load before: {_shell(['uptime']).strip()}")
    spin = (subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if args.busy else None)
    runs: dict[str, list[tuple[float, float]]] = {"dptext": [], "dpmlm": []}
    try:
        for _ in range(args.compare):
            for side in ("dptext", "dpmlm"):
                cmd = [sys.executable, __file__, "--side", side, "--model", args.model,
                       "--words", str(args.words), "--texts", str(args.texts)]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                runs[side].append((wall, cpu))
                print(f"  {out.strip()} | whole process {wall:.1f} s wall, {cpu:.1f} s CPU",
                      flush=True)
    finally:
        if spin is not None:
            spin.kill()
            spin.wait()
    for k, name in ((0, "wall"), (1, "CPU")):
        a, b, ratio = medians_and_ratio(runs, k)
        print(f"{name}: dptext median {a:.1f} s, dpmlm 1.3.0's approach "
              f"median {b:.1f} s; speed-up (pairwise median) {ratio:.2f}x")
    print(f"load after: {_shell(['uptime']).strip()}"
          f"{' (beside a busy loop on one core)' if args.busy else ''}")


def medians_and_ratio(runs: dict, k: int) -> tuple[float, float, float]:
    """Median of field ``k`` (0 wall, 1 CPU) of the dptext and the dpmlm runs, and the median
    of the pairwise ratios dpmlm / dptext (runs interleaved: pair i ran side by side)."""
    import statistics

    a = [r[k] for r in runs["dptext"]]
    b = [r[k] for r in runs["dpmlm"]]
    ratio = statistics.median(y / x for x, y in zip(a, b, strict=True))
    return statistics.median(a), statistics.median(b), ratio


def layer_flops(cfg, rows: int, width: int, queries: int | None = None) -> float:
    """FLOPs of one encoder layer on ``rows`` sequences of ``width`` tokens (multiply-adds x 2);
    ``queries``: the positions per sequence whose output is kept (the rest only give K, V)."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    q = width if queries is None else queries
    per_row = 2 * width * 2 * h * h + 2 * q * (2 * h * h + 2 * h * i) + 4 * q * width * h
    return rows * per_row


def dptext_flops(m, texts: list[str]) -> tuple[float, int]:
    """FLOPs of dptext's passes over ``texts`` and its privatized words: the padded batches
    the backend forms (length-sorted, ``batch_size`` inputs each), the last layer only at the
    mask where the backend does that (``last_layer_at_mask``), the head's dense layer where
    the last layer's output goes, its vocabulary projection at the masks only."""
    import numpy as np

    b = m._backend
    cfg = m._lm[0].config
    plans = [m._plan(t, np.random.default_rng(0)) for t in texts]
    inputs = [b.input_ids(a.ids, s.start, s.end) for a, _, slots, _ in plans for s in slots]
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    batches = [order[k: k + b.batch_size] for k in range(0, len(order), b.batch_size)]
    last = getattr(b, "last_layer_at_mask", False)
    h, c = cfg.hidden_size, m._lm[0].get_output_embeddings().out_features
    total, padded = 0.0, 0
    for rows in batches:
        width = max(len(inputs[r]) for r in rows)
        padded += width * len(rows)
        total += (cfg.num_hidden_layers - last) * layer_flops(cfg, len(rows), width)
        if last:
            total += layer_flops(cfg, len(rows), width, queries=1)
        total += len(rows) * (width if not last else 1) * 2 * h * h  # the head's dense layer
        total += len(rows) * 2 * h * c  # the vocabulary projection, at the mask only
    real = sum(len(x) for x in inputs)
    print(f"dptext: {len(inputs)} inputs of {min(map(len, inputs))}-{max(map(len, inputs))} "
          f"tokens in {len(batches)} batch(es); padding {100 * (padded - real) / padded:.1f}% "
          f"of the token-rows; last layer at the mask: {bool(last)}")
    return total, len(inputs)


def dpmlm_flops(ref, texts: list[str]) -> tuple[float, int]:
    """FLOPs of dpmlm 1.3.0's passes: batches of 16 padded pairs, every layer at every
    position, the head (dense + the full vocabulary projection) at every position."""
    cfg = ref.lm_model.config
    h, v = cfg.hidden_size, cfg.vocab_size
    total, n = 0.0, 0
    for words, indices in slot_words("", texts):
        for rows, width in ref.lengths(words, indices):
            total += cfg.num_hidden_layers * layer_flops(cfg, rows, width)
            total += rows * width * 2 * (h * h + h * v)
        n += len(indices)
    return total, n


def inprocess(args) -> None:
    """Both sides in one process after warm-up, interleaved (see the module docstring)."""
    import torch

    cpu_lines = [line for line in _shell(["lscpu"]).splitlines()
                 if line.startswith(("Model name", "Flags"))]
    print("\n".join(cpu_lines))
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{torch.backends.cpu.get_cpu_capability()}; dptext precision {args.precision}, "
          f"batch_size {args.batch_size}")
    texts = texts_of(args)
    mech = dptext_mechanism(args.model, args.batch_size, args.precision)
    ref = DPMLM130(args.model)
    warm = [long_text(8)]
    mech.privatize_batch(warm, rng=0)
    dpmlm_run(ref, warm)
    flops = {"dptext": dptext_flops(mech, texts), "dpmlm": dpmlm_flops(ref, texts)}
    print(f"load before: {_shell(['uptime']).strip()}")
    spin = None
    if args.busy:
        import subprocess

        spin = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    runs: dict[str, list[tuple[float, float]]] = {"dptext": [], "dpmlm": []}
    try:
        for k in range(args.inprocess):
            for side in ("dptext", "dpmlm"):
                start, cpu0 = time.perf_counter(), time.process_time()
                if side == "dptext":
                    mech.privatize_batch(texts, rng=k)
                else:
                    dpmlm_run(ref, texts)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
                runs[side].append((wall, cpu))
                f, n = flops[side]
                print(f"  {side}: {n} words, {wall:.2f} s wall, {cpu:.2f} s CPU; "
                      f"{f / n / 1e9:.1f} GFLOP/word, {f / wall / 1e9:.0f} GFLOP/s wall, "
                      f"{f / cpu / 1e9:.0f} GFLOP/s per CPU second", flush=True)
    finally:
        if spin is not None:
            spin.kill()
            spin.wait()
    for k, name in ((0, "wall"), (1, "CPU")):
        a, b, ratio = medians_and_ratio(runs, k)
        n = flops["dptext"][1]
        print(f"compute only, {name}: dptext median {a:.2f} s "
              f"({a / n * 1e3:.0f} ms/word), dpmlm 1.3.0's approach median "
              f"{b:.2f} s ({b / n * 1e3:.0f} ms/word); "
              f"speed-up (pairwise median) {ratio:.2f}x")
    print(f"FLOPs per word: dptext {flops['dptext'][0] / flops['dptext'][1] / 1e9:.1f} G, "
          f"dpmlm {flops['dpmlm'][0] / flops['dpmlm'][1] / 1e9:.1f} G (ratio "
          f"{flops['dpmlm'][0] / flops['dptext'][0]:.2f})")
    print(f"load after: {_shell(['uptime']).strip()}"
          f"{' (beside a busy loop on one core)' if args.busy else ''}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            mech.privatize_batch(texts, rng=99)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14))


def dpmlm_run(ref, texts: list[str]) -> int:
    n = 0
    for words, indices in slot_words("", texts):
        ref.privatize_batch(words, indices, [EPSILON] * len(indices))
        n += len(indices)
    return n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", metavar="DIR", help="write the stand-in model to DIR and stop")
    p.add_argument("--side", choices=("dptext", "dpmlm"))
    p.add_argument("--model", metavar="DIR")
    p.add_argument("--words", type=int, default=100)
    p.add_argument("--texts", type=int, default=0, help="N headlines as N texts instead")
    p.add_argument("--batch-size", type=int, default=64, help="dptext's batch_size")
    p.add_argument("--compare", type=int, default=0, metavar="N",
                   help="run both sides N times each, in turn, and print the ratios")
    p.add_argument("--busy", action="store_true", help="--compare beside a busy loop")
    p.add_argument("--inprocess", type=int, default=0, metavar="N",
                   help="the compute part alone: both sides in this process after warm-up")
    p.add_argument("--threads", type=int, default=0, help="torch threads (--inprocess)")
    p.add_argument("--precision", default="fp32", help="dptext's precision (fp32, bf16)")
    p.add_argument("--profile", action="store_true", help="--inprocess: profile dptext once")
    args = p.parse_args()
    if args.build:
        Path(args.build).mkdir(parents=True, exist_ok=True)
        stand_in_mlm(args.build)
        return
    if args.inprocess and args.model:
        return inprocess(args)
    if args.compare and args.model:
        return compare(args)
    if not (args.side and args.model):
        p.error("give --build DIR, or --side (or --compare N) and --model DIR")
    texts = texts_of(args)
    start = time.perf_counter()
    n = (dptext_side(args.model, texts, args.batch_size, args.precision)
         if args.side == "dptext"
         else dpmlm_side(args.model, texts))
    seconds = time.perf_counter() - start
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{args.side}: {n} privatized words in {len(texts)} text(s), {seconds:.1f} s "
          f"({n / seconds * 60:.0f} words/min), process CPU {r.ru_utime + r.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
