"""The service's mechanism pool is bounded (issue 32 item 4): before, every distinct parameter
set was fitted and kept for good (6 requests with epsilon 2.001...2.006: RSS 306 -> 516 MB)."""

from __future__ import annotations

import gc
import os

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from planted_bugs import tiny_space  # noqa: E402

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402
from dptext.service.pool import MechanismPool, memory_bytes  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_rss_stays_bounded_under_200_distinct_epsilons(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space = tiny_space(600, 16, 0)
    cap = 8 * 2**20
    pool = MechanismPool(max_bytes=cap, max_mechanisms=1000, max_new_per_owner_hour=1000)
    first = pool.get("santext", {"epsilon": 2.0, "space": space})
    one = memory_bytes(first)
    # each fitted mechanism holds its |V| x |V| tables (about 0.6 MB here): 200 of them kept
    # would be 200 * one bytes more; the pool keeps at most `cap` of them
    assert one > 200_000
    del first
    gc.collect()
    before = _rss()
    for i in range(1, 201):
        pool.get("santext", {"epsilon": 2.0 + i / 1000, "space": space}, owner="o")
        assert pool.bytes <= cap
    gc.collect()
    grown = _rss() - before
    assert len(pool.loaded) <= cap // one + 1 and pool.evicted >= 200 - cap // one
    # unbounded: about 200 * one (~120 MB); bounded: the cap plus allocator slack
    assert grown < cap + 0.25 * 200 * one, (grown, one)
    # the most recently used is kept, the oldest dropped
    assert pool.loaded[-1].find("2.2") >= 0


def test_an_owner_past_its_new_parameter_sets_per_hour_gets_a_429(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d",
                              limits=Limits(max_new_mechanisms_per_owner_hour=1)))
    client = TestClient(app)
    a = {"Authorization": f"Bearer {app.state.keys.create('a')}"}
    b = {"Authorization": f"Bearer {app.state.keys.create('b')}"}

    def ask(headers, eps):
        return client.post("/v1/privatize", headers=headers,
                           json={"texts": ["hello there"], "params": {"epsilon": eps}})

    assert ask(a, 2).status_code == 200
    assert ask(a, 2).status_code == 200  # the same parameters again: not new
    r = ask(a, 2.001)
    assert r.status_code == 429 and r.json()["limit"] == "max_new_mechanisms_per_owner_hour"
    assert r.json()["value"] == 1 and "2.001" not in str(app.state.pool.loaded)
    assert ask(b, 2).status_code == 200  # kept: not a new fit for b either
    assert app.state.ledger.releases()[-1]["owner"] == "b"


def test_a_refused_parameter_set_is_not_counted(tmp_path, monkeypatch):
    from dptext.errors import DPTextError
    from dptext.service.limits import LimitExceeded

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space = tiny_space(50, 4, 0)
    pool = MechanismPool(max_new_per_owner_hour=1)
    with pytest.raises(DPTextError):
        pool.get("custext", {"epsilon": -1, "k": 5, "space": space}, owner="o")
    pool.get("custext", {"epsilon": 2, "k": 5, "space": space}, owner="o")
    with pytest.raises(LimitExceeded) as err:
        pool.get("custext", {"epsilon": 3, "k": 5, "space": space}, owner="o")
    assert err.value.limit == "max_new_mechanisms_per_owner_hour"
    pool.get("custext", {"epsilon": 3, "k": 5, "space": space}, owner="p")
