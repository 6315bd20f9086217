"""Privacy units and the ledger, as the engine uses them (contract: LEDGER_API.md).

For every batch the engine asks the ledger, in one ``reserve`` call, whether each record's unit
may still be charged its record's events; a withheld record is never written (it goes to the
rejects with the ledger's reason). The allowed charges are written as pending before the
batch's output is written, and committed (``commit``) only after the shard holding them is
durable - a crash in between leaves pending charges: counted, never released, so safe. A
resumed job (its manifest names its release key) continues its release and ``reserve``
answers ``already`` for records it decided before; any other run is a new release, charged
again (issue 32: a rerun after completion reopened the completed release, every record was
"already decided" and fresh noise left uncharged), or with ``once`` refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError, ParameterError


def privacy_events(report: PrivacyReport) -> list:
    """What one record costs its unit: the events its report declares
    (:meth:`PrivacyReport.privacy_events`)."""
    return list(report.privacy_events())


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
                 release_key: str | None = None, job_key: str | None = None,
                 once: bool = False, budget: float | None = None,
                 budget_delta: float = 0.0, origin: str = "") -> None:
        """``release_key``: continue that release (a resumed job). Otherwise a new release
        (``job_key``: the job's settings and inputs): the job's first release takes the key
        ``job_key`` itself; a later run of the same job is another release, charged again
        (key ``job_key:<random>``) - or, with ``once``, refused. ``self.release_key`` is the
        key used (the job keeps it for a resume). ``origin``: what releases it, kept in the
        ledger's entry (the service's text endpoint: ``service-privatize``)."""
        if not owner or not dataset:
            raise ParameterError("a ledger needs `owner` and `dataset`")
        if release_key is None and job_key is None:
            raise DPTextError("a ledger session needs a release key or a job key")
        self.ledger = ledger
        if budget is not None:
            ledger.set_budget(owner, dataset, budget, budget_delta)
        what = {"owner": owner, "dataset": dataset, "mechanism": mechanism, "params": params,
                **({"origin": origin} if origin else {})}
        if release_key is None:
            from dptext.ledger import ReleaseExists

            try:
                self.release_id = ledger.open_release(**what, release_key=job_key,
                                                      exclusive=True)
                release_key = job_key
            except ReleaseExists as err:
                if once:
                    raise DPTextError(
                        f"--once: this job (the same settings and inputs) was released before "
                        f"(release {err.release_id}, {err.created}); nothing was released "
                        f"again (drop --once to release it again, charged again)") from None
                release_key = f"{job_key}:{secrets.token_hex(16)}"
                self.release_id = ledger.open_release(**what, release_key=release_key)
        else:
            self.release_id = ledger.open_release(**what, release_key=release_key)
        self.release_key = release_key

    def reserve(self, items: Sequence[tuple[str, str, Sequence]]) -> list:
        return list(self.ledger.reserve(self.release_id, items)) if items else []

    def commit(self, charge_ids: Sequence[int]) -> None:
        if charge_ids:
            self.ledger.commit(self.release_id, list(charge_ids))
