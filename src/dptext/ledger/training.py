"""Charging a private training run: every user of the training corpus pays the run's (eps, delta).

User-level DP (DP-FedAvg) and UeDP bound what the trained model reveals about any one user's
whole data, so the run is one (epsilon, delta) event per user - not per record - whatever the
number of their texts (docs/uedp.md). A model cannot leave a user out after training, so the
charge is all or nothing: if any user would exceed a budget, nobody is charged and the call
raises. Use :func:`training_preflight` before training to find those users (and drop them from
the corpus or stop), then :func:`charge_training` after training and *before* the model is
written where others can read it; with ``commit=False`` it returns the pending charge ids to
commit once the model files are durable (charge before release, as for text).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError


@dataclass(frozen=True)
class TrainingCharge:
    release_id: str
    users: int
    charge_ids: list[int]
    epsilon: float
    delta: float
    committed: bool


def training_event(epsilon: float, delta: float, mechanism: str) -> PrivacyEvent:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise DPTextError(f"a training run's epsilon must be finite and > 0, got {epsilon}")
    if not 0.0 <= delta < 1.0:
        raise DPTextError(f"a training run's delta must be in [0, 1), got {delta}")
    return PrivacyEvent("approx" if delta else "pure", epsilon, delta, 1, mechanism,
                        "user-level guarantee of the trained model for all of a user's data")


def _users(user_ids: Iterable) -> list[str]:
    users = sorted({str(u) for u in user_ids if u is not None and str(u) != ""})
    if not users:
        raise DPTextError("the training corpus names no users to charge")
    return users


def training_preflight(ledger, user_ids: Iterable, epsilon: float, delta: float, *,
                       owner: str, dataset: str, mechanism: str = "uedp") -> list[str]:
    """The users whose budget the run's (epsilon, delta) would exceed (none charged)."""
    event = training_event(epsilon, delta, mechanism)
    return [u for u in _users(user_ids)
            if ledger.would_exceed(u, [event], owner=owner, dataset=dataset)]


def charge_training(ledger, user_ids: Iterable, epsilon: float, delta: float, *, owner: str,
                    dataset: str, mechanism: str = "uedp", params: dict | None = None,
                    release_key: str | None = None, commit: bool = True) -> TrainingCharge:
    """Charge every user in ``user_ids`` one (epsilon, delta) event in one transaction; all or
    nothing (DPTextError naming the first over-budget user's reason, nothing charged).

    ``release_key`` (e.g. a hash of the run's output directory and config) makes a retried
    call continue the same release instead of charging twice.
    """
    event = training_event(epsilon, delta, mechanism)
    users = _users(user_ids)
    release_id = ledger.open_release(owner=owner, dataset=dataset, mechanism=mechanism,
                                     params={"epsilon": epsilon, "delta": delta,
                                             **(params or {})},
                                     release_key=release_key)
    decisions = ledger.reserve(release_id, [(f"user:{u}", u, [event]) for u in users],
                               all_or_nothing=True)
    ids = [d.charge_id for d in decisions]
    if commit:
        ledger.commit(release_id, ids)
    return TrainingCharge(release_id, len(users), ids, epsilon, delta, commit)
