"""The built-in mechanisms. Each registers itself when its module is imported, which the
registry does when one of its names is first asked for (``registry.BUILTIN``): importing this
package imports none of them (issue 36, CLI start-up)."""

from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.registry import mechanism, parameters, register, registered

__all__ = ["Mechanism", "Result", "WordMechanism", "mechanism", "parameters", "register",
           "registered"]


def __getattr__(name: str):
    if name == "WordMechanism":  # imports the embedding space and the tokenizer: on first use
        from dptext.mechanisms.word import WordMechanism

        return WordMechanism
    raise AttributeError(f"module 'dptext.mechanisms' has no attribute {name!r}")
