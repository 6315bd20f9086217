"""The hash chain over the ledger's entries.

Entry ``n`` stores ``hash_n = SHA-256(canonical JSON of [n, its fields..., hash_{n-1}])`` and
``hash_{n-1}`` itself; entry 1 chains to ``SHA-256("dptext-ledger" || ledger id)``, and
``ledger_meta`` keeps the head (last seq and hash). Editing any field of an entry changes its
hash (detected at that entry, or at the next one if the hash was recomputed too); deleting an
entry leaves a gap in the sequence or a previous-hash that matches nothing; deleting the last
entries leaves the head pointing past the end. What a chain cannot detect is someone with write
access rewriting every entry after a point *and* the head: compare the head hash ``verify``
prints with a copy kept elsewhere (docs/ledger.md, "The hash chain"). The per-record rows of a
``batch`` entry are covered through its body (:mod:`dptext.ledger.batches`).
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) uses for str

# The columns of ledger_entries in hashing order (seq first, prev_hash last, hash excluded).
ENTRY_FIELDS = ("seq", "kind", "release_id", "owner", "dataset", "unit", "record", "eps_n",
                "delta_n", "body", "created", "prev_hash")
ENTRY_COLUMNS = ENTRY_FIELDS + ("hash",)


def genesis(ledger_id: str) -> str:
    return hashlib.sha256(b"dptext-ledger\x00" + ledger_id.encode()).hexdigest()


def entry_text(values: tuple) -> str:
    """``json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)`` for a tuple of
    ints and strings, built directly (it is computed for every charged record)."""
    return "[" + ",".join(str(v) if type(v) is int else encode_basestring(v)
                          for v in values) + "]"


def entry_hash(values: tuple) -> str:
    """``values`` (ints and strings) in :data:`ENTRY_FIELDS` order."""
    return hashlib.sha256(entry_text(values).encode()).hexdigest()


def canonical(obj) -> str:
    """The JSON text stored in an entry's body (sorted keys, no spaces, floats by repr)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
