"""The round loop of UeDP-Alg (Algorithm 1) and its baselines, for any task of ``tasks``.

``algo``: ``uedp`` (f_E+), ``uedp-naive`` (f_E), ``userdp`` (user-level DP-FedAvg, McMahan et al.
2018), ``noiseless`` (FedAvg), ``deid`` (FedAvg on the de-identified corpus; the caller passes
that corpus). The private estimators divide the noised sum of clipped updates by the fixed
denominator q_u * |U| (the user count is treated as public, as in DP-FedAvg).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from dptext.accounting.uedp import TrainingPrivacy
from dptext.errors import DPTextError
from dptext.training.corpus import UserCorpus
from dptext.training.federated import clip_updates, local_updates, noised_sum, plain_mean
from dptext.training.sampling import RoundSample, RoundSampler

ALGOS = ("uedp", "uedp-naive", "userdp", "noiseless", "deid")
PRIVATE = ("uedp", "uedp-naive", "userdp")


@dataclass
class TrainConfig:
    """One run: algorithm, sampling rates, noise multiplier z (relative to the sensitivity of the
    sum of clipped updates), clipping bound beta, K (``entity_users``), FedAvg settings, and the
    encoding length ``max_len`` the caller used (recorded with the metrics). ``seed=None``: OS
    entropy."""

    algo: str = "uedp"
    rounds: int = 20
    q_u: float = 0.05
    q_e: float = 0.5
    q_s: float = 1.0
    z: float = 1.0
    beta: float = 0.1
    entity_users: int = 1
    delta: float = 1e-5
    local_steps: int = 2
    local_lr: float = 1.0
    server_lr: float = 1.0
    max_sentences: int = 32
    max_len: int = 24
    users_per_chunk: int = 16
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise DPTextError(f"unknown algorithm {self.algo!r}; choose from {ALGOS}")
        if self.rounds < 1:
            raise DPTextError(f"rounds must be >= 1, got {self.rounds}")
        if not self.beta > 0:
            raise DPTextError(f"clipping bound beta must be > 0, got {self.beta}")

    def privacy(self) -> TrainingPrivacy | None:
        if self.algo not in PRIVATE:
            return None
        return TrainingPrivacy(self.algo, self.q_u, self.z, self.q_e, self.q_s, self.entity_users)

    def sampler(self, corpus: UserCorpus) -> RoundSampler:
        mode = self.algo if self.algo in ("uedp", "uedp-naive") else "user"
        return RoundSampler(corpus, q_u=self.q_u, q_e=self.q_e, q_s=self.q_s, mode=mode)


@dataclass(frozen=True)
class RoundBatch:
    """The padded local data of the sampled users that have something to train on."""

    tokens: torch.Tensor   # [U, N, L]
    weights: torch.Tensor  # [U, N]
    sizes: torch.Tensor    # [U]


def pack_round(sample: RoundSample, encoded: torch.Tensor, user_sizes: np.ndarray,
               max_sentences: int, rng: np.random.Generator) -> RoundBatch | None:
    """Pad the sampled users' usable sentences; a user with more than ``max_sentences`` trains on
    a uniform subset with weights scaled up to keep its expected loss (its update is clipped)."""
    rows = [(u, s, w) for u, s, w in
            zip(sample.users, sample.sentences, sample.weights, strict=True) if len(s)]
    if not rows:
        return None
    n = min(max(len(s) for _, s, _ in rows), max_sentences)
    tokens = torch.zeros(len(rows), n, *encoded.shape[1:], dtype=encoded.dtype)
    weights = torch.zeros(len(rows), n)
    for i, (_, s, w) in enumerate(rows):
        if len(s) > n:
            keep = rng.choice(len(s), n, replace=False)
            s, w = s[keep], w[keep] * (len(rows[i][1]) / n)
        tokens[i, : len(s)] = encoded[s]
        weights[i, : len(s)] = torch.as_tensor(w, dtype=torch.float32)
    sizes = torch.as_tensor(user_sizes[[u for u, _, _ in rows]], dtype=torch.float32)
    return RoundBatch(tokens, weights, sizes)


def round_updates(params, batch: RoundBatch, config: TrainConfig, loss_fn=None):
    """Local updates of all users of a round, computed ``users_per_chunk`` users at a time
    (default loss: the LSTM language model's). Users are chunked in order of their number of
    sentences and each chunk is cut to its largest user, so a user with few sentences does not
    pay for the padding of one with many; the result is in the batch's user order."""
    if loss_fn is None:
        from dptext.training.lstm import sentence_nll as loss_fn
    counts = (batch.weights > 0).sum(dim=1)
    order = torch.argsort(counts, descending=True, stable=True)
    parts = []
    for start in range(0, len(order), config.users_per_chunk):
        idx = order[start:start + config.users_per_chunk]
        n = max(int(counts[idx].max()), 1)
        parts.append(local_updates(loss_fn, params, batch.tokens[idx, :n], batch.weights[idx, :n],
                                   batch.sizes[idx], steps=config.local_steps, lr=config.local_lr))
    inverse = torch.argsort(order)
    return {k: torch.cat([p[k] for p in parts])[inverse] for k in params}


def aggregate(updates, config: TrainConfig, n_users: int, generator: torch.Generator):
    """The server step's update: noised clipped sum / (q_u |U|) for the private algorithms."""
    privacy = config.privacy()
    if privacy is None:
        return plain_mean(updates)
    clipped = clip_updates(updates, config.beta)
    std = config.z * config.beta * privacy.sensitivity_factor
    return noised_sum(clipped, std, config.q_u * n_users, generator)


def _rngs(seed: int | None) -> tuple[np.random.Generator, torch.Generator]:
    ss = np.random.SeedSequence(seed)  # None: OS entropy
    data_seed, noise_seed = ss.spawn(2)
    gen = torch.Generator()
    gen.manual_seed(int(noise_seed.generate_state(1, dtype=np.uint64)[0] >> 1))
    return np.random.default_rng(data_seed), gen


def train(corpus: UserCorpus, rows: torch.Tensor, task, config: TrainConfig,
          on_round: Callable[[dict], None] | None = None) -> tuple[dict, list[dict]]:
    """Train ``task`` (tasks.NextWordTask, tasks.ClassificationTask, causal_lm.CausalLMTask) for
    ``config.rounds`` rounds on ``rows`` (one row per sentence of ``corpus``: a tensor, or
    anything indexable like one, e.g. causal_lm.PrefixRows); returns the trained parameters and
    per-round metrics (the task's evaluation, epsilon spent, users trained, seconds of
    the round's sampling, local training and aggregation, and of the evaluation)."""
    rng, gen = _rngs(config.seed)
    params = task.init(gen)
    sampler = config.sampler(corpus)
    user_sizes = np.bincount(corpus.sentence_user, minlength=corpus.n_users)
    privacy = config.privacy()
    metrics = []
    for t in range(1, config.rounds + 1):
        start = time.perf_counter()
        batch = pack_round(sampler.sample(rng), rows, user_sizes, config.max_sentences, rng)
        if batch is not None and hasattr(task, "trim"):  # drop all-padding positions
            batch = RoundBatch(task.trim(batch.tokens), batch.weights, batch.sizes)
        if batch is not None:
            updates = round_updates(params, batch, config, task.loss)
            step = aggregate(updates, config, corpus.n_users, gen)
        elif privacy is not None:  # nobody trained: the noise is still released
            zeros = {k: torch.zeros(1, *v.shape) for k, v in params.items()}
            step = aggregate(zeros, config, corpus.n_users, gen)
        else:
            step = {k: torch.zeros_like(v) for k, v in params.items()}
        params = {k: params[k] + config.server_lr * step[k] for k in params}
        trained = time.perf_counter()
        row = {"round": t, "users": 0 if batch is None else len(batch.tokens),
               **task.evaluate(params),
               "epsilon": None if privacy is None else privacy.epsilon(t, config.delta),
               "seconds": trained - start, "eval_seconds": time.perf_counter() - trained}
        metrics.append(row)
        if on_round is not None:
            on_round(row)
    return params, metrics
