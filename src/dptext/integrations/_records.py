"""Several text fields per record in one pass, one report per record, per-unit aggregation and
the optional ledger - shared by the datasets and pandas integrations.

A record's fields compose sequentially into the record's report (one record, several texts).
The aggregated report composes all records (one owner); with a unit column, each unit's
records are also combined on their own (``Release.units``), which is what a per-unit budget
bounds. A ledger (the contract of docs/integrations.md, ``dptext.ledger.Ledger``) is charged
per record and unit before the data is handed back: a record its unit's budget cannot pay for
is withheld (its fields set to ``None``), nothing is charged for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.rng import RngLike


@dataclass
class Release:
    """What an integration returns: the data, the aggregated report, per-unit reports (with a
    unit column), the positions of records withheld by the ledger and what happened to every
    column (``columns``: privatized, released verbatim - not protected -, dropped, hashed).
    Unpacks as ``data, report = release``."""

    data: Any
    report: PrivacyReport
    units: dict[str, PrivacyReport] | None = None
    withheld: list[int] = field(default_factory=list)
    columns: dict | None = None

    def __iter__(self):
        yield self.data
        yield self.report


def empty_report(mech: Mechanism) -> PrivacyReport:
    from dptext.targeted import TargetedMechanism, TargetedReport

    if isinstance(mech, TargetedMechanism):
        return TargetedReport(f"targeted:{mech.mechanism.name}", mech.guarantee, [],
                              detector=mech.detector or "",
                              entities=tuple(sorted(mech.categories or ())),
                              consistent=mech.consistent)
    return PrivacyReport(mech.name, mech.guarantee, [])


def record_report(reports: list[PrivacyReport], mech: Mechanism) -> PrivacyReport:
    """The fields of one record composed into that record's report."""
    if not reports:
        return empty_report(mech)
    if len(reports) == 1:
        return reports[0]
    combined = type(reports[0]).combine(reports)
    combined.records, combined.max_record_epsilon = 1, 0.0  # one record, several fields
    return combined


def check_columns(available: Sequence[str], columns: Sequence[str] | str) -> list[str]:
    names = [columns] if isinstance(columns, str) else list(columns)
    if not names:
        raise DPTextError("give at least one column to privatize")
    missing = [c for c in names if c not in available]
    if missing:
        raise DPTextError(f"no column {missing[0]!r}; columns: {', '.join(map(str, available))}")
    return names


def column_plan(available: Sequence, names: Sequence[str], *, keep, drop, hash,
                keep_other: bool, unit_column: str | None, pseudonym_key, owner: str | None,
                where: str):
    """Every column of the data named once (:mod:`dptext.corpus.columns`, the rule of the
    command line): ``names`` privatized, ``keep`` released as is, ``drop`` left out, ``hash``
    replaced by keyed pseudonyms (the key from ``pseudonym_key``, a file created on first use,
    or ``$DPTEXT_PSEUDONYM_SECRET``), ``keep_other`` the rest released as is; the unit column
    is dropped unless kept or hashed. A column not named is a one-line error naming it."""
    from dptext.corpus.columns import PYTHON_ROLES, ColumnPlan
    from dptext.corpus.columns import pseudonym_key as key_of

    key = key_of(pseudonym_key) if hash else None
    if hash and key is None:
        raise DPTextError("hash= needs a pseudonym key: give pseudonym_key=FILE (created on "
                          "first use, mode 0600) or set $DPTEXT_PSEUDONYM_SECRET")
    plan = ColumnPlan.make(list(names), keep=keep, drop=drop, hash=hash, keep_other=keep_other,
                           user_field=unit_column, key=key, owner=owner)
    plan.check(list(available), where, PYTHON_ROLES)
    return plan


def privatize_records(mech: Mechanism, columns: Mapping[str, Sequence], names: Sequence[str],
                      *, rng: RngLike, units: Sequence | None = None,
                      first_row: int = 0, drawn: list | None = None
                      ) -> tuple[dict[str, list], list[PrivacyReport]]:
    """Privatize ``names`` of every record in one ``privatize_batch`` call; ``None`` values stay
    ``None``. Returns the new columns and one report per record. ``drawn`` (a list; a ledger
    will decide): a targeted mechanism's ``consistent="unit"`` draws stay tentative
    (``settle=False``) and ``(row, result)`` pairs are appended to it for
    ``TargetedMechanism.settle`` once the ledger decided."""
    from dptext.targeted import TargetedMechanism

    n = len(columns[names[0]])
    texts, where = [], []
    for c in names:
        for i, value in enumerate(columns[c]):
            if value is None:
                continue
            if not isinstance(value, str):
                raise DPTextError(f"column {c!r}, row {first_row + i}: expected text, got "
                                  f"{type(value).__name__}")
            texts.append(value)
            where.append((c, i))
    kwargs = {}
    if units is not None and isinstance(mech, TargetedMechanism):
        kwargs["units"] = [str(units[i]) for _, i in where]
        if drawn is not None:
            kwargs["settle"] = False
    results = mech.privatize_batch(texts, rng=rng, **kwargs) if texts else []
    if "settle" in kwargs:
        drawn.extend((first_row + i, r) for (_, i), r in zip(where, results, strict=True))
    out = {c: list(columns[c]) for c in names}
    per_record: list[list[PrivacyReport]] = [[] for _ in range(n)]
    for (c, i), r in zip(where, results, strict=True):
        out[c][i] = r.text
        per_record[i].append(r.report)
    return out, [record_report(rs, mech) for rs in per_record]


def aggregate(reports: list[PrivacyReport], mech: Mechanism, units: Sequence | None = None
              ) -> tuple[PrivacyReport, dict[str, PrivacyReport] | None]:
    """All records composed (one owner) and, with units, each unit's records on their own."""
    if not reports:
        empty = empty_report(mech)
        empty.records = 0
        return empty, ({} if units is not None else None)
    combine = type(reports[0]).combine
    per_unit = None
    if units is not None:
        groups: dict[str, list[PrivacyReport]] = {}
        for u, r in zip(units, reports, strict=True):
            groups.setdefault(str(u), []).append(r)
        per_unit = {u: combine(rs) for u, rs in groups.items()}
    return combine(reports), per_unit


def _events(report: PrivacyReport) -> list | None:
    try:
        return list(report.privacy_events())
    except ImportError:
        return None


def charge_ledger(ledger: Any, reports: list[PrivacyReport], units: Sequence | None,
                  keys: Sequence[str], *, owner: str, dataset: str, mechanism: str,
                  params: dict, release_key: str | None) -> list[bool]:
    """Reserve every record's events for its unit in ONE batch, commit the allowed ones;
    returns which records may be released (the ledger contract, docs/integrations.md)."""
    if units is None:
        raise DPTextError("a ledger charges privacy units: give unit_column")
    if not owner or not dataset:
        raise DPTextError("a ledger needs owner= and dataset_name=")
    events = [_events(r) for r in reports]
    if any(e is None for e in events):
        raise DPTextError("this dptext cannot describe a record's cost for the ledger "
                          "(PrivacyReport.privacy_events / dptext.accounting.events.PrivacyEvent "
                          "missing)")
    release = ledger.open_release(owner=owner, dataset=dataset, mechanism=mechanism,
                                  params=params, release_key=release_key)
    decisions = ledger.reserve(release, [(str(k), str(u), ev)
                                         for k, u, ev in zip(keys, units, events, strict=True)])
    ledger.commit(release, [d.charge_id for d in decisions
                            if d.allowed and d.charge_id is not None])
    return [bool(d.allowed) for d in decisions]
