"""The round loop of UeDP-Alg (Algorithm 1) and its baselines, for any task of ``tasks``.

``algo``: ``uedp`` (f_E+), ``uedp-naive`` (f_E), ``userdp`` (user-level DP-FedAvg, McMahan et al.
2018, arXiv:1710.06963), ``noiseless`` (FedAvg), ``deid`` (FedAvg on the de-identified corpus;
the caller passes that corpus), ``dpsgd-example`` (example-level DP-SGD with a user-level
guarantee: the caller passes a corpus where every example is a unit of its own, at most
``examples_per_user`` of them from one user; training/run.py ``per_example``). The private
estimators divide the noised sum of clipped updates by the fixed denominator q_u * |U|, where |U|
is ``population`` - a public number (a registered user count, or a public bound) - or, when none
is given, the corpus's own count released once with Gaussian noise (multiplier ``count_z``) and
charged by the accountant: dividing by the exact count of the data is not post-processing (D'
has one more user; arXiv 2605.15648, docs/uedp.md "Dividing by q_u |U|").

A sampled user's loss is normalised by a quantity that depends on nothing outside its usable
sentences of the round (``normalizer``, docs/uedp.md "Sensitivity"): ``"usable"`` (default) the
sum of the Horvitz-Thompson weights of its usable sentences this round (a Hajek mean: each user
trains on the weighted mean per-token loss of the data it may use this round), ``"constant"``
the public ``max_sentences`` (the update is then linear in the sentence weights and f_E+ is
unbiased for the full-data gradient of sum_x nll(x) / (|U| max_sentences)). The user's total
number of sentences is never used: a holder of the differing entity has more of them in D' than
in D, so it would move every round where the holder is sampled, sampled entity or not.

:class:`FederatedTrainer` runs the rounds one at a time and exposes its whole state
(parameters, both random generators, the round, the metrics) for checkpoints; :func:`train` is
the loop in one call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from dptext.accounting.uedp import TrainingPrivacy
from dptext.errors import DPTextError
from dptext.rng import generator_state, is_secure, restore_generator, secure_generator
from dptext.training.corpus import UserCorpus
from dptext.training.federated import (
    Params,
    clipped_sum,
    gaussian_release,
    global_norms,
    local_updates,
    plain_mean,
)
from dptext.training.sampling import RoundSample, RoundSampler

ALGOS = ("uedp", "uedp-naive", "userdp", "noiseless", "deid", "dpsgd-example")
# noise multiplier of the released user count (a run without a public ``population``): its
# std is COUNT_Z x the count's sensitivity in units (1 user for user-level DP, 1 + K for UeDP);
# one Gaussian of multiplier 20 adds alpha / 800 to the RDP of every order alpha
COUNT_Z = 20.0
PRIVATE = ("uedp", "uedp-naive", "userdp", "dpsgd-example")
NORMALIZERS = ("usable", "constant")


@dataclass
class TrainConfig:
    """One run: algorithm, sampling rates, noise multiplier z (relative to the sensitivity of the
    sum of clipped updates), clipping bound beta, K (``entity_users``), FedAvg settings, the
    per-user loss ``normalizer`` (module docstring), the public user count ``population``
    (None: the corpus's), and the encoding length ``max_len`` the caller used (recorded with the
    metrics). ``seed=None``: OS entropy. ``secure_rng``: the DP noise and the sampling coins
    come from ChaCha20 (keyed with 256 bits from the OS, or from ``seed`` for experiments)
    instead of PCG64 (docs/reliability.md, "Randomness")."""

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
    normalizer: str = "usable"
    population: int | None = None
    # noise multiplier of the released count when ``population`` is None (COUNT_Z)
    count_z: float = COUNT_Z
    # dpsgd-example: the most examples one user contributes (the sensitivity is k beta)
    examples_per_user: int = 1
    seed: int | None = None
    secure_rng: bool = False

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise DPTextError(f"unknown algorithm {self.algo!r}; choose from {ALGOS}")
        if self.rounds < 1:
            raise DPTextError(f"rounds must be >= 1, got {self.rounds}")
        if not self.beta > 0:
            raise DPTextError(f"clipping bound beta must be > 0, got {self.beta}")
        if self.normalizer not in NORMALIZERS:
            raise DPTextError(f"unknown normalizer {self.normalizer!r}; choose from "
                              f"{NORMALIZERS}")
        if self.population is not None and self.population < 1:
            raise DPTextError(f"population must be >= 1, got {self.population}")

    def privacy(self) -> TrainingPrivacy | None:
        if self.algo not in PRIVATE:
            return None
        return TrainingPrivacy(self.algo, self.q_u, self.z, self.q_e, self.q_s, self.entity_users,
                               self.examples_per_user,
                               count_z=None if self.population is not None else self.count_z)

    def sampler(self, corpus: UserCorpus) -> RoundSampler:
        mode = self.algo if self.algo in ("uedp", "uedp-naive") else "user"
        return RoundSampler(corpus, q_u=self.q_u, q_e=self.q_e, q_s=self.q_s, mode=mode)


@dataclass(frozen=True)
class RoundBatch:
    """The padded local data of the sampled users that have something to train on."""

    tokens: torch.Tensor   # [U, N, L]
    weights: torch.Tensor  # [U, N]
    sizes: torch.Tensor    # [U] each user's loss normaliser c_u


def pack_round(sample: RoundSample, encoded: torch.Tensor, max_sentences: int,
               rng: np.random.Generator, normalizer: str = "usable") -> RoundBatch | None:
    """Pad the sampled users' usable sentences; a user with more than ``max_sentences`` trains on
    a uniform subset with weights scaled up to keep its expected loss (its update is clipped).

    Everything here reads the usable sentences only: which users have any, their count (the
    padding, the subset), and the normaliser c_u - the sum of the user's weights (``"usable"``)
    or ``max_sentences`` (``"constant"``)."""
    if normalizer not in NORMALIZERS:
        raise DPTextError(f"unknown normalizer {normalizer!r}; choose from {NORMALIZERS}")
    rows = [(s, w) for s, w in zip(sample.sentences, sample.weights, strict=True) if len(s)]
    if not rows:
        return None
    n = min(max(len(s) for s, _ in rows), max_sentences)
    tokens = torch.zeros(len(rows), n, *encoded.shape[1:], dtype=encoded.dtype)
    weights = torch.zeros(len(rows), n)
    for i, (s, w) in enumerate(rows):
        if len(s) > n:
            keep = rng.choice(len(s), n, replace=False)
            s, w = s[keep], w[keep] * (len(rows[i][0]) / n)
        tokens[i, : len(s)] = encoded[s]
        weights[i, : len(s)] = torch.as_tensor(w, dtype=torch.float32)
    if normalizer == "usable":
        sizes = weights.sum(dim=1)
    else:
        sizes = torch.full((len(rows),), float(max_sentences))
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


def aggregate(updates, config: TrainConfig, n_users: int,
              generator: np.random.Generator | torch.Generator):
    """The server step's update: noised clipped sum / (q_u |U|) for the private algorithms
    (the noise drawn from ``generator``: federated.gaussian_release)."""
    privacy = config.privacy()
    if privacy is None:
        return plain_mean(updates)
    std = config.z * config.beta * privacy.sensitivity_factor
    return gaussian_release(clipped_sum(updates, config.beta), std, config.q_u * n_users,
                            generator)


def released_population(n_units: int, config: TrainConfig, privacy: TrainingPrivacy | None,
                        noise_rng: np.random.Generator) -> float:
    """The |U| of the denominator q_u |U|: ``config.population`` when given (public), the
    corpus's count for the noiseless baselines (nothing is released privately), and otherwise
    the count plus N(0, privacy.count_std^2), drawn once from the noise generator before any
    round - the release that ``TrainingPrivacy.event`` composes first. Floored at 1 (a
    post-processing step)."""
    if config.population is not None:
        return float(config.population)
    if privacy is None:
        return float(n_units)
    from dptext.rng import gaussian_noise

    noise = float(gaussian_noise((1,), privacy.count_std, noise_rng, dtype=torch.float64)[0])
    return max(1.0, n_units + noise)


def _rngs(seed: int | None, secure: bool = False
          ) -> tuple[np.random.Generator, np.random.Generator, torch.Generator]:
    """(data generator: coins and subsets; noise generator: the DP noise; the torch generator
    of the initial parameters). ``secure``: the first two are ChaCha20, keyed from the OS
    (``seed=None``: 256 fresh bits each) or from the seed; otherwise PCG64."""
    ss = np.random.SeedSequence(seed)  # None: OS entropy
    data_seed, noise_seed, init_seed = ss.spawn(3)
    init = torch.Generator()
    init.manual_seed(int(init_seed.generate_state(1, dtype=np.uint64)[0] >> 1))
    if secure:
        keyed = seed is not None
        return (secure_generator(data_seed if keyed else None),
                secure_generator(noise_seed if keyed else None), init)
    return np.random.default_rng(data_seed), np.random.default_rng(noise_seed), init


class FederatedTrainer:
    """The rounds of one run, one :meth:`step` at a time.

    ``sampler``: the round sampler (default: ``config.sampler(corpus)``; tests pass one with
    fixed coins). ``seed`` overrides ``config.seed`` (a caller that drew a private seed from OS
    entropy and must not record it in the config). ``device`` ("cpu", "cuda", "auto"): where
    the parameters, the local training and the aggregation run (the noise is drawn on the CPU
    from the numpy generator and moved there; the result is the same up to floating-point
    rounding of the device). :meth:`state_dict` /
    :meth:`load_state_dict` hold everything a resumed run needs to continue exactly as an
    uninterrupted one: the parameters, the round, the metrics so far and the states of both
    generators (the data generator of the coins and subsets, the noise generator). The server
    step is plain SGD (``server_lr``), so there is no optimizer state beyond the parameters.
    The generator states reproduce the noise: whoever holds them can remove it (never publish
    a state dict; docs/uedp.md, "Checkpoints").
    """

    def __init__(self, corpus: UserCorpus, rows, task, config: TrainConfig, *,
                 sampler: RoundSampler | None = None, seed: int | None = None,
                 device: str = "cpu") -> None:
        from dptext.devices import resolve_device

        self.corpus, self.rows, self.task, self.config = corpus, rows, task, config
        self.device = torch.device(resolve_device(device))
        self.rng, self.noise_rng, init = _rngs(config.seed if seed is None else seed,
                                               config.secure_rng)
        if hasattr(task, "to"):
            task.to(self.device)
        self.params: Params = {k: v.to(self.device) for k, v in task.init(init).items()}
        # the untrained model (the step never changes a tensor in place), which the run's
        # result is compared with (training/learning.py)
        self.initial: Params = self.params
        self.sampler = sampler if sampler is not None else config.sampler(corpus)
        self.privacy = config.privacy()
        self.population = released_population(corpus.n_users, config, self.privacy,
                                              self.noise_rng)
        self.round = 0
        self.metrics: list[dict] = []
        self._tokens = 0

    # ------------------------------------------------------------ one round
    def user_updates(self, sample: RoundSample) -> Params | None:
        """The local updates (unclipped) of the sampled users with usable data, or None."""
        batch = pack_round(sample, self.rows, self.config.max_sentences, self.rng,
                           self.config.normalizer)
        if batch is None:
            return None
        if hasattr(self.task, "trim"):  # drop all-padding positions
            batch = RoundBatch(self.task.trim(batch.tokens), batch.weights, batch.sizes)
        count = getattr(self.task, "count_tokens", None)
        if count is not None:  # diagnostic: tokens the local steps train on
            self._tokens = int(count(batch.tokens[batch.weights > 0])) * self.config.local_steps
        if self.device.type != "cpu":
            batch = RoundBatch(*(x.to(self.device) for x in
                                 (batch.tokens, batch.weights, batch.sizes)))
        return round_updates(self.params, batch, self.config, self.task.loss)

    def noise_free_sum(self, sample: RoundSample) -> Params:
        """The sum of the round's clipped updates before noise (zero when nobody trained):
        what the sensitivity of docs/uedp.md bounds."""
        updates = self.user_updates(sample)
        if updates is None:
            return {k: torch.zeros_like(v) for k, v in self.params.items()}
        return clipped_sum(updates, self.config.beta)

    def step(self) -> dict:
        """Run the next round; returns (and records) its metrics row."""
        config = self.config
        t = self.round + 1
        start = time.perf_counter()
        sample = self.sampler.sample(self.rng)
        self._tokens = 0
        updates = self.user_updates(sample)
        users = 0 if updates is None else len(next(iter(updates.values())))
        # diagnostic (not private): the median norm of the round's unclipped updates
        norm = None if updates is None else float(global_norms(updates).median())
        if updates is not None:
            step = aggregate(updates, config, self.population, self.noise_rng)
        elif self.privacy is not None:  # nobody trained: the noise is still released
            zeros = {k: torch.zeros(1, *v.shape, device=v.device) for k, v in self.params.items()}
            step = aggregate(zeros, config, self.population, self.noise_rng)
        else:
            step = {k: torch.zeros_like(v) for k, v in self.params.items()}
        self.params = {k: self.params[k] + config.server_lr * step[k] for k in self.params}
        trained = time.perf_counter()
        row = {"round": t, "users": users, "update_norm": norm, "tokens": self._tokens,
               **self.task.evaluate(self.params),
               "epsilon": None if self.privacy is None else self.privacy.epsilon(t, config.delta),
               "seconds": trained - start, "eval_seconds": time.perf_counter() - trained}
        self.round = t
        self.metrics.append(row)
        return row

    # ----------------------------------------------------------- checkpoint
    def state_dict(self) -> dict:
        """Parameters (on the CPU), round, metrics, and both generators' states as plain
        values (dptext.rng.generator_state)."""
        return {"round": self.round,
                "params": {k: v.detach().cpu().clone() for k, v in self.params.items()},
                "metrics": [dict(r) for r in self.metrics],
                "population": self.population,
                "data_rng": generator_state(self.rng),
                "noise_rng": generator_state(self.noise_rng)}

    def load_state_dict(self, state: dict) -> None:
        if set(state["params"]) != set(self.params):
            raise DPTextError("the checkpoint holds other parameters than this task trains")
        for k, v in state["params"].items():
            if v.shape != self.params[k].shape:
                raise DPTextError(f"checkpoint parameter {k} has shape {tuple(v.shape)}, the "
                                  f"task {tuple(self.params[k].shape)}")
        rngs = (restore_generator(state["data_rng"]), restore_generator(state["noise_rng"]))
        if any(is_secure(g) != self.config.secure_rng for g in rngs):
            raise DPTextError("the checkpoint's generators are not of this run's kind "
                              f"(secure_rng={self.config.secure_rng})")
        self.params = {k: v.clone().to(self.device) for k, v in state["params"].items()}
        self.round = int(state["round"])
        self.metrics = [dict(r) for r in state["metrics"]]
        if "population" in state:  # the count released at the start (never released twice)
            self.population = float(state["population"])
        self.rng, self.noise_rng = rngs


def train(corpus: UserCorpus, rows: torch.Tensor, task, config: TrainConfig,
          on_round: Callable[[dict], None] | None = None, *,
          sampler: RoundSampler | None = None) -> tuple[dict, list[dict]]:
    """Train ``task`` (tasks.NextWordTask, tasks.ClassificationTask, causal_lm.CausalLMTask) for
    ``config.rounds`` rounds on ``rows`` (one row per sentence of ``corpus``: a tensor, or
    anything indexable like one, e.g. causal_lm.PrefixRows); returns the trained parameters and
    per-round metrics (the task's evaluation, epsilon spent, users trained, seconds of
    the round's sampling, local training and aggregation, and of the evaluation)."""
    trainer = FederatedTrainer(corpus, rows, task, config, sampler=sampler)
    while trainer.round < config.rounds:
        row = trainer.step()
        if on_round is not None:
            on_round(row)
    return trainer.params, trainer.metrics
