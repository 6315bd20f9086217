"""int8 variants against fp32 on the same slots (issue 19 part 3): dynamic int8 of all linear
layers (per-tensor, per-channel weights), and of subsets (no down_proj, attention only,
gate/up only). Independent scores of one headline text, epsilon 50, shipped bounds: mean and
max |score change|, top-1 agreement, total variation of the clipped exponential mechanism.

    OMP_NUM_THREADS=1 python benchmarks/bench_lm_int8.py [--words 150]
"""
import argparse
import copy
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_lm import _load, long_text  # noqa: E402


def main() -> None:
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig

    from dptext import mechanism
    from dptext.lm.causal import DEFAULT_SEPARATOR, CausalBackend
    from dptext.lm.sampling import clipped_log_probs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=150)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    text = long_text(args.words)
    m = mechanism("dpmlm", epsilon=50, keep_stopwords=False, draws="independent").fit()
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    ref = m._backend.score_independent(job)[0].float()
    lo, hi = m.bounds
    pa = clipped_log_probs(ref, epsilon=50, lo=lo, hi=hi).exp()
    model = m._lm[0]
    names = {n for n, x in model.base_model.named_modules() if isinstance(x, torch.nn.Linear)}
    pc = per_channel_dynamic_qconfig
    variants = {
        "per-tensor, all": {torch.nn.Linear: default_dynamic_qconfig},
        "per-channel, all": {torch.nn.Linear: pc},
        "per-channel, no down_proj": {n: pc for n in names if "down" not in n},
        "per-channel, attention only": {n: pc for n in names if "self_attn" in n},
        "per-channel, gate/up only": {n: pc for n in names if "gate" in n or "up_" in n},
    }
    print(f"{len(ref)} slots x {ref.shape[1]} candidates, score std {float(ref.std()):.2f}; "
          f"load {_load()}")
    for name, spec in variants.items():
        q = copy.deepcopy(model)
        torch.ao.quantization.quantize_dynamic(q.base_model, spec, dtype=torch.qint8,
                                               inplace=True)
        backend = CausalBackend(q, m._lm[1], m._candidates.ids, context="concat",
                                separator=DEFAULT_SEPARATOR, max_length=None)
        s = backend.score_independent(job)[0].float()
        pb = clipped_log_probs(s, epsilon=50, lo=lo, hi=hi).exp()
        tv = 0.5 * (pa - pb).abs().sum(1)
        print(f"  {name:28s} mean |diff| {float((ref - s).abs().mean()):.3f} max "
              f"{float((ref - s).abs().max()):.2f}  top-1 agreement "
              f"{float((ref.argmax(1) == s.argmax(1)).float().mean()):.3f}  TV mean "
              f"{float(tv.mean()):.3f} max {float(tv.max()):.3f}", flush=True)


if __name__ == "__main__":
    main()
