"""Federated averaging pieces (McMahan et al. 2018, UeDP Algorithm 1 lines 11-15, 20-29):
local training of many users at once (torch.func.vmap), per-user clipping of the whole update to
global L2 norm <= beta, and the noised estimators.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.func import grad, vmap

from dptext.rng import gaussian_noise

Params = dict[str, torch.Tensor]
LossFn = Callable[[Params, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def local_updates(loss_fn: LossFn, params: Params, tokens: torch.Tensor, weights: torch.Tensor,
                  sizes: torch.Tensor, *, steps: int, lr: float) -> Params:
    """Each user's model delta after ``steps`` full-batch SGD steps from ``params``.

    ``tokens`` [U, N, L], ``weights`` [U, N] (1 / pi per usable sentence, 0 for padding), ``sizes``
    [U] (each user's loss normaliser c_u). User u minimises sum_i w_i nll_i / (tokens_i * c_u).
    c_u must be a function of the round's usable sentences only (or a public constant): the
    sensitivity argument of docs/uedp.md rests on it (trainer.pack_round computes it).
    """
    def user_loss(p: Params, tok: torch.Tensor, w: torch.Tensor, n: torch.Tensor):
        nll, count = loss_fn(p, tok)
        return (w * nll / count.clamp(min=1.0)).sum() / n

    step_grad = grad(user_loss)

    def train_one(tok, w, n):
        p = dict(params)
        for _ in range(steps):
            g = step_grad(p, tok, w, n)
            p = {k: p[k] - lr * g[k] for k in p}
        return {k: p[k] - params[k] for k in p}

    return vmap(train_one)(tokens, weights, sizes)


def global_norms(updates: Params) -> torch.Tensor:
    """L2 norm of each user's whole update (all parameters together): [U]."""
    return torch.sqrt(sum(v.flatten(1).pow(2).sum(dim=1) for v in updates.values()))


def clip_updates(updates: Params, beta: float) -> Params:
    """Scale each user's update to global L2 norm <= beta (not per tensor: docs/uedp.md)."""
    factor = (beta / global_norms(updates).clamp(min=1e-12)).clamp(max=1.0)
    return {k: v * factor.view(-1, *([1] * (v.dim() - 1))) for k, v in updates.items()}


def clipped_sum(updates: Params, beta: float) -> Params:
    """The noise-free sum of the users' updates clipped to global norm <= beta: the quantity
    whose sensitivity docs/uedp.md bounds."""
    return {k: v.sum(dim=0) for k, v in clip_updates(updates, beta).items()}


def gaussian_release(total: Params, std: float, denominator: float,
                     generator: np.random.Generator | torch.Generator | None = None) -> Params:
    """(total + N(0, std^2 I)) / denominator: the Gaussian mechanism of line 15.

    ``std`` is z * S (the standard deviation, not the variance). ``generator``: where the noise
    comes from - a numpy Generator (what the trainer passes: PCG64 from OS entropy, or ChaCha20
    with ``secure_rng``; docs/reliability.md, "Randomness"), a torch Generator, or None
    (torch's global one). The noise is drawn on the CPU and moved to the tensors' device.
    """
    out = {}
    for k, v in total.items():
        noise = gaussian_noise(v.shape, std, generator, dtype=v.dtype).to(v.device)
        out[k] = (v + noise) / denominator
    return out


def noised_sum(updates: Params, std: float, denominator: float,
               generator: np.random.Generator | torch.Generator | None = None) -> Params:
    """(sum over users + N(0, std^2 I)) / denominator (the updates as given, unclipped)."""
    return gaussian_release({k: v.sum(dim=0) for k, v in updates.items()}, std, denominator,
                            generator)


def plain_mean(updates: Params) -> Params:
    """Noiseless FedAvg: the mean update of the sampled users."""
    return {k: v.mean(dim=0) for k, v in updates.items()}
