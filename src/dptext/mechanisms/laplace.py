"""Multivariate Laplace mechanism (Feyisetan et al. 2020), as described in section 3 of
truncated_gumbel_metric_dp.txt ("Multivariate Laplace Mechanism").

noise kappa with density proportional to exp(-epsilon * |kappa|): a direction u uniform on the
unit sphere of R^n and a radius r ~ Gamma(shape=n, scale=1/epsilon); the output is the word
nearest (Euclidean) to phi(w) + r*u, possibly w itself. Guarantee: epsilon*d metric DP with
d = Euclidean distance between word vectors. The nearest-word search
(:mod:`dptext.mechanisms.nearest`) is exact by default (blocked float32 GEMM with a fused
top-two, near ties re-checked in float64: the exact nearest word to the float64 noisy point);
``device="cuda"`` (or ``"auto"`` with a GPU) runs the exact search in torch on the GPU, same
result; ``search="ivf"`` / ``"hnsw"`` use a faiss index built from the public word vectors instead
(approximate, faster). Either way the word is a function of the noisy vector alone -
post-processing - so it cannot weaken the guarantee.
"""

from __future__ import annotations

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import WordMechanism, check_choice, register


@register
class MultivariateLaplace(WordMechanism):
    name = "laplace"
    summary = "nearest word to the vector plus multivariate Laplace noise (metric DP)"
    guarantee_summary = "epsilon*d metric DP, d = Euclidean distance between word vectors"

    # post-processing of the noisy vector, and where that search runs
    runtime_parameters = frozenset({"search", "device"})

    def __init__(self, *, epsilon: float = 10.0, search: str = "exact", device: str = "cpu",
                 **common) -> None:
        from dptext.devices import check_device
        from dptext.mechanisms.nearest import SEARCHES

        super().__init__(epsilon=epsilon, **common)
        self.search = check_choice(search, "search", SEARCHES)
        self.device = check_device(device)
        if self.search != "exact" and self.device == "cuda":
            raise DPTextError(f"search={self.search!r} runs on the CPU (faiss-cpu); "
                              "device='cuda' is for search='exact'")
        self._search = None

    @property
    def guarantee(self) -> TokenGuarantee:
        space = self.resolved_space()
        return TokenGuarantee(
            GuaranteeKind.METRIC, self.epsilon, scope="all words of the space",
            metric=space.metric_description, diameter=space.delta_max,
        )

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        if space.metric != "euclidean":
            raise DPTextError("the multivariate Laplace mechanism needs a euclidean space")
        return {"diameter": np.array(space.delta_max)}

    def validate_tables(self, tables: dict[str, np.ndarray]) -> None:
        """The only table is the space's diameter (it enters the printed guarantee)."""
        super().validate_tables(tables)
        if "diameter" not in tables:
            raise DPTextError("tables lack diameter")
        d = float(np.asarray(tables["diameter"]))
        if not (np.isfinite(d) and d > 0 and np.isclose(d, self.space.delta_max, rtol=1e-6)):
            raise DPTextError(f"diameter {d:g} is not the space's Delta_max "
                              f"{self.space.delta_max:g}")

    def noise(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` draws of kappa: uniform direction times a Gamma(n, 1/epsilon) radius
        (float64; one Gaussian array scaled in place by radius / norm)."""
        kappa = rng.standard_normal((count, self.space.dim))
        radius = rng.gamma(shape=self.space.dim, scale=1.0 / self.epsilon, size=count)
        kappa *= (radius / np.sqrt(np.einsum("ij,ij->i", kappa, kappa)))[:, None]
        return kappa

    def nearest(self, points: np.ndarray) -> np.ndarray:
        """Rows of the words nearest to ``points`` with this mechanism's ``search``."""
        if self._search is None:
            from dptext.mechanisms.nearest import make_search

            self._search = make_search(self._fitted_space().vectors, self.search,
                                       device="cpu" if self.search != "exact" else self.device)
        return self._search(points)

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        points = self.noise(len(rows), rng)
        points += self.space.vectors[rows]  # the noisy point in float64
        return self.nearest(points)
