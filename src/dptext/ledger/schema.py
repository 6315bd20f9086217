"""The ledger's tables and their migrations (one SQL text for SQLite and PostgreSQL).

The schema is versioned in ``ledger_meta.schema_version``; :data:`MIGRATIONS` lists every step
from an empty database, in order, and opening a ledger applies the steps it lacks. A ledger whose
version is newer than :data:`SCHEMA_VERSION` is refused (an older dptext must not write a format
it does not know). A new version appends a migration; an applied one never changes.

Tables (prefixed ``ledger_`` so a shared PostgreSQL database can hold other things):

- ``ledger_entries``: the append-only, hash-chained log - every budget, release, charge,
  withheld record and commit is one row, whose hashed columns are never updated. The source of
  truth. One column is outside the hash: ``status`` of a charge (``pending`` until a later
  commit entry names it, then ``released``; ``withheld``), a cache of what the commit entries
  say, kept so that a commit is one indexed update.
- ``ledger_releases``, ``ledger_budgets``, ``ledger_units``: state derived from the entries for
  fast lookups (budget checks, per-unit totals). ``verify`` rebuilds them and the statuses from
  the entries and reports any difference.
- ``ledger_meta``: version, ledger id, the chain's head, the ledger's delta, the key check.
- ``ledger_keys``: the HMAC secret when it is kept in the database (PostgreSQL default).

Types are those both engines accept: TEXT and BIGINT (64-bit integers; SQLite stores them as
INTEGER). Epsilons are fixed-point integers (see ``dptext.ledger.core``), so sums are exact.
Two placeholders are filled per engine (:func:`ddl`): ``{SEQ}``, the entries' key - SQLite's
``INTEGER PRIMARY KEY`` is the table's own row id (no second index), PostgreSQL's is BIGINT -
and ``{CLUSTERED}``: SQLite stores the per-unit sums in their key's order (WITHOUT ROWID).
"""

from __future__ import annotations

V1 = [
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ledger_keys (name TEXT PRIMARY KEY, secret TEXT NOT NULL)",
    """CREATE TABLE ledger_entries (
        seq {SEQ} PRIMARY KEY,
        kind TEXT NOT NULL,
        release_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        dataset TEXT NOT NULL,
        unit TEXT NOT NULL,
        record TEXT NOT NULL,
        eps_n BIGINT NOT NULL,
        delta_n BIGINT NOT NULL,
        body TEXT NOT NULL,
        created TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        status TEXT NOT NULL)""",
    # one decision per record of a release (reserve is idempotent); charges of a unit
    "CREATE UNIQUE INDEX ledger_entries_record ON ledger_entries (release_id, record) "
    "WHERE record <> ''",
    "CREATE INDEX ledger_entries_unit ON ledger_entries (unit) WHERE unit <> ''",
    """CREATE TABLE ledger_releases (
        release_id TEXT PRIMARY KEY,
        key_hash TEXT UNIQUE,
        owner TEXT NOT NULL,
        dataset TEXT NOT NULL,
        mechanism TEXT NOT NULL,
        params TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        created TEXT NOT NULL,
        seq BIGINT NOT NULL)""",
    """CREATE TABLE ledger_budgets (
        owner TEXT NOT NULL,
        dataset TEXT NOT NULL,
        eps_n BIGINT NOT NULL,
        delta_n BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (owner, dataset))""",
    # what each unit has been charged (pending + released) per owner and dataset: the sums
    # the budget check reads; the split by status is counted from the entries when asked
    """CREATE TABLE ledger_units (
        owner TEXT NOT NULL,
        dataset TEXT NOT NULL,
        unit TEXT NOT NULL,
        eps_n BIGINT NOT NULL,
        delta_n BIGINT NOT NULL,
        PRIMARY KEY (owner, dataset, unit)){CLUSTERED}""",
    "CREATE INDEX ledger_units_unit ON ledger_units (unit)",
]

# (version, what it does, statements). Append only.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "initial schema", V1),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]


_DIALECT = {
    "sqlite": {"{SEQ}": "INTEGER", "{CLUSTERED}": " WITHOUT ROWID"},
    "postgresql": {"{SEQ}": "BIGINT", "{CLUSTERED}": ""},
}


def ddl(statement: str, dialect: str) -> str:
    for key, value in _DIALECT[dialect].items():
        statement = statement.replace(key, value)
    return statement
