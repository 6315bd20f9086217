"""Indexed search (``search="ivf"`` or ``"hnsw"``, faiss-cpu, optional extra ``faiss``): an
approximate nearest neighbour over an index built from the public word vectors alone. The word
returned is still a function of the noisy point alone - post-processing of the Laplace output -
so the metric-DP guarantee is unchanged; only the agreement with the exact nearest word is below
100% (``benchmarks/bench_laplace.py --indexed`` reports it)."""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.base import Search


class FaissSearch(Search):
    """Approximate nearest word with a faiss index over the word vectors (public data only)."""

    @classmethod
    def build(cls, name, vectors, *, fingerprint=None, **options):
        return cls(vectors, name, **options)  # the index kind is the name: ivf, hnsw

    def __init__(self, vectors: np.ndarray, kind: str, *, nlist: int | None = None,
                 nprobe: int = 8, hnsw_m: int = 32, ef_search: int = 64, seed: int = 0) -> None:
        try:
            import faiss
        except ImportError:
            raise DPTextError(f"search={kind!r} needs faiss: pip install 'dptext[faiss]'"
                              ) from None
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        d = x.shape[1]
        if kind == "ivf":
            nlist = nlist or max(1, int(4 * np.sqrt(len(x))))
            quantizer = faiss.IndexFlatL2(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_L2)
            index.cp.seed = seed  # k-means seeded: the index is a fixed function of the vectors
            index.train(x)
            index.add(x)
            index.nprobe = nprobe
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_L2)
            index.add(x)
            index.hnsw.efSearch = ef_search
        else:
            raise DPTextError(f"unknown faiss search {kind!r}")
        self.index, self.kind = index, kind

    def __call__(self, points: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(points, dtype=np.float32)
        _, idx = self.index.search(q, 1)
        return idx[:, 0].astype(np.int64)
