"""Ledger backends are a table that builds (issue 43): an abstract Backend (a backend missing a
method cannot be built), BACKENDS by URL scheme, and the file a backend declares
(local_path) is where the ledger keeps its secret - no isinstance on a backend class."""

from __future__ import annotations

from pathlib import Path

import pytest

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger import Ledger
from dptext.ledger.backends import BACKENDS, Backend, SQLiteBackend, backend_for
from dptext.ledger.keys import secret_path


class Vault(SQLiteBackend):
    """A test scheme: ``vault://NAME`` is SQLite file NAME.db under the directory ROOT."""

    name = "sqlite"  # the SQL dialect
    root: Path = Path(".")
    made: list = []

    @classmethod
    def from_url(cls, url, timeout):
        cls.made.append(url)
        return cls(cls.root / (url.split("://", 1)[1] + ".db"), timeout)


def test_the_url_scheme_picks_the_backend(tmp_path):
    assert type(backend_for(tmp_path / "l.sqlite", 1.0)) is SQLiteBackend
    assert type(backend_for(f"sqlite:///{tmp_path}/l.sqlite", 1.0)) is SQLiteBackend
    assert backend_for(tmp_path / "l.sqlite", 1.0).local_path == tmp_path / "l.sqlite"
    with pytest.raises(DPTextError, match="unknown ledger URL 'mysql://"):
        backend_for("mysql://host/db", 1.0)


def test_a_backend_missing_a_method_cannot_be_built():
    class Half(Backend):
        @classmethod
        def from_url(cls, url, timeout):
            return cls(url, timeout)

        def connect(self):
            pass

    with pytest.raises(TypeError, match="abstract"):
        Half.from_url("half://x", 1.0)


def test_a_registered_backend_is_used_with_its_local_path(tmp_path, monkeypatch):
    monkeypatch.setitem(BACKENDS, "vault", Vault)
    monkeypatch.setattr(Vault, "root", tmp_path)
    monkeypatch.setattr(Vault, "made", [])
    ledger = Ledger("vault://clinic")
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    (d,) = ledger.reserve(rid, [("r1", "u", [PrivacyEvent("pure", 1.0, 0.0, 1, "m", "")])])
    assert d.allowed and ledger.spent("u").epsilon_basic == 1.0
    assert Vault.made == ["vault://clinic"]
    assert (tmp_path / "clinic.db").is_file()
    assert secret_path(tmp_path / "clinic.db").is_file()  # beside the file it declares
