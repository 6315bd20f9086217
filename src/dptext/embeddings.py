"""EmbeddingSpace: a vocabulary of words with float32 vectors, a metric, and exact geometry.

Everything that touches all pairs of words (k-nearest-neighbour tables, the diameter
Delta_max and the minimum inter-word distance Delta_min) is computed exactly, in blocks of rows
with one BLAS matrix product each, and cached with the space (``save``/``load``). Distances that
decide Delta_min and neighbour order are recomputed in float64 from the vectors themselves: the
float32 expansion ``|a|^2 + |b|^2 - 2ab`` loses everything below ~3e-4 on unit vectors, which
is exactly the scale of near-duplicates (accent variants) we must detect.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dptext.errors import DPTextError
from dptext.io import atomic_write
from dptext.text import normalize_word

METRICS = ("euclidean", "cosine")
_BLOCK_ROWS = 1024
_DEFERRED = object()  # EmbeddingSpace._fingerprint's array before the vectors are read
CANCELLATION = 1e-3  # pairwise(): |a - b|^2 below this share of |a|^2 + |b|^2 is recomputed


@dataclass(frozen=True)
class Geometry:
    """Exact all-pairs facts of a space: a kNN table and the extreme inter-word distances."""

    neighbors: np.ndarray  # (n, m) int32; column 0 is the word itself
    distances: np.ndarray  # (n, m) float32, exact, ascending; column 0 is 0
    far_neighbors: np.ndarray  # (n, f) int32: each word's farthest words, farthest first
    far_distances: np.ndarray  # (n, f) float64, exact

    @property
    def delta_max(self) -> float:
        return float(self.far_distances[:, 0].max())

    @property
    def delta_min(self) -> float:
        return float(self.distances[:, 1].min()) if self.distances.shape[1] > 1 else float("nan")

    @property
    def delta_min_pair(self) -> tuple[int, int]:
        i = int(np.argmin(self.distances[:, 1]))
        return i, int(self.neighbors[i, 1])

    def subset(self, keep: np.ndarray, k: int) -> Geometry | None:
        """The geometry of the space restricted to rows ``keep`` (None if it cannot be derived)."""
        remap = np.full(len(self.neighbors), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        nb, fn = remap[self.neighbors[keep]], remap[self.far_neighbors[keep]]
        nb_ok, fn_ok = nb >= 0, fn >= 0
        if nb_ok.sum(1).min() < k or not fn_ok.any(1).all():
            return None
        order = np.argsort(~nb_ok, axis=1, kind="stable")[:, :k]
        first_far = np.argmax(fn_ok, axis=1)[:, None]
        return Geometry(
            np.take_along_axis(nb, order, 1).astype(np.int32),
            np.take_along_axis(self.distances[keep], order, 1),
            np.take_along_axis(fn, first_far, 1).astype(np.int32),
            np.take_along_axis(self.far_distances[keep], first_far, 1),
        )


class EmbeddingSpace:
    """Words (row order = public frequency rank where known), float32 vectors and a metric.

    ``aliases`` maps extra surface forms to a word of the space (merged near-duplicates):
    looking up an alias gives the row of its representative, which is also how it is rendered.
    """

    # members of a cached file not read yet (``load`` from ``cache.open_npz``): name -> loader
    _deferred: dict | None = None
    _vectors: np.ndarray | None = None
    _geometry_now: Geometry | None = None
    _geometry_k_now = 0

    def _resolve(self, name: str) -> None:
        deferred = self._deferred
        if deferred and name in deferred:
            deferred[name](self)  # reads (and so verifies) the member, sets the attribute
            deferred.pop(name, None)  # only now: a member that failed fails again if asked

    @property
    def vectors(self) -> np.ndarray:
        self._resolve("vectors")
        return self._vectors

    @vectors.setter
    def vectors(self, value: np.ndarray) -> None:
        if self._deferred:
            self._deferred.pop("vectors", None)
        self._vectors = value

    @property
    def _geometry(self) -> Geometry | None:
        self._resolve("geometry")
        return self._geometry_now

    @_geometry.setter
    def _geometry(self, value: Geometry | None) -> None:
        if self._deferred:
            self._deferred.pop("geometry", None)
        self._geometry_now = value

    @property
    def _geometry_k(self) -> int:
        self._resolve("geometry")
        return self._geometry_k_now

    @_geometry_k.setter
    def _geometry_k(self, value: int) -> None:
        self._geometry_k_now = value

    def __getstate__(self) -> dict:
        self._resolve("vectors")
        self._resolve("geometry")
        return self.__dict__.copy()

    def __init__(
        self,
        words: Sequence[str],
        vectors: np.ndarray,
        *,
        metric: str = "euclidean",
        name: str = "custom",
        aliases: dict[str, str] | None = None,
    ) -> None:
        if metric not in METRICS:
            raise DPTextError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise DPTextError(
                f"vectors must be a (words, dim) matrix; got {vectors.shape} for {len(words)} words"
            )
        if len(words) < 2:
            raise DPTextError("an embedding space needs at least two words")
        if not np.isfinite(vectors).all():
            raise DPTextError("embedding vectors contain NaN or infinite values")
        self.words: list[str] = [normalize_word(w) for w in words]
        self.vectors = vectors
        self.metric = metric
        self.name = name
        self.aliases: dict[str, str] = dict(aliases or {})
        self.index: dict[str, int] = {}
        for i, w in enumerate(self.words):
            if w in self.index:
                raise DPTextError(f"duplicate word {w!r} in embedding space {name!r}")
            self.index[w] = i
        for alias, target in self.aliases.items():
            if target not in self.index:
                raise DPTextError(f"alias {alias!r} points to unknown word {target!r}")
            self.index.setdefault(normalize_word(alias), self.index[target])
        self._geometry: Geometry | None = None
        self._x64: np.ndarray | None = None
        self._geometry_k = 0
        self._fingerprint: tuple[np.ndarray, str] | None = None  # (vectors, fingerprint)

    @classmethod
    def _checked(cls, words: list[str], vectors: np.ndarray, *, metric: str, name: str,
                 aliases: dict[str, str]) -> EmbeddingSpace:
        """A space from words and vectors that already passed these checks (see :meth:`load`):
        the words as stored, no finiteness scan of the vectors."""
        space = cls.__new__(cls)
        space.words = words
        space.vectors = None if vectors is None else np.ascontiguousarray(vectors, np.float32)
        space.metric, space.name, space.aliases = metric, name, dict(aliases or {})
        space.index = dict(zip(words, range(len(words)), strict=True))
        if len(space.index) != len(words) or metric not in METRICS:
            raise DPTextError(f"embedding space {name!r} is not the one validated before")
        for alias, target in space.aliases.items():
            if target not in space.index:
                raise DPTextError(f"alias {alias!r} points to unknown word {target!r}")
            space.index.setdefault(normalize_word(alias), space.index[target])
        space._geometry, space._x64, space._geometry_k = None, None, 0
        space._fingerprint = None
        return space

    # ----------------------------------------------------------------- basics
    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"EmbeddingSpace({self.name!r}, {len(self)} words, dim={self.dim}, {self.metric})"

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def metric_description(self) -> str:
        kind = "Euclidean distance" if self.metric == "euclidean" else "cosine distance"
        return f"{kind} in the {self.name} space ({len(self)} words, {self.dim}-d)"

    def fingerprint(self) -> str:
        """A content hash (words, vectors, metric, aliases) naming fitted tables of this space.

        Kept once computed where the vectors are read-only (the cached default space): they
        cannot change under it."""
        kept = self._fingerprint
        if kept is not None and kept[0] is _DEFERRED and "vectors" in (self._deferred or {}):
            return kept[1]  # adopted for the cached bytes the vectors will be read from
        if kept is not None and kept[0] is self.vectors and not self.vectors.flags.writeable:
            return kept[1]
        h = hashlib.sha256()
        h.update(self.metric.encode())
        h.update("\n".join(self.words).encode())
        h.update(json.dumps(sorted(self.aliases.items())).encode())
        h.update(memoryview(self.vectors).cast("B"))
        digest = h.hexdigest()[:16]
        if not self.vectors.flags.writeable:
            self._fingerprint = (self.vectors, digest)
        return digest

    def adopt_fingerprint(self, fingerprint: str) -> None:
        """Take ``fingerprint`` as :meth:`fingerprint`'s value, computed earlier from these
        same bytes (the cache records it beside a checked file); kept only while the vectors
        are this read-only array (or the cached file's, not read yet)."""
        if "vectors" in (self._deferred or {}):
            self._fingerprint = (_DEFERRED, fingerprint)
        elif not self.vectors.flags.writeable:
            self._fingerprint = (self.vectors, fingerprint)

    def lookup(self, word: str) -> int:
        """Row of ``word`` (case-insensitive, aliases resolved), or -1 if out of vocabulary."""
        return self.index.get(normalize_word(word), -1)

    # --------------------------------------------------------------- distances
    def prepared(self) -> np.ndarray:
        """The vectors as the metric compares them: unit-normalised for cosine, else as they are."""
        if self.metric == "cosine":
            norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
            return self.vectors / np.maximum(norms, 1e-12)
        return self.vectors

    def _prepared64(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Rows of the vectors in float64, unit-normalised (in float64) for the cosine metric.

        Normalising in float32 would put ~1e-7 of error into every cosine distance - the scale
        of near-duplicates - so exact distances normalise the float64 copy.
        """
        if rows is not None and np.size(rows) * 8 < len(self):
            x = self.vectors[rows].astype(np.float64)
        else:  # many rows: keep one float64 copy of the whole matrix (8 bytes per value)
            if self._x64 is None:
                self._x64 = self.vectors.astype(np.float64)
            return self._normalized(self._x64 if rows is None else self._x64[rows], copy=True)
        return self._normalized(x, copy=False)

    def _normalized(self, x: np.ndarray, *, copy: bool) -> np.ndarray:
        if self.metric != "cosine":
            return x
        norms = np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
        return x / norms if copy else np.divide(x, norms, out=x)

    def pairwise(self, rows_a: np.ndarray, rows_b: np.ndarray | None = None) -> np.ndarray:
        """Exact (float64) distances between the words ``rows_a`` and ``rows_b`` (default all).

        Euclidean: ``|a|^2 + |b|^2 - 2 a.b`` (one matrix product), whose rounding error is about
        (dim + 2) u (|a|^2 + |b|^2) - the cancellation that leaves 6e-8 instead of 0 between a
        word and itself (seen with AVX-512 BLAS kernels). Where the result is within
        ``CANCELLATION`` of the norms it is recomputed from the differences (relative error
        ~dim u), so every distance is exact to ~(dim + 2) u / CANCELLATION relative (4e-11
        for 384 dimensions) and a word's distance to itself is 0."""
        a = self._prepared64(np.asarray(rows_a))
        b = self._prepared64(None if rows_b is None else np.asarray(rows_b))
        if self.metric == "cosine":
            return np.clip(1.0 - a @ b.T, 0.0, 2.0)
        norms = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :]  # |a|^2 + |b|^2, once
        d2 = a @ b.T
        d2 *= -2.0
        d2 += norms  # the same value as norms - 2 a.b, bit for bit
        norms *= CANCELLATION
        i, j = np.nonzero(d2 <= norms)
        del norms
        for s in range(0, len(i), 4096):  # chunks: bounded temporaries
            diff = a[i[s: s + 4096]] - b[j[s: s + 4096]]
            d2[i[s: s + 4096], j[s: s + 4096]] = np.einsum("ij,ij->i", diff, diff)
        return np.sqrt(np.maximum(d2, 0.0))

    def _exact_rowwise(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Exact float64 distance from word ``rows[i]`` to each word ``cols[i, j]``."""
        out = np.empty(cols.shape, dtype=np.float64)
        for s in range(0, len(rows), 256):
            a = self._prepared64(rows[s : s + 256])[:, None, :]
            b = self._prepared64(cols[s : s + 256])
            if self.metric == "cosine":
                out[s : s + 256] = np.clip(1.0 - (a * b).sum(-1), 0.0, 2.0)
            else:
                out[s : s + 256] = np.sqrt(((a - b) ** 2).sum(-1))
        return out

    def nearest_to_points(self, points: np.ndarray, *, block: int = 1024) -> np.ndarray:
        """Row of the nearest word to each point (exact; Euclidean, as multivariate Laplace needs).

        argmin_y |p - y|^2 = argmax_y (p.y - |y|^2 / 2); one matrix product per block of points.
        """
        import torch

        words = torch.from_numpy(self.vectors)
        half_sq = 0.5 * (words * words).sum(1)
        pts = torch.from_numpy(np.ascontiguousarray(points, dtype=np.float32))
        out = np.empty(len(points), dtype=np.int64)
        for s in range(0, len(points), block):
            scores = pts[s : s + block] @ words.T
            scores -= half_sq
            out[s : s + block] = scores.argmax(1).numpy()
        return out

    # ---------------------------------------------------------------- geometry
    @property
    def cached_geometry(self) -> Geometry | None:
        """The kNN table computed (or loaded) so far, without computing one; None if none."""
        return self._geometry

    def install_geometry(self, geometry: Geometry) -> None:
        """Use a kNN table computed elsewhere for this space (another process's, shared)."""
        self._geometry = geometry
        self._geometry_k = geometry.neighbors.shape[1]

    def geometry(self, k: int = 64, *, progress: bool = False) -> Geometry:
        """Exact k-nearest-neighbour table (word itself first), Delta_max and Delta_min.

        One blocked pass over all pairs; cached (and saved with the space). Near-ties at the
        k-th neighbour are resolved with exact float64 distances over k + 16 float32 candidates.
        """
        k = min(k, len(self))
        if self._geometry is not None and self._geometry_k >= k:
            return self._geometry
        import torch

        n = len(self)
        extra = min(n, k + 16)
        x = torch.from_numpy(np.ascontiguousarray(self.prepared()))
        sq = (x * x).sum(1)
        neighbors = np.empty((n, k), dtype=np.int32)
        distances = np.empty((n, k), dtype=np.float32)
        n_far = min(n, 4)
        far = np.empty((n, n_far), dtype=np.int32)
        far_d = np.empty((n, n_far), dtype=np.float64)
        blocks = range(0, n, _BLOCK_ROWS)
        if progress:
            from tqdm import tqdm

            blocks = tqdm(blocks, desc="nearest neighbours", unit="block", leave=False)
        for s in blocks:
            e = min(n, s + _BLOCK_ROWS)
            rows = np.arange(s, e)
            dot = x[s:e] @ x.T
            if self.metric == "cosine":
                approx = 1.0 - dot
            else:
                approx = sq[s:e, None] + sq[None, :] - 2.0 * dot
            approx[rows - s, rows] = float("-inf")  # the word itself always comes first
            cand = torch.topk(approx, extra, dim=1, largest=False).indices.numpy()
            far_cand = torch.topk(approx, n_far, dim=1).indices.numpy()
            exact = self._exact_rowwise(rows, cand)
            exact[:, 0] = 0.0
            order = np.argsort(exact, axis=1, kind="stable")[:, :k]
            neighbors[s:e] = np.take_along_axis(cand, order, 1)
            distances[s:e] = np.take_along_axis(exact, order, 1)
            exact_far = self._exact_rowwise(rows, far_cand)
            order = np.argsort(-exact_far, axis=1, kind="stable")
            far[s:e] = np.take_along_axis(far_cand, order, 1)
            far_d[s:e] = np.take_along_axis(exact_far, order, 1)
        self._geometry = Geometry(neighbors, distances, far, far_d)
        self._geometry_k = k
        return self._geometry

    @property
    def delta_max(self) -> float:
        """Largest distance between two words (the diameter), exact."""
        return (self._geometry or self.geometry()).delta_max

    @property
    def delta_min(self) -> float:
        """Smallest distance between two distinct words, exact."""
        # a cached table with only the word itself (k=1) does not know Delta_min
        geo = self._geometry if self._geometry_k >= 2 else self.geometry(2)
        return geo.delta_min

    def neighbors(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` nearest other words of ``word`` with their exact distances."""
        row = self.lookup(word)
        if row < 0:
            raise DPTextError(f"{word!r} is not in the embedding space {self.name!r}")
        d = self.pairwise([row])[0]
        d[row] = np.inf
        top = np.argsort(d, kind="stable")[:k]
        return [(self.words[j], float(d[j])) for j in top]

    # ---------------------------------------------------------- deduplication
    def merge_near_duplicates(
        self, *, tolerance: float, fold_accents: bool = True
    ) -> EmbeddingSpace:
        """A new space where near-duplicate words are merged so Delta_min > tolerance.

        Two kinds of merges (docs/mechanisms.md, "Near-duplicates"):
        * ``fold_accents``: a word whose accent-stripped form (NFKD without combining marks) is
          another word of the space becomes an alias of that word (bogota / bogot\u00e1).
        * any two words closer than ``tolerance`` are merged (union-find over the exact
          nearest-neighbour table, so chains merge too).
        The representative is the group's first row (the most frequent word when rows are in
        frequency order) and keeps its vector; the others become aliases of it.
        """
        if tolerance < 0:
            raise DPTextError("tolerance must be >= 0")
        n = len(self)
        parent = np.arange(n)

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(i: int, j: int) -> None:
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)

        if fold_accents:
            for i, w in enumerate(self.words):
                j = self.index.get(strip_accents(w), -1)
                if j >= 0 and j != i:
                    union(i, j)
        geo = self.geometry(min(n, max(self._geometry_k, 80)))
        close = np.argwhere(geo.distances[:, 1:] <= tolerance)
        for r, c in close:
            union(int(r), int(geo.neighbors[r, c + 1]))
        roots = np.array([find(i) for i in range(n)])
        keep = np.flatnonzero(roots == np.arange(n))
        aliases = dict(self.aliases)
        for i in np.flatnonzero(roots != np.arange(n)):
            aliases[self.words[i]] = self.words[roots[i]]
        for alias, target in list(aliases.items()):
            while target in aliases:
                target = aliases[target]
            aliases[alias] = target
        merged = EmbeddingSpace(
            [self.words[i] for i in keep],
            self.vectors[keep],
            metric=self.metric,
            name=self.name,
            aliases=aliases,
        )
        k = min(len(keep), 64)
        derived = geo.subset(keep, k)
        if derived is not None:
            merged._geometry, merged._geometry_k = derived, k
        return merged

    # ------------------------------------------------------------- save / load
    def save(self, path: str | os.PathLike) -> Path:
        """Write the space (and its geometry, if computed) to one ``.npz`` file, atomically."""
        path = Path(path)
        arrays = {
            "vectors": self.vectors,
            "words": np.array(self.words, dtype=object).astype(str),
            "meta": np.array(
                json.dumps({"metric": self.metric, "name": self.name, "aliases": self.aliases})
            ),
        }
        if self._geometry is not None:
            g = self._geometry
            arrays.update(
                neighbors=g.neighbors,
                distances=g.distances,
                far_neighbors=g.far_neighbors,
                far_distances=g.far_distances,
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as f:
            np.savez(f, **arrays)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, *, arrays: dict[str, np.ndarray] | None = None,
             checked: bool = False) -> EmbeddingSpace:
        """Load a space written by :meth:`save`. ``arrays``: the file's arrays, already read
        (``dptext.cache.load_npz`` maps a file that matched its sha256). ``checked``: these
        very bytes passed ``resources.validate_space`` before (finite vectors, distinct words,
        normalised as :meth:`save` wrote them): the constructor does not check them again."""
        from contextlib import nullcontext

        path = Path(path)
        if not path.is_file():
            raise DPTextError(f"no such embedding space file: {path}")
        try:
            if arrays is not None:
                opened = nullcontext(arrays)
            else:
                opened = np.load(path, allow_pickle=False)
            with opened as z:
                meta = json.loads(str(z["meta"]))
                defer = checked and getattr(z, "on_use", False)
                space = (cls._checked if checked else cls)(
                    z["words"].tolist(),
                    None if defer else z["vectors"],
                    metric=meta["metric"],
                    name=meta["name"],
                    aliases=meta["aliases"],
                )
                if defer:
                    space._deferred = _deferred_members(z, path, len(space.words))
                elif "neighbors" in z:
                    space._geometry = Geometry(
                        z["neighbors"], z["distances"], z["far_neighbors"], z["far_distances"]
                    )
                    space._geometry_k = z["neighbors"].shape[1]
        except DPTextError:
            raise
        except (OSError, ValueError, KeyError, TypeError, EOFError) as err:
            # not an .npz written by save(): a truncated file, another format, missing arrays
            reason = type(err).__name__
            if isinstance(err, KeyError) and err.args:
                reason = str(err.args[0])
            raise DPTextError(f"{path} is not a saved embedding space ({reason})") from None
        return space

    @classmethod
    def from_file(
        cls, path: str | os.PathLike, *, fmt: str = "auto", metric: str = "euclidean",
        limit: int | None = None,
    ) -> EmbeddingSpace:
        """Read GloVe/word2vec/fastText/spaCy/static-model vectors (first ``limit`` rows).

        Words that collide after lower-casing keep their first (most frequent) row.
        """
        from dptext.embedding_formats import read_vectors

        words, vectors = read_vectors(path, fmt)
        return cls.from_words(words, vectors, metric=metric, name=Path(path).name, limit=limit)

    @classmethod
    def from_words(
        cls, words: Iterable[str], vectors: np.ndarray, *, metric: str = "euclidean",
        name: str = "custom", limit: int | None = None,
    ) -> EmbeddingSpace:
        """Build a space keeping the first row of each lower-cased word."""
        seen: dict[str, int] = {}
        for i, w in enumerate(words):
            key = normalize_word(w)
            if key and key not in seen:
                seen[key] = i
            if limit is not None and len(seen) >= limit:
                break
        rows = np.fromiter(seen.values(), dtype=np.int64)
        return cls(list(seen), np.asarray(vectors)[rows], metric=metric, name=name)


def strip_accents(word: str) -> str:
    """``word`` without combining marks (NFKD), e.g. ``bogot\u00e1 -> bogota``."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _deferred_members(z, path: Path, n: int) -> dict:
    """Loaders of a checked cached space's vectors and kNN table (``cache.VerifiedOnUse``): each
    member is read - and its bytes verified - when first used, read-only; a cached ``sanitize``
    whose tables are cached never reads the 77 MB of vectors (issue 36)."""

    def member(name: str) -> np.ndarray:
        try:
            return z[name]
        except DPTextError:  # CorruptArtefact: the bytes differ from the recorded ones
            raise
        except (KeyError, ValueError, TypeError) as err:
            raise DPTextError(f"{path} is not a saved embedding space ({err})") from None

    def vectors(space: EmbeddingSpace) -> None:
        v = member("vectors")
        if v.ndim != 2 or v.shape[0] != n or v.dtype != np.float32:
            raise DPTextError(f"{path}: vectors of shape {v.shape} for {n} words")
        v.flags.writeable = False  # the fingerprint names these bytes
        kept = space._fingerprint
        space._vectors = v
        if kept is not None and kept[0] is _DEFERRED:
            space._fingerprint = (v, kept[1])

    def geometry(space: EmbeddingSpace) -> None:
        if "neighbors" in z:
            g = Geometry(*(member(k) for k in ("neighbors", "distances", "far_neighbors",
                                                "far_distances")))
            space._geometry_now, space._geometry_k_now = g, g.neighbors.shape[1]

    return {"vectors": vectors, "geometry": geometry}
