"""What a training run reports (training/run.py): the result line with its guarantee
(the epsilon of users, of entities held by at most K users and of the wider ones), the
comparison with the untrained model, the privacy spent so far, the epsilon each detected entity
gets (what ``--ledger`` charges), and the guard that stops a diverging run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dptext.errors import DPTextError

# A run whose held-out loss (nats) grows by more than this over the first round's is stopped:
# log(100), perplexity multiplied by 100.
DIVERGENCE_NATS = math.log(100.0)
# private algorithms that make no entity-level claim
USER_LEVEL = ("userdp", "dpsgd-example")


REFERENCE_DELTA = 1e-5  # the result line always prints the epsilon at this delta too


def guarantee_epsilons(config, rounds: int, wide: dict | None) -> dict:
    """The run's epsilon at delta 1e-5 and at its own delta (and the wide entities' at both):
    the result line prints both, so runs at different deltas can be compared."""
    privacy = config.privacy()
    if privacy is None:
        return {}
    deltas = sorted({REFERENCE_DELTA, config.delta}, reverse=True)
    out = {"epsilon_at_delta": [[d, privacy.epsilon(rounds, d)] for d in deltas]}
    if wide:
        wider = privacy.for_entity_users(wide["most_other_holders"])
        out["wide_epsilon_at_delta"] = [[d, wider.epsilon(rounds, d)] for d in deltas]
    return out


def _at_deltas(pairs) -> str:
    return " / ".join(f"{eps:.4g} at delta {d:g}" for d, eps in pairs)


def headline(summary: dict, algo: str) -> str:
    """The run's result in one line: the held-out metric after training against the untrained
    model's, and the guarantee - the protected unit (the field that names it), the epsilon at
    delta 1e-5 and at the run's delta, for UeDP the users and entities held by at most K users
    and the (larger) epsilon of the entities held by more - and what it does not cover
    (docs/uedp.md)."""
    last = summary["rounds"][-1]
    rounds = last["round"]
    before = "pretrained" if "pretrained" in summary else "untrained"
    if summary["task"] == "nwp":
        result = (f"held-out perplexity {last['perplexity']:.2f} after {rounds} rounds "
                  f"({before} {summary['untrained']['perplexity']:.2f})")
    else:
        result = (f"held-out error rate {last['error_rate']:.3f}, loss {last['loss']:.4g} after "
                  f"{rounds} rounds (untrained loss {summary['untrained']['loss']:.4g})")
    line = f"{algo}: {result}"
    if last.get("epsilon") is None:
        return line + "; no DP guarantee"
    config = summary["config"]
    delta, k = config["delta"], config["entity_users"]
    pairs = summary.get("epsilon_at_delta") or [[delta, last["epsilon"]]]
    unit = summary.get("unit", "a user")
    if algo in USER_LEVEL:
        each = (f" (at most {config['examples_per_user']} examples each)"
                if algo == "dpsgd-example" else "")
        return (line + f"; epsilon {_at_deltas(pairs)} per user{each}; unit: {unit}; not "
                f"covered: an entity (a name, a place) that occurs in other users' texts - "
                f"user-level DP protects each user's own data, not what others write about "
                f"them")
    line += (f"; epsilon {_at_deltas(pairs)} per user and per entity held by at most K={k} "
             f"other users; unit: {unit}")
    wide = summary.get("wide_entities")
    not_covered = ("a mention the detector missed in a sentence with a detected entity "
                   "(docs/uedp.md, 'Assumptions')")
    if wide:
        wide_pairs = summary.get("wide_epsilon_at_delta") or [[delta, wide["epsilon"]]]
        not_covered = (f"the {summary['entities_held_by_more_than_K_users']} entities held "
                       f"by more users (up to {wide['most_other_holders']}), which get only "
                       f"epsilon {_at_deltas(wide_pairs)}; " + not_covered)
    return line + f"; not covered: {not_covered}"


def loss_metrics(losses, task: str) -> dict:
    """Held-out perplexity (nwp) or mean cross-entropy (cls) from per-sentence losses."""
    nll, tokens = losses
    loss = float(nll.sum()) / max(float(tokens.sum()), 1.0)
    return {"perplexity": math.exp(loss), "loss": loss} if task == "nwp" else {"loss": loss}


def learning_summary(trainer, task, start, clusters, kind: str, before: str = "untrained") -> dict:
    """The trained model against the untrained one and the task's baseline (uniform, or the
    class prior) on the held-out text; when it learned nothing visible, a one-line
    ``warning`` with the likely cause (training/learning.py)."""
    from dptext.training.learning import learning_check, likely_cause

    name, baseline_loss = task.baseline
    check = learning_check(start, task.sentence_losses(trainer.params), baseline_loss,
                           clusters, baseline=name)
    out: dict[str, Any] = {"learning": check}
    if check["learned"]:
        return out
    norms = [r["update_norm"] for r in trainer.metrics if r.get("update_norm") is not None]
    cause = likely_cause(trainer.config, sum(v.numel() for v in trainer.params.values()),
                         trainer.population,
                         rose=check["final_loss"] > check["untrained_loss"],
                         update_norm=float(np.median(norms)) if norms else None)
    if kind == "nwp":
        seen = (f"held-out perplexity {math.exp(check['final_loss']):.4g} against "
                f"{math.exp(check['untrained_loss']):.4g} {before} and "
                f"{math.exp(check['baseline_loss']):.4g} {name}")
    else:
        seen = (f"held-out loss {check['final_loss']:.4g} against "
                f"{check['untrained_loss']:.4g} {before} and {check['baseline_loss']:.4g} "
                f"{name}")
    out["warning"] = f"nothing visibly learned ({seen}); likely cause: {cause}"
    return out


def privacy_so_far(config, rounds: int) -> dict | None:
    """What metrics.json says about the budget spent after ``rounds`` rounds (the accountant's
    state: the event composed ``rounds`` times)."""
    privacy = config.privacy()
    if privacy is None:
        return None
    return {"epsilon_spent": privacy.epsilon(rounds, config.delta), "delta": config.delta,
            "rounds_composed": rounds, "accountant": "rdp (dp_accounting)",
            "event": (f"Gaussian(z={privacy.count_z:.6g}) [the user count] + "
                      if privacy.count_z is not None else "")
                     + f"SelfComposed(PoissonSampled({privacy.sampling_rate:.6g}, "
                       f"Gaussian(z={privacy.z:.6g})), {rounds})",
            "sensitivity": f"{privacy.sensitivity_factor:g} * beta"}


def wide_entities(corpus, config) -> dict:
    """Entities held by more than K users, and the epsilon that really holds for them: the
    run's noise std is z * beta * S_K, so for an entity held by M > K other users the noise
    multiplier is z * S_K / S_M at the sampling rate of M holders (computed by the accountant;
    docs/uedp.md)."""
    spread = corpus.entity_users()
    privacy = config.privacy()
    # conservatively, every holder of the entity counts as another holder
    wide = int((spread > config.entity_users).sum()) if len(spread) else 0
    out: dict[str, Any] = {"entities_held_by_more_than_K_users": wide}
    if wide and privacy is not None and config.algo not in USER_LEVEL:
        most = int(spread.max())
        wider = privacy.for_entity_users(most)
        eps = wider.epsilon(config.rounds, config.delta)
        out["wide_entities"] = {
            "most_other_holders": most, "noise_multiplier": wider.z,
            "epsilon": eps, "delta": config.delta,
            "note": (f"{wide} detected entities are held by more than K={config.entity_users} "
                     f"other users (at most {most}); for them this run is ({eps:.4g}, "
                     f"{config.delta:g})-DP (noise multiplier z*S_K/S_M = {wider.z:.4g}), "
                     f"not the epsilon printed for K"),
        }
    return out


def entity_epsilons(corpus, config) -> dict[str, float]:
    """Each detected entity of ``corpus`` (held by at least one user) with the epsilon this run
    gives it at ``config.delta``: the run's epsilon when at most K users hold it, else the one of
    :meth:`TrainingPrivacy.for_entity_users` at its number of holders (every holder counted as
    another holder, as in :func:`wide_entities`). Empty for runs without an entity-level
    guarantee (user-level DP; non-private runs)."""
    privacy = config.privacy()
    if privacy is None or config.algo in USER_LEVEL or corpus.n_entities == 0:
        return {}
    spread = corpus.entity_users()
    by_spread: dict[int, float] = {}
    base = privacy.epsilon(config.rounds, config.delta)
    out = {}
    for e in np.flatnonzero(spread > 0):
        m = int(spread[e])
        if m <= config.entity_users:
            out[corpus.entity_keys[e]] = base
            continue
        if m not in by_spread:
            by_spread[m] = privacy.for_entity_users(m).epsilon(config.rounds, config.delta)
        out[corpus.entity_keys[e]] = by_spread[m]
    return out


class Diverged(DPTextError):
    def __init__(self, message: str, metrics: list[dict]) -> None:
        super().__init__(message)
        self.metrics = metrics


class DivergenceGuard:
    """Stops a run whose held-out loss is not finite or grows by more than ``DIVERGENCE_NATS``
    over the first round's (perplexity x100), with the likely cause: for a private run, the
    noise norm against the clipped signal; otherwise the learning rate."""

    def __init__(self, config) -> None:
        self.config = config
        self.first: float | None = None
        self.seen: list[dict] = []

    def check(self, row: dict) -> None:
        self.seen.append(row)
        loss = row.get("loss")
        if loss is None:
            return
        if self.first is None and math.isfinite(loss):
            self.first = loss
        bad = not math.isfinite(loss) or (self.first is not None
                                          and loss - self.first > DIVERGENCE_NATS)
        if not bad:
            return
        c = self.config
        if c.privacy() is not None:
            std = c.z * c.beta * c.privacy().sensitivity_factor
            cause = (f"the noise (std {std:.3g} per coordinate, divided by q_u*|U|) swamps the "
                     f"clipped signal (norm <= beta = {c.beta:g} per user): use more users, a "
                     f"larger q_u, fewer rounds, or a smaller --local-lr/--server-lr "
                     f"({c.local_lr:g}/{c.server_lr:g})")
        else:
            cause = (f"the learning rate is likely too high (--local-lr {c.local_lr:g}, "
                     f"--server-lr {c.server_lr:g})")
        raise Diverged(f"training diverged at round {row['round']}: held-out loss {loss:.4g} "
                       f"(first round {self.first if self.first is not None else 'n/a'}); "
                       f"{cause}", list(self.seen))
