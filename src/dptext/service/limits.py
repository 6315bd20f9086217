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
