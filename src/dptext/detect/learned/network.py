"""The learned detector's network, in numpy for inference and in torch for training (the same
parameters, the same arithmetic; ``tests/detect/test_detect_learned.py`` checks that they agree).

A token is the sum of its hashed feature embeddings (:mod:`.features`) beside its position
features, projected to ``width``; residual blocks of a 3-tap dilated convolution (dilations
1, 2, 4: each token sees 7 tokens either side), ReLU and layer norm; a linear layer gives the
BIO tag logits (:mod:`.tags`)."""

from __future__ import annotations

import numpy as np

DILATIONS = (1, 2, 4)
REACH = sum(DILATIONS)  # tokens either side that a token's tags depend on


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _shift(x: np.ndarray, k: int) -> np.ndarray:
    """Row t of the result is row t + k of ``x`` (zeros past the ends)."""
    out = np.zeros_like(x)
    if k > 0:
        out[:-k] = x[k:]
    elif k < 0:
        out[-k:] = x[:k]
    else:
        out[:] = x
    return out


def forward_numpy(params: dict[str, np.ndarray], ids: np.ndarray, dense: np.ndarray,
                  mask: np.ndarray) -> np.ndarray:
    """Tag logits (n, tags) for one sequence of ``n`` rows (rows where ``mask`` is 0 are gaps
    between texts: they read as zeros to their neighbours, as padding does in training)."""
    m = mask[:, None].astype(np.float32)
    x = params["emb"][ids].sum(1)
    h = np.maximum(np.concatenate([x, dense], 1) @ params["inp_w"] + params["inp_b"], 0) * m
    for k, d in enumerate(DILATIONS):
        stacked = np.concatenate([_shift(h, -d), h, _shift(h, d)], 1)
        y = np.maximum(stacked @ params[f"conv{k}_w"] + params[f"conv{k}_b"], 0)
        h = _layer_norm(h + y, params[f"norm{k}_g"], params[f"norm{k}_b"]) * m
    return h @ params["out_w"] + params["out_b"]


def forward_chunked(params: dict[str, np.ndarray], ids: np.ndarray, dense: np.ndarray,
                    mask: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """:func:`forward_numpy` over windows of ``chunk`` rows, each read with the :data:`REACH`
    rows either side that its outputs depend on: the same logits in memory bounded by the
    chunk, so the cost per row does not grow with the length of a text."""
    n = len(ids)
    if n <= chunk:
        return forward_numpy(params, ids, dense, mask)
    out = np.empty((n, params["out_b"].shape[0]), dtype=np.float32)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        a, b = max(0, lo - REACH), min(n, hi + REACH)
        out[lo:hi] = forward_numpy(params, ids[a:b], dense[a:b], mask[a:b])[lo - a:hi - a]
    return out


def torch_network(dim: int, width: int, n_tags: int, buckets: int, position: int):
    """The torch module of the same network (imported only by training and tests)."""
    import torch
    from torch import nn

    class TaggerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(buckets, dim, padding_idx=0)
            self.inp = nn.Linear(dim + position, width)
            self.convs = nn.ModuleList(nn.Conv1d(width, width, 3, padding=d, dilation=d)
                                       for d in DILATIONS)
            self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in DILATIONS)
            self.out = nn.Linear(width, n_tags)
            self.drop = nn.Dropout(0.0)

        def forward(self, ids, dense, mask):  # (B, T, K), (B, T, P), (B, T)
            m = mask.unsqueeze(-1).to(torch.float32)
            x = self.drop(self.emb(ids).sum(2))
            h = torch.relu(self.inp(torch.cat([x, dense], -1))) * m
            for conv, norm in zip(self.convs, self.norms, strict=True):
                y = torch.relu(conv(h.transpose(1, 2)).transpose(1, 2))
                h = norm(h + self.drop(y)) * m
            return self.out(h)

        def to_numpy(self) -> dict[str, np.ndarray]:
            def a(t):
                return t.detach().cpu().numpy().astype(np.float32)
            p = {"emb": a(self.emb.weight), "inp_w": a(self.inp.weight).T.copy(),
                 "inp_b": a(self.inp.bias), "out_w": a(self.out.weight).T.copy(),
                 "out_b": a(self.out.bias)}
            for k, (conv, norm) in enumerate(zip(self.convs, self.norms, strict=True)):
                w = a(conv.weight)  # (out, in, 3): tap j reads row t + (j - 1) * d
                p[f"conv{k}_w"] = np.concatenate([w[:, :, j].T for j in range(3)], 0)
                p[f"conv{k}_b"] = a(conv.bias)
                p[f"norm{k}_g"] = a(norm.weight)
                p[f"norm{k}_b"] = a(norm.bias)
            return p

    return TaggerNet()
