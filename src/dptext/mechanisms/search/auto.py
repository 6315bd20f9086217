"""``search="auto"`` (the default): the fastest certified search for the CPU it runs on,
measured once and cached.

Certified: a search that returns the exact search's word for every point (not an
approximation): ``"exact"`` (:mod:`~dptext.mechanisms.search.exact`), ``"torch"`` (the same
search with torch's GEMM on the CPU, :mod:`~dptext.mechanisms.search.torch`) and ``"int8"``
(:mod:`~dptext.mechanisms.search.int8`, where torch has the oneDNN int8 kernel and the
probes pass). The faiss searches are approximate, so they are never chosen. Since every
candidate gives the same word for the same point, the choice changes speed only: a seeded run
releases the same words whichever search auto takes.

Small calls (fewer than :data:`AUTO_MIN_WORK` points x words: about 5,000 tokens on the
default space) go to the exact search without measuring anything - the other paths' set-up
(torch's import, the int8 codes and prepacking) would cost more than they save there, and a
short command stays as quick as it was. The first larger call measures: 1,024 probe points
(the space's own words plus noise in uniform directions at radii 1, 4 and 16 times the words'
median norm, a third each, from a fixed seed), each candidate warmed up, then timed by process
CPU time in two interleaved rounds; a candidate other than exact must give exact's word on
every probe point and take at most :data:`WIN_MARGIN` of exact's CPU time to be chosen (int8
only where it wins). The result is cached in ``search/auto-<key>.json``, the key naming what
the timing depends on: the CPU model and flags, the threads the search uses, the table shape,
and the versions of dptext (with the source of the search modules), numpy and torch.

A cached choice is verified before it is trusted: the entry's own sha256, its key, a known
search name, and - for a search other than exact - exact's words on 256 probe points. An entry
that fails is measured again and rewritten (with a warning); an unwritable cache just measures
again next time.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.base import Search, blas_threads

CANDIDATES = ("exact", "torch", "int8")  # certified: the exact search's words
AUTO_MIN_WORK = 5_000 * 50_000  # points x words below which auto is the exact search
WIN_MARGIN = 0.9  # a search other than exact is chosen only at <= 0.9x its CPU time
PROBE_POINTS = 1024
VERIFY_POINTS = 256
ENTRY_VERSION = 1


def probe_points(vectors: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` float64 points near the words of ``vectors`` (module docstring)."""
    rng = np.random.default_rng(seed)
    words = np.asarray(vectors, dtype=np.float64)
    scale = float(np.median(np.sqrt(np.einsum("ij,ij->i", words, words)))) or 1.0
    direction = rng.standard_normal((n, words.shape[1]))
    direction /= np.sqrt(np.einsum("ij,ij->i", direction, direction))[:, None]
    radius = scale * np.array([1.0, 4.0, 16.0])[np.arange(n) % 3]
    return words[rng.integers(0, len(words), n)] + direction * radius[:, None]


def _version(dist: str) -> str:
    """An installed distribution's version without importing it (torch's import alone costs
    1.5 s of CPU)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "none"


def machine_key(shape: tuple[int, int], workers: int) -> dict:
    """What the timing depends on (module docstring)."""
    from dptext.cache import checker_key
    from dptext.devices import cpu_info

    model, flags = cpu_info()
    return {"version": ENTRY_VERSION, "cpu": model, "flags": sorted(flags),
            "workers": int(workers), "shape": [int(shape[0]), int(shape[1])],
            "dptext": checker_key(*(f"dptext.mechanisms.search.{m}" for m in
                                    ("auto", "base", "exact", "torch", "int8", "int8_setup"))),
            "numpy": np.__version__, "torch": _version("torch")}


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def entry_path(key: dict) -> Path:
    from dptext.cache import cache_dir

    return cache_dir() / "search" / f"auto-{_digest(key)[:20]}.json"


def read_entry(path: Path, key: dict) -> tuple[dict | None, str | None]:
    """(entry, None) for a sound entry of ``key`` at ``path``; (None, why) for a damaged one;
    (None, None) where there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, f"unreadable ({err.strerror})"
    try:
        entry = json.loads(text)
        body, digest = entry["body"], entry["sha256"]
    except (ValueError, TypeError, KeyError):
        return None, "not a JSON entry"
    if not isinstance(body, dict) or _digest(body) != digest:
        return None, "its sha256 does not match"
    if body.get("key") != key:
        return None, "it was measured for another machine or version"
    if body.get("choice") not in CANDIDATES:
        return None, f"unknown search {body.get('choice')!r}"
    return body, None


def write_entry(path: Path, body: dict) -> None:
    """Best effort (an unwritable cache measures again next time)."""
    from dptext.io import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, encoding="utf-8") as f:
            json.dump({"body": body, "sha256": _digest(body)}, f, indent=1, sort_keys=True)
    except (OSError, DPTextError):
        pass


class AutoSearch(Search):
    """The exact search for small calls, the measured fastest certified search for the
    others (module docstring). ``choice`` names it once chosen, ``timings`` the CPU seconds
    measured (empty when the choice came from the cache), ``source`` "cache" or "measured"."""

    @classmethod
    def build(cls, name, vectors, *, fingerprint=None, **options):
        return cls(vectors, fingerprint=fingerprint, **options)

    def __init__(self, vectors: np.ndarray, *, workers: int | None = None,
                 fingerprint: str | Callable[[], str] | None = None,
                 min_work: int | None = None, candidates: tuple[str, ...] = CANDIDATES
                 ) -> None:
        self.vectors, self.workers = vectors, workers
        self.min_work = AUTO_MIN_WORK if min_work is None else int(min_work)
        self.fingerprint, self.candidates = fingerprint, tuple(candidates)
        self._exact = None
        self.chosen: Search | None = None
        self.choice: str | None = None
        self.timings: dict[str, float] = {}
        self.source: str | None = None

    @property
    def exact(self):
        if self._exact is None:
            from dptext.mechanisms.search.exact import ExactSearch

            self._exact = ExactSearch(self.vectors, workers=self.workers)
        return self._exact

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points64 = np.asarray(points, dtype=np.float64)
        return self.search_blocks(len(points64), lambda s, e: points64[s:e])

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        return self.resolve(n).search_blocks(n, points_of, unit=unit)

    def resolve(self, n: int) -> Search:
        """The search a call of ``n`` points takes."""
        if n * len(self.vectors) < self.min_work:
            return self.exact
        if self.chosen is None:
            self._choose()
        return self.chosen

    # ------------------------------------------------------------------ choosing
    def _build(self, name: str) -> Search:
        if name == "exact":
            return self.exact
        if name == "torch":
            from dptext.mechanisms.search.torch import TorchExactSearch

            return TorchExactSearch(self.vectors, device="cpu")
        import warnings

        from dptext.mechanisms.search.int8 import Int8Search, Int8SpeedWarning

        fingerprint = self.fingerprint() if callable(self.fingerprint) else self.fingerprint
        with warnings.catch_warnings():  # its speed is what auto measures: nothing to say
            warnings.simplefilter("ignore", Int8SpeedWarning)
            return Int8Search(self.vectors, workers=self.workers, fingerprint=fingerprint)

    def key(self) -> dict:
        """The cache key of this search's choice (:func:`machine_key`)."""
        return machine_key(self.vectors.shape, self.workers or blas_threads())

    def _choose(self) -> None:
        from dptext.cache import warn

        key = self.key()
        path = entry_path(key)
        body, why = read_entry(path, key)
        if body is not None and body["choice"] in self.candidates:
            search = self._trusted(body["choice"])
            if search is not None:
                self.chosen, self.choice, self.source = search, body["choice"], "cache"
                return
            why = f"{body['choice']} did not give the exact search's words"
        if why is not None:
            warn(f"the cached search choice {path.name} is measured again: {why}")
        self._measure()
        write_entry(path, {"key": key, "choice": self.choice, "cpu_s": self.timings,
                           "points": PROBE_POINTS,
                           "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

    def _trusted(self, name: str) -> Search | None:
        """The search ``name`` if it builds and gives exact's words on the verify points."""
        if name == "exact":
            return self.exact
        try:
            search = self._build(name)
        except (ImportError, RuntimeError, ValueError, DPTextError):
            return None
        points = probe_points(self.vectors, VERIFY_POINTS, seed=1)
        return search if np.array_equal(search(points), self.exact(points)) else None

    def _measure(self) -> None:
        """Time every candidate that builds and agrees with exact (module docstring)."""
        import importlib.util

        points = probe_points(self.vectors, PROBE_POINTS)
        want = self.exact(points[:128])  # warm-up of exact
        built: dict[str, Search] = {"exact": self.exact}
        for name in self.candidates:
            if name == "exact" or (name in ("torch", "int8")
                                   and importlib.util.find_spec("torch") is None):
                continue
            try:
                search = self._build(name)
                if not np.array_equal(search(points[:128]), want):  # also its warm-up
                    continue
            except (ImportError, RuntimeError, ValueError, DPTextError):
                continue
            built[name] = search
        times: dict[str, list[float]] = {name: [] for name in built}
        reference, wrong = None, set()
        for _ in range(2):  # interleaved rounds
            for name, search in built.items():
                start = time.process_time()
                got = search(points)
                times[name].append(time.process_time() - start)
                if reference is None:
                    reference = got  # exact's (the first)
                elif not np.array_equal(got, reference):
                    wrong.add(name)  # never chosen
        self.timings = {name: float(np.median(t)) for name, t in times.items()}
        best = min((n for n in self.timings if n not in wrong), key=self.timings.get)
        if best != "exact" and not self.timings[best] <= WIN_MARGIN * self.timings["exact"]:
            best = "exact"
        self.chosen, self.choice, self.source = built[best], best, "measured"

