"""The built-in mechanisms; importing this package registers them."""

from dptext.mechanisms import (  # noqa: F401
    custext,
    dpmlm,
    dpprompt,
    laplace,
    santext,
    truncated_gumbel,
)
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.registry import mechanism, parameters, register, registered
from dptext.mechanisms.word import WordMechanism

__all__ = ["Mechanism", "Result", "WordMechanism", "mechanism", "parameters", "register",
           "registered"]
