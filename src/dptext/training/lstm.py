"""A small LSTM language model as a pure function of a parameter dict (so torch.func can vmap
local training over users). The paper's AWD-LSTM setting (section VI) scaled to CPU: one layer,
embedding and hidden sizes of a few dozen, uniform(-0.1, 0.1) embedding initialisation.
"""

from __future__ import annotations

import math

import torch

Params = dict[str, torch.Tensor]


def init_lstm(vocab_size: int, *, dim: int = 48, hidden: int = 96,
              generator: torch.Generator | None = None) -> Params:
    """Parameters: embedding uniform(-0.1, 0.1), the rest uniform(-1/sqrt(H), 1/sqrt(H))."""
    def u(shape, bound):
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound

    b = 1.0 / math.sqrt(hidden)
    return {
        "embedding": u((vocab_size, dim), 0.1),
        "w_ih": u((4 * hidden, dim), b),
        "w_hh": u((4 * hidden, hidden), b),
        "bias": u((4 * hidden,), b),
        "out_w": u((vocab_size, hidden), b),
        "out_b": torch.zeros(vocab_size),
    }


def sentence_nll(params: Params, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed next-word negative log-likelihood per sentence and its number of predicted tokens.

    ``tokens``: [n, L] ids, 0 = padding; position j predicts position j + 1.
    """
    x = params["embedding"][tokens[:, :-1]]
    n, steps, _ = x.shape
    hidden = params["w_hh"].shape[1]
    h = x.new_zeros(n, hidden)
    c = x.new_zeros(n, hidden)
    gates_in = x @ params["w_ih"].T + params["bias"]
    outs = []
    for t in range(steps):
        i, f, g, o = (gates_in[:, t] + h @ params["w_hh"].T).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    logits = torch.stack(outs, dim=1) @ params["out_w"].T + params["out_b"]
    targets = tokens[:, 1:]
    mask = (targets != 0).to(logits.dtype)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -(logp * mask).sum(dim=1), mask.sum(dim=1)


@torch.no_grad()
def perplexity(params: Params, tokens: torch.Tensor, batch: int = 256) -> float:
    """exp(token-weighted mean NLL) over ``tokens``."""
    total, count = 0.0, 0.0
    for start in range(0, len(tokens), batch):
        nll, n = sentence_nll(params, tokens[start:start + batch])
        total += float(nll.sum())
        count += float(n.sum())
    return math.exp(total / max(count, 1.0))
