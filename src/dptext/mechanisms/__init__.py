"""Word-level mechanisms; importing this package registers them."""

from dptext.mechanisms import (  # noqa: F401
    custext,
    dpmlm,
    dpprompt,
    laplace,
    santext,
    truncated_gumbel,
)
from dptext.mechanisms.base import Mechanism, Result, WordMechanism, mechanism, registered

__all__ = ["Mechanism", "Result", "WordMechanism", "mechanism", "registered"]
