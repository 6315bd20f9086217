"""The ledger's amounts and scopes: epsilons and deltas in fixed point, a record's cost, the
budget checks of :meth:`dptext.ledger.Ledger.reserve`, and the checked owner/dataset names.

Fixed point (docs/ledger.md): epsilons in units of 1e-9, deltas in units of 1e-15; a charge is
rounded up (after forgiving a relative 1e-12 of floating-point noise, so 0.1 is charged as 0.1)
and a budget rounded down, so sums are exact and do not depend on the order of writers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dptext.accounting.composition import basic_composition
from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError

EPS_SCALE = 10**9
DELTA_SCALE = 10**15
MAX_UNITS = 2**62  # headroom below SQL's signed 64-bit integers
DEFAULT_DELTA = 1e-6
ANY = "*"  # a budget for every owner / every dataset


def round_up(x: float, scale: int) -> int:
    """A charge in fixed point: rounded up, forgiving a relative 1e-12 of float noise."""
    if x <= 0:
        return 0
    n = math.ceil(x * scale * (1 - 1e-12))
    if n >= MAX_UNITS:
        raise DPTextError(f"a charge of {x:g} is too large for the ledger")
    return n


def round_down(x: float, scale: int) -> int:
    return min(math.floor(x * scale * (1 + 1e-12)), MAX_UNITS)


def eps_of(n: int) -> float:
    return n / EPS_SCALE


def delta_of(n: int) -> float:
    return n / DELTA_SCALE


def events_cost(events: Iterable[PrivacyEvent]) -> tuple[int, int]:
    eps, delta = basic_composition(events)
    if math.isinf(eps):
        raise DPTextError("an event with an infinite epsilon cannot be charged")
    return round_up(eps, EPS_SCALE), round_up(delta, DELTA_SCALE)


def fits(limits, unit: str, eps_n: int, delta_n: int) -> bool:
    """Whether (eps_n, delta_n) fits ``unit``'s every (budget eps, budget delta, running
    totals); if so, added to the totals."""
    for b_eps, b_delta, tot in limits:
        cur = tot.get(unit)
        if (eps_n > b_eps or delta_n > b_delta) if cur is None else (
                cur[0] + eps_n > b_eps or cur[1] + delta_n > b_delta):
            return False
    for _, _, tot in limits:
        cur = tot.get(unit)
        if cur is None:
            tot[unit] = [eps_n, delta_n]
        else:
            cur[0] += eps_n
            cur[1] += delta_n
    return True


def over_budget(checks, unit: str, eps_n: int, delta_n: int) -> str | None:
    """Why charging (eps_n, delta_n) to ``unit`` would break a budget, or None."""
    for (o, d, b_eps, b_delta), tot in checks:
        cur = tot.get(unit) or (0, 0)
        if eps_n > b_eps or delta_n > b_delta:
            return (f"this record alone costs epsilon {eps_of(eps_n):.6g}, delta "
                    f"{delta_of(delta_n):.3g}: more than the whole budget (epsilon "
                    f"{eps_of(b_eps):g}, delta {delta_of(b_delta):g}) for {scope_text(o, d)}")
        if cur[0] + eps_n > b_eps or cur[1] + delta_n > b_delta:
            return (f"over budget for {scope_text(o, d)}: the unit has spent epsilon "
                    f"{eps_of(cur[0]):.6g}, delta {delta_of(cur[1]):.3g} (pending included); "
                    f"this record costs {eps_of(eps_n):.6g}, {delta_of(delta_n):.3g}; budget "
                    f"{eps_of(b_eps):g}, {delta_of(b_delta):g}")
    return None


def scope_text(owner: str, dataset: str) -> str:
    o = "any owner" if owner == ANY else f"owner {owner!r}"
    d = "any dataset" if dataset == ANY else f"dataset {dataset!r}"
    return f"{o}, {d}"


def checked_name(what: str, value: str, *, wildcard: bool = False) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DPTextError(f"the {what} must be a non-empty name, got {value!r}")
    if value == ANY and not wildcard:
        raise DPTextError(f"{what} {ANY!r} is only for budgets (any {what})")
    return value
