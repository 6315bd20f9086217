"""Entity-targeted sanitization: only the detected entities are privatized.

    >>> from dptext.targeted import build_targeted
    >>> m = build_targeted("custext", epsilon=2, entities="PERSON,GPE,EMAIL,PHONE",
    ...                    detector="both")
    >>> r = m.privatize("Call Anna Lee at (212) 555-0187 or anna@corp.com.")
    >>> print(r.text); print(r.report)

Names are privatized by the chosen mechanism, contact details replaced whole
(:mod:`dptext.targeted.surrogates`); the report (:class:`TargetedReport`) states the guarantee
per detected span and counts the tokens released verbatim and unprotected. The options are
declared once in :mod:`dptext.targeted.options`.

The names below are imported when first asked for (PEP 562), so the command line can read the
option table (:mod:`dptext.targeted.options`) without loading the detectors and mechanisms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dptext.targeted.build import build_deid, build_targeted
    from dptext.targeted.mechanism import CONSISTENCY, PATTERN_POLICIES, TargetedMechanism
    from dptext.targeted.report import TargetedReport
    from dptext.targeted.spans import Span, merge_spans
    from dptext.targeted.surrogates import SURROGATE_SETS, SurrogateSet

#: each name handed on -> the module of dptext.targeted that defines it
_HANDED = {"build_deid": "build", "build_targeted": "build", "CONSISTENCY": "mechanism",
           "PATTERN_POLICIES": "mechanism", "TargetedMechanism": "mechanism",
           "TargetedReport": "report", "Span": "spans", "merge_spans": "spans",
           "SURROGATE_SETS": "surrogates", "SurrogateSet": "surrogates"}

__all__ = ["CONSISTENCY", "PATTERN_POLICIES", "SURROGATE_SETS", "Span", "SurrogateSet",
           "TargetedMechanism", "TargetedReport", "build_deid", "build_targeted",
           "merge_spans"]


def __getattr__(name: str) -> Any:
    module = _HANDED.get(name)
    if module is None:
        raise AttributeError(f"module 'dptext.targeted' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"dptext.targeted.{module}"), name)
    globals()[name] = value
    return value
