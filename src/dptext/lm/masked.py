"""Masked-LM backend of DP-MLM (paper section 4): score a masked word given its context.

Model input per privatized slot (section 4.2, "concatenated context"): the original text, the
separator, and the text with the slot's tokens replaced by ONE mask token (a word of several
sub-word tokens is one position; an inserted word is a mask between two words). The pair is
joined with the tokenizer's own pair template (``[CLS] A [SEP] B [SEP]`` for BERT,
``<s> A </s></s> B </s>`` for RoBERTa), read off the tokenizer by encoding a probe pair on a
copy of its fast tokenizer with padding and truncation switched off (a tokenizer saved with
``padding``/``truncation`` settings would otherwise add its pads to the template), together with
the segment ids the template gives each part: BERT-style pairs get ``token_type_ids`` 0 for
``[CLS] A [SEP]`` and 1 for ``B [SEP]``, as in pre-training. ``context="none"`` uses the
single-sequence template with the masked text only. Longer inputs
than the model window get token windows centred on the slot (:mod:`dptext.lm.windows`).
All slots of all texts go through the model in padded batches (sorted by length, so a batch
holds inputs of about one length and little padding); only the mask positions reach the
vocabulary projection (a pre-hook on the output embeddings), so memory stays batch x
candidates. Only the mask's output of the LAST layer is used, so that layer computes its keys
and values at every position but its query, attention output and feed-forward block at the
mask alone (:func:`last_layer_at_mask`; BERT-family layers, checked once against the full
layer on a probe input; any other model runs its full last layer). Each batch runs under the
thread policy of the causal backend (:mod:`dptext.lm.threads`): never more torch threads than
the cores that are free, one for a small batch. The batches and their order do not depend on
the threads, so neither do the scores.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from dptext.errors import DPTextError
from dptext.lm.windows import centred, masked_window


@dataclass(frozen=True)
class Template:
    """Special-token layout: ``before + A + middle + B + after`` (``middle`` None: single),
    with the segment id (``token_type_ids``) of every part."""

    before: list[int]
    middle: list[int] | None
    after: list[int]
    types: tuple[list[int], int, list[int], int, list[int]] | None = None

    @property
    def n_special(self) -> int:
        return len(self.before) + len(self.middle or []) + len(self.after)

    def token_types(self, n_a: int, n_b: int) -> list[int]:
        """Segment ids of ``before + A(n_a) + middle + B(n_b) + after``."""
        if self.types is None:
            return [0] * (self.n_special + n_a + n_b)
        before, a, middle, b, after = self.types
        return before + [a] * n_a + middle + [b] * n_b + after


class ModelInput(list):
    """The token ids of one model input (a list), carrying their segment ids in ``types``."""

    def __init__(self, ids: list[int], types: list[int]) -> None:
        super().__init__(ids)
        if len(types) != len(ids):
            raise DPTextError("segment ids and token ids differ in length")
        self.types = types


def _bare(tokenizer):
    """A copy of the fast tokenizer with padding and truncation off (the original untouched)."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    copy.no_padding()
    copy.no_truncation()
    return copy


def read_template(tokenizer, *, pair: bool) -> Template:
    """The special tokens (and segment ids) the tokenizer's post-processor puts around one or
    two sequences, without padding or truncation."""
    enc = _bare(tokenizer).encode("a", "b") if pair else _bare(tokenizer).encode("a")
    seq, ids, types = enc.sequence_ids, enc.ids, enc.type_ids
    first = [i for i, s in enumerate(seq) if s == 0]
    b0 = first[0]
    if not pair:
        e0 = first[-1] + 1
        return Template(ids[:b0], None, ids[e0:],
                        (types[:b0], types[b0], [], 0, types[e0:]))
    second = [i for i, s in enumerate(seq) if s == 1]
    e0, b1, e1 = first[-1] + 1, second[0], second[-1] + 1
    middle, middle_types = ids[e0:b1], types[e0:b1]
    if not middle and tokenizer.sep_token_id is not None:
        middle = [tokenizer.sep_token_id]  # no pair template: at least separate the two copies
        middle_types = [types[b0]]
    return Template(ids[:b0], middle, ids[e1:],
                    (types[:b0], types[b0], middle_types, types[b1], types[e1:]))


def model_window(model, tokenizer, requested: int | None) -> int:
    """Longest input the model takes (position embeddings, tokenizer limit, ``requested``)."""
    limits = [getattr(model.config, "max_position_embeddings", None),
              getattr(tokenizer, "model_max_length", None), requested]
    limits = [int(x) for x in limits if x is not None and 0 < x < 10**7]
    if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limits = [x - 2 if x == model.config.max_position_embeddings else x for x in limits]
    return min(limits) if limits else 512


def _mask_rows_forward(layer, local):
    """A BERT-family encoder layer (``attention.self/output``, ``intermediate``, ``output``)
    computed for one query per row, position ``local.at[r]`` of row ``r`` (``local``: the
    pass being run, :meth:`MaskedBackend._scores`): keys and values from every
    position, as in the full layer; returns ``[rows, 1, hidden]``. The same modules and the
    same attention function as the layer's own forward, so the mask row's output is the full
    layer's up to the order of float additions."""
    import torch
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    sa = layer.attention.self
    eager = sys.modules[type(sa).__module__].eager_attention_forward
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation, eager)
    gone = ("cache", "past_key_values", "use_cache", "encoder_attention_mask",
            "output_attentions")

    def forward(hidden_states, attention_mask=None, *_args, **kwargs):
        at = local.at
        rows, width = hidden_states.shape[:2]
        pick = torch.arange(rows, device=hidden_states.device)
        x = hidden_states[pick, at].unsqueeze(1)  # [rows, 1, hidden]
        heads = (rows, -1, sa.num_attention_heads, sa.attention_head_size)
        query = sa.query(x).view(*heads).transpose(1, 2)
        key = sa.key(hidden_states).view(*heads).transpose(1, 2)
        value = sa.value(hidden_states).view(*heads).transpose(1, 2)
        mask = attention_mask
        if mask is not None and mask.dim() == 4 and mask.shape[2] == width > 1:
            mask = mask[pick, :, at].unsqueeze(2)  # the mask row's own row of the mask
        out, _ = attend(sa, query, key, value, mask, dropout=0.0, scaling=sa.scaling,
                        **{k: v for k, v in kwargs.items() if k not in gone})
        attended = layer.attention.output(out.reshape(rows, 1, -1).contiguous(), x)
        return layer.output(layer.intermediate(attended), attended)

    return forward


def last_layer_at_mask(model):
    """The model's last encoder layer where it can be computed at the mask alone
    (:func:`_mask_rows_forward`), else None: a BERT-family layer (BERT, RoBERTa, XLM-R, ...)
    that is not a decoder, has no cross-attention, no chunked feed-forward and no forward of
    its own set on the instance (accelerate's hooks). :class:`MaskedBackend` also checks the
    result against the full layer once, on a probe input."""
    encoder = getattr(getattr(model, "base_model", None), "encoder", None)
    layers = getattr(encoder, "layer", None)
    try:
        layer = layers[-1]
        sa = layer.attention.self
        parts = (sa.query, sa.key, sa.value, sa.num_attention_heads, sa.attention_head_size,
                 sa.scaling, layer.attention.output, layer.intermediate, layer.output)
    except (AttributeError, IndexError, TypeError):
        return None
    if (None in parts or "forward" in vars(layer) or getattr(layer, "is_decoder", False)
            or getattr(layer, "add_cross_attention", False)
            or getattr(layer, "chunk_size_feed_forward", 0)
            or getattr(sys.modules.get(type(sa).__module__), "eager_attention_forward",
                       None) is None):
        return None
    return layer


class MaskedBackend:
    """Scores of every candidate at the masked slot, for many slots at once."""

    def __init__(self, model, tokenizer, candidate_ids, *, context: str, max_length: int | None,
                 batch_size: int, precision: str = "fp32") -> None:
        import torch

        if tokenizer.mask_token_id is None:
            raise DPTextError("the masked-LM backend needs a tokenizer with a mask token")
        self.model, self.tokenizer = model, tokenizer
        self.candidate_ids = torch.as_tensor(candidate_ids)
        self.template = read_template(tokenizer, pair=context == "concat")
        self.window = model_window(model, tokenizer, max_length)
        room = self.window - self.template.n_special
        self.budget = room // 2 if context == "concat" else room
        if self.budget < 1:
            raise DPTextError(f"model window {self.window} is too small to hold a masked word")
        self.batch_size = batch_size
        self.precision = precision  # "bf16": the forward under bfloat16 autocast (lm/quantize)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        # segment ids go in where the model has segment embeddings (BERT: 2; RoBERTa: 1)
        self.segments = int(getattr(model.config, "type_vocab_size", 0) or 0) > 1
        self._last = last_layer_at_mask(model)
        if self._last is not None and not self._probe():
            self._last = None

    @property
    def last_layer_at_mask(self) -> bool:
        """Whether the last layer runs at the mask alone (see the module docstring)."""
        return self._last is not None

    def _probe(self) -> bool:
        """The last layer at the mask gives the full layer's scores on a probe input (two rows
        of different lengths in one pass, so padding and the attention mask are exercised)."""
        import torch

        t = self.template
        special = set(t.before + (t.middle or []) + t.after + [self.pad_id,
                                                                self.tokenizer.mask_token_id])
        some = []
        for i in range(len(self.tokenizer)):
            if len(some) == 8:
                break
            if i not in special and i not in self.tokenizer.all_special_ids:
                some.append(i)
        probe = [self.input_ids(some, 2, 3), self.input_ids(some[:5], 1, 3)]
        last, self._last = self._last, None
        precision, self.precision = self.precision, "fp32"  # bf16: the products are the same
        try:
            full = self._scores(probe, [[0, 1]])
            self._last = last
            short = self._scores(probe, [[0, 1]])
        except Exception:  # noqa: BLE001 - a layer that does not fit: the full layer then
            return False
        finally:
            self.precision = precision
        scale = 1.0 + float(full.abs().max())
        return bool(torch.isfinite(short).all()) and float((full - short).abs().max()) <= (
            1e-4 * scale)

    def input_ids(self, ids: list[int], start: int, end: int) -> ModelInput:
        """The model input for the slot ``[start, end)`` of a text with token ``ids``:
        ``[CLS] x [SEP] x-masked [SEP]`` for BERT (segment ids in ``.types``)."""
        t = self.template
        masked = masked_window(ids, start, end, self.budget, self.tokenizer.mask_token_id)
        if t.middle is None:
            return ModelInput(t.before + masked + t.after, t.token_types(len(masked), 0))
        lo, hi = centred(len(ids), start, end, self.budget)
        return ModelInput(t.before + ids[lo:hi] + t.middle + masked + t.after,
                          t.token_types(hi - lo, len(masked)))

    def batches(self, inputs: list[list[int]]) -> list[list[int]]:
        """The forward passes over ``inputs``: indices sorted by length, ``batch_size`` per
        pass (a pass holds inputs of about one length). They depend on the lengths and
        ``batch_size`` alone, never on the cores."""
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        return [order[s: s + self.batch_size] for s in range(0, len(order), self.batch_size)]

    def scores(self, inputs: list[list[int]]):
        """Candidate logits at the mask of each input (rows in input order), in the passes of
        :meth:`batches`, one after the other under the thread policy."""
        return self._scores(inputs, self.batches(inputs))

    def _scores(self, inputs: list[list[int]], groups: list[list[int]]):
        """:meth:`scores` in the passes ``groups``."""
        from types import SimpleNamespace

        import torch

        from dptext.lm.threads import thread_policy

        out = torch.empty((len(inputs), len(self.candidate_ids)), dtype=torch.float32)
        if not groups:
            return out
        local = SimpleNamespace(where=None, at=None)  # the pass being run, for the hooks
        last = self._last

        def only_masks(_module, args):
            if last is not None:  # the last layer gave the mask rows alone: [rows, 1, hidden]
                return (args[0][:, 0],)
            return (args[0][local.where],)

        hook = self.model.get_output_embeddings().register_forward_pre_hook(only_masks)
        if last is not None:
            last.forward = _mask_rows_forward(last, local)
        try:
            with thread_policy() as policy:
                for rows in groups:
                    out[torch.as_tensor(rows)] = self._batch(inputs, rows, policy, local)
        finally:
            hook.remove()
            if last is not None:
                del last.forward
        return out

    def _batch(self, inputs: list[list[int]], rows: list[int], policy, local):
        """Candidate logits at the mask of ``inputs[rows]``, one padded forward pass (the mask
        positions go in ``local`` for the hooks :meth:`_scores` set)."""
        import torch

        from dptext.lm.quantize import autocast

        mask_id = self.tokenizer.mask_token_id
        width = max(len(inputs[i]) for i in rows)
        batch = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        types = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            batch[r, : len(inputs[i])] = torch.as_tensor(inputs[i])
            attention[r, : len(inputs[i])] = 1
            if isinstance(inputs[i], ModelInput):
                types[r, : len(inputs[i])] = torch.as_tensor(inputs[i].types)
        where = (batch == mask_id) & attention.bool()
        if int(where.sum()) != len(rows):
            raise DPTextError("a masked input must hold exactly one mask token")

        device = self.model.device
        local.where = where.to(device)
        local.at = local.where.nonzero()[:, 1]
        extra = {"token_type_ids": types.to(device)} if self.segments else {}
        policy.before_pass(len(rows) * width)  # token-rows of the padded pass
        with torch.inference_mode(), autocast(device, self.precision):
            logits = self.model(input_ids=batch.to(device),
                                attention_mask=attention.to(device), **extra).logits
        picked = logits.reshape(len(rows), -1)[:, self.candidate_ids.to(device)]
        return picked.float().cpu()
