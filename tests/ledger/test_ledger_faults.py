"""Ledger files that are damaged, foreign, read-only, too new or keyless: one-line errors,
nothing charged, nothing changed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url
from ledger_backends import raw

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger import Ledger, schema
from dptext.ledger.keys import secret_path

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

EV = [PrivacyEvent("pure", 1.0, count=2)]


def filled(path, n=400):
    ledger = Ledger(path)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    for b in range(0, n, 100):
        ds = ledger.reserve(rid, [(f"r{i}", f"u{i % 7}", EV) for i in range(b, b + 100)])
        ledger.commit(rid, [d.charge_id for d in ds])
    ledger.close()
    return rid


def one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text and text
    return text


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------ schema version
def test_unknown_newer_schema_version_is_refused(ledger_url):
    Ledger(ledger_url).close()
    conn, mark = raw(ledger_url)
    conn.execute(f"UPDATE ledger_meta SET value = {mark} WHERE key = 'schema_version'",
                 ("99",))
    conn.close()
    with pytest.raises(DPTextError, match="schema version 99, newer than this dptext") as err:
        Ledger(ledger_url)
    one_line(err)


def test_garbled_schema_version_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    with sqlite3.connect(path) as c:
        c.execute("UPDATE ledger_meta SET value = 'v1' WHERE key = 'schema_version'")
    with pytest.raises(DPTextError, match="damaged header"):
        Ledger(path)


def test_older_schema_is_migrated_on_open(ledger_url, monkeypatch):
    ledger = Ledger(ledger_url)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    ledger.reserve(rid, [("a", "u", EV)])
    ledger.close()
    nxt = schema.SCHEMA_VERSION + 1
    step = (nxt, "test: an index", ["CREATE INDEX ledger_test_idx ON ledger_entries (kind)"])
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, step])
    monkeypatch.setattr("dptext.ledger.store.MIGRATIONS", schema.MIGRATIONS)
    monkeypatch.setattr("dptext.ledger.store.SCHEMA_VERSION", nxt)
    ledger = Ledger(ledger_url)
    assert ledger._meta()["schema_version"] == str(nxt)
    assert ledger._backend.table_exists("ledger_entries")
    assert ledger.spent("u").epsilon_basic == 2.0
    ledger.verify()
    ledger.close()
    # and the unpatched dptext (version 1) now refuses it
    monkeypatch.undo()
    with pytest.raises(DPTextError, match="newer than this dptext"):
        Ledger(ledger_url)


# ---------------------------------------------------------------------- damaged files
def test_corrupt_file_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(DPTextError, match="not an SQLite database") as err:
        Ledger(path)
    one_line(err)


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    filled(path)
    size = path.stat().st_size
    assert size > 50_000
    before = path.read_bytes()
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(DPTextError, match="truncated") as err:
        Ledger(path)
    one_line(err)
    assert path.read_bytes() == before[: size // 2]  # nothing written to it


def test_corrupted_pages_are_found_by_verify_or_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    filled(path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for i in range(3 * page, len(data) - page, 2 * page):  # scribble over many pages
        data[i + 100:i + 400] = os.urandom(300)
    path.write_bytes(bytes(data))
    with pytest.raises(DPTextError) as err:
        ledger = Ledger(path)
        ledger.verify()
    assert any(w in one_line(err) for w in ("corrupt", "malformed", "broken", "disagrees"))


def test_empty_file_is_not_silently_a_new_ledger(tmp_path):
    path = tmp_path / "l.sqlite"
    path.touch()
    with pytest.raises(DPTextError, match="empty file"):
        Ledger(path)
    assert path.stat().st_size == 0


def test_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(DPTextError, match="not a dptext ledger"):
        Ledger(path)


def test_missing_directory_and_unknown_scheme(tmp_path):
    with pytest.raises(DPTextError, match="does not exist"):
        Ledger(tmp_path / "no" / "such" / "l.sqlite")
    with pytest.raises(DPTextError, match="unknown ledger URL"):
        Ledger("mysql://u:pw@host/db")
    with pytest.raises(DPTextError, match="no ledger at"):
        Ledger(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()


def test_unreachable_postgres_is_a_one_line_error():
    pytest.importorskip("psycopg")
    with pytest.raises(DPTextError, match="connect failed") as err:
        Ledger("postgresql://nobody:pw@127.0.0.1:1/x", timeout=1)
    assert "pw" not in one_line(err)  # the password is redacted


# ----------------------------------------------------------------------------- read-only
def test_read_only_file_reads_but_never_charges(tmp_path):
    path = tmp_path / "l.sqlite"
    rid = filled(path, 200)
    path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    before = digest(path)
    try:
        ledger = Ledger(path)
        assert ledger.readonly
        assert ledger.spent("u1").records > 0
        ledger.verify()
        with pytest.raises(DPTextError, match="read-only") as err:
            ledger.reserve(rid, [("new", "u1", EV)])
        one_line(err)
        with pytest.raises(DPTextError, match="read-only"):
            ledger.set_budget("o", "d", 1.0)
        ledger.close()
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert digest(path) == before


def test_read_only_file_cannot_be_created_or_migrated(tmp_path, monkeypatch):
    path = tmp_path / "l.sqlite"
    filled(path, 100)
    path.chmod(stat.S_IRUSR)
    nxt = schema.SCHEMA_VERSION + 1
    step = (nxt, "test", ["CREATE INDEX ledger_test_idx ON ledger_entries (kind)"])
    monkeypatch.setattr("dptext.ledger.store.MIGRATIONS", [*schema.MIGRATIONS, step])
    monkeypatch.setattr("dptext.ledger.store.SCHEMA_VERSION", nxt)
    try:
        with pytest.raises(DPTextError, match="needs migrating .* read-only"):
            Ledger(path)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


# ------------------------------------------------------------------------------- secrets
def test_secret_file_is_private_and_required(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    key = secret_path(path)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    key.chmod(0o644)
    with pytest.raises(DPTextError, match="readable by others"):
        Ledger(path)
    key.chmod(0o600)
    key.rename(tmp_path / "elsewhere")
    with pytest.raises(DPTextError, match="secret .* is missing"):
        Ledger(path)


def test_deleted_database_with_its_key_left_is_not_restarted(tmp_path):
    path = tmp_path / "l.sqlite"
    filled(path, 100)
    for p in tmp_path.glob("l.sqlite*"):
        if not p.name.endswith(".key"):
            p.unlink()
    with pytest.raises(DPTextError, match="already exists: refusing to replace it"):
        Ledger(path)
    assert not path.exists()  # nothing half-created left behind


# ---------------------------------------------------------------------------- processes
def test_a_forked_child_reconnects(tmp_path):
    import multiprocessing as mp

    path = tmp_path / "l.sqlite"
    ledger = Ledger(path)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    ledger.reserve(rid, [("parent", "u", EV)])
    ctx = mp.get_context("fork")
    p = ctx.Process(target=_child_reserve, args=(ledger, rid))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert ledger.spent("u").epsilon_basic == 4.0
    ledger.verify()


def _child_reserve(ledger, rid):
    assert ledger.reserve(rid, [("child", "u", EV)])[0].allowed


def test_postgres_role_without_write_rights_reads_but_never_charges(pg_url):
    import psycopg

    ledger = Ledger(pg_url)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    ledger.reserve(rid, [("a", "u", EV)])
    schema_name = pg_url.rsplit("%3D", 1)[1]
    role = f"reader_{schema_name}"
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {role} LOGIN")
        c.execute(f"GRANT USAGE ON SCHEMA {schema_name} TO {role}")
        c.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema_name} TO {role}")
    try:
        reader = Ledger(pg_url.replace("postgres@", f"{role}@"))
        assert reader.spent("u").epsilon_basic == 2.0
        reader.verify()
        with pytest.raises(DPTextError, match="read-only for this user") as err:
            reader.reserve(rid, [("b", "u", EV)])
        one_line(err)
        reader.close()
        assert ledger.spent("u").epsilon_basic == 2.0
    finally:
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute(f"DROP OWNED BY {role}")
            c.execute(f"DROP ROLE {role}")
