"""The service through its API: keys, owners, limits, budgets, spans, jobs (in process with
FastAPI's TestClient, and against a real uvicorn on a loopback port)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from service_helpers import wait_for_job

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

TEXT = "Alice Smith met Dr. Jones in Boston, and they talked."


@pytest.fixture()
def service(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "ledger.sqlite"),
                              data_dir=tmp_path / "data",
                              limits=Limits(max_texts=8, max_chars=2000, rate_burst=1000,
                                            rate_per_second=1000.0, max_body_bytes=200_000,
                                            max_upload_bytes=200_000)))
    client = TestClient(app)
    a, b = app.state.keys.create("clinic-a"), app.state.keys.create("clinic-b")
    return app, client, {"Authorization": f"Bearer {a}"}, {"Authorization": f"Bearer {b}"}


def _privatize(client, headers, texts, **kw):
    body = {"texts": texts, "mechanism": "custext", "params": {"epsilon": 2}, **kw}
    return client.post("/v1/privatize", headers=headers, json=body)


def _wait(client, headers, job_id, timeout=120):
    return wait_for_job(client, headers, job_id, timeout)


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc",
                                    "Bearer dpt_0123456789abcdef_" + "x" * 43])
def test_every_v1_endpoint_refuses_without_a_valid_key(service, header):
    app, client, _, _ = service
    headers = {} if header is None else {"Authorization": header}
    calls = [("get", "/v1/mechanisms"), ("post", "/v1/privatize"), ("get", "/v1/jobs"),
             ("post", "/v1/jobs"), ("get", "/v1/jobs/abc"), ("get", "/v1/jobs/abc/output"),
             ("get", "/v1/units/u/budget"), ("post", "/v1/budgets"), ("post", "/v1/estimate"),
             ("get", "/v1/budgets/d"), ("post", "/v1/columns")]
    paths = {r.path for r in app.routes if getattr(r, "path", "").startswith("/v1")}
    assert {p for _, p in calls} >= {"/v1/mechanisms", "/v1/privatize", "/v1/jobs"}
    assert len(paths) == 10  # every /v1 route is in the list above (by its template)
    for i, (method, path) in enumerate(calls):
        r = getattr(client, method)(path, headers=headers)
        if r.status_code == 429 and i >= 5 and "dpt_" in (header or ""):  # a well-formed
            # wrong key: the client is slowed after 5 failures (issue 47 N2)
            assert r.json()["limit"] == "auth_failures_slowed"
            continue
        assert r.status_code == 401, (method, path, r.status_code)
        assert r.json()["error"].startswith("a valid API key is needed")
        assert "Traceback" not in r.text


def test_keys_are_stored_hashed_and_revocable(service, tmp_path):
    app, client, a, _ = service
    key = a["Authorization"].split()[1]
    secret = key.split("_", 2)[2]
    assert secret.encode() not in (tmp_path / "ledger.sqlite").read_bytes()
    assert _privatize(client, a, ["hello there"]).status_code == 200
    assert app.state.keys.revoke(key)
    r = _privatize(client, a, ["hello there"])
    assert r.status_code == 401
    assert app.state.ledger.spent("request:x", owner="clinic-a").records == 0


def test_a_refused_request_charges_nothing(service):
    app, client, a, _ = service
    r = client.post("/v1/privatize", headers={"Authorization": "Bearer bad"},
                    json={"texts": [TEXT], "units": ["alice"]})
    assert r.status_code == 401
    assert app.state.ledger.spent("alice", owner="clinic-a").records == 0


def test_privatize_returns_texts_reports_and_spans_covering_the_output(service):
    app, client, a, _ = service
    r = _privatize(client, a, [TEXT, "Call 555-1234 now!"], units=["alice", "bob"])
    assert r.status_code == 200, r.text
    for res in r.json()["results"]:
        text, spans = res["text"], res["spans"]
        assert res["report"]["tokens_total"] > 0
        # sorted, disjoint, inside the text, and every non-space character in one span
        covered = [False] * len(text)
        for prev, s in zip([None, *spans[:-1]], spans, strict=True):
            assert 0 <= s["start"] < s["end"] <= len(text)
            assert prev is None or prev["end"] <= s["start"]
            covered[s["start"]:s["end"]] = [True] * (s["end"] - s["start"])
        assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))
        kinds = {s["kind"] for s in spans}
        assert "privatized" in kinds and "punctuation" in kinds
        assert all(s["reason"] for s in spans)
    spent = app.state.ledger.spent("alice", owner="clinic-a", dataset="default")
    assert spent.records == 1
    assert spent.epsilon_basic == pytest.approx(
        r.json()["results"][0]["report"]["document_epsilon"])


def test_budget_withholds_and_does_not_charge_what_it_withholds(service):
    app, client, a, _ = service
    assert client.post("/v1/budgets", headers=a,
                       json={"dataset": "notes", "epsilon": 25}).status_code == 200
    first = _privatize(client, a, [TEXT], units=["alice"], dataset="notes").json()
    cost = first["results"][0]["report"]["document_epsilon"]
    assert cost < 25
    second = _privatize(client, a, [TEXT, "Bob is fine."], units=["alice", "bob"],
                        dataset="notes").json()["results"]
    assert second[0]["withheld"] and second[0]["text"] is None
    assert "budget" in second[0]["reason"]
    assert not second[1]["withheld"]
    spent = app.state.ledger.spent("alice", owner="clinic-a", dataset="notes")
    assert spent.epsilon_basic == pytest.approx(cost) and spent.records == 1
    budget = client.get("/v1/units/alice/budget?dataset=notes", headers=a).json()
    assert budget["remaining_epsilon"] == pytest.approx(25 - cost)


def test_owners_are_isolated(service):
    app, client, a, b = service
    assert _privatize(client, a, [TEXT], units=["alice"]).status_code == 200
    assert client.get("/v1/units/alice/budget", headers=a).status_code == 200
    assert client.get("/v1/units/alice/budget", headers=b).status_code == 404
    up = client.post("/v1/jobs", headers=a, files={"file": ("n.jsonl", b'{"text": "hi Bob"}\n')},
                     data={"params": json.dumps({"epsilon": 2})})
    assert up.status_code == 201, up.text
    job = _wait(client, a, up.json()["id"])
    assert job["state"] == "done"
    for path in (f"/v1/jobs/{job['id']}", f"/v1/jobs/{job['id']}/output",
                 f"/v1/jobs/{job['id']}/report"):
        assert client.get(path, headers=b).status_code == 404
        assert client.get(path, headers=a).status_code == 200
    assert client.get("/v1/jobs", headers=b).json() == []


@pytest.mark.parametrize("limit,body", [
    ("max_texts", {"texts": ["a"] * 9}),
    ("max_chars", {"texts": ["a" * 2001]}),
])
def test_limits_are_4xx_naming_the_limit(service, limit, body):
    _, client, a, _ = service
    r = client.post("/v1/privatize", headers=a, json={"mechanism": "custext",
                                                     "params": {"epsilon": 2}, **body})
    assert r.status_code == 413 and r.json()["limit"] == limit


def test_body_size_limit(service):
    _, client, a, _ = service
    r = client.post("/v1/privatize", headers={**a, "Content-Type": "application/json"},
                    content=b'{"texts": ["' + b"a" * 300_000 + b'"]}')
    assert r.status_code == 413 and r.json()["limit"] == "max_body_bytes"


def test_rate_limit(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d",
                              limits=Limits(rate_per_second=0.01, rate_burst=3)))
    client = TestClient(app)
    h = {"Authorization": f"Bearer {app.state.keys.create('x')}"}
    codes = [client.get("/v1/mechanisms", headers=h).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    assert client.get("/v1/mechanisms", headers=h).json()["limit"] == "rate_per_second"


def test_concurrent_jobs_per_owner(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d",
                              limits=Limits(max_jobs_per_owner=0)))
    client = TestClient(app)
    h = {"Authorization": f"Bearer {app.state.keys.create('x')}"}
    r = client.post("/v1/jobs", headers=h, files={"file": ("a.jsonl", b'{"text": "hi"}\n')})
    assert r.status_code == 429 and r.json()["limit"] == "max_jobs_per_owner"


def test_bad_requests_are_one_line_json_errors(service):
    _, client, a, _ = service
    for body in ({"texts": []}, {"texts": ["x"], "mechanism": "nope"},
                 {"texts": ["x"], "params": {"epsilon": -1}},
                 {"texts": ["x"], "params": {"space": "/etc/passwd"}},
                 {"texts": ["x"], "units": ["a", "b"]}):
        r = client.post("/v1/privatize", headers=a, json=body)
        assert 400 <= r.status_code < 500, (body, r.status_code)
        assert "\n" not in r.json()["error"] and "Traceback" not in r.text


def test_job_file_names_cannot_escape_the_job_directory(service, tmp_path):
    _, client, a, _ = service
    up = client.post("/v1/jobs", headers=a,
                     files={"file": ("../../../../escape.jsonl", b'{"text": "hi Bob"}\n')},
                     data={"params": json.dumps({"epsilon": 2})})
    assert up.status_code == 201
    _wait(client, a, up.json()["id"])
    assert not list(tmp_path.rglob("escape.jsonl"))
    job_dir = tmp_path / "data" / "jobs" / up.json()["id"]
    assert (job_dir / f"{up.json()['id']}.jsonl").is_file()  # a name of its own
    assert client.get("/v1/jobs/..%2F..%2Fledger/output", headers=a).status_code == 404


def test_csv_job_with_units_and_a_budget(service):
    app, client, a, _ = service
    client.post("/v1/budgets", headers=a, json={"dataset": "d", "epsilon": 15})
    rows = "note,author\n" + "".join(f'"Alice was seen in Boston today {i}",alice\n'
                                     for i in range(3)) + '"Bob went home",bob\n'
    up = client.post("/v1/jobs", headers=a, files={"file": ("notes.csv", rows.encode())},
                     data={"fields": "note", "unit_field": "author", "dataset": "d",
                           "params": json.dumps({"epsilon": 2})})  # the person: not output
    assert up.status_code == 201, up.text
    job = _wait(client, a, up.json()["id"])
    assert job["state"] == "done", job
    out = client.get(f"/v1/jobs/{job['id']}/output", headers=a).text.splitlines()
    rejects = client.get(f"/v1/jobs/{job['id']}/rejects", headers=a).text.splitlines()
    assert out[0] == "note"  # the unit field is dropped unless kept or hashed (issue 31)
    assert len(out) - 1 + len(rejects) == 4  # every record released or withheld
    assert job["released"] == len(out) - 1 and job["withheld"] == len(rejects)
    assert job["withheld"] >= 1  # alice: 7 words * 2 = 14 per note, budget 15
    spent = app.state.ledger.spent("alice", owner="clinic-a", dataset="d")
    assert spent.epsilon_basic <= 15 and spent.pending == 0


def test_real_server_on_loopback(tmp_path):
    import httpx
    from service_helpers import Server

    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    ledger = tmp_path / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("clinic")
    server = Server(ledger, tmp_path / "d").start()
    try:
        h = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{server.url}/v1/mechanisms").status_code == 401
        r = httpx.post(f"{server.url}/v1/privatize", headers=h, timeout=60,
                       json={"texts": [TEXT], "params": {"epsilon": 2}, "units": ["alice"]})
        assert r.status_code == 200 and r.json()["results"][0]["text"]
        assert httpx.get(f"{server.url}/readyz").json()["ready"] is True
        assert httpx.get(f"{server.url}/").text.startswith("<!doctype html>")
        assert httpx.get(f"{server.url}/openapi.json").json()["info"]["title"] == "dptext"
    finally:
        server.stop()


def _charged(app, owner="clinic-a"):
    """Every charge of ``owner``'s releases: (status, count)."""
    ledger = app.state.ledger
    mine = {r["release_id"] for r in ledger.releases() if r["owner"] == owner}
    return Counter(c["status"] for c in ledger.charges() if c["release_id"] in mine)


@pytest.mark.parametrize("field", ["texts", "units"])
def test_a_lone_surrogate_is_refused_before_anything_is_charged(service, field):
    # issue 32 item 3: "Alice \ud800 Bob" was privatized, reserved and committed, then the
    # response failed to serialize (500, the ledger said 1 record released)
    app, client, a, _ = service
    texts, units = ['"Alice \\ud800 Bob"'], ['"alice"']
    if field == "units":
        texts, units = ['"Alice and Bob"'], ['"al\\udc00ice"']
    raw = (f'{{"texts": [{texts[0]}], "units": [{units[0]}], "mechanism": "custext", '
           f'"params": {{"epsilon": 4}}}}').encode()
    r = client.post("/v1/privatize", headers={**a, "Content-Type": "application/json"},
                    content=raw)
    assert r.status_code == 400, r.text
    assert f"{field}[0]" in r.json()["error"] and "surrogate" in r.json()["error"]
    assert _charged(app) == Counter()


def test_a_late_failure_commits_no_charge(service, monkeypatch):
    # anything failing while the response is built happens before the ledger is touched
    import dptext.service.app as service_app

    app, client, a, _ = service

    def broken(*args, **kw):
        raise RuntimeError("spans failed")

    monkeypatch.setattr(service_app, "spans", broken)
    client = TestClient(app, raise_server_exceptions=False)
    r = _privatize(client, a, [TEXT], units=["alice"])
    assert r.status_code == 500 and r.json() == {"error": "internal error"}
    assert _charged(app) == Counter()
    assert app.state.ledger.spent("alice", owner="clinic-a").records == 0


def _count_scrypt(monkeypatch):
    import dptext.service.keys as keys_module

    calls = []
    real = keys_module._hash

    def counted(secret, salt):
        calls.append(1)
        return real(secret, salt)

    monkeypatch.setattr(keys_module, "_hash", counted)
    return calls


def test_failed_keys_refuse_the_failing_client_never_the_right_key(tmp_path, monkeypatch):
    # issue 32 item 5: a wrong secret for a known id cost one scrypt per request, never a 429;
    # issue 47 N2: 20 wrong secrets for a key id then locked its owner out (429 for the right
    # key, from anywhere, in every process that had not verified it yet)
    settings = Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d",
                        limits=Limits(auth_failure_burst=3, auth_failure_rate=0.001))
    good = create_app(settings).state.keys.create("x")
    app = create_app(settings)  # a fresh process: it has verified no key yet
    kid = good.split("_")[1]
    wrong = f"dpt_{kid}_" + "y" * 43
    here, there = (TestClient(app, client=(ip, 50000)) for ip in ("10.0.0.1", "10.0.0.2"))
    calls = _count_scrypt(monkeypatch)
    codes = [there.get("/v1/mechanisms", headers={"Authorization": f"Bearer {wrong}"}
                       ).status_code for _ in range(5)]
    assert codes == [401, 401, 401, 429, 429] and calls == []  # no scrypt: a keyed SHA-256
    r = there.get("/v1/mechanisms", headers={"Authorization": f"Bearer {wrong}"})
    assert r.status_code == 429 and r.json()["limit"] == "auth_failures_per_client"
    # the right key gets in from the failing client itself and from anywhere else
    for client in (there, here):
        assert client.get("/v1/mechanisms", headers={"Authorization": f"Bearer {good}"}
                          ).status_code == 200
    # no lock-out per key id alone nor per address alone: another address trying the same
    # id, and the failing address trying another id, are judged on their own failures
    assert here.get("/v1/mechanisms", headers={"Authorization": f"Bearer {wrong}"}
                    ).status_code == 401
    other = "dpt_" + "0" * 16 + "_" + "y" * 43
    assert there.get("/v1/mechanisms", headers={"Authorization": f"Bearer {other}"}
                     ).status_code == 401
    assert calls == []
    # a revoked key is refused, limited or not
    app.state.keys.revoke(good)
    for client in (there, here):
        assert client.get("/v1/mechanisms", headers={"Authorization": f"Bearer {good}"}
                          ).status_code in (401, 429)


def test_unknown_id_and_wrong_secret_cost_the_same_check(tmp_path, monkeypatch):
    # the time of a refusal must not say whether a key id exists: each costs one keyed hash
    from dptext.service import keys as keys_module

    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d"))
    keys = app.state.keys
    good, revoked = keys.create("x"), keys.create("y")
    keys.revoke(revoked)
    scrypt = _count_scrypt(monkeypatch)
    calls = []
    check = keys_module._check
    monkeypatch.setattr(keys_module, "_check", lambda *a: calls.append(a) or check(*a))
    for key in ("dpt_" + "0" * 16 + "_" + "y" * 43,        # unknown id
                f"dpt_{good.split('_')[1]}_" + "y" * 43,    # known id, wrong secret
                revoked):                                   # revoked
        before = len(calls)
        assert keys.authenticate(key) is None
        assert len(calls) == before + 1, key
    assert scrypt == [] and keys.authenticate(good) == "x"


def test_a_key_made_before_the_fast_check_is_verified_by_scrypt_once(tmp_path, monkeypatch):
    # keys stored by an earlier version have only their scrypt hash: the first success
    # stores the check, so a restart (or another worker) needs no scrypt for them

    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d"))
    keys = app.state.keys
    good = keys.create("x")
    with keys._write():
        keys._backend.execute("DELETE FROM service_key_checks")
    assert keys.authenticate(good, verify=False) is None  # unverified: no scrypt allowed
    scrypt = _count_scrypt(monkeypatch)
    assert keys.authenticate(good) == "x" and len(scrypt) == 1
    again = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d"))
    assert again.state.keys.authenticate(good, verify=False) == "x" and len(scrypt) == 1
    # a wrong secret: one character of the middle changed (the last one carries only 4 of its
    # 6 bits in a 256-bit secret, so changing it may leave the secret's bytes as they were)
    wrong = good[:-8] + ("A" if good[-8] != "A" else "B") + good[-7:]
    assert again.state.keys.authenticate(wrong) is None


def test_a_privatize_charge_left_pending_is_listed_and_voidable(service, monkeypatch,
                                                                capsys):
    # issue 32 item 6: the server dies (here: the commit fails) between the reserve and the
    # commit - nothing was sent (the commit comes first), the charge stays pending; the
    # operator lists it and voids it, logged in the ledger
    from dptext.cli import main
    from dptext.errors import DPTextError

    app, _, a, _ = service
    ledger = app.state.ledger

    def dies(*args, **kw):
        raise RuntimeError("killed")

    monkeypatch.setattr(ledger, "commit", dies)
    client = TestClient(app, raise_server_exceptions=False)
    assert _privatize(client, a, [TEXT], units=["alice"]).status_code == 500
    monkeypatch.undo()
    assert _charged(app) == Counter({"pending": 1})
    where = ledger.where
    capsys.readouterr()
    assert main(["ledger", "pending", "--ledger", where, "--json"]) == 0
    (row,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert row["owner"] == "clinic-a" and row["count"] == 1
    assert main(["ledger", "void", row["release_id"], "--ledger", where,
                 "--service-privatize", "--reason", "server killed mid-request"]) == 0
    assert "voided 1 pending charges" in capsys.readouterr().out
    assert _charged(app) == Counter({"voided": 1})
    assert ledger.spent("alice", owner="clinic-a").epsilon_basic == 0.0
    ledger.verify()
    # only a /v1/privatize release: a job's (or any other) release needs its own evidence
    other = ledger.open_release(owner="clinic-a", dataset="default", mechanism="custext",
                                params={})
    from dptext.service.reconcile import void_unsent

    with pytest.raises(DPTextError, match="not a /v1/privatize release"):
        void_unsent(ledger, other, reason="x")
