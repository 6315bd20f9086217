"""What one request, one owner and one key may ask of the service. Each refusal is a 4xx
with a JSON body naming the limit (``{"error": ..., "limit": NAME, "value": ...}``)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 2 * 2**20          # a privatize request
    max_upload_bytes: int = 64 * 2**20       # a job's file
    max_texts: int = 256                     # texts per privatize request
    max_chars: int = 20_000                  # characters per text
    max_jobs_per_owner: int = 2              # jobs running or queued at once
    rate_per_second: float = 50.0            # requests per key, sustained
    rate_burst: int = 100                    # requests per key, at once
    max_mechanisms: int = 32                 # fitted mechanisms kept (least recently used out)
    max_mechanism_bytes: int = 2 * 2**30     # ... and the bytes of their arrays
    max_new_mechanisms_per_owner_hour: int = 20  # distinct parameter sets fitted per owner
    auth_failure_burst: int = 20             # failed keys per (address, key id): refused
    auth_failure_rate: float = 0.1           # ... forgiven per second (AuthFailures: slowed
                                             # past 5, never the right key)


class LimitExceeded(Exception):
    def __init__(self, status: int, limit: str, value, message: str) -> None:
        super().__init__(message)
        self.status, self.limit, self.value = status, limit, value


class RateLimiter:
    """A token bucket per key: ``burst`` requests at once, ``rate`` per second after."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                raise LimitExceeded(429, "rate_per_second", self.rate,
                                    f"rate limit: at most {self.rate:g} requests per second "
                                    f"per key (bursts of {self.burst})")
            self._buckets[key] = (tokens - 1.0, now)


class AuthFailures:
    """Failed authentications: counted per *client* (the pair of peer address and key id),
    slowed, then refused - and each refusal is of a wrong key only, never of the right one
    (the service checks a key's secret with a fast HMAC before it turns a limited request
    away: :meth:`dptext.service.keys.KeyStore.authenticate`).

    A pair's count rises by one per failure and falls by ``rate`` per second. Up to ``free``
    failures nothing happens; from then on the pair must wait ``2**(count - free)`` seconds
    (at least 1, at most ``max_delay``) after its last failure before its next key is tried
    (a try sooner is a 429 ``auth_failures_slowed``); at ``burst`` failures it is refused (429
    ``auth_failures_per_client``) until the count has fallen below. No count is kept per key
    id alone (a guesser anywhere would lock the owner out) nor per address alone (one client
    behind a proxy would lock out the others) - except ``address_burst`` failures per address
    over all key ids, a bound on the lookups one address may cause by trying many ids.
    Entries whose counts fell to zero are dropped once there are more than ``max_tracked``,
    so memory stays bounded."""

    def __init__(self, rate: float, burst: int, *, free: int = 5, max_delay: float = 60.0,
                 address_burst: int = 1000, max_tracked: int = 100_000) -> None:
        self.rate, self.burst, self.free, self.max_delay = rate, burst, min(free, burst),\
            max_delay
        self.address_burst, self.max_tracked = address_burst, max_tracked
        self._counts: dict[tuple, tuple[float, float]] = {}  # key -> (count, last failure)
        self._lock = threading.Lock()

    def _count(self, key: tuple, now: float) -> tuple[float, float]:
        count, last = self._counts.get(key, (0.0, now))
        return max(0.0, count - (now - last) * self.rate), last

    def delay(self, count: float) -> float:
        """Seconds a client with ``count`` failures (a part of one counts whole) waits
        before its next try."""
        over = math.ceil(count - 1e-9) - self.free
        return 0.0 if over < 0 else min(self.max_delay, 2.0 ** over)

    def check(self, key_id: str | None, address: str | None) -> None:
        """Raise LimitExceeded (429) when the client (address and key id) is slowed or
        refused, or its address has tried too many wrong keys."""
        now = time.monotonic()
        with self._lock:
            count, last = self._count(("client", address, key_id), now)
            if count > self.burst - 1:  # (the count falls a little between failures)
                wait = (count - self.burst + 1) / self.rate
                raise LimitExceeded(
                    429, "auth_failures_per_client", self.burst,
                    f"too many failed API keys from this address for this key id (at most "
                    f"{self.burst}): the next try in {wait:.0f} s")
            wait = self.delay(count) - (now - last)
            if wait > 0:
                raise LimitExceeded(
                    429, "auth_failures_slowed", round(wait, 1),
                    f"failed API keys from this address for this key id: wait "
                    f"{wait:.1f} s before the next try")
            if address is not None and self._count(("address", address), now)[0] > \
                    self.address_burst - 1:
                raise LimitExceeded(
                    429, "auth_failures_per_address", self.address_burst,
                    f"too many failed API keys from this address (at most "
                    f"{self.address_burst}, one forgiven per {1 / self.rate:g} s)")

    def fail(self, key_id: str | None, address: str | None) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._counts) > self.max_tracked:
                for k in [k for k in self._counts if self._count(k, now)[0] <= 0.0]:
                    del self._counts[k]
                if len(self._counts) > self.max_tracked:  # all busy: forget the oldest
                    for k in list(self._counts)[:len(self._counts) // 2]:
                        del self._counts[k]
            keys = [("client", address, key_id)]
            if address is not None:
                keys.append(("address", address))
            for key in keys:
                self._counts[key] = (self._count(key, now)[0] + 1.0, now)
