"""Reduced precisions of a language model's matrix products: ``precision="int8"`` (dynamic
int8 quantization of the linear layers) and ``precision="bf16"`` (bfloat16 products).

int8:

``torch.ao.quantization.quantize_dynamic`` stores each ``nn.Linear`` weight of the base model in
int8 (per-tensor scale) and quantizes activations on the fly: a forward pass reads a quarter of
the weight bytes. The output projection stays in float32 (it is tied to the embeddings, and
:class:`dptext.lm.decoding.ScoreHead` slices its candidate rows).

Privacy: the exponential mechanism clips the scores to the fixed ``[lo, hi]`` whatever model
computed them, so the guarantee is unchanged; only the distribution over candidates moves with
the score change (``benchmarks/bench_lm.py --quantization`` measures it against fp32). The
shipped bounds were calibrated on the fp32 model and are reused as they are.

bf16: the weights of the base model's matrix products are kept in bfloat16 as well (a copy;
the fp32 weights stay for the probe and for transformers' forward) and each product runs on
bfloat16 inputs, its output cast back to float32 - the residual stream, the norms, attention's
softmax, the key/value cache and the candidate projection (the scores) stay float32. On the
fast Llama path (:meth:`dptext.lm.fast_llama.FastLlama.in_bf16`) that is exact about which
products change; on any other model, transformers' forward runs under
``torch.autocast(dtype=torch.bfloat16)`` (:func:`autocast`). A CPU with bfloat16 instructions
(AVX-512 BF16, AMX) runs these products 2-4x faster than float32; one without them emulates
bfloat16 and is slower than fp32 (:func:`native_bf16` says which). The privacy argument is the
same as int8's: scores clipped to bounds fixed in advance, whatever computed them.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext


def quantize_int8(model) -> None:
    """Quantize ``model.base_model``'s ``nn.Linear`` layers to int8 in place."""
    import torch

    base = model.base_model
    with warnings.catch_warnings():  # torch.ao.quantization announces its successor (torchao)
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(base, {torch.nn.Linear},
                                                           dtype=torch.qint8, inplace=True)
    assert quantized is base


def autocast(device, precision: str):
    """The context transformers' forward runs in: bfloat16 autocast for ``precision="bf16"``
    on a model that is not on the fast path, else nothing."""
    if precision != "bf16":
        return nullcontext()
    import torch

    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)


def native_bf16() -> bool:
    """Whether oneDNN has bfloat16 kernels for this CPU (AVX-512; fastest with AVX-512 BF16 or
    AMX); without them ``precision="bf16"`` is emulated and slower than fp32."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def torch_cpu_capability() -> str:
    """The instruction set torch's CPU kernels were dispatched to here ("AVX2", "AVX512",
    ...), or "unknown"."""
    import torch

    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return "unknown"
