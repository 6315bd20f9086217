"""dptext: differentially private text - local sanitization, private training, evaluation.

    >>> import dptext
    >>> m = dptext.mechanism("custext", epsilon=2, k=20)
    >>> r = m.privatize("Alice met Bob in Paris.")
    >>> r.text, r.report

The names below are imported on first use (PEP 562): ``import dptext`` - and so every ``dptext``
command, whose package this is - no longer imports numpy, the mechanisms and the corpus engine
before it knows it needs them (issue 36, CLI start-up).
"""

import sys
import types
from typing import TYPE_CHECKING

from dptext.errors import DPTextError
from dptext.version import __version__

if TYPE_CHECKING:  # the same names, for type checkers and readers
    from dptext.accounting.report import PrivacyReport
    from dptext.embeddings import EmbeddingSpace
    from dptext.mechanisms import Mechanism, Result, mechanism, registered
    from dptext.sanitize import sanitize

_LAZY = {
    "EmbeddingSpace": "dptext.embeddings",
    "Mechanism": "dptext.mechanisms",
    "PrivacyReport": "dptext.accounting.report",
    "Result": "dptext.mechanisms",
    "mechanism": "dptext.mechanisms",
    "registered": "dptext.mechanisms",
    "sanitize": "dptext.sanitize",
}

__all__ = [
    "DPTextError",
    "EmbeddingSpace",
    "Mechanism",
    "PrivacyReport",
    "Result",
    "mechanism",
    "registered",
    "sanitize",
    "__version__",
]


class _Package(types.ModuleType):
    """The package's module type: importing the submodule ``dptext.sanitize`` does not replace
    the function ``dptext.sanitize`` (the import system sets a package attribute for each
    submodule it loads; the eager import this replaces rebound the name to the function)."""

    def __setattr__(self, name: str, value) -> None:
        if name == "sanitize" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dptext' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
