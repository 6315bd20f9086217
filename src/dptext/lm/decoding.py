"""Incremental decoding of many texts side by side with one batched key/value cache.

Each row has a queue of tokens to feed. The first pass feeds every row's whole queue (its
prompt; left-padded, padding masked out, positions counted per row) - or, when the rows share a
``prefix``, that prefix once, its cache then copied to every row. After a pass, every row whose
queue is empty wants a draw: its scores over the candidate tokens, taken at its last fed
position, go to ``draw``, which returns the row's next queue (the drawn token plus any literal
text that follows it) or ``None`` when the row is done. Later passes feed ``w`` tokens of every
row (:func:`width`): the shortest queue when the pass has many rows (it never pads them), more
when few rows share the pass's fixed cost; rows with fewer tokens are left-padded within the
pass (masked), so each row's last real token is the last column. A
row with long literal text feeds it ``w`` tokens per pass while the others draw, and never
holds them. Finished rows leave the cache. Only rows that draw reach the output projection,
and only its candidate rows (:class:`ScoreHead`), so a pass costs the fed tokens plus one small
projection per draw. Each pass first sets torch's threads by its size
(:mod:`dptext.lm.threads`).

Rows that are decoded together should have prompts of similar length - the first pass pads to
the longest - which :func:`cost_groups` arranges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from dptext.lm.threads import ThreadPolicy, thread_policy

# The fixed cost of a pass, in token-rows. On the shared 2-core machine under load, a SmolLM2
# pass of 1x1 tokens took ~200 ms and one of 4x4 ~750 ms: ~3-4 token-rows fixed; more where
# reading the weights dominates (a quiet machine), hence 8.
PASS_OVERHEAD = 8

Draw = Callable[[list[int], torch.Tensor], list[list[int] | None]]


def pad_id(tokenizer) -> int:
    """The token that fills masked-out positions: the pad token, else end-of-sequence, else 0."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


class ScoreHead:
    """Scores of ``candidate_ids`` from the model's last hidden state.

    The output projection is restricted to the candidate rows when that reproduces the full
    model's logits on a probe input (a plain linear head after the base model); otherwise, e.g.
    for models that scale or soft-cap their logits, the full forward pass is used.
    """

    def __init__(self, model, candidate_ids: torch.Tensor, probe_ids: Sequence[int]) -> None:
        self.device = model.device  # inputs are moved there; scores come back from there
        self.model, self.ids = model, torch.as_tensor(candidate_ids).to(self.device)
        head = model.get_output_embeddings()
        self.weight = self.bias = None
        if isinstance(head, torch.nn.Linear) and model.base_model is not model:
            self.weight = head.weight[self.ids].detach()
            self.bias = None if head.bias is None else head.bias[self.ids].detach()
            probe = torch.as_tensor([list(probe_ids) or [0]], device=self.device)
            with torch.inference_mode():
                full = model(input_ids=probe, logits_to_keep=1).logits[0, -1, self.ids]
                hidden = model.base_model(input_ids=probe).last_hidden_state[0, -1]
            if not torch.allclose(self._project(hidden), full, atol=1e-4, rtol=1e-4):
                self.weight = self.bias = None

    def _to(self, x):
        return x if x is None or x.device == self.device else x.to(self.device)

    def select(self, cache, index: torch.Tensor) -> None:
        """Keep the cache rows ``index`` (on the model's device)."""
        index = self._to(index)
        for layer in cache.layers:
            layer.batch_select_indices(index)

    def _project(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden, self.weight, self.bias)

    def forward(self, ids, mask, positions, cache) -> tuple[object, object]:
        """One pass: (cache, a function rows -> candidate scores at the last position)."""
        args = dict(input_ids=self._to(ids), attention_mask=self._to(mask),
                    position_ids=self._to(positions), cache=cache, use_cache=True)
        with torch.inference_mode():
            if self.weight is not None:
                res = self.model.base_model(**args)
                last = res.last_hidden_state[:, -1]
                return res.cache, lambda rows: self._project(last[rows])
            res = self.model(**args, logits_to_keep=1)
        logits = res.logits[:, -1]
        return res.cache, lambda rows: logits[rows][:, self.ids]

    def score_positions(self, ids, mask, positions, rows: list[int], cols: list[int]):
        """Candidate scores after position ``cols[i]`` of row ``rows[i]`` (one pass, no cache)."""
        args = dict(input_ids=self._to(ids), attention_mask=self._to(mask),
                    position_ids=self._to(positions), use_cache=False)
        rows, cols = self._to(torch.as_tensor(rows)), self._to(torch.as_tensor(cols))
        with torch.inference_mode():
            if self.weight is not None:
                hidden = self.model.base_model(**args).last_hidden_state
                return self._project(hidden[rows, cols])
            logits = self.model(**args).logits
        return logits[rows, cols][:, self.ids]


def decode_side_by_side(head: ScoreHead, prompts: list[list[int]], draw: Draw,
                        pad_id: int, *, prefix: Sequence[int] | None = None,
                        policy: ThreadPolicy | None = None) -> None:
    """Run the queues of ``prompts`` (one per row) until ``draw`` ends them all.

    ``draw(rows, scores)``: ``rows`` the indices (into ``prompts``) of the rows that want a
    draw now, ``scores`` their candidate scores (rows x candidates); returns one next queue per
    row (non-empty list of tokens) or ``None`` to end the row. ``prefix``: tokens every row
    starts with, run once and its cache copied to every row (a prompt may then be empty: the
    row draws right after the prefix). ``policy`` sets torch's threads before each pass
    (:mod:`dptext.lm.threads`); by default one is made for the call.
    """
    queues = [list(p) for p in prompts]
    if not prefix and any(not q for q in queues):
        raise ValueError("every row needs a non-empty prompt")
    if policy is None:
        with thread_policy() as own:
            return decode_side_by_side(head, prompts, draw, pad_id, prefix=prefix, policy=own)
    rows = len(queues)
    alive = list(range(rows))  # the original index of each cache row
    mask = torch.zeros((rows, 0), dtype=torch.long)
    seen = torch.zeros(rows, dtype=torch.long)
    cache = None
    if prefix:
        policy.before_pass(len(prefix))
        cache, shared = head.forward(torch.as_tensor([list(prefix)]), None, None, None)
        for layer in cache.layers:
            layer.batch_repeat_interleave(rows)
        mask = torch.ones((rows, len(prefix)), dtype=torch.long)
        seen = seen + len(prefix)
        scores_of = lambda ks: shared([0] * len(ks))  # noqa: E731 - every row has these scores
    else:
        ids, mask, positions = _chunk(queues, max(len(q) for q in queues), seen, pad_id)
        seen = mask.sum(1)
        policy.before_pass(ids.numel())
        cache, scores_of = head.forward(ids, mask, positions, cache)
    while True:
        ready = [k for k, r in enumerate(alive) if not queues[r]]
        if ready:
            nexts = draw([alive[k] for k in ready], scores_of(ready))
            for k, nxt in zip(ready, nexts, strict=True):
                queues[alive[k]] = list(nxt) if nxt is not None else []
                if nxt is not None and not queues[alive[k]]:
                    raise ValueError("draw returned an empty queue; return None to end a row")
        keep = [k for k, r in enumerate(alive) if queues[r]]
        if not keep:
            return
        if len(keep) < len(alive):
            index = torch.as_tensor(keep)
            head.select(cache, index)
            mask, seen = mask[index], seen[index]
            alive = [alive[k] for k in keep]
        w = width([len(queues[r]) for r in alive])
        ids, chunk, positions = _chunk([queues[r] for r in alive], w, seen, pad_id)
        mask = torch.cat([mask, chunk], dim=1)
        seen = seen + chunk.sum(1)
        policy.before_pass(ids.numel())
        cache, scores_of = head.forward(ids, mask, positions, cache)


def width(lengths: Sequence[int]) -> int:
    """Tokens every row feeds in the next pass, given the rows' queue lengths.

    A pass over ``rows x w`` token-rows costs about ``PASS_OVERHEAD + rows * w`` token-rows of
    work (reading the weights is the fixed part) and moves the queues by ``sum(min(q, w))``
    real tokens; ``w`` minimises the cost per real token (the smallest such ``w``). Rows with
    shorter queues are padded. One row alone feeds its whole queue; with many rows ``w`` is
    the shortest queue (no padding), so a row with long literal text advances while the others
    draw instead of holding them.
    """
    rows = len(lengths)
    best, best_cost = min(lengths), float("inf")
    for w in sorted(set(lengths)):
        cost = (PASS_OVERHEAD + rows * w) / sum(min(q, w) for q in lengths)
        if cost < best_cost - 1e-12:
            best, best_cost = w, cost
    return best


def _chunk(queues: list[list[int]], w: int, seen: torch.Tensor, pad_id: int):
    """The next ``w``-wide pass: each row's first ``min(w, len)`` queued tokens, left-padded
    (padding masked out) so that every row's last real token is the pass's last column;
    those tokens are removed from the queues. Returns (ids, mask chunk, positions)."""
    ids = torch.full((len(queues), w), pad_id, dtype=torch.long)
    mask = torch.zeros((len(queues), w), dtype=torch.long)
    for r, q in enumerate(queues):
        n = min(w, len(q))
        ids[r, w - n:] = torch.as_tensor(q[:n])
        mask[r, w - n:] = 1
        del q[:n]
    # positions continue each row's own count; padding gets the position of the next token
    positions = seen[:, None] + (mask.cumsum(1) - 1).clamp_min(0)
    return ids, mask, positions


def cost_groups(lengths: Sequence[int], batch_size: int, *, slack: float = 1.25,
                allowance: int = 32) -> list[list[int]]:
    """Indices of ``lengths`` (prompt tokens per row) in groups to decode side by side.

    Sorted by length; a group takes the next row while it has fewer than ``batch_size`` rows and
    padding every row to the new longest prompt costs at most ``slack`` times the real tokens
    (plus ``allowance`` tokens per row, so short prompts are not split for a few tokens). One
    row with a very long prompt thus goes in a group of its own instead of making every row of
    a batch pay for its length.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    total = 0
    for i in order:
        n = lengths[i]
        k = len(groups[-1]) + 1 if groups else 0
        if groups and k <= batch_size and k * n <= slack * (total + n) + allowance * k:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups
