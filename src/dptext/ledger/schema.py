"""The ledger's tables and their migrations (one SQL text for SQLite and PostgreSQL).

The schema is versioned in ``ledger_meta.schema_version``; :data:`MIGRATIONS` lists every step
from an empty database, in order, and opening a ledger applies the steps it lacks. A ledger whose
version is newer than :data:`SCHEMA_VERSION` is refused (an older dptext must not write a format
it does not know). A new version appends a migration; an applied one never changes.

Tables (prefixed ``ledger_`` so a shared PostgreSQL database can hold other things):

- ``ledger_entries``: the append-only, hash-chained log - every budget, release, batch of
  charges and commit is one row, whose hashed columns are never updated. The source of truth.
  (Version 1 wrote one ``charge`` or ``withhold`` entry per record; those stay as they are.)
- ``ledger_charges`` (version 2): the per-record rows of a ``batch`` entry - the charge id, the
  unit and record hashes, the fixed-point charge, the digest of the record's event list, the
  reason of a withheld record. A batch entry's hashed body holds the SHA-256 of its rows (their
  canonical JSON, one per line) and their id range, so an edited, deleted or added row breaks
  the chain exactly like an edited entry. Keyed by the charge id (appended in order: a batch
  writes a few contiguous pages), with no index on a random key (the partial index of the
  pending charges is by id since version 3: appended to in order, not by unit); a record's
  earlier decision is found through the release's batch entries
  (``ledger_entries_release``, :class:`dptext.ledger.batches.RecordIndex`).
- ``ledger_events`` (version 2): the distinct event lists, content-addressed (the key is the
  SHA-256 of the body, which verify recomputes): most records of a release share a handful.
- The ``status`` of a charge (``pending`` until a later commit entry names it, then
  ``released``; ``withheld``) is the one column outside the hash, in both a v1 charge entry
  and a charge row: a cache of what the commit entries say, kept so a commit is one ranged
  update.
- ``ledger_releases``, ``ledger_budgets``, ``ledger_units``: state derived from the entries for
  fast lookups. ``ledger_units`` keeps per unit, owner and dataset the charged sums the budget
  check reads and (version 2) the numbers of charges and of withheld records, updated
  incrementally by reserve in its own transaction (how many of the charges are still pending
  is read from the pending charges, through their partial index). ``verify`` rebuilds them and the
  statuses from the entries and reports any difference.
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

# Version 2: one hash-chained entry per reserved batch, its records in ledger_charges; unit
# counts kept incrementally. Existing v1 entries stay (and keep verifying); the counts of
# ledger_units are filled from them; ``charge_base`` (the head at migration) separates the v1
# charge ids (entry seqs, <= it) from the v2 ones (ledger_charges ids, > it).
V2 = [
    """CREATE TABLE ledger_events (
        digest TEXT PRIMARY KEY,
        body TEXT NOT NULL)""",
    """CREATE TABLE ledger_charges (
        id {SEQ} PRIMARY KEY,
        entry BIGINT NOT NULL,
        unit TEXT NOT NULL,
        record TEXT NOT NULL,
        eps_n BIGINT NOT NULL,
        delta_n BIGINT NOT NULL,
        events TEXT NOT NULL,
        reason TEXT NOT NULL,
        status TEXT NOT NULL)""",
    "CREATE INDEX ledger_entries_release ON ledger_entries (release_id, seq)",
    # the pending charges, by unit: only those not yet committed, so a small index
    "CREATE INDEX ledger_charges_pending ON ledger_charges (unit) WHERE status = 'pending'",
    # ledger_units keyed (unit, owner, dataset): a lookup by unit alone (a budget for any
    # owner or dataset, spent()) uses the key, and no second index slows every update
    """CREATE TABLE ledger_units_v2 (
        unit TEXT NOT NULL,
        owner TEXT NOT NULL,
        dataset TEXT NOT NULL,
        eps_n BIGINT NOT NULL,
        delta_n BIGINT NOT NULL,
        charges BIGINT NOT NULL,
        withheld BIGINT NOT NULL,
        PRIMARY KEY (unit, owner, dataset)){CLUSTERED}""",
    "INSERT INTO ledger_units_v2 (unit, owner, dataset, eps_n, delta_n, charges, withheld) "
    "SELECT unit, owner, dataset, eps_n, delta_n, 0, 0 FROM ledger_units",
    "DROP TABLE ledger_units",
    "ALTER TABLE ledger_units_v2 RENAME TO ledger_units",
    # v1 kept no row for a unit whose records were all withheld
    "INSERT INTO ledger_units (unit, owner, dataset, eps_n, delta_n, charges, withheld) "
    "SELECT DISTINCT unit, owner, dataset, 0, 0, 0, 0 FROM ledger_entries "
    "WHERE kind = 'withhold' ON CONFLICT (unit, owner, dataset) DO NOTHING",
    """UPDATE ledger_units SET
        charges = (SELECT COUNT(*) FROM ledger_entries e WHERE e.unit <> ''
                   AND e.unit = ledger_units.unit AND e.owner = ledger_units.owner
                   AND e.dataset = ledger_units.dataset AND e.kind = 'charge'),
        withheld = (SELECT COUNT(*) FROM ledger_entries e WHERE e.unit <> ''
                    AND e.unit = ledger_units.unit AND e.owner = ledger_units.owner
                    AND e.dataset = ledger_units.dataset AND e.kind = 'withhold')""",
    "INSERT INTO ledger_meta (key, value) SELECT 'charge_base', value FROM ledger_meta "
    "WHERE key = 'head_seq'",
]

# Version 3: the pending charges indexed by id, not by unit. Every charge was inserted into the
# unit index at a random place when reserved and deleted from it when committed: two random
# B-tree writes per record (about 4 us of the reserve's and commit's CPU per record, and
# pages in every WAL write). By id, a reserve appends at the index's end and a commit deletes
# a contiguous run. A unit's pending count (``spent``, ``units``) reads the pending charges,
# all of them but few: those of the shards not yet durable and any a crash left.
V3 = [
    "DROP INDEX ledger_charges_pending",
    "CREATE INDEX ledger_charges_pending_ids ON ledger_charges (id) WHERE status = 'pending'",
]

# (version, what it does, statements). Append only.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "initial schema", V1),
    (2, "one chained entry per batch; charge rows; unit counts", V2),
    (3, "pending charges indexed by id, not by unit", V3),
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
