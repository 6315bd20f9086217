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
from abc import ABC
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from dptext.errors import DPTextError

PSEUDONYM_ENV = "DPTEXT_PSEUDONYM_SECRET"
PEEK_RECORDS = 100  # JSONL records read for their keys before any work


class ColumnRole(ABC):
    """What happens to a column that is not privatized (module docstring): its option
    (``--NAME``, ``NAME=``), whether it is written, the released value of a cell, the output
    field of a Parquet column, and its key and line in the report. A new role is one class and
    one line of :data:`COLUMN_ROLES`."""

    name: ClassVar[str]
    report_key: ClassVar[str]  # its list in the report's ``columns``
    report_line: ClassVar[str]  # what the text report says of those columns
    written: ClassVar[bool] = True
    needs_key: ClassVar[bool] = False  # the pseudonym key (module docstring)

    def converter(self, plan: ColumnPlan) -> Callable[[object], object] | None:
        """The released value of a cell from its input value (None: as it is)."""
        return None

    def arrow_field(self, f):
        """The output field of a Parquet column of this role."""
        return f


class Keep(ColumnRole):
    name, written = "keep", True
    report_key, report_line = "released_verbatim_not_protected", "released verbatim, NOT protected"


class Drop(ColumnRole):
    name, written = "drop", False
    report_key, report_line = "dropped", "dropped"


class Hash(ColumnRole):
    name, needs_key = "hash", True
    report_key, report_line = "hashed", "replaced by keyed pseudonyms"

    def converter(self, plan):
        return plan.pseudonym

    def arrow_field(self, f):
        import pyarrow as pa

        return pa.field(f.name, pa.string())


#: every column role by name (module docstring): the options, in this order
COLUMN_ROLES: dict[str, ColumnRole] = {r.name: r for r in (Keep(), Drop(), Hash())}
ROLES = ("field", *COLUMN_ROLES)


def _how(option: Callable[[str], str], other: str) -> str:
    names = [option("field"), *(option(r) for r in COLUMN_ROLES)]
    return f"name each with {', '.join(names[:-1])} or {names[-1]} (or {other} to release the " \
        "rest verbatim)"


#: how the roles are named in the error for an uncovered column: the command line's options,
#: or the keyword arguments of the Python functions (pandas, datasets)
CLI_ROLES = _how(lambda r: f"--{r}", "--keep-other")
PYTHON_ROLES = _how(lambda r: "columns=" if r == "field" else f"{r}=", "keep_other=True")


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
    """Which role each column has (module docstring): ``roles`` holds, per role of
    :data:`COLUMN_ROLES`, the columns given it. ``key``: the pseudonym key (bytes), needed only
    when a role that needs it names a column; ``owner`` is mixed into every pseudonym."""

    fields: tuple[str, ...]
    roles: tuple[tuple[str, tuple[str, ...]], ...] = ()
    keep_other: bool = False
    user_field: str | None = None
    key: bytes | None = field(default=None, repr=False)
    owner: str = ""

    @classmethod
    def make(cls, fields, *, keep_other: bool = False, user_field: str | None = None,
             key: bytes | None = None, owner: str | None = None, **roles) -> ColumnPlan:
        """``roles``: each role of :data:`COLUMN_ROLES` by name (``keep=``, ``drop=``,
        ``hash=``), its columns repeatable or comma-separated."""
        unknown = sorted(set(roles) - set(COLUMN_ROLES))
        if unknown:
            raise DPTextError(f"unknown column role {unknown[0]!r}; roles: "
                              f"{', '.join(COLUMN_ROLES)}")
        named = {"field": _names(fields), **{r: _names(roles.get(r)) for r in COLUMN_ROLES}}
        seen: dict[str, str] = {}
        for role, cols in named.items():
            for c in cols:
                if c in seen:
                    what = "given twice" if seen[c] == role else \
                        f"given to both --{seen[c]} and --{role}"
                    raise DPTextError(f"column {c!r} {what}: name each column once")
                seen[c] = role
        keyed = [r for r in COLUMN_ROLES if COLUMN_ROLES[r].needs_key and named[r]]
        if keyed and key is None:
            raise DPTextError(f"--{keyed[0]} needs a pseudonym key: give --pseudonym-key FILE "
                              f"(created on first use), set ${PSEUDONYM_ENV}, or use a SQLite "
                              "--ledger")
        return cls(tuple(named["field"]), tuple((r, tuple(named[r])) for r in COLUMN_ROLES),
                   bool(keep_other), user_field, key, owner or "")

    def columns(self, role: str) -> tuple[str, ...]:
        """The columns given ``role`` (a name of :data:`COLUMN_ROLES`)."""
        return dict(self.roles).get(role, ())

    @cached_property
    def _role_of(self) -> dict[str, ColumnRole]:
        """column -> its role; the user field, when it has no role, is dropped."""
        out = {c: COLUMN_ROLES[r] for r, cols in self.roles for c in cols}
        if self.user_field and self.user_field not in out:
            out[self.user_field] = COLUMN_ROLES["drop"]
        return out

    def role(self, column: str) -> ColumnRole | None:
        """The role of ``column`` (None: a privatized field, or kept by ``keep_other``)."""
        return self._role_of.get(column)

    # ------------------------------------------------------------------ coverage
    def named(self) -> frozenset[str]:
        return self._named

    @cached_property
    def _named(self) -> frozenset[str]:  # once: apply() asks for every record
        out = {*self.fields, *(c for _, cols in self.roles for c in cols)}
        if self.user_field:
            out.add(self.user_field)
        return frozenset(out)

    @cached_property
    def _unwritten(self) -> frozenset[str]:
        return frozenset(c for c, r in self._role_of.items() if not r.written)

    @cached_property
    def _converters(self) -> dict[str, Callable[[object], object]]:
        got = {c: r.converter(self) for c, r in self._role_of.items() if r.written}
        return {c: f for c, f in got.items() if f is not None}

    def check(self, columns: Sequence[str], where: str, how: str = CLI_ROLES) -> None:
        """A one-line error when a column of the input is not covered or a named column
        (other than a privatized field, which the reader checks) is not in the input.
        ``how``: how the caller names the roles (:data:`CLI_ROLES`, :data:`PYTHON_ROLES`)."""
        present = [c if isinstance(c, str) else str(c) for c in columns]
        absent = [c for _, cols in self.roles for c in cols if c not in present]
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

    def unwritten(self, columns: Sequence[str]) -> list[str]:
        """The columns of ``columns`` not written (their role is not written)."""
        return [c for c in columns if c in self._unwritten]

    def converter(self, column: str) -> Callable[[object], object] | None:
        """How a cell of ``column`` is released (None: as it is)."""
        return self._converters.get(column)

    def describe(self, columns: Sequence[str]) -> dict:
        """What the report says about the columns: the privatized ones, then each role's
        (the columns ``keep_other`` keeps are released verbatim too)."""
        out = {"privatized": [c for c in columns if c in self.fields]}
        other = self.other_kept(columns)
        uf = self.user_field
        for name, role in COLUMN_ROLES.items():
            given = self.columns(name)
            out[role.report_key] = [c for c in columns if c in given or (
                name == "keep" and c in other)]
            if uf in columns and uf not in given and self.role(uf) is role:
                out[role.report_key].append(uf)  # the user field, by default
        out["keep_other"] = self.keep_other
        return out

    # ------------------------------------------------------------------ output
    def pseudonym(self, value) -> object:
        """The keyed pseudonym of one value (None stays None)."""
        if value is None:
            return None
        text = value if isinstance(value, str) else str(value)
        msg = self.owner.encode() + b"\x00" + text.encode("utf-8", "surrogatepass")
        return "p" + hmac.new(self.key, msg, hashlib.sha256).hexdigest()[:16]

    def apply(self, row: dict) -> dict:
        """A mapping record (JSONL/Parquet) as released: each column as its role says;
        ``DPTextError`` for a key no role covers (a later record's new key)."""
        if not self.keep_other:
            new = [k for k in row if k not in self.named()]
            if new:
                raise DPTextError(f"has columns {','.join(map(shown, new))} not covered by "
                                  f"--field, --keep, --drop or --hash")
        drop, convert = self._unwritten, self._converters
        if not convert and drop.isdisjoint(row):  # nothing to change (the common case)
            return row
        return {k: convert[k](v) if k in convert else v for k, v in row.items()
                if k not in drop}

    def output_schema(self, schema):
        """A Parquet schema as released: each column's output field, by its role."""
        import pyarrow as pa

        fields = [f if self.role(f.name) is None else self.role(f.name).arrow_field(f)
                  for f in schema if f.name not in self._unwritten]
        return pa.schema(fields, metadata=schema.metadata)

    def csv_plan(self, header: Sequence[str]
                 ) -> tuple[list[str], list[tuple[int, Callable[[object], object] | None]]]:
        """(the output header, each column written: its input index and converter)."""
        written = [(i, c) for i, c in enumerate(header) if c not in self._unwritten]
        return [c for _, c in written], [(i, self.converter(c)) for i, c in written]


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
