"""The persistent budget ledger: what each privacy unit has spent, across every release.

Protocol (charge before release, docs/ledger.md): a caller opens a release, then for every batch
of records calls :meth:`Ledger.reserve` *before* writing the batch's output - one transaction
that checks each record's unit against its budgets and appends the batch as one chained entry
whose rows are the allowed records as *pending* charges and the withheld ones as withheld rows
(:mod:`dptext.ledger.batches`) - and :meth:`Ledger.commit` *after* the output
is durable, which marks the charges *released*. A crash between the two leaves pending charges:
text charged and perhaps never released, never text released and not charged. Budgets count
pending charges as spent. Re-reserving a record of the same release returns its first decision
(``already=True``) and charges nothing again, so a resumed job continues its release.

Amounts: epsilons and deltas are kept as integers in units of 1e-9 (epsilon) and 1e-15 (delta),
each charge rounded *up* (after forgiving a relative 1e-12 of floating-point noise, so 0.1 is
charged as 0.1) and each budget rounded down, so sums are exact, do not depend on the order of
concurrent writers, and understate basic composition by at most that 1e-12 relative noise. The
event lists stay in the entries as floats for the PLD report.

Composition: the ledger *enforces* basic composition per unit - ``sum count*eps <= budget eps``
and ``sum count*delta <= budget delta`` over every charge (pending or released) in the budget's
scope (Dwork & Roth 2014, Thm 3.16) - and *reports* besides it the PLD epsilon at the ledger's
delta (dp_accounting, :func:`dptext.accounting.composition.pld_epsilon`), which is smaller for
many small charges.
"""

from __future__ import annotations

import json
import math
import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from operator import itemgetter
from pathlib import Path

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger import keys
from dptext.ledger.amounts import (
    ANY,
    DEFAULT_DELTA,
    DELTA_SCALE,
    EPS_SCALE,
    checked_name,
    delta_of,
    eps_of,
    events_cost,
    fits,
    over_budget,
    round_down,
    scope_text,
)
from dptext.ledger.backends import Backend, SQLiteBackend, backend_for
from dptext.ledger.batches import RecordIndex, digest, events_digest, fast_line
from dptext.ledger.chain import ENTRY_COLUMNS, canonical, entry_hash, genesis
from dptext.ledger.queries import LedgerQueries, sql_marks
from dptext.ledger.results import Budget, Decision, VerifyResult
from dptext.ledger.schema import MIGRATIONS, SCHEMA_VERSION, ddl

LEDGER_ENV = "DPTEXT_LEDGER"
DATA_ENV = "DPTEXT_DATA"
DEFAULT_TIMEOUT = 10.0
_CHUNK = 500  # IN (...) lists
# record hashes of one release kept in memory (about 150 bytes each); past it, each reserve
# reads the release's records again (correct, slower)
_MAX_INDEXED = 5_000_000


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


def _tool_version() -> str:
    from dptext.version import __version__

    return f"dptext {__version__}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _chunks(seq: Sequence, size: int = _CHUNK) -> Iterator[Sequence]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


@dataclass
class _Tx:
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


# ----------------------------------------------------------------------------------- ledger
class Ledger(LedgerQueries):
    """A persistent, append-only budget ledger (SQLite file or PostgreSQL database).

    ``url``: a path, ``sqlite:///PATH`` or ``postgresql://...``; None -> ``$DPTEXT_LEDGER``,
    else ``<data dir>/ledger.sqlite``. ``create``: start a new ledger where there is none (a
    new SQLite file, or a PostgreSQL database without the ledger tables); an existing file that
    is not a ledger is refused. ``timeout``: seconds to wait for another writer's lock before
    a one-line error. ``delta``: the ledger's delta for PLD reports, fixed when it is created.
    One Ledger object per process (it reconnects after a fork); it is safe to share between
    threads.
    """

    def __init__(self, url: str | os.PathLike | None = None, *, secret: str | bytes | None = None,
                 timeout: float = DEFAULT_TIMEOUT, create: bool = True,
                 delta: float | None = None):
        default = url is None
        self.url = default_ledger_url() if default else os.fspath(url)
        if not (timeout > 0 and math.isfinite(timeout)):
            raise DPTextError(f"the ledger timeout must be > 0 seconds, got {timeout}")
        if delta is not None and not 0.0 < delta < 1.0:
            raise DPTextError(f"the ledger delta must be in (0, 1), got {delta}")
        self._backend: Backend = backend_for(self.url, timeout)
        if default and isinstance(self._backend, SQLiteBackend):
            self._backend.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._secret_arg = secret if secret is not None else os.environ.get(keys.SECRET_ENV)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._orphans: list = []
        self._costs: dict[tuple, tuple[int, int, str, str]] = {}  # events tuple -> cost
        self._costs1: dict[tuple, tuple[int, int, str, str]] = {}  # one event's fields -> cost
        self._reset_caches()
        self._open(create, DEFAULT_DELTA if delta is None else delta)

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
        existed = b.exists() if isinstance(b, SQLiteBackend) else None
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
                elif isinstance(b, SQLiteBackend):
                    secret, location = keys.new_secret(), "file"
                else:
                    secret, location = keys.new_secret(), "db"
                    b.execute("INSERT INTO ledger_keys (name, secret) VALUES (?, ?)",
                              ("unit", secret))
                meta = {
                    "schema_version": str(MIGRATIONS[0][0]),
                    "ledger_id": ledger_id,
                    "created": _now(),
                    "delta": repr(float(delta)),
                    "key_location": location,
                    "key_check": keys.Keyring(secret).check_value(ledger_id),
                    "head_seq": "0",
                    "head_hash": genesis(ledger_id),
                    "tool_version": _tool_version(),
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
                if not isinstance(b, SQLiteBackend):
                    raise DPTextError(f"ledger {b.where} keeps its secret in a file; set "
                                      f"{keys.SECRET_ENV}")
                secret = keys.read_secret_file(keys.secret_path(b.path))
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
                    tx = _Tx(int(head["head_seq"]), head["head_hash"], _now())
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

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.where!r})"

    # ------------------------------------------------------------------------ hashing
    def unit_hash(self, unit_id: str) -> str:
        """The keyed hash the ledger stores for ``unit_id``."""
        return self._keys.unit(_unit_text(unit_id))

    # ------------------------------------------------------------------------ budgets
    def set_budget(self, owner: str, dataset: str, epsilon: float, delta: float = 0.0) -> None:
        """Every unit may spend at most (epsilon, delta) under basic composition in releases by
        ``owner`` of ``dataset`` (either may be ``"*"``: any). Replaces an earlier budget for
        the same pair (as a new entry); lowering it below what a unit has spent withholds that
        unit's further records."""
        owner = checked_name("owner", owner, wildcard=True)
        dataset = checked_name("dataset", dataset, wildcard=True)
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise DPTextError(f"a budget epsilon must be finite and >= 0, got {epsilon}")
        if not 0.0 <= delta < 1.0:
            raise DPTextError(f"a budget delta must be in [0, 1), got {delta}")
        eps_n, delta_n = round_down(epsilon, EPS_SCALE), round_down(delta, DELTA_SCALE)
        with self._write("set a budget") as tx:
            seq = tx.append("budget", owner=owner, dataset=dataset, eps_n=eps_n,
                            delta_n=delta_n, body={"epsilon": epsilon, "delta": delta})
            self._backend.execute(
                "INSERT INTO ledger_budgets (owner, dataset, eps_n, delta_n, seq) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, dataset) DO UPDATE SET "
                "eps_n = excluded.eps_n, delta_n = excluded.delta_n, seq = excluded.seq",
                (owner, dataset, eps_n, delta_n, seq))

    def budgets(self) -> list[Budget]:
        with self._read("read budgets") as b:
            rows = b.execute("SELECT owner, dataset, eps_n, delta_n FROM ledger_budgets "
                             "ORDER BY owner, dataset").fetchall()
        return [Budget(o, d, eps_of(e), delta_of(n)) for o, d, e, n in rows]

    def _budgets_for(self, owner: str, dataset: str) -> list[tuple[str, str, int, int]]:
        rows = self._backend.execute(
            "SELECT owner, dataset, eps_n, delta_n FROM ledger_budgets "
            "WHERE owner IN (?, ?) AND dataset IN (?, ?) ORDER BY owner, dataset",
            (owner, ANY, dataset, ANY)).fetchall()
        return [(o, d, int(e), int(n)) for o, d, e, n in rows]

    def _totals(self, units: Sequence[str], owner: str, dataset: str) -> dict[str, list[int]]:
        """unit -> [eps_n, delta_n] charged (released + pending) in the scope."""
        out: dict[str, list[int]] = {}
        where, extra = "", []
        if owner != ANY:
            where += " AND owner = ?"
            extra.append(owner)
        if dataset != ANY:
            where += " AND dataset = ?"
            extra.append(dataset)
        if owner != ANY and dataset != ANY:  # one row per unit: the primary key
            sql = ("SELECT unit, eps_n, delta_n FROM ledger_units WHERE owner = ? AND "
                   "dataset = ? AND unit IN ({})")  # the key (unit, owner, dataset)
            first, extra = [owner, dataset], []
        else:
            sql = ("SELECT unit, SUM(eps_n), SUM(delta_n) FROM ledger_units "
                   f"WHERE unit IN ({{}}){where} GROUP BY unit")
            first = []
        for chunk in _chunks(list(units)):
            rows = self._backend.execute(sql.format(sql_marks(len(chunk))),
                                         (*first, *chunk, *extra)).fetchall()
            for u, e, d in rows:
                out[u] = [int(e), int(d)]
        return out

    def check_budget_covers(self, owner: str, dataset: str,
                            events: Sequence[PrivacyEvent]) -> None:
        """Raise when a budget that applies to ``owner``/``dataset`` is below what ``events``
        (e.g. one record with one privatized token) cost: then nothing could be released."""
        eps_n, delta_n = events_cost(events)
        with self._read("read budgets"):
            budgets = self._budgets_for(checked_name("owner", owner),
                                        checked_name("dataset", dataset))
        for o, d, b_eps, b_delta in budgets:
            if eps_n > b_eps or delta_n > b_delta:
                raise DPTextError(
                    f"the budget (epsilon {eps_of(b_eps):g}, delta {delta_of(b_delta):g}) for "
                    f"{scope_text(o, d)} is below what one record costs (epsilon "
                    f"{eps_of(eps_n):g}, delta {delta_of(delta_n):g}): nothing could be released")

    # ----------------------------------------------------------------------- releases
    def open_release(self, *, owner: str, dataset: str, mechanism: str, params: dict,
                     release_key: str | None = None) -> str:
        """Start a release (or, with the ``release_key`` of an earlier one, continue it)."""
        owner, dataset = checked_name("owner", owner), checked_name("dataset", dataset)
        try:
            params_text = canonical(params)
        except (TypeError, ValueError) as err:
            raise DPTextError(f"release parameters must be JSON: {err}") from None
        key_hash = self._keys.release_key(str(release_key)) if release_key is not None else None
        with self._write("open a release") as tx:
            b = self._backend
            if key_hash is not None:
                row = b.execute("SELECT release_id, owner, dataset FROM ledger_releases "
                                "WHERE key_hash = ?", (key_hash,)).fetchone()
                if row is not None:
                    if (row[1], row[2]) != (owner, dataset):
                        raise DPTextError(
                            f"release key already used by release {row[0]} of owner "
                            f"{row[1]!r}, dataset {row[2]!r}")
                    return row[0]
            release_id = uuid.uuid4().hex
            version = _tool_version()
            seq = tx.append("open", release_id=release_id, owner=owner, dataset=dataset,
                            body={"mechanism": mechanism, "params": json.loads(params_text),
                                  "tool_version": version, "release_key": key_hash})
            b.execute("INSERT INTO ledger_releases (release_id, key_hash, owner, dataset, "
                      "mechanism, params, tool_version, created, seq) VALUES "
                      "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (release_id, key_hash, owner, dataset, mechanism, params_text, version,
                       tx.created, seq))
        return release_id

    def _release(self, release_id: str) -> tuple[str, str]:
        """(owner, dataset) of a release (fixed when it was opened)."""
        out = self._releases.get(release_id)
        if out is None:
            row = self._backend.execute("SELECT owner, dataset FROM ledger_releases WHERE "
                                        "release_id = ?", (release_id,)).fetchone()
            if row is None:
                raise DPTextError(f"unknown release {release_id!r} (open it with "
                                  "open_release)")
            out = self._releases[release_id] = (row[0], row[1])
        return out

    # ------------------------------------------------------------------ reserve/commit
    def reserve(self, release_id: str,
                items: Sequence[tuple[str, str, Sequence[PrivacyEvent]]], *,
                all_or_nothing: bool = False) -> list[Decision]:
        """Charge a batch of records, as pending, in one transaction; call before writing them.

        ``items``: ``(record_key, unit_id, events)``. A record whose unit would exceed any
        applicable budget (released + pending + this record, basic composition) is withheld:
        nothing is charged and the decision says why. A record already seen in this release
        gets its first decision again with ``already=True``. ``all_or_nothing``: when any record
        would be withheld, charge none and raise (training runs: a model cannot leave a user
        out after the fact).

        The batch is one chained entry (kind ``batch``) and one row per record in
        ``ledger_charges`` (:mod:`dptext.ledger.batches`). Per record only what differs
        between records is done: its keyed hash, its budget check against its unit's running
        totals, its row and digest line; its unit's key, its events' cost and encoding are
        looked up (computed once per distinct value), the unit rows are read and written
        once per unit of the batch.
        """
        release_id = str(release_id)
        records, units_of, costs = self._prepare_all(release_id, items)
        if not records:
            return []
        with self._write("charge the ledger") as tx:
            b = self._backend
            owner, dataset = self._release(release_id)
            seen = self._seen(release_id, records)
            budgets = self._budgets_for(owner, dataset)
            units = sorted(set(units_of) if not seen else
                           {u for r, u in zip(records, units_of, strict=True) if r not in seen})
            rows_now = self._unit_rows_now(tx, owner, dataset, units)
            # the batch's running totals per unit, in its own scope (owner, dataset) and in
            # each other scope a budget covers; ``limits``: (budget eps, budget delta, totals)
            own = {u: rows_now[u][:2] for u in units}
            checks = [(bud, own if bud[:2] == (owner, dataset)
                       else self._totals(units, bud[0], bud[1])) for bud in budgets]
            limits = [(bud[2], bud[3], tot) for bud, tot in checks]
            if not any(tot is own for _, tot in checks):  # kept for the unit rows
                limits.append((math.inf, math.inf, own))
            entry = tx.seq + 1  # the batch's entry, appended below
            row = b.execute("SELECT MAX(id) FROM ledger_charges").fetchone()[0]
            next_id = max(int(row or 0), self._charge_base) + 1
            first_id = next_id
            decisions: list[Decision] = []
            decided = seen  # record -> its decision, earlier or in this call
            charged: list[tuple] = []  # (id, unit, record, eps_n, delta_n, events digest)
            withheld: list[tuple] = []  # (id, entry, unit, record, 0, 0, events, reason, status)
            lines: list[str] = []
            new = tuple.__new__
            single = len(limits) == 1 and limits[0][2] is own
            b_eps1, b_delta1 = limits[0][:2]
            for record, unit, cost in zip(records, units_of, costs, strict=True):
                d = decided.get(record)
                if d is not None:
                    decisions.append(d if d.already else d._replace(already=True))
                    continue
                eps_n, delta_n, ev = cost[0], cost[1], cost[2]
                if single:  # the usual one budget, of the release's own scope
                    cur = own[unit]
                    ok = cur[0] + eps_n <= b_eps1 and cur[1] + delta_n <= b_delta1
                    if ok:
                        cur[0] += eps_n
                        cur[1] += delta_n
                else:
                    ok = fits(limits, unit, eps_n, delta_n)
                if ok:
                    charged.append((next_id, unit, record, eps_n, delta_n, ev))
                    # batches.fast_line, inlined (hex fields, no reason)
                    lines.append(f'[{next_id},"{unit}","{record}",{eps_n},{delta_n},"{ev}",""]\n')
                    d = new(Decision, (True, next_id, None, False))
                else:
                    reason = over_budget(checks, unit, eps_n, delta_n)
                    withheld.append((next_id, entry, unit, record, 0, 0, ev, reason,
                                     "withheld"))
                    lines.append(fast_line(next_id, unit, record, 0, 0, ev, reason))
                    d = new(Decision, (False, None, reason, False))
                next_id += 1
                decided[record] = d
                decisions.append(d)
            if withheld and all_or_nothing:
                raise DPTextError(f"{len(withheld)} of {len(records)} records would exceed "
                                  f"their unit's budget (first: {withheld[0][7]}); nothing "
                                  "was charged")
            if not lines:  # every record was decided before
                return decisions
            events = {c[2]: c[3] for c in set(costs)}
            new_events = [(k, v) for k, v in events.items() if k not in self._events_known]
            if new_events:
                b.executemany("INSERT INTO ledger_events (digest, body) VALUES (?, ?) "
                              "ON CONFLICT (digest) DO NOTHING", new_events)
            if charged:  # the constant columns in the statement: 6 parameters a row, not 9
                b.executemany("INSERT INTO ledger_charges (id, entry, unit, record, eps_n, "
                              f"delta_n, events, reason, status) VALUES (?, {int(entry)}, ?, ?, "
                              "?, ?, ?, '', 'pending')", charged)
            if withheld:
                b.executemany("INSERT INTO ledger_charges (id, entry, unit, record, eps_n, "
                              "delta_n, events, reason, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                              "?)", withheld)
            # each unit's row: an update where the (exact) cache says there is one, else new
            n_charged = Counter(map(itemgetter(1), charged))
            n_withheld = Counter(map(itemgetter(2), withheld)) if withheld else {}
            update, insert = [], []
            total_eps = total_delta = 0
            for u in units:  # key order
                row = rows_now[u]
                e, n = own[u][0] - row[0], own[u][1] - row[1]
                c, w = n_charged.get(u, 0), n_withheld.get(u, 0)
                total_eps += e
                total_delta += n
                if row[2]:
                    update.append((e, n, c, w, u, owner, dataset))
                else:
                    insert.append((u, owner, dataset, e, n, c, w))
            if update:
                n = b.executemany(
                    "UPDATE ledger_units SET eps_n = eps_n + ?, delta_n = delta_n + ?, "
                    "charges = charges + ?, withheld = withheld + ? WHERE unit = ? AND "
                    "owner = ? AND dataset = ?", update)
                if n not in (-1, len(update)):  # never: the cache is exact (rolled back)
                    raise DPTextError("the ledger's unit totals changed under this "
                                      "transaction: nothing was charged, try again")
            if insert:
                b.executemany("INSERT INTO ledger_units (unit, owner, dataset, eps_n, delta_n, "
                              "charges, withheld) VALUES (?, ?, ?, ?, ?, ?, ?)", insert)
            seq = tx.append("batch", release_id=release_id, owner=owner, dataset=dataset,
                            eps_n=total_eps, delta_n=total_delta, body={
                                "charges": [first_id, next_id - 1], "count": len(lines),
                                "digest": digest(lines)})
            for u in units:
                row = rows_now[u]
                row[0], row[1] = own[u]
                row[2] = True
            if seq != entry:  # pragma: no cover - one entry per reserve
                raise AssertionError("the batch entry is not the one its rows name")
            ids = {c[2]: c[0] for c in charged}
            if withheld:
                ids.update({w[3]: w[0] for w in withheld})
            tx.after.append(partial(self._remember, release_id, entry, ids, list(events)))
        return decisions

    def _remember(self, release_id: str, entry: int, ids: dict, events: list) -> None:
        """After a reserve committed: its records and event lists are in the database."""
        index = self._index(release_id)
        index.ids.update(ids)
        index.upto = max(index.upto, entry)
        self._events_known.update(events)
        if len(index.ids) > _MAX_INDEXED:  # bounded memory: read again from the ledger
            del self._indexes[release_id]

    def _unit_rows_now(self, tx: _Tx, owner: str, dataset: str, units: list[str]
                       ) -> dict[str, list[int]]:
        """The cached ledger_units rows of (owner, dataset), with ``units`` among them, exact
        in this write transaction (read again when another writer came in between)."""
        if self._unit_rows_at != (tx.seq, tx.head) or sum(
                map(len, self._unit_rows.values())) > 1_000_000:
            self._unit_rows.clear()
        tx.units_fresh = True
        rows = self._unit_rows.setdefault((owner, dataset), {})
        missing = [u for u in units if u not in rows]
        for chunk in _chunks(missing):
            for u in chunk:
                rows[u] = [0, 0, False]
            for u, e, n in self._backend.execute(
                    "SELECT unit, eps_n, delta_n FROM ledger_units WHERE owner = ? AND "
                    f"dataset = ? AND unit IN ({sql_marks(len(chunk))})",
                    (owner, dataset, *chunk)).fetchall():
                rows[u] = [int(e), int(n), True]
        return rows

    def _index(self, release_id: str) -> RecordIndex:
        index = self._indexes.get(release_id)
        if index is None:
            if len(self._indexes) >= 256:
                self._indexes.clear()
            index = self._indexes[release_id] = RecordIndex()
        return index

    def _seen(self, release_id: str, records: list[str]) -> dict[str, Decision]:
        """The records of this batch decided in an earlier call (in the write transaction)."""
        b = self._backend
        index = self._index(release_id)
        index.sync(b, release_id)
        seen: dict[str, Decision] = {}
        hits = sorted({index.ids[r] for r in records if r in index.ids})
        for chunk in _chunks(hits):
            for cid, record, status, reason in b.execute(
                    "SELECT id, record, status, reason FROM ledger_charges WHERE id IN "
                    f"({sql_marks(len(chunk))})", chunk).fetchall():
                if status == "withheld":
                    seen[record] = Decision(False, None, reason, True)
                else:
                    seen[record] = Decision(True, int(cid), None, True)
        if self._legacy:  # version-1 entries, one per record (its own index)
            for chunk in _chunks(records):
                for record, seq, status, body in b.execute(
                        "SELECT record, seq, status, body FROM ledger_entries WHERE "
                        f"release_id = ? AND record <> '' AND record IN ({sql_marks(len(chunk))})",
                        (release_id, *chunk)).fetchall():
                    if status == "withheld":
                        seen[record] = Decision(False, None, json.loads(body)["reason"], True)
                    else:
                        seen[record] = Decision(True, int(seq), None, True)
        return seen

    def _prepare_all(self, release_id: str, items) -> tuple[list, list, list]:
        """The record hashes, unit hashes and costs ((eps_n, delta_n, events digest, events
        text)) of the items, as three lists."""
        keys_, units, costs = [], [], []
        unit_hash, unit_cache = self._keys.unit, self._keys.unit_cache
        cache, cache1 = self._costs, self._costs1
        for item in items:
            try:
                record_key, unit_id, events = item
            except (TypeError, ValueError):
                raise DPTextError("reserve() takes (record_key, unit_id, events) items") \
                    from None
            if type(record_key) is not str:
                record_key = _record_text(record_key)
            keys_.append(record_key)
            unit = unit_cache.get(unit_id) if type(unit_id) is str else None
            if unit is None:
                unit = unit_hash(unit_id if type(unit_id) is str and unit_id
                                 else _unit_text(unit_id, record_key))
            units.append(unit)
            # the usual list of one event: its fields are the key (hashing them directly is
            # 2.5x cheaper than hashing the dataclass)
            if type(events) is list and len(events) == 1 and type(events[0]) is PrivacyEvent:
                e = events[0]
                key = (e.kind, e.epsilon, e.delta, e.count, e.mechanism, e.scope)
                cost = cache1.get(key)
                if cost is None:
                    cost = cache1[key] = self._cost_of(record_key, tuple(events))
                    if len(cache1) >= 10_000:
                        cache1.clear()
            else:
                try:
                    events = tuple(events)
                    cost = cache.get(events)
                except TypeError:  # not a sequence of (hashable) events: said below
                    cost = None
                if cost is None:
                    cost = self._cost_of(record_key, events)
            costs.append(cost)
        return self._keys.records(release_id, keys_), units, costs

    def _cost_of(self, record_key: str, events: tuple) -> tuple[int, int, str, str]:
        """(eps_n, delta_n, events digest, events text) of one record's events (cached)."""
        if not isinstance(events, tuple):
            raise DPTextError(f"record {record_key!r}: events must be a list of PrivacyEvent")
        for e in events:
            if not isinstance(e, PrivacyEvent):
                raise DPTextError(f"record {record_key!r}: events must be PrivacyEvent, "
                                  f"got {type(e).__name__}")
            if math.isinf(e.epsilon) and e.count:
                raise DPTextError(
                    f"record {record_key!r}: an event with an infinite epsilon cannot be "
                    f"charged ({e.mechanism or 'mechanism'}: "
                    f"{e.scope or 'no finite guarantee'})")
        eps_n, delta_n = events_cost(events)
        # the scope text is not stored per record: the release's mechanism and parameters
        # (its "open" entry) determine it
        body = canonical({"events": [{k: v for k, v in e.to_dict().items() if k != "scope"}
                                     for e in events if e.count]})
        cost = (eps_n, delta_n, events_digest(body), body)
        if len(self._costs) >= 10_000:
            self._costs.clear()
        self._costs[events] = cost
        return cost

    def commit(self, release_id: str, charge_ids: Sequence[int]) -> None:
        """Mark pending charges released (after their output is durable). Idempotent: ids
        already released are left as they are; an id that is not a charge of this release is
        an error (nothing is committed)."""
        release_id = str(release_id)
        ids = sorted({int(c) for c in charge_ids})
        if not ids:
            return
        runs = _ranges(ids)
        with self._write("commit charges", durable=False) as tx:
            b = self._backend
            base = self._charge_base
            new = [[max(lo, base + 1), hi] for lo, hi in runs if hi > base]
            old = [[lo, min(hi, base)] for lo, hi in runs if lo <= base]
            for lo, hi in new:
                entries = {}
                for entry, n, withheld in b.execute(
                        "SELECT entry, COUNT(*), SUM(CASE WHEN status = 'withheld' THEN 1 "
                        "ELSE 0 END) FROM ledger_charges WHERE id BETWEEN ? AND ? "
                        "GROUP BY entry", (lo, hi)).fetchall():
                    entries[int(entry)] = (int(n), int(withheld))
                if sum(n for n, _ in entries.values()) != hi - lo + 1 or any(
                        w for _, w in entries.values()) or any(
                        self._entry_release(e) != release_id for e in entries):
                    self._bad_commit(release_id, lo, hi)
            for lo, hi in old:
                n = b.execute("SELECT COUNT(*) FROM ledger_entries WHERE seq BETWEEN ? AND ? "
                              "AND release_id = ? AND kind = 'charge'",
                              (lo, hi, release_id)).fetchone()[0]
                if int(n) != hi - lo + 1:
                    self._bad_commit(release_id, lo, hi)
            changed = 0
            for table, key, runs_ in (("ledger_charges", "id", new),
                                      ("ledger_entries", "seq", old)):
                for lo, hi in runs_:
                    changed += b.execute(
                        f"UPDATE {table} SET status = 'released' WHERE {key} BETWEEN ? AND ? "
                        "AND status = 'pending'", (lo, hi)).rowcount
            if changed:
                tx.append("commit", release_id=release_id, body={"charges": runs})

    def _entry_release(self, seq: int) -> str | None:
        rel = self._entry_releases.get(seq)
        if rel is None:
            row = self._backend.execute("SELECT release_id FROM ledger_entries WHERE seq = ? "
                                        "AND kind = 'batch'", (seq,)).fetchone()
            if row is None:
                return None
            rel = row[0]
            if len(self._entry_releases) >= 100_000:
                self._entry_releases.clear()
            self._entry_releases[seq] = rel
        return rel

    def _bad_commit(self, release_id: str, lo: int, hi: int) -> None:
        b = self._backend
        rows = {int(r[0]): (r[1], r[2]) for r in b.execute(
            "SELECT seq, release_id, kind FROM ledger_entries WHERE seq BETWEEN ? AND ? "
            "AND seq <= ?", (lo, hi, self._charge_base)).fetchall()}
        for r in b.execute("SELECT id, entry, status FROM ledger_charges WHERE id BETWEEN ? "
                           "AND ?", (lo, hi)).fetchall():
            rows[int(r[0])] = (self._entry_release(int(r[1])),
                               "withhold" if r[2] == "withheld" else "charge")
        for cid in range(lo, hi + 1):
            row = rows.get(cid)
            if row is None or row[1] not in ("charge", "withhold"):
                raise DPTextError(f"unknown charge id {cid}")
            if row[0] != release_id:
                raise DPTextError(f"charge {cid} belongs to release {row[0]}, not {release_id}")
            if row[1] == "withhold":
                raise DPTextError(f"charge {cid} was withheld: it has nothing to commit")
        raise DPTextError(f"charges {lo}-{hi} cannot be committed")

    # -------------------------------------------------------------------------- verify
    def verify(self) -> VerifyResult:
        """Check the hash chain from the first entry to the head, and that the derived tables
        agree with the entries. Raises DPTextError naming the first broken entry."""
        from dptext.ledger.verify import verify

        with self._read("verify the ledger") as b:
            return verify(b, self._meta())


# --------------------------------------------------------------------------------- helpers
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


def _record_text(key) -> str:
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise DPTextError(f"a record key must be a string or an integer, got {key!r}")
    return str(key)


def _unit_text(unit, record_key: str | None = None) -> str:
    if unit is None or (isinstance(unit, str) and not unit):
        where = f"record {record_key!r} " if record_key is not None else ""
        raise DPTextError(f"{where}has no unit id (is the unit field missing or empty?)")
    if isinstance(unit, bool) or not isinstance(unit, (str, int)):
        raise DPTextError(f"a unit id must be a string or an integer, got {unit!r}")
    return str(unit)


def _ranges(ids: list[int]) -> list[list[int]]:
    """Sorted ids as [first, last] runs (a commit of a contiguous batch is one pair)."""
    out: list[list[int]] = []
    for i in ids:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def expand_ranges(runs: list[list[int]]) -> list[int]:
    return [i for a, b in runs for i in range(a, b + 1)]
