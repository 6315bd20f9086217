"""Training the CNN classifier: normally, or with interval bound propagation (IBP).

IBP training (Jia et al. 2019, section 3.3, following Gowal et al. 2018) minimises
``(1 - kappa) * CE(clean logits) + kappa * CE(worst-case logits)``, where the worst-case logits
come from interval bounds over each word's allowed substitutions, the box scaled by ``eps``.
Schedule of the shape of Jia et al.'s (section 4.2; constants ours, see docs/robustness.md):
``warmup_epochs`` of normal training, then ``eps`` and ``kappa`` rise linearly (0 -> 1 and
0 -> ``kappa``) over the first half of the remaining steps and stay there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.robustness.encoding import PAD
from dptext.robustness.model import CNNClassifier, worst_case_logits


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 8
    batch_size: int = 64
    lr: float = 1e-3
    hidden: int = 100
    kappa: float = 0.5  # final weight of the IBP term (Gowal et al.'s 0.5)
    warmup_epochs: int = 1  # normal training before the IBP ramp


def ibp_schedule(step: int, total: int, warmup: int, kappa: float) -> tuple[float, float]:
    """(box scale eps, loss weight kappa) at ``step``: 0 during warmup, then linear ramps over
    half of the remaining steps, then constant (1, kappa)."""
    if step < warmup:
        return 0.0, 0.0
    ramp = max(1, (total - warmup) // 2)
    frac = min(1.0, (step - warmup + 1) / ramp)
    return frac, frac * kappa


def train_classifier(
    space: EmbeddingSpace,
    ids: np.ndarray,
    labels: np.ndarray,
    *,
    config: TrainConfig = TrainConfig(),
    substitutions: torch.Tensor | None = None,
    seed: int | None = None,
) -> CNNClassifier:
    """Train a :class:`CNNClassifier`; with ``substitutions`` (a table from
    :func:`~dptext.robustness.model.substitution_table`) train with IBP."""
    labels = np.asarray(labels, dtype=np.int64)
    if len(ids) != len(labels) or len(ids) == 0:
        raise DPTextError(f"need as many labels as texts (>0), got {len(ids)} and {len(labels)}")
    classes = int(labels.max()) + 1
    seed = int(np.random.SeedSequence(seed).generate_state(1)[0])
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CNNClassifier(space, classes=max(classes, 2), hidden=config.hidden)
    order_rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    x_all, y_all = torch.from_numpy(ids), torch.from_numpy(labels)
    steps_per_epoch = -(-len(ids) // config.batch_size)
    total, warmup = config.epochs * steps_per_epoch, config.warmup_epochs * steps_per_epoch
    step = 0
    model.train()
    for _ in range(config.epochs):
        for batch in np.array_split(order_rng.permutation(len(ids)), steps_per_epoch):
            x, y = x_all[batch], y_all[batch]
            x = x[:, : int((x != PAD).sum(1).max())]  # drop all-padding columns
            loss = nn.functional.cross_entropy(model(x), y)
            if substitutions is not None:
                eps, kappa = ibp_schedule(step, total, warmup, config.kappa)
                if kappa > 0:
                    lo, hi = model.logit_bounds(x, substitutions, eps)
                    robust = nn.functional.cross_entropy(worst_case_logits(lo, hi, y), y)
                    loss = (1 - kappa) * loss + kappa * robust
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
    model.eval()
    return model


def accuracy(model: CNNClassifier, ids: np.ndarray, labels: np.ndarray) -> float:
    return float((model.predict_proba(ids).argmax(1) == np.asarray(labels)).mean())


@torch.no_grad()
def certified_accuracy(model: CNNClassifier, ids: np.ndarray, labels: np.ndarray,
                       substitutions: torch.Tensor, *, batch_size: int = 512) -> float:
    """Fraction of texts whose label wins even in the worst case over the box of every
    allowed substitution combination (the full box, scale 1): a proof that no substitution
    from ``substitutions`` changes the prediction (Jia et al. 2019, section 3.2). A certified
    text is also classified correctly."""
    labels = np.asarray(labels, dtype=np.int64)
    was_training = model.training
    model.eval()
    hits = 0
    for s in range(0, len(ids), batch_size):
        x = torch.from_numpy(np.asarray(ids[s : s + batch_size], dtype=np.int64))
        x = x[:, : max(1, int((x != PAD).sum(1).max()))]
        y = torch.from_numpy(labels[s : s + batch_size])
        lo, hi = model.logit_bounds(x, substitutions, 1.0)
        hits += int((worst_case_logits(lo, hi, y).argmax(1) == y).sum())
    model.train(was_training)
    return hits / max(len(ids), 1)
