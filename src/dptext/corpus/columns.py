"""Every column accounted for: each input column is privatized, kept, dropped or hashed.

A release of a table with a column nobody named is how a whole ``doctor`` column leaves
unchanged without a word (issue 31). So for CSV, JSONL and Parquet every input column must be
named with one role before any work:

* ``--field`` - privatized by the mechanism;
* ``--keep`` - released as is, and listed in the report as "released verbatim, not protected";
* ``--drop`` - not written;
* ``--hash`` - replaced by a keyed pseudonym ``HMAC-SHA256(key, owner || value)`` (64 bits,
  hex): the same value gives the same pseudonym in every release of one owner with one key, a
  different one for another owner, and nobody without the key can reverse it or test a guess.

``--keep-other`` keeps every column not named (the old behaviour, now explicit: the report lists
the columns it kept). The ``--user-field`` column, when not named otherwise, is dropped from the
output. JSONL has no header: its keys are those of the first records (:data:`PEEK_RECORDS`); a key
first seen later makes its record a reject with that reason (an error with ``--on-error fail``).

The pseudonym key (:func:`pseudonym_key`), like the ledger's secret: ``$DPTEXT_PSEUDONYM_SECRET``
if set (never stored by dptext), else a key file (``--pseudonym-key FILE``, or beside a SQLite
ledger as ``<ledger>.pseudonym.key``), created with mode 0600 on first use and refused when others
may read it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from dptext.errors import DPTextError

PSEUDONYM_ENV = "DPTEXT_PSEUDONYM_SECRET"
PEEK_RECORDS = 100  # JSONL records read for their keys before any work
ROLES = ("field", "keep", "drop", "hash")
#: how the roles are named in the error for an uncovered column: the command line's options,
#: or the keyword arguments of the Python functions (pandas, datasets)
CLI_ROLES = ("name each with --field, --keep, --drop or --hash (or --keep-other to release the "
             "rest verbatim)")
PYTHON_ROLES = ("name each in columns=, keep=, drop= or hash= (or keep_other=True to release "
                "the rest verbatim)")


def _names(value: str | Iterable[str] | None) -> list[str]:
    """Column names given repeatable or comma-separated (like ``--field``)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        out += [c.strip() for c in str(item).split(",") if c.strip()]
    return out


@dataclass(frozen=True)
class ColumnPlan:
    """Which role each column has (module docstring). ``key``: the pseudonym key (bytes), needed
    only when ``hash`` names a column; ``owner`` is mixed into every pseudonym."""

    fields: tuple[str, ...]
    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    hash: tuple[str, ...] = ()
    keep_other: bool = False
    user_field: str | None = None
    key: bytes | None = field(default=None, repr=False)
    owner: str = ""

    @classmethod
    def make(cls, fields, *, keep=None, drop=None, hash=None, keep_other: bool = False,
             user_field: str | None = None, key: bytes | None = None,
             owner: str | None = None) -> ColumnPlan:
        roles = {"field": _names(fields), "keep": _names(keep), "drop": _names(drop),
                 "hash": _names(hash)}
        seen: dict[str, str] = {}
        for role, cols in roles.items():
            for c in cols:
                if c in seen:
                    what = "given twice" if seen[c] == role else \
                        f"given to both --{seen[c]} and --{role}"
                    raise DPTextError(f"column {c!r} {what}: name each column once")
                seen[c] = role
        if roles["hash"] and key is None:
            raise DPTextError("--hash needs a pseudonym key: give --pseudonym-key FILE (created "
                              f"on first use), set ${PSEUDONYM_ENV}, or use a SQLite --ledger")
        return cls(tuple(roles["field"]), tuple(roles["keep"]), tuple(roles["drop"]),
                   tuple(roles["hash"]), bool(keep_other), user_field, key, owner or "")

    # ------------------------------------------------------------------ coverage
    def named(self) -> frozenset[str]:
        return self._named

    @cached_property
    def _named(self) -> frozenset[str]:  # once: apply() asks for every record
        out = {*self.fields, *self.keep, *self.drop, *self.hash}
        if self.user_field:
            out.add(self.user_field)
        return frozenset(out)

    @cached_property
    def _drop_names(self) -> frozenset[str]:
        """What is not written: ``--drop`` and the user field when it has no other role."""
        uf = self.user_field
        extra = {uf} if uf and uf not in (*self.keep, *self.hash, *self.drop) else set()
        return frozenset(self.drop) | extra

    def check(self, columns: Sequence[str], where: str, how: str = CLI_ROLES) -> None:
        """A one-line error when a column of the input is not covered or a named column
        (other than a privatized field, which the reader checks) is not in the input.
        ``how``: how the caller names the roles (:data:`CLI_ROLES`, :data:`PYTHON_ROLES`)."""
        present = [c if isinstance(c, str) else str(c) for c in columns]
        absent = [c for c in (*self.keep, *self.drop, *self.hash) if c not in present]
        if absent:
            raise DPTextError(f"{where}: no column {', '.join(map(shown, absent))} in the "
                              f"input (columns: {', '.join(map(shown, present))})")
        if self.keep_other:
            return
        uncovered = [c for c in present if c not in self.named()]
        if uncovered:
            raise DPTextError(f"{where}: columns {','.join(map(shown, uncovered))} are not "
                              f"covered: {how}")

    def other_kept(self, columns: Sequence[str]) -> list[str]:
        """The columns ``--keep-other`` releases verbatim (not named)."""
        return [c for c in columns if c not in self.named()] if self.keep_other else []

    def released_verbatim(self, columns: Sequence[str]) -> list[str]:
        return [c for c in columns if c in self.keep or c in self.other_kept(columns)]

    def dropped(self, columns: Sequence[str]) -> list[str]:
        """Dropped: ``--drop`` and the user field when it has no other role."""
        uf = self.user_field
        extra = [uf] if uf in self._drop_names and uf in columns and uf not in self.drop else []
        return [c for c in columns if c in self.drop] + extra

    def describe(self, columns: Sequence[str]) -> dict:
        """What the report says about the columns."""
        return {"privatized": [c for c in columns if c in self.fields],
                "released_verbatim_not_protected": self.released_verbatim(columns),
                "dropped": self.dropped(columns),
                "hashed": [c for c in columns if c in self.hash],
                "keep_other": self.keep_other}

    # ------------------------------------------------------------------ output
    def pseudonym(self, value) -> object:
        """The keyed pseudonym of one value (None stays None)."""
        if value is None:
            return None
        text = value if isinstance(value, str) else str(value)
        msg = self.owner.encode() + b"\x00" + text.encode("utf-8", "surrogatepass")
        return "p" + hmac.new(self.key, msg, hashlib.sha256).hexdigest()[:16]

    def apply(self, row: dict) -> dict:
        """A mapping record (JSONL/Parquet) as released: dropped keys removed, hashed ones
        replaced; ``DPTextError`` for a key no role covers (a later record's new key)."""
        if not self.keep_other:
            new = [k for k in row if k not in self.named()]
            if new:
                raise DPTextError(f"has columns {','.join(map(shown, new))} not covered by "
                                  f"--field, --keep, --drop or --hash")
        drop = self._drop_names
        if not self.hash and drop.isdisjoint(row):  # nothing to change (the common case)
            return row
        return {k: self.pseudonym(v) if k in self.hash else v
                for k, v in row.items() if k not in drop}

    def output_schema(self, schema):
        """A Parquet schema as released: dropped columns removed, hashed ones strings."""
        import pyarrow as pa

        drop = self._drop_names
        return pa.schema([pa.field(f.name, pa.string()) if f.name in self.hash else f
                          for f in schema if f.name not in drop], metadata=schema.metadata)

    def csv_plan(self, header: Sequence[str]) -> tuple[list[str], list[int], set[int]]:
        """(output header, the input indices written, the indices hashed)."""
        drop = self._drop_names
        keep_idx = [i for i, c in enumerate(header) if c not in drop]
        hashed = {i for i, c in enumerate(header) if c in self.hash}
        return [header[i] for i in keep_idx], keep_idx, hashed


def shown(name) -> str:
    """A column name as messages show it: quoted (repr) when it is blank, has spaces at an end,
    a comma or a character that does not print (issue 47 N9: 'id ' and ' ' were invisible)."""
    text = name if isinstance(name, str) else str(name)
    plain = text and text == text.strip() and text.isprintable() and "," not in text
    return text if plain else repr(text)


def plan_columns(job, fields: list[str], fmt: str, first) -> tuple[ColumnPlan | None, list[str]]:
    """The job's columns plan, checked against its first source's columns before any work
    (a stdin source is checked as it is read: the CSV header, each JSONL record); and those
    columns. ``job.columns`` None: the other columns kept and reported (the engine's default
    for callers that build no plan; the command line and ``dptext.sanitize`` always give one)."""
    from dptext.corpus.records import RecordReader

    if fmt == "txt":
        return None, []
    plan = job.columns
    if plan is None:
        plan = ColumnPlan.make(fields, keep_other=True)
    if list(plan.fields) != list(fields):
        raise DPTextError("the columns plan privatizes other fields than --field")
    if first.path is None:
        return plan, []
    seen = peek_columns(RecordReader(first, fields, max_record_bytes=job.max_record_bytes), fmt)
    if seen:
        plan.check(seen, first.name)
    return plan, seen


def peek_columns(reader, fmt: str) -> list[str]:
    """The columns of a source from its first records: the CSV header, the Parquet schema, the
    keys of the first :data:`PEEK_RECORDS` JSONL objects (in first-seen order)."""
    keys: dict = {}
    for n, record in enumerate(reader):
        if fmt != "jsonl" or n >= PEEK_RECORDS:
            break
        if isinstance(record.payload, dict):
            keys.update(dict.fromkeys(record.payload))
    if fmt == "csv":
        return list(reader.header or [])
    if fmt == "parquet":
        return list(reader.schema.names) if reader.schema is not None else []
    return list(keys)


def pseudonym_key(key_file: str | os.PathLike | None = None, *,
                  ledger: str | None = None) -> bytes | None:
    """The pseudonym key (module docstring), or None when none is configured."""
    from dptext.ledger.keys import new_secret, read_secret_file, write_secret_file

    env = os.environ.get(PSEUDONYM_ENV)
    if env:
        if len(env) < 16:
            raise DPTextError(f"${PSEUDONYM_ENV} is too short (at least 16 characters)")
        return env.encode()
    path = None
    if key_file is not None:
        path = Path(key_file)
    elif ledger and "://" not in str(ledger):
        path = Path(ledger).with_name(Path(ledger).name + ".pseudonym.key")
    if path is None:
        return None
    if not path.exists():
        try:
            write_secret_file(path, new_secret())
        except DPTextError:  # created by a concurrent run meanwhile: read theirs
            pass
    return read_secret_file(path).encode()
