"""Nearest word (Euclidean) to many points: the searches of the multivariate Laplace mechanism,
one module each - :mod:`~dptext.mechanisms.search.auto` (the default: the fastest of the
certified searches on this CPU, measured once and cached),
:mod:`~dptext.mechanisms.search.exact` (certified float32 GEMM with a float64 re-check of near
ties), :mod:`~dptext.mechanisms.search.torch` (the same on a GPU),
:mod:`~dptext.mechanisms.search.int8` (the exact words through a certified int8 pre-filter; its
set-up in :mod:`~dptext.mechanisms.search.int8_setup`), :mod:`~dptext.mechanisms.search.faiss`
(approximate, indexed) - on the interface of :mod:`~dptext.mechanisms.search.base`.
:func:`make_search` builds one by name."""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.auto import AutoSearch
from dptext.mechanisms.search.base import Search
from dptext.mechanisms.search.exact import ExactSearch
from dptext.mechanisms.search.faiss import FaissSearch
from dptext.mechanisms.search.int8 import Int8Search
from dptext.mechanisms.search.torch import TorchExactSearch

#: every search by name (``search=``); auto and int8 give the exact search's words. A new
#: search is a module with a :class:`Search` subclass and one line here.
SEARCHES: dict[str, type[Search]] = {"auto": AutoSearch, "exact": ExactSearch,
                                     "int8": Int8Search, "ivf": FaissSearch,
                                     "hnsw": FaissSearch}
#: the searches that run on a GPU (``device="cuda"``), by the name of the search they stand for
ON_GPU: dict[str, type[Search]] = {"auto": TorchExactSearch, "exact": TorchExactSearch}


def make_search(vectors: np.ndarray, search: str = "auto", device: str = "cpu", *,
                fingerprint=None, **options) -> Search:
    """The nearest-word search ``search`` over ``vectors`` (one of :data:`SEARCHES`) on
    ``device`` ("cpu", "cuda", "auto"; on a GPU the one of :data:`ON_GPU`, the others run on
    the CPU). ``fingerprint``: the space's (a string, or a function giving it), under which
    the int8 set-up is cached with the mechanism's tables."""
    from dptext.devices import resolve_device

    if search not in SEARCHES:
        raise DPTextError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    table = SEARCHES
    if resolve_device(device) == "cuda":
        if search not in ON_GPU:
            raise DPTextError(f"search={search!r} runs on the CPU; device='cuda' "
                              f"is for search={' or '.join(map(repr, ON_GPU))}")
        table = ON_GPU
    return table[search].build(search, vectors, fingerprint=fingerprint, **options)


__all__ = ["ON_GPU", "SEARCHES", "AutoSearch", "ExactSearch", "FaissSearch", "Int8Search", "Search",
           "TorchExactSearch", "make_search"]
