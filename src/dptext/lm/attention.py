"""Grouped-query attention without copying the key/value cache (``attn_implementation =
"dptext_gqa"``).

SmolLM2 has 9 query heads over 3 key/value heads. For a pass of more than one query token
with a mask (every incremental step of the side-by-side decoder feeds a drawn token and its
glue, padding masked), transformers' SDPA path expands the cached keys and values to the 9
query heads (``repeat_kv``: a copy of the whole cache, in every layer, at every step) - on a
500-word text that copy cost more than the matrix products of the step. Here the query heads
of one key/value head are stacked along the query axis instead (``[b, 9, q, d] -> [b, 3, 3q,
d]``, the mask repeated to match: a few kB), SDPA runs on the 3 cached heads as they are, and
the output is unstacked. The arithmetic is SDPA's on the same numbers, only grouped
differently (``tests/lm/test_lm_speed.py`` compares the scores with transformers' ``sdpa``).
Every other case (one query token, no mask, a position bias, no grouping) goes to
transformers' own ``sdpa_attention_forward``.
"""

from __future__ import annotations

NAME = "dptext_gqa"
_registered = False


def packed_gqa_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                         scaling=None, is_causal=None, **kwargs):
    """An ``AttentionInterface`` function (see the module docstring)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    b, heads, q, d = query.shape
    groups = heads // key.shape[1]
    if (groups == 1 or q == 1 or attention_mask is None or attention_mask.dtype != torch.bool
            or attention_mask.shape[1] != 1 or kwargs.get("position_bias") is not None
            or kwargs.get("softcap") is not None or value.shape[-1] != d):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout,
                                      scaling, is_causal, **kwargs)
    mask = attention_mask[..., : key.shape[2]]
    mask = mask.expand(mask.shape[0], 1, q, mask.shape[-1]).repeat(1, 1, groups, 1)
    out = torch.nn.functional.scaled_dot_product_attention(
        query.reshape(b, key.shape[1], groups * q, d), key, value, attn_mask=mask,
        dropout_p=dropout, scale=scaling)
    return out.reshape(b, heads, q, d).transpose(1, 2).contiguous(), None


def use_packed_gqa(model) -> bool:
    """Switch ``model`` to :data:`NAME` where it runs SDPA over grouped key/value heads.
    Returns whether it did (other models keep their attention)."""
    global _registered
    config = model.config
    heads = getattr(config, "num_attention_heads", None)
    kv = getattr(config, "num_key_value_heads", None)
    sdpa = getattr(config, "_attn_implementation", None) == "sdpa"
    if not heads or not kv or kv == heads or not sdpa:
        return False
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionInterface.register(NAME, packed_gqa_attention)
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _registered = True
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, AttributeError, KeyError):
        return False
    return True
