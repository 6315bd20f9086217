"""The service's file jobs and texts with every column accounted for and entity mode
(issue 31): the columns of an upload, the column rule with one-line 4xx errors, pseudonyms
per owner, the entity parameters validated, the plain text report and the leak check on a
job, the person's budget - in process (TestClient) and against a real server."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from service_helpers import wait_for_job

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

NOTES = ("patient_id,note,doctor\n"
         "p1,Anna was seen today for a cough,Dr Jones\n"
         "p2,The nurse went home early,Dr Smith\n"
         "p1,Anna came back on Monday,Dr Jones\n")
NOTE = "Alice Smith met Dr. Jones in Boston on 3 May, call 555-123-4567."


@pytest.fixture()
def service(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "ledger.sqlite"),
                              data_dir=tmp_path / "data",
                              limits=Limits(rate_burst=1000, rate_per_second=1000.0,
                                            max_upload_bytes=200_000, max_jobs_per_owner=4)))
    client = TestClient(app)
    a, b = app.state.keys.create("clinic-a"), app.state.keys.create("clinic-b")
    return app, client, {"Authorization": f"Bearer {a}"}, {"Authorization": f"Bearer {b}"}


def _wait(client, headers, job_id, timeout=300):
    return wait_for_job(client, headers, job_id, timeout)


def _job(client, headers, data, name="notes.csv", **form):
    form = {"params": json.dumps({"epsilon": 2}), **form}
    return client.post("/v1/jobs", headers=headers, files={"file": (name, data.encode())},
                       data=form)


def test_the_columns_of_an_upload(service, tmp_path):
    _, client, a, _ = service
    r = client.post("/v1/columns", headers=a, files={"file": ("n.csv", NOTES.encode())})
    assert r.status_code == 200, r.text
    assert r.json() == {"format": "csv", "records": 3, "columns": [
        {"name": "patient_id", "example": "p1"},
        {"name": "note", "example": "Anna was seen today for a cough"},
        {"name": "doctor", "example": "Dr Jones"}]}
    jsonl = '{"id": 1, "text": "hi"}\n{"id": 2, "text": "yo", "extra": true}\n'
    r = client.post("/v1/columns", headers=a, files={"file": ("n.ndjson", jsonl.encode())})
    assert r.json()["columns"] == [{"name": "id", "example": "1"},
                                   {"name": "text", "example": "hi"},
                                   {"name": "extra", "example": None}]
    bad = client.post("/v1/columns", headers=a, files={"file": ("n.txt", b"hello\n")})
    assert bad.status_code == 400 and "\n" not in bad.json()["error"]
    assert not [p for p in (tmp_path / "data" / "jobs").iterdir()]  # nothing kept


def test_an_uncovered_column_is_a_one_line_400_before_any_job(service, tmp_path):
    _, client, a, _ = service
    r = _job(client, a, NOTES, fields="note")
    assert r.status_code == 400
    assert r.json()["error"] == (
        "notes.csv: columns patient_id,doctor are not covered: name each with --field, "
        "--keep, --drop or --hash (or --keep-other to release the rest verbatim)")
    r = _job(client, a, NOTES, fields="note", keep="doctor,note", drop="patient_id")
    assert r.status_code == 400 and "'note' given to both --field and --keep" in r.text
    r = _job(client, a, NOTES, fields="note", keep="doctor", drop="patient_id,ward")
    assert r.status_code == 400 and "no column ward" in r.text
    assert client.get("/v1/jobs", headers=a).json() == []
    assert not list((tmp_path / "data" / "jobs").iterdir())


def test_kept_columns_are_reported_and_pseudonyms_are_per_owner(service):
    app, client, a, b = service
    out = {}
    for who, h in (("a1", a), ("a2", a), ("b", b)):
        r = _job(client, h, NOTES, fields="note", keep="doctor", hash="patient_id")
        assert r.status_code == 201, r.text
        job = _wait(client, h, r.json()["id"])
        assert job["state"] == "done", job
        out[who] = client.get(f"/v1/jobs/{job['id']}/output", headers=h).text.splitlines()
        assert job["columns"] == {"privatized": ["note"],
                                  "released_verbatim_not_protected": ["doctor"],
                                  "dropped": [], "hashed": ["patient_id"], "keep_other": False}
        assert "doctor released verbatim, NOT protected" in job["summary"]
        assert "patient_id replaced by keyed pseudonyms" in job["summary"]
        assert job["summary"].startswith("Privacy report (custext)")
        assert job["leak_check"] is None  # whole-text mode: no entity check
    ids = {who: [row.split(",")[0] for row in rows[1:]] for who, rows in out.items()}
    assert out["a1"][0] == "patient_id,note,doctor"
    assert [row.split(",")[-1] for row in out["a1"][1:]] == ["Dr Jones", "Dr Smith", "Dr Jones"]
    assert ids["a1"] == ids["a2"]  # stable across two jobs of one owner
    assert ids["a1"][0] == ids["a1"][2] != ids["a1"][1]  # one person, one pseudonym
    assert not set(ids["a1"]) & set(ids["b"])  # another owner: other pseudonyms
    assert all(p.startswith("p") and len(p) == 17 and p not in ("p1", "p2") for p in ids["a1"])


def test_the_unit_field_is_dropped_unless_named_and_keep_other_is_explicit(service):
    _, client, a, _ = service
    r = _job(client, a, NOTES, fields="note", unit_field="patient_id", keep_other="true")
    assert r.status_code == 201, r.text
    job = _wait(client, a, r.json()["id"])
    rows = client.get(f"/v1/jobs/{job['id']}/output", headers=a).text.splitlines()
    assert rows[0] == "note,doctor"
    assert job["columns"]["dropped"] == ["patient_id"]
    assert job["columns"]["released_verbatim_not_protected"] == ["doctor"]
    assert job["columns"]["keep_other"] is True


@pytest.mark.parametrize("entities, message", [
    ({"entities": "PERSON", "detector": "nope"},
     "entities.detector must be one of spacy, presidio, both, spacy+learned, "
     "presidio+learned, both+learned, got 'nope'"),
    ({"entities": []}, "entities.entities must name the categories"),
    ({"entities": "PERSON", "colour": 1}, "unknown entity parameter 'colour'"),
    # /v1/privatize: "is for file jobs"; a job without a unit_field: "needs a unit_field"
    ({"entities": "PERSON", "consistent": "unit"}, "entities.consistent 'unit' "),
    ({"entities": "PERSON", "patterns": ["no equals sign"]}, "--pattern 'no equals sign'"),
    ({"entities": "NOT_A_CATEGORY"}, "NOT_A_CATEGORY"),
    ({"entities": "PERSON", "check": "yes"}, "entities.check must be true or false"),
])
def test_entity_parameters_are_checked_in_one_line(service, entities, message):
    app, client, a, _ = service
    for r in (client.post("/v1/privatize", headers=a, json={
                  "texts": [NOTE], "params": {"epsilon": 2}, "entities": entities}),
              _job(client, a, NOTES, fields="note", keep="doctor", drop="patient_id",
                   entities=json.dumps(entities))):
        assert r.status_code == 400, r.text
        assert message in r.json()["error"] and "\n" not in r.json()["error"]
    assert not list(app.state.ledger.charges())


def test_a_file_job_with_a_unit_field_draws_once_per_entity_per_person(service):
    """consistent "unit" on a job: every record of a person shows the same replacement of an
    entity, drawn and charged once per person (names drawn by CusText: a charge per draw);
    the same job with "none" charges every record's draw."""
    app, client, a, _ = service
    data = "patient_id,note\n" + "".join(f"{p},Alice Smith met the nurse in Boston today.\n"
                                         for p in ("p1", "p1", "p2", "p1"))
    spent, notes = {}, {}
    for consistent in ("unit", "none"):
        r = _job(client, a, data, fields="note", unit_field="patient_id", dataset=consistent,
                 entities=json.dumps({"entities": "PERSON,GPE", "consistent": consistent,
                                      "name_policy": "mechanism"}))
        assert r.status_code == 201, r.text
        job = _wait(client, a, r.json()["id"])
        assert job["state"] == "done", job
        notes[consistent] = client.get(f"/v1/jobs/{job['id']}/output",
                                       headers=a).text.splitlines()[1:]
        spent[consistent] = {u: app.state.ledger.spent(u, owner="clinic-a", dataset=consistent,
                                                       pld=False).epsilon_basic
                             for u in ("p1", "p2")}
    p1 = [notes["unit"][i] for i in (0, 1, 3)]
    # one draw for the person (CusText may draw a word as itself: no assertion on the words)
    assert len(set(p1)) == 1
    assert spent["unit"]["p1"] == spent["unit"]["p2"] > 0  # one draw each, charged once
    assert spent["none"]["p1"] == pytest.approx(3 * spent["none"]["p2"])
    assert spent["none"]["p2"] == spent["unit"]["p2"]


def test_an_entity_parameter_among_the_mechanisms_says_where_it_goes(service):
    _, client, a, _ = service
    r = client.post("/v1/privatize", headers=a,
                    json={"texts": [NOTE], "params": {"epsilon": 2, "detector": "spacy"}})
    assert r.status_code == 400
    assert r.json()["error"].startswith("unknown parameter 'detector' for mechanism 'custext': "
                                        "entity parameters go in \"entities\"")
    r = client.post("/v1/estimate", headers=a, json={"texts": [NOTE], "entities": {
        "entities": "PERSON"}})
    assert r.status_code == 400 and "does not cover entity mode" in r.text


def test_mechanisms_list_the_entity_parameters_and_the_declared_ranges(service):
    from dptext.mechanisms.registry import registered
    from dptext.service.entities import PARAMETERS

    _, client, a, _ = service
    listed = {m["name"]: m for m in client.get("/v1/mechanisms", headers=a).json()}
    for name, cls in registered().items():
        m = listed[name]
        assert m["typical_epsilon"] == cls.typical_epsilon.text
        assert m["typical_epsilon_spaces"] == {k: t.to_dict() for k, t in
                                               cls.typical_epsilon_spaces.items()}
        assert set(m["entity_parameters"]) == set(PARAMETERS)
    p = listed["custext"]["entity_parameters"]
    assert p["detector"]["choices"] == ["spacy", "presidio", "both", "spacy+learned",
                                        "presidio+learned", "both+learned"]
    assert p["residual"]["default"] == "protect" and "PERSON" in p["entities"]["groups"]["PHI"]


def test_privatize_in_entity_mode_marks_the_output_and_reports_the_budget(service):
    app, client, a, _ = service
    assert client.get("/v1/budgets/notes", headers=a).status_code == 404
    client.post("/v1/budgets", headers=a, json={"dataset": "notes", "epsilon": 100})
    assert client.get("/v1/budgets/notes", headers=a).json() == {
        "owner": "clinic-a", "dataset": "notes", "epsilon": 100.0, "delta": 0.0}
    r = client.post("/v1/privatize", headers=a, json={
        "texts": [NOTE, NOTE], "params": {"epsilon": 2}, "units": ["alice", "alice"],
        "dataset": "notes",
        "entities": {"entities": "PERSON,GPE,PHONE,DATE", "detector": "spacy",
                     "name_policy": "mechanism"}})  # names drawn by CusText: a charge
    assert r.status_code == 200, r.text
    body = r.json()
    for res in body["results"]:
        text = res["text"]
        # places: a public surrogate sharing no word with the input (the default word policy)
        assert not res["withheld"] and "555-123-4567" not in text and "Boston" not in text
        assert "[PHONE_NUMBER]" in text and " met " in text and ", call " in text
        covered = "".join(text[s["start"]:s["end"]] for s in res["spans"])
        assert covered == text  # every character in one span, in order
        marked = {s["category"]: text[s["start"]:s["end"]] for s in res["spans"]
                  if s["kind"] == "entity"}
        assert marked["PHONE_NUMBER"] == "[PHONE_NUMBER]" and marked["DATE"] == "[DATE]"
        assert "GPE" in marked and "PERSON" in marked
        assert all(s["kind"] in ("entity", "verbatim") for s in res["spans"])
        assert res["summary"].startswith("Privacy report (targeted:custext; detector spacy)")
    charged = sum(res["report"]["composed"]["epsilon_basic"] for res in body["results"])
    assert charged > 0
    spent = app.state.ledger.spent("alice", owner="clinic-a", dataset="notes", pld=False)
    assert body["budget"] == {"dataset": "notes", "units": {"alice": {
        "spent_epsilon": spent.epsilon_basic, "records": 2,
        "remaining_epsilon": pytest.approx(100 - charged)}}}
    assert spent.epsilon_basic == pytest.approx(charged)
    r = client.post("/v1/privatize", headers=a, json={"texts": ["Bob went home."],
                                                      "params": {"epsilon": 2}})
    assert r.json()["budget"] is None and r.json()["results"][0]["unit"] is None


def test_an_entity_job_against_a_real_server_reports_its_leak_check(tmp_path):
    import httpx
    from service_helpers import Server

    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    ledger = tmp_path / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("clinic")
    h = {"Authorization": f"Bearer {key}"}
    rows = [{"id": f"r{i}", "note": f"Alice Smith called 555-123-45{i:02d} from Boston "
                                    f"on Monday about her cough.", "ward": "B"}
            for i in range(6)]
    data = "".join(json.dumps(r) + "\n" for r in rows)
    # the job's CusText tables (epsilon 200 on the default space) fitted into the cache here
    # first, so that the server loads them as it does with a warm cache: the epsilon-free part
    # of a fit (the output sets, about 30 CPU-seconds) is in this process already where an
    # earlier test fitted CusText with a cold cache (this module's in-process jobs), while a
    # fresh server process would build it again
    import dptext

    dptext.mechanism("custext", epsilon=200).fit()
    server = Server(ledger, tmp_path / "d").start()
    try:
        cols = httpx.post(f"{server.url}/v1/columns", headers=h, timeout=60,
                          files={"file": ("notes.jsonl", data.encode())}).json()
        assert [c["name"] for c in cols["columns"]] == ["id", "note", "ward"]
        refused = httpx.post(f"{server.url}/v1/jobs", headers=h, timeout=60,
                             files={"file": ("notes.jsonl", data.encode())},
                             data={"fields": "note", "keep": "id"})
        assert refused.status_code == 400 and "columns ward are not covered" in refused.text
        # the request loads CusText's tables at epsilon 200 (fitted above) and spaCy
        r = httpx.post(f"{server.url}/v1/jobs", headers=h, timeout=600,
                       files={"file": ("notes.jsonl", data.encode())},
                       data={"fields": "note", "keep": "id", "drop": "ward",
                             "params": json.dumps({"epsilon": 200}),
                             "entities": json.dumps({"entities": "PERSON,GPE,PHONE,DATE",
                                                     "word_policy": "mechanism"})})
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            job = httpx.get(f"{server.url}/v1/jobs/{r.json()['id']}", headers=h).json()
            if job["state"] in ("done", "failed"):
                break
            time.sleep(0.2)
        out = httpx.get(f"{server.url}/v1/jobs/{job['id']}/output", headers=h).text
    finally:
        server.stop()
    assert job["state"] == "done", job
    released = [json.loads(line) for line in out.splitlines()]
    assert [set(r) for r in released] == [{"id", "note"}] * 6
    assert not any("555-123-45" in r["note"] for r in released)  # replaced whole
    leak = job["leak_check"]
    assert leak["ran"] and leak["records"] == 6 and leak["compared"] == 6
    assert leak["leaks"] == sum(leak["by_category"].values())
    # places privatized word by word by CusText (word_policy mechanism) at epsilon 200 come
    # back as themselves: the check finds every such record
    kept = [i for i, r in enumerate(released) if "Boston" in r["note"]]
    assert kept and set(kept) <= set(leak["leaking_records"])
    assert leak["by_category"]["GPE"] >= len(kept)
    assert job["entities"]["entities"] == ["PERSON", "GPE", "PHONE", "DATE"]
    assert job["entities"]["word_policy"] == "mechanism"
    assert "Privacy report (targeted:custext" in job["summary"]
    assert "id released verbatim, NOT protected; ward dropped" in job["summary"]
