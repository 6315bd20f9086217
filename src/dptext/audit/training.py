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
from dptext.mechanisms.base import check_int


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


@dataclass
class TrainingAuditResult:
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

    @property
    def verdict(self) -> str:
        return VIOLATION if self.epsilon_lower_bound > self.accountant_epsilon else CONSISTENT

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict
        if not math.isfinite(out["epsilon_lower_bound"]):
            out["epsilon_lower_bound"] = None
        return out

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
