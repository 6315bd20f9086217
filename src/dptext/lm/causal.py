"""Causal-LM backend of DP-MLM: score the next word given the original and the output so far.

Model input (issue 3, adapting the paper's section 4.2 concatenated context to a decoder): the
original text, a separator, then the privatized text produced so far; the scores of a slot are
the next-token logits after that prefix. The prefix ``original + separator`` is run once per
text and its key/value cache extended token by token: each slot feeds only the tokens that
appeared since the last one (the sampled word and the glue after it). A trailing space of the
glue before a slot is left to the candidate token (``Ġword`` carries its own space). If the
sequence would outgrow the model window, the cache is rebuilt from a window of the original
centred on the slot plus the tail of the output (:mod:`dptext.lm.windows`).
:meth:`CausalBackend.rewrite_batch` decodes several texts side by side
(:mod:`dptext.lm.decoding`), one forward pass per step for all of them.
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
        from dptext.lm.decoding import ScoreHead, pad_id

        self.head = ScoreHead(model, self.candidate_ids, self.sep_ids)
        self.pad_id = pad_id(tokenizer)

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
            past, scores_of = self.head.forward(torch.as_tensor([feed]), None, None, past)
            length += len(feed)
            column = choose(scores_of([0])[0])
            token = int(self.candidate_ids[column])
            out.append(token)
            pending = [token]

    def rewrite_batch(self, texts: list[tuple[list[int], list[tuple[str, int]]]],
                      choose: Callable[[list[int], object], list[int]]) -> list[list[int]]:
        """Several texts decoded side by side (:mod:`dptext.lm.decoding`): one forward pass
        per step for all of them, no padding after the shared prefixes.

        ``choose(rows, scores rows x candidates) -> columns``, ``rows`` indexing ``texts``.
        Every text must fit the window without a rebuild (see :meth:`fits`) and have a slot.
        Returns the chosen columns per text.
        """
        from dptext.lm.decoding import decode_side_by_side

        chosen: list[list[int]] = [[] for _ in texts]

        def draw(rows, scores):
            nexts = []
            for r, col in zip(rows, choose(rows, scores), strict=True):
                chosen[r].append(int(col))
                slots, k = texts[r][1], len(chosen[r])
                nexts.append([int(self.candidate_ids[col])] + self.encode(_trim(slots[k][0]))
                             if k < len(slots) else None)
            return nexts

        prompts = [self._prefix(ids, 0, []) + self.encode(_trim(slots[0][0]))
                   for ids, slots in texts]
        decode_side_by_side(self.head, prompts, draw, self.pad_id)
        return chosen

    def fits(self, ids: list[int], slots: list[tuple[str, int]]) -> bool:
        """Whether a text decodes within the window without rebuilding the cache."""
        total = len(self._prefix(ids, 0, [])) + len(slots)
        return len(ids) <= self.budget and total + sum(
            len(self.encode(_trim(g))) for g, _ in slots) <= self.window


def _trim(glue: str) -> str:
    """The glue before a slot without the one space the candidate token carries itself."""
    return glue[:-1] if glue.endswith(" ") else glue
