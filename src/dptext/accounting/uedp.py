"""Privacy accounting for UeDP-Alg and user-level DP-FedAvg (docs/uedp.md, "Accounting").

Every round is one Poisson-subsampled Gaussian mechanism: a unit (the differing user-entity pair
of Definition 2, or the differing user for user-level DP) touches a round with probability
``q_eff`` and then moves the noised sum of clipped updates by at most its sensitivity, which the
noise multiplier ``z`` is relative to. dp_accounting composes the ``T`` rounds (RDP by default,
PLD as a second opinion); nothing here is a hand-written moments accountant.

q_eff (derivation in docs/uedp.md): a round's output depends on the differing pair (u', e') only
when u' is sampled, or e' is sampled and one of the K other users holding e' is sampled. The proof
conditions on the other users' coins (they also move the rest of the sum), so in the worst case a
holder is sampled and::

    q_eff = q_u                              if K = 0 (e' only in u's own data)
    q_eff = 1 - (1 - q_u) * (1 - q_e)        if K >= 1

An extended entity (a sentence of S, paper section IV) may be held by another user: K = 1 with q_s
in place of q_e. f_E+ protects both kinds, so its guarantee uses the worse of the two; the naive
f_E never trains on S and only the detected-entity case applies.

Example-level DP-SGD with a user-level guarantee (``dpsgd-example``; Charles et al. 2024's
"example-level sampling"): each user keeps at most k examples, every round samples each example
independently with ``q_u`` and sums the examples' clipped updates. Adding a user adds at most k
clipped updates, present when any of its examples is sampled, so a round is dominated by a
Poisson-sampled Gaussian at rate ``1 - (1 - q)^k`` with sensitivity ``k beta`` (the same
convexity argument as for q_eff above; docs/uedp.md, "Comparison").

The denominator (arXiv 2605.15648, docs/uedp.md "Dividing by q_u |U|"): the estimators divide the
noised sum by q_u |U|. With |U| a public number that is post-processing. With |U| the training
corpus's own count it is not: D' has one more user, the release is scaled by 1/(q_u (|U| + 1))
instead of 1/(q_u |U|), and the noise's spread over d coordinates reveals the scale (the
paper's "expected-averaged" SGM). Such a run releases the count once, with Gaussian noise of
multiplier ``count_z`` (``TrainingPrivacy.count_z``), and divides by the released count: the
accountant composes that Gaussian with the rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import dp_accounting
from dp_accounting import pld, rdp

from dptext.errors import DPTextError

ALGORITHMS = ("uedp", "uedp-naive", "userdp", "dpsgd-example")
ACCOUNTANTS = ("rdp", "pld")
# Integer orders only: dp_accounting's series for fractional orders fails to converge at large
# sampling rates (it then drops the order with a warning); integer orders are computed exactly.
RDP_ORDERS = tuple(list(range(2, 64)) + [80, 96, 128, 192, 256, 512, 1024])
# The PLD's loss grid (dp_accounting's value_discretization_interval), and the bytes one point of
# the composed grid costs while dp_accounting self-composes it by FFT (measured about 110).
PLD_DISCRETIZATION = 1e-3
_PLD_BYTES_PER_POINT = 160.0


def _check_rate(name: str, q: float) -> None:
    if not (0.0 <= q <= 1.0) or math.isnan(q):
        raise DPTextError(f"{name} must lie in [0, 1], got {q}")


def pair_sampling_rate(q_u: float, q_entity: float, other_holders: int) -> float:
    """Worst-case probability that a round touches the differing user-entity pair, given the
    coins of every other user (docs/uedp.md, "Sampling rate q_eff")."""
    _check_rate("q_u", q_u)
    _check_rate("entity sampling rate", q_entity)
    if other_holders < 0:
        raise DPTextError(f"entity holders must be >= 0, got {other_holders}")
    if other_holders == 0:
        return q_u
    return 1.0 - (1.0 - q_u) * (1.0 - q_entity)


@dataclass(frozen=True)
class TrainingPrivacy:
    """The sampling and noise parameters of a private training run, and what they guarantee.

    ``algo``: ``uedp`` (estimator f_E+, trains on E and S), ``uedp-naive`` (f_E, E only) or
    ``userdp`` (user-level DP-FedAvg). ``entity_users`` is K, the largest number of users other
    than the differing user whose data may contain the protected entity (the adjacency of
    Definition 2 restricted to entities spread over at most K other users; see docs/uedp.md).
    ``z`` is relative to the sensitivity of the sum of clipped updates, ``sensitivity_factor``.
    ``dpsgd-example``: example-level DP-SGD, ``q_u`` the rate of an example, each user holding at
    most ``examples_per_user`` (k) examples (module docstring).
    """

    algo: str
    q_u: float
    z: float
    q_e: float = 0.0
    q_s: float = 0.0
    entity_users: int = 1
    examples_per_user: int = 1
    # noise multiplier of the one noisy release of the user count that the denominator divides
    # by when the count is not public (module docstring); None: a public count, no release
    count_z: float | None = None

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHMS:
            raise DPTextError(f"unknown algorithm {self.algo!r}; choose from {ALGORITHMS}")
        for name in ("q_u", "q_e", "q_s"):
            _check_rate(name, getattr(self, name))
        if not (math.isfinite(self.z) and self.z > 0):
            raise DPTextError(f"noise multiplier z must be finite and > 0, got {self.z}")
        if self.entity_users < 0:
            raise DPTextError(f"entity users must be >= 0, got {self.entity_users}")
        if self.examples_per_user < 1:
            raise DPTextError(f"examples per user must be >= 1, got {self.examples_per_user}")
        if self.count_z is not None and not (math.isfinite(self.count_z) and self.count_z > 0):
            raise DPTextError(f"count noise multiplier must be finite and > 0, got "
                              f"{self.count_z}")

    @property
    def count_sensitivity(self) -> int:
        """How much the training corpus's unit count (the |U| of the denominator) can change
        between adjacent data sets: u' itself, and for UeDP each holder of e' whose every
        sentence holds e' (it has no sentence left in D); example-level DP-SGD: the user's k
        examples, each a unit."""
        if self.algo == "userdp":
            return 1
        if self.algo == "dpsgd-example":
            return self.examples_per_user
        holders = self.entity_users
        if self.algo == "uedp":
            holders = max(holders, 1)
        return 1 + holders

    @property
    def count_std(self) -> float | None:
        """Standard deviation (in units) of the released count; None: the count is public."""
        return None if self.count_z is None else self.count_z * self.count_sensitivity

    @property
    def sensitivity_factor(self) -> float:
        """Sensitivity of the sum of per-user updates clipped to 1 (multiply by beta).

        The differing user adds one clipped update; each of the K other holders of the differing
        entity can change its own clipped update by at most 2 beta (docs/uedp.md, Lemma 1 as
        implemented). For f_E+ the differing entity may also be one sentence of S held by another
        user (K = 1). User-level DP: one clipped update.
        """
        if self.algo == "userdp":
            return 1.0
        if self.algo == "dpsgd-example":  # the clipped updates of the user's k examples
            return float(self.examples_per_user)
        holders = self.entity_users
        if self.algo == "uedp":
            holders = max(holders, 1)  # an extended entity may be another user's sentence
        return 1.0 + 2.0 * holders

    @property
    def sampling_rate(self) -> float:
        """q_eff: the probability that one round touches the data of the differing unit."""
        if self.algo == "userdp":
            return self.q_u
        if self.algo == "dpsgd-example":  # any of the user's k examples is sampled
            return 1.0 - (1.0 - self.q_u) ** self.examples_per_user
        rate = pair_sampling_rate(self.q_u, self.q_e, self.entity_users)
        if self.algo == "uedp":
            # an extended entity (one sentence of S) is held by exactly one user
            rate = max(rate, pair_sampling_rate(self.q_u, self.q_s, 1))
        return rate

    def event(self, rounds: int) -> dp_accounting.DpEvent:
        if rounds < 0:
            raise DPTextError(f"rounds must be >= 0, got {rounds}")
        one = dp_accounting.PoissonSampledDpEvent(
            self.sampling_rate, dp_accounting.GaussianDpEvent(self.z))
        rounds_event = dp_accounting.SelfComposedDpEvent(one, rounds)
        if self.count_z is None:
            return rounds_event
        # the count is released once, before the first round
        return dp_accounting.ComposedDpEvent(
            [dp_accounting.GaussianDpEvent(self.count_z), rounds_event])

    def epsilon(self, rounds: int, delta: float, *, accountant: str = "rdp") -> float:
        """Epsilon after ``rounds`` rounds at ``delta``, composed by dp_accounting."""
        if not (0.0 < delta < 1.0):
            raise DPTextError(f"delta must lie in (0, 1), got {delta}")
        if (rounds == 0 or self.sampling_rate == 0.0) and self.count_z is None:
            return 0.0
        if accountant == "pld":
            self.check_pld_memory(rounds)
        acc = _accountant(accountant)
        acc.compose(self.event(rounds))
        return float(acc.get_epsilon(delta))

    def pld_memory(self, rounds: int) -> float:
        """Bytes the PLD composition of ``rounds`` rounds is estimated to need.

        dp_accounting composes by one FFT over the composed privacy loss's support, cut where
        less than 1e-15 of the mass lies beyond. Above, a Chernoff bound with the RDP of the same
        rounds bounds that cut (the RDP epsilon at delta 1e-15); below, the removal direction's
        loss is never under ``rounds * log(1 - q_eff)`` and the addition direction's tail is
        bounded like the upper one. Points = that range over the discretization; each costs about
        110 bytes of complex FFT buffers and copies (measured: docs/uedp.md), taken as 160.
        """
        if rounds == 0 or self.sampling_rate == 0.0:
            return 0.0
        acc = rdp.RdpAccountant(list(RDP_ORDERS))
        acc.compose(self.event(rounds))
        upper = float(acc.get_epsilon(1e-15))
        lower = upper if self.sampling_rate >= 1.0 else min(
            upper, -rounds * math.log1p(-self.sampling_rate))
        points = (upper + lower + 2.0) / PLD_DISCRETIZATION
        return _PLD_BYTES_PER_POINT * points

    def check_pld_memory(self, rounds: int) -> None:
        """Refuse, before composing, a PLD too fine for the memory available (one line)."""
        from dptext.validation import available_memory

        needed = self.pld_memory(rounds)
        free = available_memory()
        if free is not None and needed > 0.8 * free:
            raise DPTextError(
                f"PLD accounting at z = {self.z:.4g} over {rounds} rounds would need about "
                f"{needed / 2**30:.1f} GiB of memory ({free / 2**30:.1f} GiB is available): its "
                f"loss grid of {PLD_DISCRETIZATION:g} is too fine for so little noise; use "
                f"--accountant rdp, or a larger z")

    def with_z(self, z: float) -> TrainingPrivacy:
        return replace(self, z=z)

    def for_entity_users(self, k: int) -> TrainingPrivacy:
        """The guarantee the same run (same noise std z * beta * S_K) gives entities held by
        ``k`` other users: noise multiplier z * S_K / S_k at the sampling rate of k holders."""
        wider = replace(self, entity_users=k)
        count_z = (None if self.count_z is None else
                   self.count_z * self.count_sensitivity / wider.count_sensitivity)
        return replace(wider.with_z(self.z * self.sensitivity_factor / wider.sensitivity_factor),
                       count_z=count_z)


def _accountant(name: str):
    if name == "rdp":
        return rdp.RdpAccountant(list(RDP_ORDERS))
    if name == "pld":
        return pld.PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)
    raise DPTextError(f"unknown accountant {name!r}; choose from {ACCOUNTANTS}")


def calibrate_z(privacy: TrainingPrivacy, rounds: int, epsilon: float, delta: float, *,
                accountant: str = "rdp", tolerance: float = 1e-3) -> float:
    """Smallest noise multiplier z whose ``rounds``-round epsilon is <= ``epsilon``, found by
    dp_accounting's ``calibrate_dp_mechanism`` (Brent's method over the accountant)."""
    from dp_accounting.mechanism_calibration import ExplicitBracketInterval

    if not (math.isfinite(epsilon) and epsilon > 0):
        raise DPTextError(f"target epsilon must be finite and > 0, got {epsilon}")
    if rounds <= 0:
        raise DPTextError(f"rounds must be >= 1 to calibrate, got {rounds}")
    if accountant == "pld":
        return _calibrate_pld(privacy, rounds, epsilon, delta, tolerance)
    low, high = 1e-2, 1e5
    if privacy.with_z(high).epsilon(rounds, delta, accountant=accountant) > epsilon:
        raise DPTextError(f"epsilon {epsilon} is out of reach: z > 1e5 would be needed")
    if privacy.with_z(low).epsilon(rounds, delta, accountant=accountant) <= epsilon:
        return low
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _accountant(accountant), lambda z: privacy.with_z(z).event(rounds),
        epsilon, delta, bracket_interval=ExplicitBracketInterval(low, high),
        tol=tolerance * low)
    # calibrate_dp_mechanism returns a z whose epsilon is within the target
    return float(z)


def _calibrate_pld(privacy: TrainingPrivacy, rounds: int, epsilon: float, delta: float,
                   tolerance: float) -> float:
    """PLD calibration bracketed by the RDP answer, never composing at a z far below it.

    The PLD's memory grows with the loss range, about ``rounds / z**2`` grid points: a bracket
    reaching down to z = 0.01 (as the RDP search uses) needs tens of GiB. RDP is the looser
    accountant, so its z (found in seconds) is at or just above the PLD's: the bracket starts
    there and steps down by 20% until the PLD epsilon exceeds the target. Every step checks its
    memory estimate first and refuses in one line rather than being killed.
    """
    from dp_accounting.mechanism_calibration import ExplicitBracketInterval

    low = 1e-2
    step = 1.25

    def eps(z: float) -> float:
        return privacy.with_z(z).epsilon(rounds, delta, accountant="pld")

    high = calibrate_z(privacy, rounds, epsilon, delta, accountant="rdp", tolerance=tolerance)
    for _ in range(40):
        if eps(high) <= epsilon:
            break
        high *= step
    else:
        raise DPTextError(f"epsilon {epsilon} is out of reach of the PLD accountant")
    while True:
        if high <= low:
            return low
        lower = max(low, high / step)
        if eps(lower) > epsilon:
            break
        high = lower
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _accountant("pld"), lambda z: privacy.with_z(z).event(rounds),
        epsilon, delta, bracket_interval=ExplicitBracketInterval(lower, high),
        tol=tolerance * low)
    return float(z)


def epsilon_curve(privacy: TrainingPrivacy, rounds: list[int], delta: float, *,
                  accountant: str = "rdp") -> list[float]:
    """Epsilon after each number of rounds in ``rounds`` (for the epsilon-vs-rounds plot)."""
    return [privacy.epsilon(t, delta, accountant=accountant) for t in rounds]
