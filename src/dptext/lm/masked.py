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
candidates. Each batch runs under the thread policy of the causal backend
(:mod:`dptext.lm.threads`): never more torch threads than the cores that are free, one for a
small batch. The batches and their order do not depend on the threads, so neither do the
scores.
"""

from __future__ import annotations

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

    def scores(self, inputs: list[list[int]]):
        """Candidate logits at the mask of each input (rows in input order), batched by length."""
        import torch

        from dptext.lm.threads import thread_policy

        out = torch.empty((len(inputs), len(self.candidate_ids)), dtype=torch.float32)
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        with thread_policy() as policy:
            for s in range(0, len(order), self.batch_size):
                rows = order[s: s + self.batch_size]
                out[torch.as_tensor(rows)] = self._batch(inputs, rows, policy)
        return out

    def _batch(self, inputs: list[list[int]], rows: list[int], policy):
        """Candidate logits at the mask of ``inputs[rows]``, one padded forward pass."""
        import torch

        from dptext.lm.quantize import autocast

        head = self.model.get_output_embeddings()
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
        where = where.to(device)

        def only_masks(_module, args, where=where):
            return (args[0][where],)

        extra = {"token_type_ids": types.to(device)} if self.segments else {}
        policy.before_pass(len(rows) * width)  # token-rows of the padded pass
        hook = head.register_forward_pre_hook(only_masks)
        try:
            with torch.inference_mode(), autocast(device, self.precision):
                logits = self.model(input_ids=batch.to(device),
                                    attention_mask=attention.to(device), **extra).logits
        finally:
            hook.remove()
        picked = logits.reshape(len(rows), -1)[:, self.candidate_ids.to(device)]
        return picked.float().cpu()
