"""Ledger test backends: a SQLite file, and a throwaway real PostgreSQL server.

The PostgreSQL server is started once per test session in a temp directory (``initdb`` +
``pg_ctl start`` on a free 127.0.0.1 port, fsync off), each test gets a fresh database, and the
server is stopped at teardown. ``initdb`` refuses to run as root, so as root the server runs as
the ``postgres`` user through ``runuser``. Where the binaries (``$DPTEXT_PG_BIN``, else the
newest ``/usr/lib/postgresql/*/bin``), ``runuser`` or psycopg are missing, the PostgreSQL cases
skip with a one-line reason.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

__all__ = ["ledger_url", "pg_server", "pg_url"]  # the fixtures, for `from ledger_backends import *`


def pg_bin() -> Path | None:
    if os.environ.get("DPTEXT_PG_BIN"):
        return Path(os.environ["DPTEXT_PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0)
    return Path(found[-1]) if found else None


def _why_no_postgres() -> str | None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'dptext[postgres]')"
    b = pg_bin()
    if b is None or not (b / "initdb").exists() or not (b / "pg_ctl").exists():
        return "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin, $DPTEXT_PG_BIN)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (initdb refuses root)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run initdb as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(cmd: list) -> list:
    cmd = [str(c) for c in cmd]
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@pytest.fixture(scope="session")
def pg_server():
    """The URL of a running throwaway PostgreSQL server's ``postgres`` database."""
    reason = _why_no_postgres()
    if reason:
        pytest.skip(reason)
    b = pg_bin()
    base = Path(tempfile.mkdtemp(prefix="dptext-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    data, port = base / "data", _free_port()
    try:
        subprocess.run(_as_postgres([b / "initdb", "-D", data, "-A", "trust", "-U", "postgres",
                                     "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True, timeout=120)
        subprocess.run(_as_postgres([
            b / "pg_ctl", "-D", data, "-l", base / "log", "-w", "-t", "60", "-o",
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=50", "start"]), check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        shutil.rmtree(base, ignore_errors=True)
        out = getattr(err, "stderr", b"") or b""
        pytest.fail(f"could not start PostgreSQL: {out.decode(errors='replace')[-500:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([b / "pg_ctl", "-D", data, "-m", "immediate", "-w",
                                     "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty schema on the session's server (dropped after the test): the ledger's
    tables go there through the connection's search_path (cheaper than a database each)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {name}")
    yield f"{pg_server}?options=-csearch_path%3D{name}"
    with psycopg.connect(pg_server, autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def ledger_url(request, tmp_path):
    """The same test on a SQLite file and on a real PostgreSQL database (a server of its own,
    started once a session: slow, outside the fast tier)."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite")
    return request.getfixturevalue("pg_url")


def raw(url: str):
    """A plain DB-API connection to the ledger's database (to tamper with it) and its
    placeholder: ``(connection, "?" or "%s")``; autocommit."""
    if url.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(url, autocommit=True), "%s"
    import sqlite3

    return sqlite3.connect(url, isolation_level=None), "?"
