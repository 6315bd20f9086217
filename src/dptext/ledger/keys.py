"""The ledger secret and the keyed hashes that stand for units, records and release keys.

A unit id is never stored in clear: the ledger keeps ``HMAC-SHA256(secret, "unit" || id)``
(truncated to 128 bits), so someone holding the database alone cannot tell whether a given
person is in it - they would need the secret to hash a guess. Record keys and release keys are
hashed the same way (a record key may be derived from the text).

Where the secret lives:
- ``DPTEXT_LEDGER_SECRET`` (or ``Ledger(secret=...)``), if set: never stored by dptext;
- SQLite: a file beside the database, ``<ledger>.key``, created with mode 0600 (refused when
  others may read it), so that a copy of the database without the key reveals nobody;
- PostgreSQL: the ``ledger_keys`` table (every machine sharing the ledger needs it; anyone
  who can read that table can test guesses - set ``DPTEXT_LEDGER_SECRET`` to keep it out).

A check value ``HMAC(secret, "key-check" || ledger id)`` in ``ledger_meta`` makes a wrong or
regenerated secret a one-line error instead of a silently empty ledger (every unit would look
new: fail-open).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from dptext.errors import DPTextError

SECRET_ENV = "DPTEXT_LEDGER_SECRET"
_HEX = 32  # 128-bit ids
_BLOCK = 64  # SHA-256's block size in bytes


def new_secret() -> str:
    return secrets.token_hex(32)


def secret_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".key")


def write_secret_file(path: Path, secret: str) -> None:
    """Create the key file with mode 0600; refuses to overwrite an existing one."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise DPTextError(f"ledger secret {path} already exists: refusing to replace it (it "
                          "belongs to another ledger, or this ledger's database was "
                          "deleted)") from None
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_secret_file(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise DPTextError(f"ledger secret {path} is missing: without it the stored unit ids "
                          f"cannot be matched (restore it, or set {SECRET_ENV})") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise DPTextError(f"ledger secret {path} is readable by others (mode "
                          f"{stat.S_IMODE(st.st_mode):o}): chmod 600 {path}")
    text = path.read_text().strip()
    if not text:
        raise DPTextError(f"ledger secret {path} is empty")
    return text


def _hmac_from(inner, outer, msg: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) of ``msg`` from the SHA-256 states after the inner pad (and any
    prefix of the message) and after the outer pad, 128 bits in hex; the states are copied,
    not changed."""
    h = inner.copy()
    h.update(msg)
    o = outer.copy()
    o.update(h.digest())
    return o.hexdigest()[:_HEX]


class Keyring:
    """Keyed hashes with one secret."""

    _CACHE = 200_000  # unit ids remembered (a unit recurs across records)

    def __init__(self, secret: str | bytes):
        key = secret.encode() if isinstance(secret, str) else bytes(secret)
        if len(key) < 16:
            raise DPTextError("the ledger secret must be at least 16 bytes")
        self._key = key
        self._units: dict[str, str] = {}
        self.unit_cache = self._units  # unit id -> :meth:`unit` (read-only outside)
        self._pad_states = None

    def _mac(self, domain: bytes, *parts: str) -> str:
        msg = domain + b"\x00" + b"\x00".join(p.encode() for p in parts)
        return hmac.digest(self._key, msg, "sha256").hex()[:_HEX]

    def unit(self, unit_id: str) -> str:
        """``HMAC-SHA256(secret, "unit" || id)``, 128 bits (cached): from the key's pad
        states, like :meth:`records` (a job's first reserve hashes every unit it meets:
        one-shot ``hmac.digest`` was 5 us a unit; equal to :meth:`_mac`, tested)."""
        out = self._units.get(unit_id)
        if out is None:
            if len(self._units) >= self._CACHE:
                self._units.clear()
            out = self._units[unit_id] = _hmac_from(*self._pads(),
                                                    b"unit\x00" + unit_id.encode())
        return out

    def record(self, release_id: str, record_key: str) -> str:
        return self._mac(b"record", release_id, record_key)

    def records(self, release_id: str, record_keys: list[str]) -> list[str]:
        """:meth:`record` of many keys of one release: HMAC-SHA256 (RFC 2104) computed from
        the inner and outer hash states of the key and the release's prefix, taken once per
        call and copied per key (the one-shot ``hmac.digest`` sets up both per key: 2.5x
        slower). Equal to :meth:`record` (tests/ledger/test_ledger_speed.py)."""
        inner, outer = self._pads()
        inner = inner.copy()
        inner.update(b"record\x00" + release_id.encode() + b"\x00")
        return [_hmac_from(inner, outer, k.encode()) for k in record_keys]

    def _pads(self):
        """SHA-256 states after the HMAC key's inner and outer pads (RFC 2104, section 2)."""
        pads = self._pad_states
        if pads is None:
            key = self._key
            if len(key) > _BLOCK:
                key = hashlib.sha256(key).digest()
            key = key.ljust(_BLOCK, b"\0")
            pads = self._pad_states = (hashlib.sha256(bytes(b ^ 0x36 for b in key)),
                                       hashlib.sha256(bytes(b ^ 0x5C for b in key)))
        return pads

    def release_key(self, key: str) -> str:
        return self._mac(b"release", key)

    def check_value(self, ledger_id: str) -> str:
        return self._mac(b"key-check", ledger_id)
