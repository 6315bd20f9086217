"""Issue 47's hardening of the service: failed logins slow and refuse the failing client, never
the right key (N2); a user's pattern is bounded in time and memory and the server keeps
answering while one runs (N1); forwarded headers are trusted only from a named proxy (N8)."""

from __future__ import annotations

import pytest

from dptext.service import limits as limits_module
from dptext.service.limits import AuthFailures, LimitExceeded


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_failing_client_is_slowed_then_refused_and_judged_alone(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(limits_module.time, "monotonic", clock)
    f = AuthFailures(rate=0.01, burst=8, free=3, max_delay=16.0)
    client, kid = "10.0.0.9", "ab" * 8
    for _ in range(3):  # free failures: the next try is never delayed
        f.check(kid, client)
        f.fail(kid, client)
    for wait in (1, 2, 4, 8, 16):  # then each failure doubles the wait (at most max_delay)
        with pytest.raises(LimitExceeded) as err:
            f.check(kid, client)
        assert err.value.limit == "auth_failures_slowed"
        clock.now += wait * 0.9
        with pytest.raises(LimitExceeded):
            f.check(kid, client)
        clock.now += wait * 0.15
        f.check(kid, client)
        f.fail(kid, client)
    with pytest.raises(LimitExceeded) as err:  # 8 failures: refused however long it waits...
        clock.now += 60
        f.check(kid, client)
    assert err.value.limit == "auth_failures_per_client"
    clock.now += 100  # ... until one failure is forgiven (rate 0.01/s)
    f.check(kid, client)
    # the same key id from another address, another id from this address: not touched
    f.check(kid, "10.0.0.10")
    f.check("cd" * 8, client)


def test_an_address_trying_many_key_ids_is_bounded(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(limits_module.time, "monotonic", clock)
    f = AuthFailures(rate=0.001, burst=20, address_burst=50)
    for i in range(50):
        f.check(f"{i:016x}", "10.0.0.1")
        f.fail(f"{i:016x}", "10.0.0.1")
    with pytest.raises(LimitExceeded) as err:
        f.check("f" * 16, "10.0.0.1")
    assert err.value.limit == "auth_failures_per_address"
    f.check("f" * 16, "10.0.0.2")
