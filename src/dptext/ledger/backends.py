"""SQLite and PostgreSQL behind one small interface: the ledger's SQL is written once.

Both connections run in autocommit mode with explicit ``BEGIN``/``COMMIT``, so a transaction
is exactly what :class:`dptext.ledger.core.Ledger` says it is. Writers are serialized (the hash
chain has one head): SQLite by ``BEGIN IMMEDIATE`` (the database's write lock, taken before
anything is read), PostgreSQL by a transaction-level advisory lock taken first thing in the
transaction; under READ COMMITTED every later statement then sees everything committed before
the lock was granted, so read-check-write never loses an update. A lock not granted within the
ledger's timeout is a one-line error, as are a corrupt, truncated, read-only or unreachable
database. SQL is written with ``?`` placeholders; the PostgreSQL backend turns them into
psycopg's ``%s`` (the ledger's SQL has no other ``?`` or ``%``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
import weakref
from abc import ABC, abstractmethod
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit, urlunsplit

from dptext.errors import DPTextError

# Arbitrary constant: the PostgreSQL advisory lock that serializes ledger writers.
PG_LOCK_KEY = 0x6470746578746C67  # "dptextlg"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def redact(url: str) -> str:
    """A URL with its password replaced by ``***`` (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class Backend(ABC):
    """One connection to one ledger database. A backend is one subclass and one line of
    :data:`BACKENDS` (its URL schemes); the methods below marked abstract must be written (a
    backend missing one cannot be built), the others are shared."""

    name: ClassVar[str] = ""
    readonly = False
    #: the file the database lives in (None: a server): where the ledger keeps its secret
    #: beside it, and what ``dptext ledger init`` refuses to overwrite
    local_path: Path | None = None

    def __init__(self, target: str, timeout: float):
        self.target = target
        self.timeout = timeout
        self.conn = None

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, timeout: float) -> Backend:
        """The backend of ``url`` (one of its schemes in :data:`BACKENDS`)."""

    # -- to implement
    @abstractmethod
    def exists(self) -> bool:
        """Whether the ledger's database is there (a file backend: before connecting)."""

    @abstractmethod
    def connect(self) -> None: ...

    @abstractmethod
    def begin_write(self, durable: bool = True) -> None: ...

    @abstractmethod
    def begin_read(self) -> None: ...

    @abstractmethod
    def table_exists(self, name: str) -> bool: ...

    def integrity_problem(self) -> str | None:
        return None

    @contextmanager
    def errors(self, action: str):
        yield

    # -- shared
    @property
    def where(self) -> str:
        return self.target

    def sql(self, text: str) -> str:
        return text

    def execute(self, text: str, params=()):
        return self.conn.execute(self.sql(text), params)

    def executemany(self, text: str, rows) -> int:
        """Run ``text`` for every row; the number of rows changed in all (-1: not known)."""
        rows = list(rows)
        if not rows:
            return 0
        cur = self.conn.cursor()
        cur.executemany(self.sql(text), rows)
        return cur.rowcount

    def insert_rows(self, head: str, row: str, rows) -> None:
        """``head VALUES row`` for each of ``rows`` (``row``: the placeholders of one, in
        parentheses)."""
        self.executemany(f"{head} VALUES {row}", rows)

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        try:
            self.conn.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - no transaction open, or the connection is gone
            pass

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None


# ------------------------------------------------------------------------------------ SQLite
def sqlite_path(url: str | os.PathLike) -> Path:
    """``sqlite:///abs/path``, ``sqlite:rel/path`` or a plain path -> the file's path."""
    text = os.fspath(url)
    if text.startswith("sqlite:"):
        rest = text[len("sqlite:"):]
        if rest.startswith("//"):
            rest = rest[2:]  # sqlite:///abs -> /abs ; sqlite://rel -> rel
        text = rest
    if not text:
        raise DPTextError("the ledger URL names no file")
    return Path(text).expanduser()


# Live SQLite connections of this process, per database file ((st_dev, st_ino) -> count).
# On POSIX, closing *any* descriptor of a file drops every advisory lock the process holds on
# it - also the locks of SQLite's own connections ("How To Corrupt An SQLite Database File",
# section 2.2). A connection whose shared lock is gone looks absent to the others: the last
# other connection to close then checkpoints and *deletes the WAL*, and this process goes on
# committing into the unlinked file, so every later commit is lost at the next crash
# (reproduced: a service killed mid-job lost all its charges while the shards they covered were
# released). So the header check below, which opens the file itself, runs only while this
# process holds no SQLite connection to that file; the first connection checks it.
_LIVE: dict[tuple[int, int], int] = {}
_LIVE_LOCK = threading.Lock()


def _file_key(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


def _forget(key: tuple[int, int]) -> None:
    with _LIVE_LOCK:
        left = _LIVE.get(key, 0) - 1
        if left > 0:
            _LIVE[key] = left
        else:
            _LIVE.pop(key, None)


def live_connections(path: Path) -> int:
    """How many SQLite connections this process holds to the file at ``path`` (0 if none)."""
    try:
        key = _file_key(path)
    except OSError:
        return 0
    with _LIVE_LOCK:
        return _LIVE.get(key, 0)


def check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database or is shorter than its header says
    (truncated): SQLite itself would only notice on reading a missing page, or never.

    Opens the file: never call it while this process holds an SQLite connection to it
    (see ``_LIVE``); :meth:`SQLiteBackend.connect` takes care of that."""
    size = path.stat().st_size
    if size == 0:
        raise DPTextError(f"ledger {path} is an empty file, not a ledger (truncated?)")
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise DPTextError(f"ledger {path} is not an SQLite database (corrupt or another file)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    change, valid_for = header[24:28], header[92:96]
    if pages and change == valid_for and size < pages * page_size:
        raise DPTextError(f"ledger {path} is truncated ({size} bytes, its header says "
                          f"{pages * page_size}): restore it from a backup")


# Pages of a new SQLite ledger. A batch of charges to random units dirties pages all over the
# per-unit and per-record indexes, and every dirty page is written to the WAL and fsynced at
# COMMIT: 16 KiB pages cost fewer pages and frames per batch than SQLite's 4 KiB default
# (benchmarks/bench_ledger.py). An existing ledger keeps the page size it was created with.
PAGE_SIZE = 16384
CACHE_KIB = 65536  # page cache per connection, at most
ROWS_PER_INSERT = 256  # rows of one multi-row INSERT (SQLite)


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path, timeout: float):
        super().__init__(str(path), timeout)
        self.path = self.local_path = path

    @classmethod
    def from_url(cls, url, timeout):
        return cls(sqlite_path(url), timeout)

    def exists(self) -> bool:
        return self.path.exists()

    def connect(self) -> None:
        path = self.path
        # the check and the open under one lock: no other thread of this process opens a
        # connection to the file while the check holds a descriptor of it
        with _LIVE_LOCK:
            if path.exists():
                if not _LIVE.get(_file_key(path)):
                    check_sqlite_file(path)
                mode = path.stat().st_mode
                # also when running as root, for whom os.access ignores the mode bits
                self.readonly = not os.access(path, os.W_OK) or not mode & (
                    stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
            elif not path.parent.is_dir():
                raise DPTextError(f"ledger directory {path.parent} does not exist")
            new = not path.exists()
            with self.errors("open"):
                if self.readonly:
                    uri = f"{path.resolve().as_uri()}?mode=ro"
                    self.conn = sqlite3.connect(uri, uri=True, timeout=self.timeout,
                                                isolation_level=None, check_same_thread=False)
                else:
                    self.conn = sqlite3.connect(path, timeout=self.timeout,
                                                isolation_level=None, check_same_thread=False)
            key = _file_key(path)  # sqlite3.connect opened (or created) the file
            _LIVE[key] = _LIVE.get(key, 0) + 1
        self._untrack = weakref.finalize(self, _forget, key)  # also if never closed
        try:
            with self.errors("open"):
                if not self.readonly:
                    if new:  # before the first write fixes it (docs/ledger.md, "Speed")
                        self.conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
                    self.conn.execute("PRAGMA journal_mode=WAL")
                # FULL: a committed charge survives power loss before the output it covers
                self.conn.execute("PRAGMA synchronous=FULL")
                # the indexes a batch touches at random stay in memory (and a transaction's
                # dirty pages are not spilled to the WAL before COMMIT); allocated as used
                self.conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
                self._durable = True
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            untrack = getattr(self, "_untrack", None)
            if untrack is not None:
                untrack()

    def insert_rows(self, head: str, row: str, rows) -> None:
        """Many rows a statement (``INSERT ... VALUES (...), (...), ...``): one step of
        SQLite's for up to :data:`ROWS_PER_INSERT` rows instead of a reset, bind and step for
        each (a third less CPU for a batch's charge rows)."""
        rows = rows if isinstance(rows, list) else list(rows)
        width = row.count("?")
        per = min(ROWS_PER_INSERT, self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
                  // max(width, 1))
        if len(rows) < 2 or per < 2:
            return super().insert_rows(head, row, rows)
        for at in range(0, len(rows), per):
            part = rows[at:at + per]
            self.conn.execute(f"{head} VALUES {','.join([row] * len(part))}",
                              list(chain.from_iterable(part)))

    def begin_write(self, durable: bool = True) -> None:
        if durable != self._durable:  # WAL + NORMAL: atomic, not fsynced until a FULL commit
            self.conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._durable = durable
        self.conn.execute("BEGIN IMMEDIATE")

    def begin_read(self) -> None:
        self.conn.execute("BEGIN")

    def table_exists(self, name: str) -> bool:
        row = self.execute("SELECT name FROM sqlite_master WHERE type='table' AND name=?",
                           (name,)).fetchone()
        return row is not None

    def integrity_problem(self) -> str | None:
        rows = [r[0] for r in self.execute("PRAGMA quick_check").fetchall()]
        if rows == ["ok"]:
            return None
        lines = [" ".join(line.split()) for r in rows for line in str(r).splitlines()]
        lines = [x for x in lines if x and not x.startswith("***")]
        more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
        return (lines[0] if lines else "integrity check failed") + more

    @contextmanager
    def errors(self, action: str):
        try:
            yield
        except sqlite3.Error as err:
            code = getattr(err, "sqlite_errorname", "") or ""
            msg = str(err)
            if code.startswith("SQLITE_BUSY") or code.startswith("SQLITE_LOCKED") \
                    or "locked" in msg:
                raise DPTextError(f"ledger {self.path} is locked by another process for more "
                                  f"than {self.timeout:g} s ({action}); try again later") from None
            if code.startswith("SQLITE_READONLY") or "readonly" in msg:
                raise DPTextError(f"ledger {self.path} is read-only: cannot {action}") from None
            if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or isinstance(
                    err, sqlite3.DatabaseError) and "malformed" in msg:
                raise DPTextError(f"ledger {self.path} is corrupt ({msg}): restore it from a "
                                  "backup") from None
            if code.startswith("SQLITE_CANTOPEN"):
                raise DPTextError(f"cannot open ledger {self.path}: {msg}") from None
            if code.startswith("SQLITE_FULL"):
                raise DPTextError(f"ledger {self.path}: disk full ({action})") from None
            raise DPTextError(f"ledger {self.path}: {action} failed: {msg}") from None


# -------------------------------------------------------------------------------- PostgreSQL
class PostgresBackend(Backend):
    name = "postgresql"

    @classmethod
    def from_url(cls, url, timeout):
        return cls(_PG.sub("postgresql://", url), timeout)

    def __init__(self, url: str, timeout: float):
        super().__init__(url, timeout)
        try:
            import psycopg
        except ImportError:
            raise DPTextError("a postgresql:// ledger needs psycopg 3: pip install "
                              "'dptext[postgres]'") from None
        self.psycopg = psycopg

    @property
    def where(self) -> str:
        return redact(self.target)

    def exists(self) -> bool:
        return self.table_exists("ledger_meta")

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def connect(self) -> None:
        with self.errors("connect"):
            self.conn = self.psycopg.connect(self.target, autocommit=True,
                                             connect_timeout=max(1, round(self.timeout)))
            ms = max(1, round(self.timeout * 1000))
            self.conn.execute(f"SET lock_timeout = {ms}")
            self.conn.execute("SET idle_in_transaction_session_timeout = 0")

    def begin_write(self, durable: bool = True) -> None:
        self.conn.execute("BEGIN")
        if not durable:
            self.conn.execute("SET LOCAL synchronous_commit = off")
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))

    def begin_read(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def table_exists(self, name: str) -> bool:
        row = self.execute("SELECT to_regclass(?)", (name,)).fetchone()
        return row is not None and row[0] is not None

    @contextmanager
    def errors(self, action: str):
        errors = self.psycopg.errors
        try:
            yield
        except errors.LockNotAvailable:
            raise DPTextError(f"ledger {self.where} is locked by another process for more "
                              f"than {self.timeout:g} s ({action}); try again later") from None
        except (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege) as err:
            raise DPTextError(f"ledger {self.where} is read-only for this user: cannot "
                              f"{action} ({_first_line(err)})") from None
        except self.psycopg.OperationalError as err:
            raise DPTextError(f"ledger {self.where}: {action} failed: "
                              f"{_first_line(err)}") from None
        except self.psycopg.Error as err:
            raise DPTextError(f"ledger {self.where}: {action} failed: "
                              f"{_first_line(err)}") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


_PG = re.compile(r"^postgres(ql)?(\+psycopg)?://", re.IGNORECASE)
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):", re.IGNORECASE)

#: every backend by URL scheme (a plain path is SQLite's)
BACKENDS: dict[str, type[Backend]] = {"sqlite": SQLiteBackend, "postgresql": PostgresBackend,
                                      "postgres": PostgresBackend,
                                      "postgresql+psycopg": PostgresBackend,
                                      "postgres+psycopg": PostgresBackend}


def backend_for(url: str | os.PathLike, timeout: float) -> Backend:
    """The backend of a ledger URL: its scheme's in :data:`BACKENDS`, SQLite for a path."""
    text = os.fspath(url)
    m = _SCHEME.match(text)
    scheme = m.group(1).lower() if m and (text[m.end():].startswith("//")
                                          or m.group(1).lower() == "sqlite") else None
    if scheme is None:
        return SQLiteBackend.from_url(text, timeout)
    cls = BACKENDS.get(scheme)
    if cls is None:
        raise DPTextError(f"unknown ledger URL {redact(text)!r}: give a file path, "
                          "sqlite:///PATH or postgresql://...")
    return cls.from_url(text, timeout)
