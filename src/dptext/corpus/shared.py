"""Give worker processes (and Ray actors) a fitted mechanism without pickling its tables.

A fitted word mechanism pickles to over 100 MB (the space's vectors and the sampling tables).
:func:`export` writes those arrays once as ``.npy`` files; each worker memory-maps them
read-only (:func:`attach`), so the operating system shares one copy in the page cache between
every process of the machine. What is pickled is the mechanism without its arrays (a few kB).

The space comes through the public :meth:`~dptext.mechanisms.word.WordMechanism.fitted_space`,
the tables through ``export_tables`` / ``install_tables`` (no copy of the arrays) and the
space's neighbour table through ``EmbeddingSpace.cached_geometry`` / ``install_geometry``.
Mechanisms that are not word mechanisms (the language-model
ones) are rebuilt in each worker from their name and parameters, and load their model there.
"""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from pathlib import Path

import numpy as np

from dptext.embeddings import EmbeddingSpace, Geometry
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism

_GEOMETRY = ("neighbors", "distances", "far_neighbors", "far_distances")
# a process that memory-maps its tables read-only hands them to torch as read-only tensors
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def _save(path: Path, array: np.ndarray) -> None:
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def fitted_tables(m: WordMechanism) -> dict[str, np.ndarray]:
    return m.export_tables()


def _install(m: WordMechanism, space: EmbeddingSpace, tables: dict[str, np.ndarray]) -> None:
    m.install_tables(space, tables)  # validated when the driver fitted or loaded them


def _strip(m: WordMechanism) -> WordMechanism:
    bare = copy.copy(m)
    for key, value in list(vars(bare).items()):
        if isinstance(value, np.ndarray | EmbeddingSpace):
            setattr(bare, key, None)
    bare.install_tables(None, None)
    return bare


def _geometry_of(space: EmbeddingSpace) -> Geometry | None:
    return space.cached_geometry


def _set_geometry(space: EmbeddingSpace, geometry: Geometry) -> None:
    space.install_geometry(geometry)


def files_of(shared: dict) -> dict | None:
    """The part of an :func:`export` description that names files (a word mechanism's, or
    the one an entity-targeted mechanism wraps); None when there are none."""
    if shared.get("kind") == "targeted":
        return files_of(shared["inner"])
    return shared if shared.get("kind") == "word" else None


def export(m: Mechanism, directory: Path, spec: tuple[str, dict] | None = None) -> dict:
    """A small, picklable description from which :func:`attach` rebuilds ``m`` in another
    process. Word mechanisms must be fitted; their arrays are written under ``directory``.
    An entity-targeted mechanism travels as its wrapper (detector settings, recognizers, no
    models) plus the wrapped mechanism's own description (``spec`` names the wrapped one)."""
    from dptext.targeted import TargetedMechanism

    if isinstance(m, TargetedMechanism):
        return {"kind": "targeted", "inner": export(m.mechanism, directory, spec),
                "state": pickle.dumps(m.shell())}
    if isinstance(m, WordMechanism):
        if not m.is_fitted:
            raise DPTextError(f"{m.name}: fit() before sharing the mechanism with workers")
        directory.mkdir(parents=True, exist_ok=True)
        space = m.fitted_space()
        tables = fitted_tables(m)
        geometry = _geometry_of(space)
        _save(directory / "vectors.npy", space.vectors)
        meta = {"words": space.words, "metric": space.metric, "name": space.name,
                "aliases": space.aliases, "geometry": geometry is not None,
                "tables": sorted(tables)}
        if geometry is not None:
            for name in _GEOMETRY:
                _save(directory / f"geometry-{name}.npy", getattr(geometry, name))
        for name, array in tables.items():
            _save(directory / f"table-{name}.npy", array)
        (directory / "space.json").write_text(json.dumps(meta), encoding="utf-8")
        return {"kind": "word", "dir": str(directory), "state": pickle.dumps(_strip(m))}
    if spec is not None:
        return {"kind": "spec", "name": spec[0], "params": spec[1]}
    return {"kind": "pickle", "state": pickle.dumps(m)}


def attach(shared: dict) -> Mechanism:
    """The mechanism :func:`export` described, ready to privatize (fitted; an entity-targeted
    one with its detector loaded, once per process)."""
    if shared["kind"] == "targeted":
        inner = attach(shared["inner"])
        return pickle.loads(shared["state"]).with_mechanism(inner).load_detector()
    if shared["kind"] == "spec":
        from dptext.mechanisms.registry import mechanism

        m = mechanism(shared["name"], **shared["params"])
        m.fit()
        return m
    m = pickle.loads(shared["state"])
    if shared["kind"] != "word":
        if not m.is_fitted:
            m.fit()
        return m
    directory = Path(shared["dir"])
    meta = json.loads((directory / "space.json").read_text(encoding="utf-8"))

    def load(name: str) -> np.ndarray:
        return np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False)

    space = EmbeddingSpace(meta["words"], load("vectors"), metric=meta["metric"],
                           name=meta["name"], aliases=meta["aliases"])
    if meta["geometry"]:
        _set_geometry(space, Geometry(*(load(f"geometry-{n}") for n in _GEOMETRY)))
    _install(m, space, {name: load(f"table-{name}") for name in meta["tables"]})
    return m
