"""Privacy events and their composition (the one place composition is done)."""

from dptext.accounting.composition import epsilon_for_delta, metric_epsilon, pure_epsilon
from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee

__all__ = [
    "GuaranteeKind",
    "TokenEvent",
    "TokenGuarantee",
    "epsilon_for_delta",
    "metric_epsilon",
    "pure_epsilon",
]
