"""Word-level mechanisms; importing this package registers them."""

from dptext.mechanisms import custext, laplace, santext, truncated_gumbel  # noqa: F401
from dptext.mechanisms.base import Mechanism, Result, WordMechanism, mechanism, registered

__all__ = ["Mechanism", "Result", "WordMechanism", "mechanism", "registered"]
