"""The persistent budget ledger: what each privacy unit has spent, across every release.

Protocol (charge before release, docs/ledger.md): a caller opens a release, then for every batch
of records calls :meth:`Ledger.reserve` *before* writing the batch's output - one transaction
that checks each record's unit against its budgets and appends the batch as one chained entry
whose rows are the allowed records as *pending* charges and the withheld ones as withheld rows
(:mod:`dptext.ledger.batches`) - and :meth:`Ledger.commit` *after* the output
is durable, which marks the charges *released*. A crash between the two leaves pending charges:
text charged and perhaps never released, never text released and not charged. Budgets count
pending charges as spent. Re-reserving a record of the same release returns its first decision
(``already=True``) and charges nothing again, so a resumed job continues its release.

Amounts: epsilons and deltas are kept as integers in units of 1e-9 (epsilon) and 1e-15 (delta),
each charge rounded *up* (after forgiving a relative 1e-12 of floating-point noise, so 0.1 is
charged as 0.1) and each budget rounded down, so sums are exact, do not depend on the order of
concurrent writers, and understate basic composition by at most that 1e-12 relative noise. The
event lists stay in the entries as floats for the PLD report.

Composition: the ledger *enforces* basic composition per unit - ``sum count*eps <= budget eps``
and ``sum count*delta <= budget delta`` over every charge (pending or released) in the budget's
scope (Dwork & Roth 2014, Thm 3.16) - and *reports* besides it the PLD epsilon at the ledger's
delta (dp_accounting, :func:`dptext.accounting.composition.pld_epsilon`), which is smaller for
many small charges.

The class is composed of its parts, one file each: :mod:`~dptext.ledger.store` (where it lives,
open, create, migrate, the transactions), :mod:`~dptext.ledger.budgets`,
:mod:`~dptext.ledger.writes` (releases, reserve, commit), :mod:`~dptext.ledger.queries` (the
reads) and :mod:`~dptext.ledger.verify` (the hash chain and the derived tables).
"""

from __future__ import annotations

import math
import os
import threading

from dptext.errors import DPTextError
from dptext.ledger import keys
from dptext.ledger.amounts import DEFAULT_DELTA
from dptext.ledger.backends import Backend, backend_for
from dptext.ledger.budgets import LedgerBudgets
from dptext.ledger.queries import LedgerQueries
from dptext.ledger.results import VerifyResult
from dptext.ledger.store import (
    DATA_ENV,
    DEFAULT_TIMEOUT,
    LEDGER_ENV,
    LedgerStore,
    data_dir,
    default_ledger_url,
)
from dptext.ledger.writes import LedgerWrites, unit_text


class Ledger(LedgerStore, LedgerBudgets, LedgerWrites, LedgerQueries):
    """A persistent, append-only budget ledger (SQLite file or PostgreSQL database).

    ``url``: a path, ``sqlite:///PATH`` or ``postgresql://...``; None -> ``$DPTEXT_LEDGER``,
    else ``<data dir>/ledger.sqlite``. ``create``: start a new ledger where there is none (a
    new SQLite file, or a PostgreSQL database without the ledger tables); an existing file that
    is not a ledger is refused. ``timeout``: seconds to wait for another writer's lock before
    a one-line error. ``delta``: the ledger's delta for PLD reports, fixed when it is created.
    One Ledger object per process (it reconnects after a fork); it is safe to share between
    threads.
    """

    def __init__(self, url: str | os.PathLike | None = None, *, secret: str | bytes | None = None,
                 timeout: float = DEFAULT_TIMEOUT, create: bool = True,
                 delta: float | None = None):
        default = url is None
        self.url = default_ledger_url() if default else os.fspath(url)
        if not (timeout > 0 and math.isfinite(timeout)):
            raise DPTextError(f"the ledger timeout must be > 0 seconds, got {timeout}")
        if delta is not None and not 0.0 < delta < 1.0:
            raise DPTextError(f"the ledger delta must be in (0, 1), got {delta}")
        self._backend: Backend = backend_for(self.url, timeout)
        if default and self._backend.local_path is not None:
            self._backend.local_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._secret_arg = secret if secret is not None else os.environ.get(keys.SECRET_ENV)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._orphans: list = []
        self._costs: dict[tuple, tuple[int, int, str, str]] = {}  # events tuple -> cost
        self._costs1: dict[tuple, tuple[int, int, str, str]] = {}  # one event's fields -> cost
        self._reset_caches()
        self._open(create, DEFAULT_DELTA if delta is None else delta)

    @property
    def secret_given(self) -> bool:
        """Whether the unit secret came from the caller or ``$DPTEXT_LEDGER_SECRET`` (not from
        the ledger's key file or table)."""
        return self._secret_arg is not None

    def __repr__(self) -> str:
        return f"Ledger({self.where!r})"

    # ------------------------------------------------------------------------ hashing
    def unit_hash(self, unit_id: str) -> str:
        """The keyed hash the ledger stores for ``unit_id``."""
        return self._keys.unit(unit_text(unit_id))

    # -------------------------------------------------------------------------- verify
    def verify(self) -> VerifyResult:
        """Check the hash chain from the first entry to the head, and that the derived tables
        agree with the entries. Raises DPTextError naming the first broken entry."""
        from dptext.ledger.verify import verify

        with self._read("verify the ledger") as b:
            return verify(b, self._meta())


__all__ = ["DATA_ENV", "DEFAULT_TIMEOUT", "LEDGER_ENV", "Ledger", "data_dir", "default_ledger_url"]
