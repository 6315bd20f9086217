"""Entity-targeted sanitization: only the detected entities are privatized.

    >>> from dptext.targeted import build_targeted
    >>> m = build_targeted("custext", epsilon=2, entities="PERSON,GPE,EMAIL,PHONE",
    ...                    detector="both")
    >>> r = m.privatize("Call Anna Lee at (212) 555-0187 or anna@corp.com.")
    >>> print(r.text); print(r.report)

Names are privatized by the chosen mechanism, contact details replaced whole
(:mod:`dptext.targeted.surrogates`); the report (:class:`TargetedReport`) states the guarantee
per detected span and counts the tokens released verbatim and unprotected.
"""

from dptext.targeted.build import build_deid, build_targeted
from dptext.targeted.mechanism import CONSISTENCY, PATTERN_POLICIES, TargetedMechanism
from dptext.targeted.report import TargetedReport
from dptext.targeted.spans import Span, merge_spans
from dptext.targeted.surrogates import SURROGATE_SETS, SurrogateSet

__all__ = ["CONSISTENCY", "PATTERN_POLICIES", "SURROGATE_SETS", "Span", "SurrogateSet",
           "TargetedMechanism", "TargetedReport", "build_deid", "build_targeted",
           "merge_spans"]
