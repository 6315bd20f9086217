"""Incremental decoding of many texts side by side with one batched key/value cache.

Each row has a queue of tokens to feed. The first pass feeds every row's whole queue (its
prompt; left-padded, padding masked out, positions counted per row). After a pass, every row
whose queue is empty wants a draw: its scores over the candidate tokens, taken at its last fed
position, go to ``draw``, which returns the row's next queue (the drawn token plus any literal
text that follows it) or ``None`` when the row is done. Later passes feed ``w`` tokens of every
row, ``w`` the shortest queue, so no pass pads: a row that must feed literal text after its draw
simply catches up over the next passes while the others go on. Finished rows leave the cache.
Only rows that draw reach the output projection, and only its candidate rows
(:class:`ScoreHead`), so a pass costs the fed tokens plus one small projection per draw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

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
        self.model, self.ids = model, torch.as_tensor(candidate_ids)
        head = model.get_output_embeddings()
        self.weight = self.bias = None
        if isinstance(head, torch.nn.Linear) and model.base_model is not model:
            self.weight = head.weight[self.ids].detach()
            self.bias = None if head.bias is None else head.bias[self.ids].detach()
            probe = torch.as_tensor([list(probe_ids) or [0]])
            with torch.inference_mode():
                full = model(input_ids=probe, logits_to_keep=1).logits[0, -1, self.ids]
                hidden = model.base_model(input_ids=probe).last_hidden_state[0, -1]
            if not torch.allclose(self._project(hidden), full, atol=1e-4, rtol=1e-4):
                self.weight = self.bias = None

    def _project(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden, self.weight, self.bias)

    def forward(self, ids, mask, positions, cache) -> tuple[object, object]:
        """One pass: (cache, a function rows -> candidate scores at the last position)."""
        args = dict(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache,
                    use_cache=True)
        with torch.inference_mode():
            if self.weight is not None:
                res = self.model.base_model(**args)
                last = res.last_hidden_state[:, -1]
                return res.cache, lambda rows: self._project(last[rows])
            res = self.model(**args, logits_to_keep=1)
        logits = res.logits[:, -1]
        return res.cache, lambda rows: logits[rows][:, self.ids]


def decode_side_by_side(head: ScoreHead, prompts: list[list[int]], draw: Draw,
                        pad_id: int) -> None:
    """Run the queues of ``prompts`` (one per row, each non-empty) until ``draw`` ends them all.

    ``draw(rows, scores)``: ``rows`` the indices (into ``prompts``) of the rows that want a
    draw now, ``scores`` their candidate scores (rows x candidates); returns one next queue per
    row (non-empty list of tokens) or ``None`` to end the row.
    """
    queues = [list(p) for p in prompts]
    if any(not q for q in queues):
        raise ValueError("every row needs a non-empty prompt")
    alive = list(range(len(queues)))  # the original index of each cache row
    width = max(len(q) for q in queues)
    ids = torch.full((len(queues), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(queues), width), dtype=torch.long)
    for r, q in enumerate(queues):
        ids[r, width - len(q):] = torch.as_tensor(q)
        mask[r, width - len(q):] = 1
    positions = (mask.cumsum(1) - 1).clamp_min(0)
    seen = mask.sum(1)
    for q in queues:
        q.clear()
    cache = None
    while True:
        cache, scores_of = head.forward(ids, mask, positions, cache)
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
            for layer in cache.layers:
                layer.batch_select_indices(index)
            mask, seen = mask[index], seen[index]
            alive = [alive[k] for k in keep]
        w = min(len(queues[r]) for r in alive)
        ids = torch.as_tensor([queues[r][:w] for r in alive], dtype=torch.long)
        for r in alive:
            del queues[r][:w]
        positions = seen[:, None] + torch.arange(w)
        mask = torch.cat([mask, torch.ones((len(alive), w), dtype=torch.long)], dim=1)
        seen = seen + w
