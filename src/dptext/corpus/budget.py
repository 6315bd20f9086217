"""Privacy units and the ledger, as the engine uses them (contract: LEDGER_API.md).

For every batch the engine asks the ledger, in one ``reserve`` call, whether each record's unit
may still be charged its record's events; a withheld record is never written (it goes to the
rejects with the ledger's reason). The allowed charges are written as pending before the
batch's output is written, and committed (``commit``) only after the shard holding them is
durable - a crash in between leaves pending charges: counted, never released, so safe. The
release id comes from ``open_release`` with a key derived from the job's identity, so a resumed
job continues its release and ``reserve`` answers ``already`` for records it decided before.
"""

from __future__ import annotations

from collections.abc import Sequence

from dptext.accounting.events import PrivacyEvent
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError


def privacy_events(report: PrivacyReport) -> list:
    """What one record costs its unit: the report's own events where it declares them, else
    one pure event with the record's sequentially composed epsilon (an upper bound)."""
    own = getattr(report, "privacy_events", None)
    if own is not None:
        return list(own())
    if report.tokens_privatized == 0:
        return []
    return [PrivacyEvent("pure", float(report.epsilon), 0.0, 1, report.mechanism,
                         "one record: sequential composition over its privatized tokens")]


def event_totals(events: Sequence) -> tuple[float, float]:
    """(epsilon, delta) of events by basic composition."""
    return (sum(e.epsilon * e.count for e in events), sum(e.delta * e.count for e in events))


def open_ledger(url: str | None):
    """``--ledger URL``: the ledger package's :class:`Ledger` (None: its default location)."""
    try:
        from dptext.ledger import Ledger
    except ImportError:
        raise DPTextError("--ledger needs the dptext.ledger package, which this build "
                          "does not have") from None
    return Ledger(url)


class LedgerSession:
    """One job's release in a ledger: budget set once, one reserve per batch, commits per
    shard."""

    def __init__(self, ledger, *, owner: str, dataset: str, mechanism: str, params: dict,
                 release_key: str, budget: float | None = None,
                 budget_delta: float = 0.0) -> None:
        if not owner or not dataset:
            raise DPTextError("a ledger needs --owner and --dataset")
        self.ledger = ledger
        if budget is not None:
            ledger.set_budget(owner, dataset, budget, budget_delta)
        self.release_id = ledger.open_release(owner=owner, dataset=dataset, mechanism=mechanism,
                                              params=params, release_key=release_key)

    def reserve(self, items: Sequence[tuple[str, str, Sequence]]) -> list:
        return list(self.ledger.reserve(self.release_id, items)) if items else []

    def commit(self, charge_ids: Sequence[int]) -> None:
        if charge_ids:
            self.ledger.commit(self.release_id, list(charge_ids))
