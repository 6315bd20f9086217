"""Dynamic int8 quantization of a language model's linear layers (``precision="int8"``).

``torch.ao.quantization.quantize_dynamic`` stores each ``nn.Linear`` weight of the base model in
int8 (per-tensor scale) and quantizes activations on the fly: a forward pass reads a quarter of
the weight bytes. The output projection stays in float32 (it is tied to the embeddings, and
:class:`dptext.lm.decoding.ScoreHead` slices its candidate rows).

Privacy: the exponential mechanism clips the scores to the fixed ``[lo, hi]`` whatever model
computed them, so the guarantee is unchanged; only the distribution over candidates moves with
the score change (``benchmarks/bench_lm.py --quantization`` measures it against fp32). The
shipped bounds were calibrated on the fp32 model and are reused as they are.
"""

from __future__ import annotations

import warnings


def quantize_int8(model) -> None:
    """Quantize ``model.base_model``'s ``nn.Linear`` layers to int8 in place."""
    import torch

    base = model.base_model
    with warnings.catch_warnings():  # torch.ao.quantization announces its successor (torchao)
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(base, {torch.nn.Linear},
                                                           dtype=torch.qint8, inplace=True)
    assert quantized is base
