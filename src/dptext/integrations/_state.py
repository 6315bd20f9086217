"""Reports as plain JSON-able data and back (to cross process boundaries and table columns):
:meth:`PrivacyReport.to_state` and :meth:`PrivacyReport.from_state`, with every report class
of the package registered first."""

from __future__ import annotations

import dptext.mechanisms.dpmlm  # noqa: F401 - registers RewriteReport's tag
import dptext.targeted.report  # noqa: F401 - registers TargetedReport's tag
from dptext.accounting.report import PrivacyReport


def report_to_state(report: PrivacyReport) -> dict:
    """Every field of ``report`` as JSON-able data, with its class's tag and the version."""
    return report.to_state()


def report_from_state(state: dict | str) -> PrivacyReport:
    """The report :func:`report_to_state` described (or its JSON text)."""
    return PrivacyReport.from_state(state)
