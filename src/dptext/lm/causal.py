"""Causal-LM backend of DP-MLM: score the next word given the original and the output so far.

Model input (issue 3, adapting the paper's section 4.2 concatenated context to a decoder): the
original text, a separator, then the privatized text produced so far; the scores of a slot are
the next-token logits after that prefix. The prefix ``original + separator`` is run once per
text and its key/value cache extended token by token: each slot feeds only the tokens that
appeared since the last one (the sampled word and the glue after it). A trailing space of the
glue before a slot is left to the candidate token (``Ġword`` carries its own space). If the
sequence would outgrow the model window, the cache is rebuilt from a window of the original
centred on the slot plus the tail of the output (:mod:`dptext.lm.windows`).
:meth:`CausalBackend.rewrite_batch` decodes several texts side by side, one forward pass per
step for all of them (the weights are read once per step, not once per text).
"""

from __future__ import annotations

from collections.abc import Callable

from dptext.errors import DPTextError
from dptext.lm.windows import centred

DEFAULT_SEPARATOR = "\n\nThe same text in other words:"


class CausalBackend:
    """Sequential scoring with a reused key/value cache."""

    def __init__(self, model, tokenizer, candidate_ids, *, context: str, separator: str,
                 max_length: int | None) -> None:
        import torch

        self.model, self.tokenizer = model, tokenizer
        self.candidate_ids = torch.as_tensor(candidate_ids)
        self.context = context
        self.sep_ids = self.encode(separator)
        limits = [getattr(model.config, "max_position_embeddings", None), max_length]
        self.window = min(int(x) for x in limits if x)
        self.budget = (self.window - len(self.sep_ids)) // 2
        if self.budget < 2:
            raise DPTextError(f"model window {self.window} is too small for the causal backend")

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self.tokenizer(text, add_special_tokens=False,
                                   split_special_tokens=True)["input_ids"])

    def _prefix(self, ids: list[int], centre: int, tail: list[int]) -> list[int]:
        if self.context == "none":
            head = list(self.sep_ids)
        else:
            lo, hi = centred(len(ids), centre, centre + 1, self.budget)
            head = ids[lo:hi] + self.sep_ids
        if not head:  # a causal LM needs at least one token to predict from
            head = [self.tokenizer.bos_token_id or self.tokenizer.eos_token_id or 0]
        # half the budget for the output tail: the other half is room for the next slots
        return head + tail[-(self.budget // 2):] if self.budget > 1 else head + tail[-1:]

    def rewrite(self, ids: list[int], slots: list[tuple[str, int]],
                choose: Callable[[object], int]) -> None:
        """Walk ``slots``: (glue text before the slot, token position of the slot in ``ids``).

        ``choose(scores) -> candidate column`` samples (and records) the slot's word.
        """
        import torch

        past, length, pending = None, 0, []
        out: list[int] = []
        for glue, centre in slots:
            new = self.encode(_trim(glue))
            out.extend(new)
            if past is None or length + len(pending) + len(new) > self.window:
                feed, past, length = self._prefix(ids, centre, out), None, 0
            else:
                feed = pending + new
            with torch.inference_mode():
                res = self.model(input_ids=torch.as_tensor([feed]), cache=past,
                                 use_cache=True, logits_to_keep=1)
            past, length = res.cache, length + len(feed)
            column = choose(res.logits[0, -1, self.candidate_ids])
            token = int(self.candidate_ids[column])
            out.append(token)
            pending = [token]

    def rewrite_batch(self, texts: list[tuple[list[int], list[tuple[str, int]]]],
                      choose: Callable[[object], list[int]]) -> list[list[int]]:
        """Several texts decoded side by side: one forward pass per step for all of them.

        Each step feeds every row its new tokens, left-padded within the step (padding is
        masked out and positions count real tokens only), so one pass reads the weights once
        for the whole batch. ``choose(scores rows x candidates) -> columns``. Every row must
        fit the window without a rebuild (see :meth:`fits`). Returns the columns per text.
        """
        import torch

        pad = self.tokenizer.pad_token_id
        pad = pad if pad is not None else (self.tokenizer.eos_token_id or 0)
        rows = len(texts)
        feeds = [[self._prefix(ids, 0, []) + self.encode(_trim(slots[0][0]))]
                 if slots else [] for ids, slots in texts]
        steps = max(len(s) for _, s in texts)
        chosen: list[list[int]] = [[] for _ in texts]
        past, mask, seen = None, torch.zeros((rows, 0), dtype=torch.long), torch.zeros(
            rows, dtype=torch.long)
        for k in range(steps):
            chunk = [f[0] if f else [] for f in feeds]
            width = max(1, max(len(c) for c in chunk))
            ids = torch.full((rows, width), pad, dtype=torch.long)
            new_mask = torch.zeros((rows, width), dtype=torch.long)
            for r, c in enumerate(chunk):
                if c:
                    ids[r, width - len(c):] = torch.as_tensor(c)
                    new_mask[r, width - len(c):] = 1
            positions = (seen[:, None] + new_mask.cumsum(1) - 1).clamp_min(0)
            mask = torch.cat([mask, new_mask], dim=1)
            with torch.inference_mode():
                res = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                 cache=past, use_cache=True, logits_to_keep=1)
            past, seen = res.cache, seen + new_mask.sum(1)
            active = [r for r in range(rows) if k < len(texts[r][1])]
            columns = choose(res.logits[active, -1][:, self.candidate_ids])
            for r, col in zip(active, columns, strict=True):
                chosen[r].append(int(col))
                slots = texts[r][1]
                glue = self.encode(_trim(slots[k + 1][0])) if k + 1 < len(slots) else None
                feeds[r] = [[int(self.candidate_ids[col])] + glue] if glue is not None else []
            for r in range(rows):
                if r not in active:
                    feeds[r] = []
        return chosen

    def fits(self, ids: list[int], slots: list[tuple[str, int]]) -> bool:
        """Whether a text decodes within the window without rebuilding the cache."""
        total = len(self._prefix(ids, 0, [])) + len(slots)
        return len(ids) <= self.budget and total + sum(
            len(self.encode(_trim(g))) for g, _ in slots) <= self.window


def _trim(glue: str) -> str:
    """The glue before a slot without the one space the candidate token carries itself."""
    return glue[:-1] if glue.endswith(" ") else glue
