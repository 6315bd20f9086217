"""Multivariate Laplace mechanism (Feyisetan et al. 2020), as described in section 3 of
truncated_gumbel_metric_dp.txt ("Multivariate Laplace Mechanism").

noise kappa with density proportional to exp(-epsilon * |kappa|): a direction u uniform on the
unit sphere of R^n and a radius r ~ Gamma(shape=n, scale=1/epsilon); the output is the word
nearest (Euclidean) to phi(w) + r*u, possibly w itself. Guarantee: epsilon*d metric DP with
d = Euclidean distance between word vectors. The nearest-word search
(:mod:`dptext.mechanisms.search`) is exact (blocked float32 GEMM with a fused top-two, near
ties re-checked in float64: the exact nearest word to the float64 noisy point); by default
(``search="auto"``, :mod:`dptext.mechanisms.search.auto`) through whichever certified search -
one that gives exactly these words - is fastest on this CPU, measured once and cached;
``device="cuda"`` (or ``"auto"`` with a GPU) runs the exact search in torch on the GPU, same
result; ``search="int8"`` finds the same words through a certified int8 pre-filter
(:mod:`dptext.mechanisms.search.int8`); ``search="ivf"`` / ``"hnsw"`` use a faiss
index built from the public word vectors instead (approximate, faster). Either way the word is
a function of the noisy vector alone - post-processing - so it cannot weaken the guarantee.

The noise is drawn in chunks of 128 points, each from its own generator
(:class:`NoiseStreams`: the first from the caller's generator, the others keyed from it), so the
exact CPU search's threads draw the noise of the blocks they search, in parallel, and the
output with a seed does not depend on the threads. Each chunk is the same law (independent
Gaussians, then Gamma radii): the guarantee is unchanged. Since this change (issue 19), a
seeded call of more than 128 privatized tokens gives other words than before it (a call of at
most 128 draws as before).
"""

from __future__ import annotations

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import TypicalEpsilon
from dptext.mechanisms.registry import register
from dptext.mechanisms.word import WordMechanism
from dptext.rng import chacha_generator, is_secure
from dptext.validation import check_choice


@register
class MultivariateLaplace(WordMechanism):
    name = "laplace"
    summary = "nearest word to the vector plus multivariate Laplace noise (metric DP)"
    guarantee_summary = "epsilon*d metric DP, d = Euclidean distance between word vectors"
    typical_epsilon = TypicalEpsilon(
        50, 150, "eps*d metric DP with 384-d Laplace noise, per word; from 200 on the input word "
                 "comes back almost always",
        "2% unchanged at 50, 16% at 75, 94% at 150, 99% at 200")
    typical_epsilon_spaces = {"glove-6b-50d": TypicalEpsilon(
        5, 15,
        "eps*d metric DP with 50-d Laplace noise in glove-6b-50d, per word",
        "on glove-6b-50d: 9% unchanged at 5, 47% at 8, 87% at 12, 98% at 20")}

    # post-processing of the noisy vector, and where that search runs
    runtime_parameters = frozenset({"search", "device"})

    def __init__(self, *, epsilon: float = 75.0, search: str = "auto", device: str = "cpu",
                 **common) -> None:
        from dptext.devices import check_device
        from dptext.mechanisms.search import ON_GPU, SEARCHES

        super().__init__(epsilon=epsilon, **common)
        self.search = check_choice(search, "search", SEARCHES)
        self.device = check_device(device)
        if self.search not in ON_GPU and self.device == "cuda":
            raise DPTextError(f"search={self.search!r} runs on the CPU; device='cuda' is for "
                              f"search={' or '.join(map(repr, ON_GPU))}")
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
        (float64), chunk by chunk from :class:`NoiseStreams` - the very noise
        :meth:`_sample` adds (there each chunk is drawn in the thread that searches it)."""
        kappa = np.empty((count, self.space.dim))
        streams = NoiseStreams(rng, count)
        for c in range(len(streams)):
            self._noise_into(kappa[c * NOISE_CHUNK: (c + 1) * NOISE_CHUNK], streams[c])
        return kappa

    def _noise_into(self, out: np.ndarray, gen: np.random.Generator) -> None:
        """Fill ``out`` (rows, dim; float64, C-contiguous) with noise from ``gen``: one
        Gaussian array, then the radii, the Gaussians scaled in place by radius / norm."""
        gen.standard_normal(out=out)
        radius = gen.gamma(shape=self.space.dim, scale=1.0 / self.epsilon, size=len(out))
        out *= (radius / np.sqrt(np.einsum("ij,ij->i", out, out)))[:, None]

    def nearest(self, points: np.ndarray) -> np.ndarray:
        """Rows of the words nearest to ``points`` with this mechanism's ``search``."""
        return self._searcher()(points)

    def _searcher(self):
        if self._search is None:
            from dptext.mechanisms.search import ON_GPU, make_search

            space = self._fitted_space()
            self._search = make_search(
                space.vectors, self.search,
                device=self.device if self.search in ON_GPU else "cpu",
                fingerprint=space.fingerprint)
        return self._search

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The nearest words to ``vectors[rows] + noise(len(rows), rng)``. The exact CPU
        search makes each block's noisy points in the worker thread that searches the block
        (the noise of a chunk comes from that chunk's generator, so the words do not depend
        on the threads or the blocks); the other searches get all the points at once."""
        streams = NoiseStreams(rng, len(rows))  # keys drawn here, generators in the threads
        vectors = self.space.vectors

        def points_of(start: int, stop: int) -> np.ndarray:  # whole chunks (start: a multiple)
            points = np.empty((stop - start, self.space.dim))
            for c in range(start // NOISE_CHUNK, -(-stop // NOISE_CHUNK)):
                a = c * NOISE_CHUNK - start
                self._noise_into(points[a: a + NOISE_CHUNK], streams[c])
            points += vectors[rows[start:stop]]  # the noisy point in float64
            return points

        return self._searcher().search_blocks(len(rows), points_of, unit=NOISE_CHUNK)


NOISE_CHUNK = 128  # points per noise generator (see NoiseStreams)


class NoiseStreams:
    """One generator per chunk of :data:`NOISE_CHUNK` points of a call's ``count`` noise
    draws, so that the chunks can be drawn in parallel and the outputs with a seed do not
    depend on the threads or the blocks. The first chunk draws from ``rng`` itself (so a call
    of at most 128 points draws exactly as one array did before); each other chunk from a
    generator keyed with 256 bits that ``rng`` draws first, in one ``integers`` call (here,
    in the calling thread): ChaCha20 again when ``rng`` is the secure generator
    (:func:`dptext.rng.is_secure`; a key from its keystream is as unpredictable as the
    keystream), otherwise PCG64 seeded through a SeedSequence. ``streams[c]`` builds chunk
    ``c``'s generator (once per chunk, from the thread that draws that chunk). The noise law
    is unchanged: every chunk draws independent Gaussians, then its Gamma radii."""

    def __init__(self, rng: np.random.Generator, count: int) -> None:
        self.rng, self.chunks = rng, -(-count // NOISE_CHUNK)
        self.secure = is_secure(rng)
        self.keys = (rng.integers(0, 2**64, size=(self.chunks - 1, 4), dtype=np.uint64)
                     if self.chunks > 1 else None)

    def __len__(self) -> int:
        return self.chunks

    def __getitem__(self, c: int) -> np.random.Generator:
        if c == 0:
            return self.rng
        key = self.keys[c - 1]
        if self.secure:
            return chacha_generator(key)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(key.tolist())))
