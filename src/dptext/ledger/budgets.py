"""The ledger's budgets: set and list them, the budgets that apply to a release's scope, a
scope's running totals per unit, and the check that a budget covers one record at all. A mixin
of :class:`dptext.ledger.core.Ledger`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger.amounts import (
    ANY,
    DELTA_SCALE,
    EPS_SCALE,
    checked_name,
    delta_of,
    eps_of,
    events_cost,
    round_down,
    scope_text,
)
from dptext.ledger.queries import sql_marks
from dptext.ledger.results import Budget
from dptext.ledger.store import chunks


class LedgerBudgets:
    """Budgets (a mixin of the Ledger: it uses ``_write``, ``_read`` and ``_backend``)."""

    def set_budget(self, owner: str, dataset: str, epsilon: float, delta: float = 0.0) -> None:
        """Every unit may spend at most (epsilon, delta) under basic composition in releases by
        ``owner`` of ``dataset`` (either may be ``"*"``: any). Replaces an earlier budget for
        the same pair (as a new entry); lowering it below what a unit has spent withholds that
        unit's further records."""
        owner = checked_name("owner", owner, wildcard=True)
        dataset = checked_name("dataset", dataset, wildcard=True)
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise DPTextError(f"a budget epsilon must be finite and >= 0, got {epsilon}")
        if not 0.0 <= delta < 1.0:
            raise DPTextError(f"a budget delta must be in [0, 1), got {delta}")
        eps_n, delta_n = round_down(epsilon, EPS_SCALE), round_down(delta, DELTA_SCALE)
        with self._write("set a budget") as tx:
            seq = tx.append("budget", owner=owner, dataset=dataset, eps_n=eps_n,
                            delta_n=delta_n, body={"epsilon": epsilon, "delta": delta})
            self._backend.execute(
                "INSERT INTO ledger_budgets (owner, dataset, eps_n, delta_n, seq) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, dataset) DO UPDATE SET "
                "eps_n = excluded.eps_n, delta_n = excluded.delta_n, seq = excluded.seq",
                (owner, dataset, eps_n, delta_n, seq))

    def budgets(self) -> list[Budget]:
        with self._read("read budgets") as b:
            rows = b.execute("SELECT owner, dataset, eps_n, delta_n FROM ledger_budgets "
                             "ORDER BY owner, dataset").fetchall()
        return [Budget(o, d, eps_of(e), delta_of(n)) for o, d, e, n in rows]

    def _budgets_for(self, owner: str, dataset: str) -> list[tuple[str, str, int, int]]:
        rows = self._backend.execute(
            "SELECT owner, dataset, eps_n, delta_n FROM ledger_budgets "
            "WHERE owner IN (?, ?) AND dataset IN (?, ?) ORDER BY owner, dataset",
            (owner, ANY, dataset, ANY)).fetchall()
        return [(o, d, int(e), int(n)) for o, d, e, n in rows]

    def _totals(self, units: Sequence[str], owner: str, dataset: str) -> dict[str, list[int]]:
        """unit -> [eps_n, delta_n] charged (released + pending) in the scope."""
        out: dict[str, list[int]] = {}
        where, extra = "", []
        if owner != ANY:
            where += " AND owner = ?"
            extra.append(owner)
        if dataset != ANY:
            where += " AND dataset = ?"
            extra.append(dataset)
        if owner != ANY and dataset != ANY:  # one row per unit: the primary key
            sql = ("SELECT unit, eps_n, delta_n FROM ledger_units WHERE owner = ? AND "
                   "dataset = ? AND unit IN ({})")  # the key (unit, owner, dataset)
            first, extra = [owner, dataset], []
        else:
            sql = ("SELECT unit, SUM(eps_n), SUM(delta_n) FROM ledger_units "
                   f"WHERE unit IN ({{}}){where} GROUP BY unit")
            first = []
        for chunk in chunks(list(units)):
            rows = self._backend.execute(sql.format(sql_marks(len(chunk))),
                                         (*first, *chunk, *extra)).fetchall()
            for u, e, d in rows:
                out[u] = [int(e), int(d)]
        return out

    def check_budget_covers(self, owner: str, dataset: str,
                            events: Sequence[PrivacyEvent]) -> None:
        """Raise when a budget that applies to ``owner``/``dataset`` is below what ``events``
        (e.g. one record with one privatized token) cost: then nothing could be released."""
        eps_n, delta_n = events_cost(events)
        with self._read("read budgets"):
            budgets = self._budgets_for(checked_name("owner", owner),
                                        checked_name("dataset", dataset))
        for o, d, b_eps, b_delta in budgets:
            if eps_n > b_eps or delta_n > b_delta:
                raise DPTextError(
                    f"the budget (epsilon {eps_of(b_eps):g}, delta {delta_of(b_delta):g}) for "
                    f"{scope_text(o, d)} is below what one record costs (epsilon "
                    f"{eps_of(eps_n):g}, delta {delta_of(delta_n):g}): nothing could be released")
