"""API keys: ``dpt_<id>_<secret>``, shown once; stored as a salted scrypt hash of the secret
(RFC 7914; n=2^14, r=8, p=1) in a table of the ledger database, beside the ledger's own, and
as a keyed SHA-256 check (HMAC-SHA256 of the secret keyed by the row's salt) in a second
table, ``service_key_checks``.

The secret is 256 random bits (``secrets.token_urlsafe(32)``): there is no dictionary to try,
so a fast keyed hash keeps it as well as scrypt does (scrypt slows the guessing of *chosen*
passwords), and it costs microseconds instead of 150 ms of a core. That is what lets the
service verify a correct secret whatever its failure limits say (issue 47 N2: a guesser at a
key id locked its owner out): a request's key is looked up by its public ``id`` and the
secret checked in constant time against the check, never refused for others' failures. A key
made before the check existed is verified by scrypt once and its check stored then.

A revoked key stays in the table (who had it is history) and is refused. An unknown or revoked
id costs the same HMAC as a wrong secret, so the time of a refusal does not say whether the
id exists (the ids are the visible prefix of every key).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

from dptext.errors import DPTextError
from dptext.ledger.backends import backend_for

SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
_KEY = re.compile(r"^dpt_([0-9a-f]{16})_([A-Za-z0-9_-]{32,64})$")
_OWNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


@dataclass(frozen=True)
class KeyInfo:
    key_id: str
    owner: str
    created: str
    revoked: str | None


def check_owner(owner: str) -> str:
    if not isinstance(owner, str) or not _OWNER.match(owner):
        raise DPTextError(f"an owner name is 1-64 letters, digits or ._@- (starting with a "
                          f"letter or digit), got {owner!r}")
    return owner


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, maxmem=64 * 2**20, **SCRYPT)


def _check(secret: str, salt: bytes) -> str:
    """The fast check of a secret: HMAC-SHA256 keyed by the key's salt, hex."""
    return hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()


def key_id(key: str | None) -> str | None:
    """The public id of a well-formed key, else None."""
    match = _KEY.match(key or "")
    return match.group(1) if match else None


class KeyStore:
    """The service's API keys, in the database at ``url`` (the ledger's)."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self._backend = backend_for(url, timeout)
        self._lock = threading.Lock()
        self._backend.connect()
        with self._write():
            self._backend.execute(
                "CREATE TABLE IF NOT EXISTS service_keys (key_id TEXT PRIMARY KEY, owner TEXT "
                "NOT NULL, salt BLOB NOT NULL, hash BLOB NOT NULL, created TEXT NOT NULL, "
                "revoked TEXT)")
            self._backend.execute(
                "CREATE TABLE IF NOT EXISTS service_key_checks (key_id TEXT PRIMARY KEY, "
                "checked TEXT NOT NULL)")
        # verified keys, so a request costs one scrypt per key and process, not per request
        self._verified: dict[str, tuple[str, bytes, bytes]] = {}
        # an unknown or revoked id is checked against this (never matching) hash, so it costs
        # what a wrong secret costs
        self._dummy_salt = secrets.token_bytes(16)

    def _write(self):
        store = self

        class _Tx:
            def __enter__(self):
                store._lock.acquire()
                store._backend.begin_write()

            def __exit__(self, kind, value, tb):
                try:
                    if kind is None:
                        store._backend.commit()
                    else:
                        store._backend.rollback()
                finally:
                    store._lock.release()

        return _Tx()

    def create(self, owner: str) -> str:
        """A new key for ``owner``; the returned string is the only copy of the secret."""
        check_owner(owner)
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._write():
            self._backend.execute(
                "INSERT INTO service_keys (key_id, owner, salt, hash, created) "
                "VALUES (?, ?, ?, ?, ?)", (key_id, owner, salt, _hash(secret, salt), now))
            self._backend.execute(
                "INSERT INTO service_key_checks (key_id, checked) VALUES (?, ?)",
                (key_id, _check(secret, salt)))
        return f"dpt_{key_id}_{secret}"

    def authenticate(self, key: str | None, *, verify: bool = True) -> str | None:
        """The owner of a valid, unrevoked key, else None. A key with its fast check (every
        key made by this version) costs one HMAC whatever ``verify`` says. ``verify=False``:
        no scrypt - a key made before the check existed is accepted only if this process
        verified it before (for a client whose failures are being limited)."""
        match = _KEY.match(key or "")
        if match is None:
            return None
        key_id, secret = match.groups()
        with self._lock:
            self._backend.begin_read()
            try:
                row = self._backend.execute(
                    "SELECT owner, salt, hash, revoked FROM service_keys WHERE key_id = ?",
                    (key_id,)).fetchone()
                checked = self._backend.execute(
                    "SELECT checked FROM service_key_checks WHERE key_id = ?",
                    (key_id,)).fetchone()
            finally:
                self._backend.commit()
        if row is None or row[3] is not None:
            self._verified.pop(key_id, None)
            # the time of a wrong secret: one HMAC and a comparison
            hmac.compare_digest(_check(secret, self._dummy_salt), "0" * 64)
            return None
        owner, salt, stored = row[0], bytes(row[1]), bytes(row[2])
        if checked is not None:
            return owner if hmac.compare_digest(_check(secret, salt), checked[0]) else None
        # a key made before the fast check: scrypt once, then store its check
        cached = self._verified.get(key_id)
        token = hashlib.sha256(secret.encode() + salt).digest()
        if cached is not None and hmac.compare_digest(cached[2], token):
            return owner
        if not verify:
            return None
        if not hmac.compare_digest(_hash(secret, salt), stored):
            return None
        self._verified[key_id] = (owner, salt, token)
        with self._write():
            self._backend.execute(
                "INSERT INTO service_key_checks (key_id, checked) VALUES (?, ?) "
                "ON CONFLICT (key_id) DO NOTHING", (key_id, _check(secret, salt)))
        return owner

    def revoke(self, key_or_id: str) -> bool:
        """Revoke by key or key id; False if there was no such active key."""
        match = _KEY.match(key_or_id)
        key_id = match.group(1) if match else key_or_id
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._write():
            cur = self._backend.execute(
                "UPDATE service_keys SET revoked = ? WHERE key_id = ? AND revoked IS NULL",
                (now, key_id))
            changed = cur.rowcount
        self._verified.pop(key_id, None)
        return bool(changed)

    def list(self, owner: str | None = None) -> list[KeyInfo]:
        with self._lock:
            self._backend.begin_read()
            try:
                rows = self._backend.execute(
                    "SELECT key_id, owner, created, revoked FROM service_keys ORDER BY created"
                ).fetchall()
            finally:
                self._backend.commit()
        return [KeyInfo(*r) for r in rows if owner is None or r[1] == owner]

    def close(self) -> None:
        self._backend.close()
