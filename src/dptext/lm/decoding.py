"""Incremental decoding of many texts side by side with one batched key/value cache.

Each row has a queue of tokens to feed. The first pass feeds every row's whole queue (its
prompt; left-padded, padding masked out, positions counted per row) - or, when the rows share a
``prefix``, that prefix once (its cache shared by every row, :meth:`ScoreHead.share`), then
the rows' prompts in one padded pass. After a pass, every row whose
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
    for models that scale or soft-cap their logits, the full forward pass is used. A plain
    Llama decoder (the default SmolLM2) runs through :mod:`dptext.lm.fast_llama` when that
    gives the model's own logits on the probe; any other model through transformers.

    The cache of a decoding call is the head's own state (``forward`` takes and returns it):
    a :class:`~dptext.lm.fast_llama.KVCache`, or transformers' cache with the 2-D mask of
    everything fed (:class:`_HFState`).
    """

    def __init__(self, model, candidate_ids: torch.Tensor, probe_ids: Sequence[int], *,
                 precision: str = "fp32") -> None:
        self.device = model.device  # inputs are moved there; scores come back from there
        self.model, self.ids = model, torch.as_tensor(candidate_ids).to(self.device)
        self.precision = precision
        head = model.get_output_embeddings()
        self.weight = self.bias = self.fast = None
        if isinstance(head, torch.nn.Linear) and model.base_model is not model:
            self.weight = head.weight[self.ids].detach()
            self.bias = None if head.bias is None else head.bias[self.ids].detach()
            probe = torch.as_tensor([list(probe_ids) or [0]], device=self.device)
            with torch.inference_mode():
                full = model(input_ids=probe, logits_to_keep=1).logits[0, -1, self.ids]
                hidden = model.base_model(input_ids=probe).last_hidden_state[0, -1]
            if not torch.allclose(self._project(hidden), full, atol=1e-4, rtol=1e-4):
                self.weight = self.bias = None
            else:
                self.fast = _checked_fast(model, probe, full, self._project)
        if precision == "bf16" and self.fast is not None:
            # checked in float32 above; the products then run in bfloat16 (lm/quantize.py)
            self.fast = self.fast.in_bf16()

    def _to(self, x):
        return x if x is None or x.device == self.device else x.to(self.device)

    def select(self, state, index: torch.Tensor) -> None:
        """Keep the cache rows ``index`` (on the model's device)."""
        index = self._to(index)
        if self.fast is not None:
            state.select(index)
            return
        for layer in state.cache.layers:
            layer.batch_select_indices(index)
        state.mask = state.mask[index.to(state.mask.device)]

    def share(self, state, rows: int):
        """The state of ``rows`` rows that all continue the one-row ``state`` (a prefix):
        attended to in place by the fast path, copied to every row by transformers'."""
        if self.fast is not None:
            return state.shared(rows, capacity=64)
        for layer in state.cache.layers:
            layer.batch_repeat_interleave(rows)
        state.mask = state.mask.expand(rows, -1).contiguous()
        return state

    def work(self, ids: torch.Tensor, mask: torch.Tensor | None) -> int:
        """Rows the matrix products of a pass over ``ids`` run on (what the thread policy
        sizes it by): the real tokens on the fast path (it packs them), every token-row on
        transformers'."""
        if self.fast is None or mask is None:
            return int(ids.numel())
        return int(mask.sum())

    def _project(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden.to(self.weight.dtype), self.weight, self.bias)

    def _transformers(self, model, **args):
        """transformers' forward of ``model`` (the base model or the whole one), under
        bfloat16 autocast for ``precision="bf16"``."""
        from dptext.lm.quantize import autocast

        with autocast(self.device, self.precision):
            return model(**args)

    def forward(self, ids, mask, positions, state) -> tuple[object, object]:
        """One pass of ``ids`` (rows x w) after ``state`` (None: the first pass). ``mask``: the
        real tokens among them (left padding 0; None: all real); ``positions``: their
        positions (None: continuing). Returns (state, a function rows -> candidate scores at
        the last position)."""
        ids = self._to(ids)
        if self.fast is not None:
            if state is None:
                state = self.fast.new_cache(ids.shape[0], ids.shape[1] + 64)
            valid = None if mask is None else self._to(mask).bool()
            with torch.inference_mode():
                last = self.fast.run(ids, valid, self._to(positions), state, last_only=True)
            return state, lambda rows: self._project(last[rows])
        chunk = torch.ones(ids.shape, dtype=torch.long) if mask is None else mask.long()
        full = chunk if state is None else torch.cat([state.mask, chunk.cpu()], dim=1)
        args = dict(input_ids=ids, attention_mask=self._to(full),
                    position_ids=self._to(positions),
                    cache=None if state is None else state.cache, use_cache=True)
        with torch.inference_mode():
            if self.weight is not None:
                res = self._transformers(self.model.base_model, **args)
                last = res.last_hidden_state[:, -1]
                return _HFState(res.cache, full.cpu()), lambda rows: self._project(last[rows])
            res = self._transformers(self.model, **args, logits_to_keep=1)
        logits = res.logits[:, -1].float()
        return _HFState(res.cache, full.cpu()), lambda rows: logits[rows][:, self.ids]

    def score_positions(self, ids, mask, positions, rows: list[int], cols: list[int]):
        """Candidate scores after position ``cols[i]`` of row ``rows[i]`` (one pass, no cache)."""
        ids, mask, positions = self._to(ids), self._to(mask), self._to(positions)
        rows, cols = self._to(torch.as_tensor(rows)), self._to(torch.as_tensor(cols))
        with torch.inference_mode():
            if self.fast is not None:
                hidden = self.fast.run(ids, mask.bool(), positions, None, last_only=False)
                return self._project(hidden[rows, cols])
            args = dict(input_ids=ids, attention_mask=mask, position_ids=positions,
                        use_cache=False)
            if self.weight is not None:
                hidden = self._transformers(self.model.base_model, **args).last_hidden_state
                return self._project(hidden[rows, cols])
            logits = self._transformers(self.model, **args).logits
        return logits[rows, cols][:, self.ids].float()


class _HFState:
    """transformers' cache and the 2-D attention mask of everything fed so far (CPU)."""

    __slots__ = ("cache", "mask")

    def __init__(self, cache, mask: torch.Tensor) -> None:
        self.cache, self.mask = cache, mask


def _checked_fast(model, probe, full, project):
    """The model's :class:`~dptext.lm.fast_llama.FastLlama` if it gives the model's own
    candidate logits on ``probe`` (else None: transformers' forward is used)."""
    from dptext.lm.fast_llama import fast_forward

    fast = fast_forward(model)
    if fast is None:
        return None
    with torch.inference_mode():
        mine = project(fast.run(probe, None, None, None, last_only=True)[0])
    return fast if torch.allclose(mine, full, atol=1e-4, rtol=1e-4) else None


def decode_side_by_side(head: ScoreHead, prompts: list[list[int]], draw: Draw,
                        pad_id: int, *, prefix: Sequence[int] | None = None,
                        policy: ThreadPolicy | None = None) -> None:
    """Run the queues of ``prompts`` (one per row) until ``draw`` ends them all.

    ``draw(rows, scores)``: ``rows`` the indices (into ``prompts``) of the rows that want a
    draw now, ``scores`` their candidate scores (rows x candidates); returns one next queue per
    row (non-empty list of tokens) or ``None`` to end the row. ``prefix``: tokens every row
    starts with, run once and shared by every row (:meth:`ScoreHead.share`); the rows' prompts
    then follow in one padded pass (a prompt may be empty: the row draws right after the
    prefix). ``policy`` sets torch's threads before each pass (:mod:`dptext.lm.threads`); by
    default one is made for the call.
    """
    queues = [list(p) for p in prompts]
    if not prefix and any(not q for q in queues):
        raise ValueError("every row needs a non-empty prompt")
    if policy is None:
        with thread_policy() as own:
            return decode_side_by_side(head, prompts, draw, pad_id, prefix=prefix, policy=own)
    rows = len(queues)
    alive = list(range(rows))  # the original index of each cache row
    seen = torch.zeros(rows, dtype=torch.long)
    if prefix:
        policy.before_pass(len(prefix))
        state, shared = head.forward(torch.as_tensor([list(prefix)]), None, None, None)
        state = head.share(state, rows)
        seen = seen + len(prefix)
        scores_of = lambda ks: shared([0] * len(ks))  # noqa: E731 - every row has these scores
        if all(queues):  # the prompts after the prefix: one pass, padded like a first pass
            ids, chunk, positions = _chunk(queues, max(len(q) for q in queues), seen, pad_id)
            seen = seen + chunk.sum(1)
            policy.before_pass(head.work(ids, chunk))
            state, scores_of = head.forward(ids, chunk, positions, state)
    else:
        ids, chunk, positions = _chunk(queues, max(len(q) for q in queues), seen, pad_id)
        seen = chunk.sum(1)
        policy.before_pass(head.work(ids, chunk))
        state, scores_of = head.forward(ids, chunk, positions, None)
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
            head.select(state, index)
            seen = seen[index]
            alive = [alive[k] for k in keep]
        w = width([len(queues[r]) for r in alive])
        ids, chunk, positions = _chunk([queues[r] for r in alive], w, seen, pad_id)
        seen = seen + chunk.sum(1)
        policy.before_pass(head.work(ids, chunk))
        state, scores_of = head.forward(ids, chunk, positions, state)


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
                allowance: int = 32, lanes: int = 1,
                weights: Sequence[float] | None = None) -> list[list[int]]:
    """Indices of ``lengths`` (prompt tokens per row) in groups to decode side by side.

    Sorted by length, the rows form runs: a run takes the next row while padding every row to
    the new longest prompt costs at most ``slack`` times the real tokens (plus ``allowance``
    tokens per row, so short prompts are not split for a few tokens). One row with a very long
    prompt thus goes in a run of its own instead of making every row of a batch pay for its
    length. A run of ``n`` rows is cut into ``ceil(n / batch_size)`` groups of at most
    ``batch_size`` rows and of equal cost: ``weights`` per row (default: the lengths; the
    decoders give every token a row feeds, prompt and decoded), so that groups decoded at once
    finish together. ``lanes``: where there is more than one group, their number is raised to a
    multiple of ``lanes`` where the rows allow (one more group at a time for the run with the
    most rows per group), so that ``lanes`` workers (:func:`dptext.lm.threads.run_groups`)
    finish together - 169 rows in batches of 64 are 4 groups with ``lanes=2``, not 64 + 64 +
    41. The grouping depends on the lengths, the weights and these parameters alone (never on
    the cores that happen to be free).
    """
    weights = lengths if weights is None else weights
    if len(weights) != len(lengths):
        raise ValueError("one weight per row")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs: list[list[int]] = []
    total = 0
    for i in order:
        n = lengths[i]
        k = len(runs[-1]) + 1 if runs else 0
        if runs and k * n <= slack * (total + n) + allowance * k:
            runs[-1].append(i)
            total += n
        else:
            runs.append([i])
            total = n
    counts = [-(-len(r) // batch_size) for r in runs]
    lanes = max(1, int(lanes))
    while sum(counts) > 1 and sum(counts) % lanes:
        best = max(range(len(runs)), key=lambda j: len(runs[j]) / counts[j])
        if len(runs[best]) <= counts[best]:  # every group is one row already
            break
        counts[best] += 1
    groups: list[list[int]] = []
    for run, c in zip(runs, counts, strict=True):
        groups += _equal_cost(run, [float(weights[i]) for i in run], c, batch_size)
    return groups


def _equal_cost(run: list[int], w: list[float], count: int, batch_size: int) -> list[list[int]]:
    """``run`` cut into ``count`` consecutive groups of 1 to ``batch_size`` rows whose weights
    ``w`` sum as evenly as the order allows (each group as close as it can get to the mean of
    what is left)."""
    groups, start, left, n = [], 0, sum(w), len(run)
    for g in range(count, 1, -1):  # groups left, this one included
        target = left / g
        lowest = max(start + 1, n - (g - 1) * batch_size)  # the later groups must fit
        highest = min(start + batch_size, n - (g - 1))  # and have a row each
        end, acc = start, 0.0
        while end < highest and (end < lowest or abs(acc + w[end] - target) <= abs(acc - target)):
            acc += w[end]
            end += 1
        groups.append(run[start:end])
        start, left = end, left - acc
    groups.append(run[start:])
    return groups
