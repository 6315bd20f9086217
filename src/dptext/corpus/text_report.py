"""The plain text report of a finished job: the lines ``dptext sanitize`` prints after a file
and the service shows with a file job (one function, so both say the same thing).

The lines: the privacy report (:class:`~dptext.accounting.report.PrivacyReport` as text: the
guarantee in words, what was privatized and what was kept verbatim), who the guarantee is about
(the privacy unit, or the per-person distribution with a unit field), what happened to the
columns that were not privatized, and the records rejected or withheld.
"""

from __future__ import annotations


def columns_line(summary: dict) -> str | None:
    """What happened to the columns that were not privatized (None: there were none)."""
    from dptext.corpus.columns import COLUMN_ROLES

    cols = (summary or {}).get("columns") or {}
    parts = [f"{', '.join(cols[r.report_key])} {r.report_line}" for r in COLUMN_ROLES.values()
             if cols.get(r.report_key)]
    return f"  other columns      {'; '.join(parts)}" if parts else None


def unit_column_line(summary: dict, user_field: str | None) -> str | None:
    """One line when the ``--user-field`` column was dropped (issue 45): a person's records can
    no longer be grouped, and ``--hash`` would have kept that linkage."""
    cols = (summary or {}).get("columns") or {}
    if user_field is None or user_field not in (cols.get("dropped") or []):
        return None
    return (f"  note               the person column {user_field!r} was dropped (the default): "
            f"--hash {user_field} keeps a person's records linkable by a keyed pseudonym")


def units_line(summary: dict, user_field: str | None) -> str:
    """Who the guarantee is about: the per-person distribution with a unit field, else the
    reminder that each record counts as one person."""
    from dptext.accounting.units import RECORD_IS_UNIT

    units = (summary or {}).get("units")
    if user_field is None or not isinstance(units, dict):
        return f"  privacy unit       the record: {RECORD_IS_UNIT}"
    if not units.get("units"):
        return f"  privacy units      --user-field {user_field}: no record was released"
    worst = units.get("worst_unit") or {}
    return (f"  privacy units      {units['units']} (--user-field {user_field}); each unit "
            f"composes its own records (basic composition): worst "
            f"{worst.get('epsilon', units.get('epsilon_max')):.4g}-DP over its "
            f"{worst.get('records', '?')} records, median {units.get('epsilon_median', 0):.4g}, "
            f"p95 {units.get('epsilon_p95', 0):.4g}" + (
                "; --consistent unit: one draw per distinct entity per person, charged once, "
                "to the first released record that shows it"
                if (summary or {}).get("consistent") == "unit" else ""))


def counts_line(counts: dict) -> str | None:
    """The records left out (None: none)."""
    if counts.get("records_rejected") or counts.get("records_withheld"):
        return (f"dptext: {counts.get('records_rejected', 0)} records rejected, "
                f"{counts.get('records_withheld', 0)} withheld by the ledger (see the rejects "
                f"file)")
    return None


def text_report(report, summary: dict, user_field: str | None, counts: dict) -> list[str]:
    """The report's lines (``report``: the job's PrivacyReport; ``summary``: what its report
    file holds; ``counts``: ``JobResult.counts``)."""
    lines = [str(report), units_line(summary, user_field), columns_line(summary),
             unit_column_line(summary, user_field), counts_line(counts)]
    return [line for line in lines if line is not None]
