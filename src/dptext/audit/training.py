"""Canary audit of private federated training (user-level DP-FedAvg / UeDP, docs/audit.md).

The training algorithm is run R times in each of two worlds that differ in one user's data:
in world 1 the target user holds a canary whose update points along a fixed unit direction c
(the same share of c in every parameter tensor), in world 0 the target holds data with no update
at all - for the clipped, noised sum (the user count being public, as in the trainer), the same as
the user being absent. The attack scores each run by <theta_T - theta_0, c> and says "world 1"
above a threshold. With FPR and FNR its error rates, any (epsilon, delta)-DP algorithm has
FPR + e^eps FNR >= 1 - delta (and the symmetric inequality), so Clopper-Pearson upper bounds
on both rates give an epsilon lower bound (Jagielski et al. 2020, arXiv:2006.07709; Nasr et al.
2021, arXiv:2101.04535), compared with the accountant's epsilon. The threshold is chosen on half
of the runs and the rates estimated on the other half.

The model is a linear one split into ``tensors`` parameter tensors (as a transformer's weights
are), so that per-tensor clipping - which lets an update reach beta * sqrt(tensors) - shows.
Only the public training entry point (:func:`dptext.training.trainer.train`, or any function
with its signature passed as ``train_fn``) is called.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from dptext.audit.results import CONSISTENT, VIOLATION
from dptext.audit.stats import cp_upper, epsilon_from_error_rates
from dptext.errors import DPTextError
from dptext.validation import check_int


@dataclass
class CanaryTask:
    """A linear task for the trainer: ``tensors`` tensors of ``width`` entries; a row r has loss
    -<r, theta>, so a user's local update is steps * lr * (mean of its rows), whatever theta."""

    tensors: int = 64
    width: int = 1

    @property
    def dim(self) -> int:
        return self.tensors * self.width

    def init(self, generator):
        import torch

        return {f"t{i:04d}": torch.zeros(self.width) for i in range(self.tensors)}

    def loss(self, params, rows):
        import torch

        flat = torch.cat([params[k] for k in sorted(params)])
        return -(rows @ flat), torch.ones(rows.shape[:-1])

    def evaluate(self, params) -> dict:
        return {}

    def direction(self):
        """The canary direction c: unit norm, an equal share in every tensor."""
        import torch

        return torch.full((self.dim,), 1.0 / math.sqrt(self.dim))

    def project(self, params) -> float:
        import torch

        flat = torch.cat([params[k] for k in sorted(params)])
        return float(flat @ self.direction())


def _corpus(n_users: int, dim: int, canary: bool, strength: float, seed: int):
    """Users 1..n-1 hold fixed random rows (the same in both worlds); user 0 is the target."""
    import torch

    from dptext.training.corpus import UserCorpus

    rng = np.random.default_rng(seed)
    per_user = 2
    rows = torch.as_tensor(rng.standard_normal((n_users * per_user, dim)), dtype=torch.float32)
    c = torch.full((dim,), 1.0 / math.sqrt(dim))
    rows[:per_user] = strength * c if canary else 0.0
    n = n_users * per_user
    corpus = UserCorpus(tuple(f"user{i}" for i in range(n_users)),
                        tuple(f"s{i}" for i in range(n)),
                        np.repeat(np.arange(n_users), per_user), (), (),
                        tuple(() for _ in range(n)))
    return corpus, rows


class _Verdict:
    """The verdict of an audit that bounds epsilon from below (``epsilon_lower_bound``)
    against the accountant's claim, and its JSON form (an infinite bound as null)."""

    @property
    def verdict(self) -> str:
        return VIOLATION if self.epsilon_lower_bound > self.accountant_epsilon else CONSISTENT

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict
        if not math.isfinite(out["epsilon_lower_bound"]):
            out["epsilon_lower_bound"] = None
        return out


@dataclass
class TrainingAuditResult(_Verdict):
    algo: str
    settings: dict
    trials: int
    confidence: float
    delta: float
    accountant_epsilon: float
    threshold: float
    false_positives: int
    false_negatives: int
    tested: int  # runs per world on the estimation half
    fpr_upper: float
    fnr_upper: float
    epsilon_lower_bound: float
    seconds: float
    scores: dict = field(default_factory=dict)

    def summary(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.settings.items())
        lines = [
            f"training audit of {self.algo} ({settings})",
            f"  runs         {self.trials} per world (threshold on half, rates on the other "
            f"{self.tested}); confidence {self.confidence:g}",
            f"  attack       <theta_T - theta_0, c> >= {self.threshold:.4g}: "
            f"{self.false_positives}/{self.tested} false positives, "
            f"{self.false_negatives}/{self.tested} false negatives "
            f"(FPR <= {self.fpr_upper:.3g}, FNR <= {self.fnr_upper:.3g})",
            f"  lower bound  epsilon >= {self.epsilon_lower_bound:.4g} at delta={self.delta:g}; "
            f"accountant: {self.accountant_epsilon:.4g}",
            f"  verdict      {self.verdict}",
            f"  time         {self.seconds:.1f} s",
        ]
        return "\n".join(lines)


def _best_threshold(out_scores: np.ndarray, in_scores: np.ndarray, delta: float,
                     a: float) -> float:
    """The threshold with the largest epsilon lower bound on these scores."""
    cand = np.unique(np.concatenate([out_scores, in_scores]))
    best, best_t = -1.0, float(cand[0])
    for t in cand:
        fp, fn = int((out_scores >= t).sum()), int((in_scores < t).sum())
        eps = epsilon_from_error_rates(cp_upper(fp, len(out_scores), a / 2),
                                       cp_upper(fn, len(in_scores), a / 2), delta)
        if eps > best:
            best, best_t = eps, float(t)
    return best_t


def audit_training(config=None, *, trials: int = 200, confidence: float = 0.99,
                   users: int = 4, tensors: int = 64, strength: float = 100.0,
                   train_fn: Callable | None = None, seed: int | None = None
                   ) -> TrainingAuditResult:
    """Canary audit of ``config`` (a :class:`dptext.training.trainer.TrainConfig`; default:
    user-level DP-FedAvg, every user every round, one round, z = 2, beta = 0.05, delta = 1e-3).

    ``trials`` runs per world; ``train_fn(corpus, rows, task, config) -> (params, metrics)``
    (default the real trainer). ``strength`` scales the canary's rows (its update is clipped).
    """
    from dptext.training.trainer import PRIVATE, TrainConfig, train

    started = time.perf_counter()
    if config is None:
        config = TrainConfig(algo="userdp", rounds=1, q_u=1.0, z=2.0, beta=0.05, delta=1e-3,
                             local_steps=1, local_lr=1.0)
    if config.algo not in PRIVATE:
        raise DPTextError(f"audit a private algorithm ({', '.join(PRIVATE)}), not {config.algo}")
    if config.algo != "userdp":
        raise DPTextError("the canary audit implements user-level adjacency (algo userdp)")
    trials = check_int(trials, "trials", minimum=10)
    if not 0.0 < confidence < 1.0:
        raise DPTextError(f"confidence must lie in (0, 1), got {confidence}")
    train_fn = train_fn or train
    task = CanaryTask(tensors=check_int(tensors, "tensors", minimum=1))
    # zero-out adjacency: both worlds hold the same users (the target's rows are zero without
    # the canary), so the user count is public and the denominator is it in both
    config = replace(config, population=config.population or check_int(users, "users",
                                                                         minimum=2))
    seeds = np.random.SeedSequence(seed)
    base = int(seeds.generate_state(1)[0])
    worlds = {w: _corpus(check_int(users, "users", minimum=2), task.dim, w, strength, base)
              for w in (False, True)}
    run_seeds = seeds.spawn(2 * trials)
    scores = {False: [], True: []}
    for i in range(trials):
        for j, w in enumerate((False, True)):
            run = int(run_seeds[2 * i + j].generate_state(1)[0] >> 1)
            params, _ = train_fn(*worlds[w], task, replace(config, seed=run))
            scores[w].append(task.project(params))
    out_s, in_s = np.array(scores[False]), np.array(scores[True])
    half = trials // 2
    a = 1.0 - confidence
    threshold = _best_threshold(out_s[:half], in_s[:half], config.delta, a)
    test_out, test_in = out_s[half:], in_s[half:]
    fp, fn = int((test_out >= threshold).sum()), int((test_in < threshold).sum())
    fpr_hi, fnr_hi = cp_upper(fp, len(test_out), a / 2), cp_upper(fn, len(test_in), a / 2)
    privacy = config.privacy()
    return TrainingAuditResult(
        algo=config.algo,
        settings={"rounds": config.rounds, "q_u": config.q_u, "z": config.z,
                  "beta": config.beta, "tensors": tensors, "users": users},
        trials=trials, confidence=confidence, delta=config.delta,
        accountant_epsilon=privacy.epsilon(config.rounds, config.delta),
        threshold=threshold, false_positives=fp, false_negatives=fn, tested=len(test_out),
        fpr_upper=fpr_hi, fnr_upper=fnr_hi,
        epsilon_lower_bound=epsilon_from_error_rates(fpr_hi, fnr_hi, config.delta),
        seconds=time.perf_counter() - started,
        scores={"without": out_s.tolist(), "with": in_s.tolist()})


# --------------------------------------------------------------------------- one run
# guesses per side (top k "in", bottom k "out") tried, Bonferroni-corrected over the grid
ONE_RUN_GUESSES = (5, 10, 25, 50, 100, 250, 500, 1000, 2500)


@dataclass
class OneRunAuditResult(_Verdict):
    algo: str
    settings: dict
    canaries: int
    included: int
    confidence: float
    delta: float
    accountant_epsilon: float
    guesses: int  # r: guesses of the best k (k "in" + k "out")
    correct: int  # v
    epsilon_lower_bound: float
    by_guesses: list = field(default_factory=list)  # (r, v, bound) for every k tried
    seconds: float = 0.0

    def summary(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.settings.items())
        return "\n".join([
            f"one-run training audit of {self.algo} ({settings})",
            f"  canaries     {self.canaries} users, each included with probability 1/2 "
            f"({self.included} were); one training run",
            f"  guesses      top/bottom k by <theta_T - theta_0, c_i>: best {self.correct}/"
            f"{self.guesses} correct (k in {[g // 2 for g, _, _ in self.by_guesses]}, "
            f"Bonferroni); confidence {self.confidence:g}",
            f"  lower bound  epsilon >= {self.epsilon_lower_bound:.4g} at delta={self.delta:g} "
            f"(Steinke et al. 2023); accountant: {self.accountant_epsilon:.4g}",
            f"  verdict      {self.verdict}",
            f"  time         {self.seconds:.1f} s",
        ])


def canary_directions(count: int, dim: int):
    """``count`` orthonormal directions in ``dim`` dimensions, each spread evenly over every
    coordinate (rows 1.. of the Walsh-Hadamard matrix over sqrt(dim)): no canary's score sees
    another's update, and each has the same share in every parameter tensor."""
    import torch
    from scipy.linalg import hadamard

    if dim & (dim - 1) or dim < count + 1:
        raise DPTextError(f"the model's dimension (tensors x width) must be a power of two "
                          f"above the number of canaries ({count}), got {dim}")
    h = hadamard(dim)[1:count + 1]
    return torch.as_tensor(h / math.sqrt(dim), dtype=torch.float32)


def audit_training_one_run(config=None, *, canaries: int = 1000, background: int = 10,
                           tensors: int = 64, width: int = 16, strength: float = 100.0,
                           confidence: float = 0.95, train_fn: Callable | None = None,
                           seed: int | None = None) -> OneRunAuditResult:
    """One-run audit (Steinke, Nasr, Jagielski 2023) of ``config`` (default: user-level
    DP-FedAvg, every user every round, one round, z = 2, beta = 0.05, delta = 1e-5).

    ``canaries`` users each hold one canary row ``strength * c_i`` (its own orthonormal
    direction, :func:`canary_directions`) and are included independently with probability
    1/2; ``background`` users with random rows are always in. The fixed denominator counts
    every candidate (``population = canaries + background``: the user count is public). One
    run of ``train_fn`` (default the real trainer); each canary is scored by
    ``<theta_T - theta_0, c_i>``; the top k are guessed "in", the bottom k "out", for each k of
    ``ONE_RUN_GUESSES`` that fits (Bonferroni over them), and the number of correct guesses
    becomes an epsilon lower bound at ``config.delta`` with ``confidence``."""
    import torch

    from dptext.audit.stats import one_run_epsilon_lower_bound
    from dptext.training.corpus import UserCorpus
    from dptext.training.trainer import PRIVATE, TrainConfig, train

    started = time.perf_counter()
    if config is None:
        config = TrainConfig(algo="userdp", rounds=1, q_u=1.0, z=2.0, beta=0.05, delta=1e-5,
                             local_steps=1, local_lr=1.0)
    if config.algo != "userdp" or config.algo not in PRIVATE:
        raise DPTextError("the one-run audit implements user-level adjacency (algo userdp)")
    canaries = check_int(canaries, "canaries", minimum=10)
    background = check_int(background, "background", minimum=1)
    if not 0.0 < confidence < 1.0:
        raise DPTextError(f"confidence must lie in (0, 1), got {confidence}")
    task = CanaryTask(tensors=check_int(tensors, "tensors", minimum=1),
                      width=check_int(width, "width", minimum=1))
    directions = canary_directions(canaries, task.dim)
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    rows = [strength * directions[i] for i in np.flatnonzero(included)]
    rows += list(torch.as_tensor(rng.standard_normal((background, task.dim)),
                                 dtype=torch.float32))
    n = len(rows)
    corpus = UserCorpus(tuple(f"user{i}" for i in range(n)), tuple(f"s{i}" for i in range(n)),
                        np.arange(n), (), (), tuple(() for _ in range(n)))
    run_config = replace(config, population=canaries + background,
                         seed=int(rng.integers(2 ** 62)))
    params, _ = (train_fn or train)(corpus, torch.stack(rows), task, run_config)
    flat = torch.cat([params[k] for k in sorted(params)])
    scores = (directions @ flat).numpy()
    order = np.argsort(-scores, kind="stable")
    ks = [k for k in ONE_RUN_GUESSES if 2 * k <= canaries] or [canaries // 2]
    p = (1.0 - confidence) / len(ks)
    tried = []
    for k in ks:
        correct = int(included[order[:k]].sum() + (~included[order[-k:]]).sum())
        tried.append((2 * k, correct,
                      one_run_epsilon_lower_bound(canaries, 2 * k, correct, config.delta, p)))
    r, v, bound = max(tried, key=lambda t: t[2])
    privacy = run_config.privacy()  # the public population: no count release
    return OneRunAuditResult(
        algo=config.algo,
        settings={"rounds": config.rounds, "q_u": config.q_u, "z": config.z,
                  "beta": config.beta, "tensors": tensors, "background": background},
        canaries=canaries, included=int(included.sum()), confidence=confidence,
        delta=config.delta, accountant_epsilon=privacy.epsilon(config.rounds, config.delta),
        guesses=r, correct=v, epsilon_lower_bound=bound, by_guesses=tried,
        seconds=time.perf_counter() - started)
