"""dptext: differentially private text - local sanitization, private training, evaluation.

    >>> import dptext
    >>> m = dptext.mechanism("custext", epsilon=2, k=20)
    >>> r = m.privatize("Alice met Bob in Paris.")
    >>> r.text, r.report
"""

from dptext.accounting.report import PrivacyReport
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms import Mechanism, Result, mechanism, registered
from dptext.sanitize import sanitize
from dptext.version import __version__

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
