"""Pending charges of ``/v1/privatize`` that were never sent, and voiding them.

The service commits a request's charges before it sends the response (docs/service.md, "The
order of a privatize request"), so a charge of a ``/v1/privatize`` release that is still
pending belongs to a response that was never sent: the server died, or the commit failed,
between the reserve and the commit. Such releases are opened with the origin
``service-privatize``; :func:`void_unsent` voids their pending charges (and refuses any other
release). A live request's charges voided in that instant are safe too: its commit then fails
and nothing is sent.
"""

from __future__ import annotations

from dptext.errors import DPTextError

SERVICE_PRIVATIZE = "service-privatize"


def void_unsent(ledger, release_id: str, *, reason: str, by: str = "",
                dry_run: bool = False) -> dict:
    """Void the pending charges of a ``/v1/privatize`` release (never sent); returns
    ``{"voided": n, "voidable": n}``."""
    origin = ledger.release_origin(release_id)
    if origin != SERVICE_PRIVATIZE:
        raise DPTextError(f"release {release_id} is not a /v1/privatize release (origin "
                          f"{origin or 'none'!r}): nothing shows its text was never sent; "
                          "nothing was voided")
    pending = next((r["ids"] for r in ledger.pending_releases()
                    if r["release_id"] == release_id), [])
    if dry_run:
        return {"voided": 0, "voidable": len(pending)}
    n = ledger.void(release_id, pending, reason=reason, by=by) if pending else 0
    return {"voided": n, "voidable": len(pending)}
