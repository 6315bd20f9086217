"""A small CNN text classifier over frozen static word vectors, with interval bounds.

Architecture of the CNN family of Jia et al. 2019 (section 4.1): frozen word vectors -> linear
projection -> 1-d convolution (window 3) -> ReLU -> mean pooling over the words -> linear + ReLU
-> linear (logits). Every layer is linear or monotone, so interval bound propagation (IBP,
Gowal et al. 2018; Jia et al. 2019 section 3.2) passes through it exactly layer by layer:
:meth:`CNNClassifier.logit_bounds` returns lower/upper logits valid for *every* combination of
allowed substitutions.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from dptext.embeddings import EmbeddingSpace
from dptext.robustness.encoding import PAD


def _linear_bounds(layer: nn.Linear | nn.Conv1d, lo: torch.Tensor, hi: torch.Tensor,
                   apply) -> tuple[torch.Tensor, torch.Tensor]:
    """Interval image of an affine layer: centre through the layer, radius through |W|."""
    mid, rad = (hi + lo) / 2, (hi - lo) / 2
    out_mid = apply(mid, layer.weight, layer.bias)
    out_rad = apply(rad, layer.weight.abs(), None)
    return out_mid - out_rad, out_mid + out_rad


class CNNClassifier(nn.Module):
    """``forward(ids) -> logits`` for a ``(B, L)`` matrix of space rows (see ``encoding``)."""

    def __init__(self, space: EmbeddingSpace, *, classes: int = 2, hidden: int = 100,
                 window: int = 3) -> None:
        super().__init__()
        vectors = np.vstack([space.vectors, np.zeros((1, space.dim), dtype=np.float32)])
        self.register_buffer("vectors", torch.from_numpy(vectors))  # frozen; last row = UNK
        self.project = nn.Linear(space.dim, hidden)
        self.conv = nn.Conv1d(hidden, hidden, window, padding=window // 2)
        self.hidden = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    # ---------------------------------------------------------------- concrete
    def _projected(self, ids: torch.Tensor) -> torch.Tensor:
        return self.project(self.vectors[ids.clamp(min=0)])

    def _head(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """From projected words (B, L, H) to logits; padding contributes nothing."""
        h = h * mask[..., None]
        h = torch.relu(self.conv(h.transpose(1, 2))).transpose(1, 2)
        pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.out(torch.relu(self.hidden(pooled)))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != PAD).float()
        return self._head(self._projected(ids), mask)

    # ----------------------------------------------------------------- bounds
    def logit_bounds(self, ids: torch.Tensor, substitutions: torch.Tensor,
                     scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """Lower and upper logits over all texts whose word at each position is any of that
        word's allowed substitutions ``substitutions[ids]`` (a ``(V + 1, k)`` table of rows).

        First layer: the exact box of the projected substitution vectors (tighter than
        projecting the input box; Jia et al.'s bound over the substitutions' convex hull).
        ``scale`` in [0, 1] shrinks each box towards the original word (the epsilon of Jia et
        al.'s training schedule); 1 is the certified box.
        """
        mask = (ids != PAD).float()
        clean = self._projected(ids)
        rows, where = torch.unique(substitutions[ids.clamp(min=0)], return_inverse=True)
        subs = self.project(self.vectors[rows])[where]  # (B, L, k, H), each word projected once
        lo = clean + scale * (subs.min(2).values - clean)
        hi = clean + scale * (subs.max(2).values - clean)
        m = mask[..., None]
        lo, hi = lo * m, hi * m

        def conv(x, w, b):
            return nn.functional.conv1d(x.transpose(1, 2), w, b,
                                        padding=self.conv.padding).transpose(1, 2)

        lo, hi = _linear_bounds(self.conv, lo, hi, conv)
        lo, hi = torch.relu(lo) * m, torch.relu(hi) * m
        count = mask.sum(1, keepdim=True).clamp(min=1)
        lo, hi = lo.sum(1) / count, hi.sum(1) / count
        lo, hi = _linear_bounds(self.hidden, lo, hi, nn.functional.linear)
        lo, hi = torch.relu(lo), torch.relu(hi)
        return _linear_bounds(self.out, lo, hi, nn.functional.linear)

    # ------------------------------------------------------------ prediction
    @torch.no_grad()
    def predict_proba(self, ids: np.ndarray, *, batch_size: int = 2048) -> np.ndarray:
        """Class probabilities for a ``(B, L)`` id matrix (numpy in, numpy out)."""
        was_training = self.training
        self.eval()
        out = [
            torch.softmax(self(torch.from_numpy(ids[s : s + batch_size])), -1).numpy()
            for s in range(0, len(ids), batch_size)
        ]
        self.train(was_training)
        return np.concatenate(out) if out else np.empty((0, self.out.out_features))


def worst_case_logits(lo: torch.Tensor, hi: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Logits that upper-bound the loss over the box: the true class at its lower bound, every
    other class at its upper bound (Jia et al. 2019, eq. 9)."""
    true = nn.functional.one_hot(labels, lo.shape[1]).bool()
    return torch.where(true, lo, hi)


def substitution_table(space: EmbeddingSpace, k: int,
                       max_distance: float | None = None) -> torch.Tensor:
    """``(V + 1, k)`` rows: each word's allowed substitutions, itself first; UNK only itself.

    The ``k`` nearest words of each word; with ``max_distance``, only those within that distance
    of the word (Alzantot et al. 2018's filter: their N = 8 nearest words closer than delta in
    counter-fitted space, the substitution sets Jia et al. 2019 certify against); the excluded
    slots repeat the word itself, so a word without a close neighbour gets a zero-width box.
    """
    geometry = space.geometry(max(k, 2))
    neighbors = geometry.neighbors[:, :k].astype(np.int64)
    if max_distance is not None:
        far = geometry.distances[:, :k] > max_distance
        far[:, 0] = False
        neighbors = np.where(far, neighbors[:, :1], neighbors)
    unk = np.full((1, k), len(space), dtype=np.int64)
    return torch.from_numpy(np.vstack([neighbors, unk]))
