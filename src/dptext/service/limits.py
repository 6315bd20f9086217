"""What one request, one owner and one key may ask of the service. Each refusal is a 4xx
with a JSON body naming the limit (``{"error": ..., "limit": NAME, "value": ...}``)."""

from __future__ import annotations

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
    auth_failure_burst: int = 20             # failed keys per key id and per client address
    auth_failure_rate: float = 0.1           # ... forgiven per second after the burst


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
    """Failed authentications, counted per key id and per client address before the key's
    scrypt is computed: a token bucket of ``burst`` failures each, refilled at ``rate`` per
    second. While either bucket is empty a request with a key that needs the hash is a 429
    (one that this process verified before still passes: it costs no hash). Buckets that
    refilled are dropped once there are more than ``max_tracked``, so memory stays bounded."""

    def __init__(self, rate: float, burst: int, *, max_tracked: int = 100_000) -> None:
        self.rate, self.burst, self.max_tracked = rate, burst, max_tracked
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _tokens(self, key: tuple[str, str], now: float) -> float:
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - last) * self.rate)

    def check(self, key_id: str | None, address: str | None) -> None:
        """Raise LimitExceeded (429) when the key id or the address has no failures left."""
        now = time.monotonic()
        with self._lock:
            for kind, value in (("key_id", key_id), ("address", address)):
                if value is not None and self._tokens((kind, value), now) < 1.0:
                    raise LimitExceeded(
                        429, f"auth_failures_per_{kind}", self.burst,
                        f"too many failed API keys for this {kind.replace('_', ' ')}: at most "
                        f"{self.burst}, then one per {1 / self.rate:g} s")

    def fail(self, key_id: str | None, address: str | None) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) > self.max_tracked:
                full = [k for k in self._buckets if self._tokens(k, now) >= self.burst]
                for k in full:
                    del self._buckets[k]
                if len(self._buckets) > self.max_tracked:  # all busy: forget the oldest
                    for k in list(self._buckets)[:len(self._buckets) // 2]:
                        del self._buckets[k]
            for kind, value in (("key_id", key_id), ("address", address)):
                if value is not None:
                    key = (kind, value)
                    self._buckets[key] = (max(0.0, self._tokens(key, now) - 1.0), now)
