"""The fitted tables of a word mechanism, as a cache: fit them (once per space and table
parameters, on disk under a key derived from ``table_parameters``, built under a file lock,
verified by content hash and :meth:`~FittedTables.validate_tables` when read), save and load
them, export them to and install them from another process. A mixin of
:class:`~dptext.mechanisms.word.WordMechanism`, which samples from them."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.io import atomic_write

# Bump when a mechanism's fitted tables change meaning: cached tables of older code are ignored.
TABLE_FORMAT = 2


@functools.cache
def _version(package: str) -> str:
    """The installed version of ``package`` (part of the tables' cache key), read from the
    first ``NAME-VERSION.dist-info`` on ``sys.path`` - what importlib.metadata finds, without
    importing it (a noticeable share of a cached command's start-up; issue 36)."""
    import sys

    prefix = package.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().startswith(prefix) and name.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry or ".", name, "METADATA"),
                              encoding="utf-8") as f:
                        for line in f:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break
                except OSError:
                    pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def _canonical(value: Any) -> Any:
    """A JSON-stable form of a parameter value for the cache key."""
    if isinstance(value, dict):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, set | frozenset):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot put a {type(value).__name__} into a cache key")


class FittedTables:
    """Fit, cache, save, load, export and install the tables (the word mechanism provides
    ``name``, ``space``, ``epsilon``, ``table_parameters``, ``_fit_tables`` and ``guarantee``)."""

    def _table_params(self) -> dict[str, Any]:
        """The values of ``table_parameters`` (the space enters the key by its fingerprint)."""
        return {self.table_key_names.get(n, n):
                _canonical(getattr(self, self.table_attributes.get(n, n)))
                for n in sorted(self.table_parameters)}

    def validate_tables(self, tables: dict[str, np.ndarray]) -> None:
        """Check fitted tables before they are used (raise DPTextError naming the defect).

        Every mechanism gets this generic check (no Python objects, no NaN or +inf);
        mechanisms override it with their own structure and guarantee (CusText's disjoint sets
        and realized privacy loss, SanText's near table, ...), calling ``super()`` first.
        """
        for name, value in tables.items():
            arr = np.asarray(value)
            if arr.dtype.hasobject:
                raise DPTextError(f"table {name!r} holds Python objects")
            if arr.dtype.kind == "f" and not np.isfinite(arr[~np.isneginf(arr)]).all():
                raise DPTextError(f"table {name!r} holds NaN or infinite values")

    def _use_tables(self, tables: dict[str, np.ndarray]) -> None:
        self._tables = tables
        self._token_guarantee = self.guarantee  # fixed once fitted; every report shares it

    def export_tables(self) -> dict[str, np.ndarray]:
        """The fitted tables (name -> array), for another process to install."""
        return dict(self._tables)

    def install_tables(self, space: EmbeddingSpace | None,
                       tables: dict[str, np.ndarray] | None) -> None:
        """Sample from ``tables`` fitted elsewhere on ``space`` (checked by whoever fitted or
        loaded them: :meth:`validate_tables`); ``None`` drops the tables (a bare copy)."""
        self.space = space
        if tables is None:
            self._tables = None
        else:
            self._use_tables(tables)
        self._lookup_cache = {}

    def _cache_path(self, space: EmbeddingSpace) -> Path:
        from dptext.resources import cache_dir

        key = json.dumps(
            {
                "mechanism": self.name, "space": space.fingerprint(),
                "tables": TABLE_FORMAT, "wordfreq": _version("wordfreq"),
                **({"layout": self.table_layout} if self.table_layout != 1 else {}),
                **self._table_params(),
            },
            sort_keys=True,
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir() / "fitted" / f"{self.name}-{digest}.npz"

    #: how long a fit takes on 2 cores for the default space (for the message before it)
    fit_estimate: ClassVar[str | None] = None

    def preparation_note(self) -> str | None:
        if self._tables is not None:
            return None
        from dptext.resources import default_space_path

        if self.space is None and not default_space_path().is_file():
            return ("building the default 50k-word space from the packaged MiniLM encoder: "
                    "about 2.5 min, cached afterwards")
        if self._cache_path(self.resolved_space()).is_file():
            return None
        estimate = f": {self.fit_estimate}" if self.fit_estimate else ""
        return f"fitting {self.name} tables for eps={self.epsilon:g}{estimate}, cached afterwards"

    def fit(self, *, cache: bool = True, progress: bool = False) -> FittedTables:
        """Precompute the sampling tables (once; cached on disk under the space fingerprint).

        A cached file is used only after its content hash and :meth:`validate_tables` pass: a
        corrupted one is rebuilt (with a warning); one that is intact but fails validation is
        an error naming it. Concurrent processes build an entry once (a file lock); where the
        cache is read-only the tables are kept in memory (with a warning).
        """
        from dptext import cache as cache_files

        if self.space is None:
            from dptext.resources import default_space

            self.space = default_space(progress=progress)
        self.check_admissible()  # before any table is fitted or cached
        path = self._cache_path(self.space) if cache else None
        tables = self._cached_tables(path) if path is not None else None
        if tables is None and path is not None:
            with cache_files.build_lock(path, f"{self.name} tables"):
                tables = self._cached_tables(path)  # another process may have built it
                if tables is None:
                    tables = self._fit_tables(self.space)
                    self._validate(tables, "freshly fitted tables")
                    if cache_files.save_npz(path, tables):
                        from dptext.resources import bound_cache

                        bound_cache(path)  # the least recently used tables out past the cap
        elif tables is None:
            tables = self._fit_tables(self.space)
            self._validate(tables, "freshly fitted tables")
        self._use_tables(tables)
        self._lookup_cache = {}
        return self

    def _validate(self, tables: dict[str, np.ndarray], what: str) -> None:
        try:
            self.validate_tables(tables)
        except DPTextError as err:
            raise DPTextError(f"{self.name}: {what} failed validation: {err}") from None

    def _cached_tables(self, path: Path) -> dict[str, np.ndarray] | None:
        """The verified tables at ``path``; None if absent or corrupted (then rebuilt)."""
        from dptext import cache as cache_files

        if not path.is_file():
            return None
        try:
            legacy = not cache_files.verify(path)
            tables = cache_files.load_npz(path, verified=not legacy)
        except cache_files.CorruptArtefact as err:
            cache_files.warn(f"{err}; rebuilding {self.name} tables")
            return None
        # validated before, byte for byte (the same digest) by the same code: not again
        key = cache_files.checker_key(type(self).__module__, __name__)
        if not legacy and cache_files.checked(path, key) is not None:
            return tables
        try:
            self.validate_tables(tables)
        except DPTextError as err:
            raise DPTextError(
                f"{path}: cached {self.name} tables failed validation ({err}); "
                f"{cache_files.rebuild_hint('fitted')}"
            ) from None
        if not legacy:
            cache_files.mark_checked(path, key)
        if legacy:
            cache_files.warn(f"{path} had no content hash (written by an older dptext); "
                             "its tables passed validation and their hash is now recorded")
            cache_files.record_digest(path)
        return tables

    def save(self, path: str | os.PathLike, tables: dict[str, np.ndarray] | None = None) -> Path:
        """Write the fitted tables to ``path`` (atomically, with a content-hash file beside it)."""
        from dptext import cache as cache_files

        tables = tables if tables is not None else self._tables
        if tables is None:
            raise DPTextError(f"{self.name}: fit() before save()")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as f:
            np.savez(f, **tables)
        cache_files.record_digest(path)
        return path

    def load(self, path: str | os.PathLike) -> FittedTables:
        """Use tables written by :meth:`save` (for the same space and parameters): checked
        against their content hash (when one was saved) and :meth:`validate_tables`."""
        from dptext import cache as cache_files

        if self.space is None:
            from dptext.resources import default_space

            self.space = default_space()
        path = Path(path)
        if not path.is_file():
            raise DPTextError(f"no such tables file: {path}")
        cache_files.verify(path)
        tables = cache_files.load_npz(path)
        try:
            self.validate_tables(tables)
        except DPTextError as err:
            raise DPTextError(f"{path}: {self.name} tables failed validation ({err})") from None
        self._use_tables(tables)
        self._lookup_cache = {}
        return self

    @property
    def is_fitted(self) -> bool:
        return self._tables is not None
