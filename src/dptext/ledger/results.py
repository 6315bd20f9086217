"""What the ledger's calls return: a record's decision, a unit's totals, budgets, unit rows and
the result of a verification."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from dptext.errors import DPTextError
from dptext.ledger.amounts import DEFAULT_DELTA


class ReleaseExists(DPTextError):
    """``open_release(..., exclusive=True)``: the release key was used before (``release_id``
    is that release)."""

    def __init__(self, message: str, release_id: str, created: str) -> None:
        super().__init__(message)
        self.release_id, self.created = release_id, created


class Decision(NamedTuple):
    """What :meth:`Ledger.reserve` decided for one record (a named tuple: a batch makes one
    per record, 4x cheaper than a frozen dataclass)."""

    allowed: bool
    charge_id: int | None
    reason: str | None
    already: bool


@dataclass(frozen=True, slots=True)
class Spent:
    """A unit's total (in a scope): basic composition of every charge, pending included.

    ``epsilon_pld`` is dp_accounting's PLD epsilon at ``delta`` (the ledger's), never above
    ``epsilon_basic`` when ``delta_basic <= delta``; ``inf`` when the stored deltas exceed
    ``delta``; None when not computed. ``records`` counts released records, ``pending`` the
    charged ones not (yet) marked released, ``withheld`` the records refused by a budget.
    """

    epsilon_basic: float
    delta_basic: float
    epsilon_pld: float | None
    records: int
    pending: int
    epsilon_pending: float = 0.0
    withheld: int = 0
    delta: float = DEFAULT_DELTA
    #: the tightest adaptive composition at ``delta``: PLD or, for exponential-mechanism
    #: events, bounded-range composition (:func:`dptext.accounting.composition.br_epsilon`);
    #: never above ``epsilon_pld``
    epsilon_br: float | None = None

    def to_dict(self) -> dict:
        pld = self.epsilon_pld
        br = self.epsilon_br
        return {
            "epsilon_basic": self.epsilon_basic,
            "delta_basic": self.delta_basic,
            "epsilon_pld": None if pld is None or math.isinf(pld) else pld,
            "epsilon_br": None if br is None or math.isinf(br) else br,
            "delta": self.delta,
            "records": self.records,
            "pending": self.pending,
            "epsilon_pending": self.epsilon_pending,
            "withheld": self.withheld,
        }


@dataclass(frozen=True, slots=True)
class Budget:
    owner: str
    dataset: str
    epsilon: float
    delta: float


@dataclass(frozen=True, slots=True)
class UnitRow:
    """One unit in :meth:`Ledger.units` (``unit`` is its keyed hash)."""

    unit: str
    epsilon: float
    delta: float
    records: int
    pending: int
    withheld: int


@dataclass(frozen=True)
class VerifyResult:
    entries: int
    head_hash: str
    releases: int
    units: int  # people with a record in the ledger, charged or withheld (as `ledger spent`)
    charges: int
    pending: int
