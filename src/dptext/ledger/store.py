"""The ledger's store: where it lives (``$DPTEXT_LEDGER``, the data directory), opening,
creating and migrating it, and the read and write transactions every other part of
:class:`dptext.ledger.core.Ledger` runs in (a write appends chained entries, :class:`Tx`).
A mixin of :class:`~dptext.ledger.core.Ledger`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from dptext.errors import DPTextError
from dptext.ledger import keys
from dptext.ledger.backends import Backend
from dptext.ledger.batches import RecordIndex
from dptext.ledger.chain import ENTRY_COLUMNS, canonical, entry_hash, genesis
from dptext.ledger.queries import sql_marks
from dptext.ledger.schema import MIGRATIONS, SCHEMA_VERSION, ddl

LEDGER_ENV = "DPTEXT_LEDGER"
DATA_ENV = "DPTEXT_DATA"
DEFAULT_TIMEOUT = 10.0
_CHUNK = 500  # IN (...) lists


def data_dir() -> Path:
    """``$DPTEXT_DATA``, else ``$XDG_DATA_HOME/dptext``, else ``~/.local/share/dptext`` - data
    that must persist (not the cache: deleting a cache must never reset budgets)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dptext"


def default_ledger_url() -> str:
    """``$DPTEXT_LEDGER``, else ``<data dir>/ledger.sqlite``."""
    return os.environ.get(LEDGER_ENV) or str(data_dir() / "ledger.sqlite")


def tool_version() -> str:
    from dptext.version import __version__

    return f"dptext {__version__}"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def chunks(seq: Sequence, size: int = _CHUNK) -> Iterator[Sequence]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


@dataclass
class Tx:
    """The entries one write transaction appends, chained from the head it found."""

    seq: int
    head: str
    created: str
    rows: list[tuple] = field(default_factory=list)
    after: list = field(default_factory=list)  # called once the transaction has committed
    units_fresh: bool = False  # the cached unit totals are exact after this transaction

    def append(self, kind: str, *, release_id: str = "", owner: str = "", dataset: str = "",
               unit: str = "", record: str = "", eps_n: int = 0, delta_n: int = 0,
               body: dict | None = None, body_text: str | None = None, status: str = ""
               ) -> int:
        self.seq += 1
        if body_text is None:
            body_text = canonical(body or {})
        values = (self.seq, kind, release_id, owner, dataset, unit, record, eps_n, delta_n,
                  body_text, self.created, self.head)
        self.head = entry_hash(values)
        self.rows.append(values + (self.head, status))
        return self.seq



class LedgerStore:
    """Opening, creating, migrating; the transactions (a mixin of the Ledger)."""

    # ------------------------------------------------------------------ open / create
    @property
    def where(self) -> str:
        return self._backend.where

    @property
    def backend(self) -> str:
        return self._backend.name

    @property
    def readonly(self) -> bool:
        return self._backend.readonly

    def _open(self, create: bool, delta: float) -> None:
        b = self._backend
        existed = b.exists() if b.local_path is not None else None
        b.connect()
        try:
            with b.errors("open the ledger"):
                has_meta = b.table_exists("ledger_meta")
            if not has_meta:
                if existed:
                    raise DPTextError(f"{b.where} is an SQLite database but not a dptext ledger")
                if not create:
                    raise DPTextError(f"no ledger at {b.where} (create one with "
                                      "`dptext ledger init`)")
                if b.readonly:
                    raise DPTextError(f"ledger {b.where} is read-only: cannot create it")
                self._create(delta)
            self._load()
        except BaseException:
            b.close()
            if existed is False:
                _remove_if_empty(b.path)
            raise

    def _create(self, delta: float) -> None:
        b = self._backend
        with b.errors("create the ledger"):
            try:
                b.begin_write()
                if b.table_exists("ledger_meta"):  # another process created it meanwhile
                    b.rollback()
                    return
                for stmt in MIGRATIONS[0][2]:
                    b.execute(ddl(stmt, b.name))
                ledger_id = uuid.uuid4().hex
                if self._secret_arg is not None:
                    secret, location = self._secret_arg, "external"
                elif b.local_path is not None:
                    secret, location = keys.new_secret(), "file"
                else:
                    secret, location = keys.new_secret(), "db"
                    b.execute("INSERT INTO ledger_keys (name, secret) VALUES (?, ?)",
                              ("unit", secret))
                meta = {
                    "schema_version": str(MIGRATIONS[0][0]),
                    "ledger_id": ledger_id,
                    "created": now(),
                    "delta": repr(float(delta)),
                    "key_location": location,
                    "key_check": keys.Keyring(secret).check_value(ledger_id),
                    "head_seq": "0",
                    "head_hash": genesis(ledger_id),
                    "tool_version": tool_version(),
                }
                b.executemany("INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                              meta.items())
                _apply_migrations(b, MIGRATIONS[0][0])  # a new ledger is the newest version
                key_file = None
                if location == "file":
                    key_file = keys.secret_path(b.path)
                    keys.write_secret_file(key_file, secret)
                try:
                    b.commit()
                except BaseException:
                    key_file.unlink() if key_file is not None else None
                    raise
            except BaseException:
                b.rollback()
                raise

    def _meta(self) -> dict[str, str]:
        return dict(self._backend.execute("SELECT key, value FROM ledger_meta").fetchall())

    def _load(self) -> None:
        b = self._backend
        with b.errors("read the ledger"):
            meta = self._meta()
        try:
            version = int(meta["schema_version"])
            self.ledger_id = meta["ledger_id"]
            self.delta = float(meta["delta"])
            location = meta["key_location"]
            check = meta["key_check"]
        except (KeyError, ValueError):
            raise DPTextError(f"ledger {b.where} has a damaged header (ledger_meta)") from None
        if version > SCHEMA_VERSION:
            raise DPTextError(f"ledger {b.where} has schema version {version}, newer than this "
                              f"dptext knows ({SCHEMA_VERSION}): upgrade dptext")
        if version < 1:
            raise DPTextError(f"ledger {b.where} has an unknown schema version {version}")
        if version < SCHEMA_VERSION:
            self._migrate(version)
        secret = self._secret_arg
        if secret is None:
            if location == "file":
                if b.local_path is None:
                    raise DPTextError(f"ledger {b.where} keeps its secret in a file; set "
                                      f"{keys.SECRET_ENV}")
                secret = keys.read_secret_file(keys.secret_path(b.local_path))
            elif location == "db":
                with b.errors("read the ledger secret"):
                    row = b.execute("SELECT secret FROM ledger_keys WHERE name = ?",
                                    ("unit",)).fetchone()
                if row is None:
                    raise DPTextError(f"ledger {b.where} has lost its secret (ledger_keys)")
                secret = row[0]
            else:
                raise DPTextError(f"ledger {b.where} keeps its secret outside: set "
                                  f"{keys.SECRET_ENV}")
        self._keys = keys.Keyring(secret)
        if self._keys.check_value(self.ledger_id) != check:
            raise DPTextError(f"the ledger secret does not match ledger {b.where} (wrong "
                              f"{keys.SECRET_ENV} or key file): refusing to charge as if "
                              "every unit were new")
        with b.errors("read the ledger"):
            try:
                b.begin_read()
                # charge ids up to charge_base are version-1 entries; whether there are any
                self._charge_base = int(self._meta().get("charge_base", "0"))
                self._legacy = b.execute("SELECT seq FROM ledger_entries WHERE record <> '' "
                                         "LIMIT 1").fetchone() is not None
            finally:
                b.rollback()

    def _migrate(self, version: int) -> None:
        b = self._backend
        if b.readonly:
            raise DPTextError(f"ledger {b.where} (schema version {version}) needs migrating to "
                              f"{SCHEMA_VERSION} but is read-only")
        with b.errors("migrate the ledger"):
            try:
                b.begin_write()
                _apply_migrations(b, int(self._meta()["schema_version"]))
                b.commit()
            except BaseException:
                b.rollback()
                raise

    # ----------------------------------------------------------------- transactions
    def _reset_caches(self) -> None:
        """What this object remembers of the database (each rebuilt from it when needed)."""
        self._indexes: dict[str, RecordIndex] = {}  # release -> its records seen
        self._events_known: set[str] = set()  # event digests in ledger_events
        self._entry_releases: dict[int, str] = {}  # batch entry -> its release
        self._releases: dict[str, tuple[str, str]] = {}  # release -> (owner, dataset)
        # (owner, dataset) -> unit -> [eps_n, delta_n, has a row] of its ledger_units row,
        # exact while the head is _unit_rows_at: a reserve that finds another head (another
        # process wrote) reads them again
        self._unit_rows: dict[tuple[str, str], dict[str, list[int]]] = {}
        self._unit_rows_at: tuple[int, str] | None = None

    def _ensure(self) -> None:
        if self._pid != os.getpid():  # forked: the parent's connection is not ours to use
            self._orphans.append(self._backend.conn)  # nor to close (kept, never touched)
            self._backend.conn = None
            self._pid = os.getpid()
            self._reset_caches()
        if self._backend.conn is None:
            self._backend.connect()

    @contextmanager
    def _write(self, action: str, *, durable: bool = True):
        """One write transaction. ``durable=False`` (marking charges released) may be lost on
        power failure - the charges then stay pending, which is safe - and saves an fsync."""
        with self._lock:
            self._ensure()
            b = self._backend
            if b.readonly:
                raise DPTextError(f"ledger {b.where} is read-only: cannot {action}")
            with b.errors(action):
                try:
                    b.begin_write(durable=durable)
                    head = dict(b.execute(
                        "SELECT key, value FROM ledger_meta WHERE key IN (?, ?)",
                        ("head_seq", "head_hash")).fetchall())
                    tx = Tx(int(head["head_seq"]), head["head_hash"], now())
                    start = (tx.seq, tx.head)
                    yield tx
                    if tx.rows:
                        b.executemany(
                            f"INSERT INTO ledger_entries ({', '.join(ENTRY_COLUMNS)}, status) "
                            f"VALUES ({sql_marks(len(ENTRY_COLUMNS) + 1)})", tx.rows)
                        b.executemany("UPDATE ledger_meta SET value = ? WHERE key = ?",
                                      [(str(tx.seq), "head_seq"), (tx.head, "head_hash")])
                    b.commit()
                except BaseException:
                    b.rollback()
                    self._unit_rows_at = None  # a reserve may have updated it in memory
                    raise
            # the cached unit totals stay exact if they were before this transaction (which
            # then changed no unit) or the transaction brought them up to date (a reserve)
            fresh = tx.units_fresh or self._unit_rows_at == start
            self._unit_rows_at = (tx.seq, tx.head) if fresh else None
            for call in tx.after:
                call()

    @contextmanager
    def _read(self, action: str):
        with self._lock:
            self._ensure()
            b = self._backend
            with b.errors(action):
                try:
                    b.begin_read()
                    yield b
                finally:
                    b.rollback()  # read-only: nothing to keep

    def close(self) -> None:
        with self._lock:
            self._backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()



def _apply_migrations(b: Backend, current: int) -> None:
    """The migrations after ``current``, in the caller's write transaction."""
    for v, _what, statements in MIGRATIONS:
        if v > current:
            for stmt in statements:
                b.execute(ddl(stmt, b.name))
            b.execute("UPDATE ledger_meta SET value = ? WHERE key = ?",
                      (str(v), "schema_version"))



def _remove_if_empty(path: Path) -> None:
    """Remove a database file this process created but could not make a ledger (no tables:
    nobody else made it one meanwhile)."""
    import sqlite3

    try:
        with sqlite3.connect(path) as c:
            empty = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        c.close()
    except sqlite3.Error:
        return
    if empty:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

