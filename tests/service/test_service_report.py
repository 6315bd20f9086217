"""The service's file jobs as a reviewer and a client see them (issue 45 and issue 47 N7): no
server path in any response, the release report beside every job's output."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from service_helpers import wait_for_job  # noqa: E402

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


@pytest.fixture()
def service(tmp_path):
    app = create_app(Settings(ledger=str(tmp_path / "ledger.sqlite"),
                              data_dir=tmp_path / "data",
                              limits=Limits(rate_burst=1000, rate_per_second=1000.0,
                                            max_upload_bytes=200_000, max_jobs_per_owner=4)))
    client = TestClient(app)
    a = app.state.keys.create("clinic-a")
    return app, client, {"Authorization": f"Bearer {a}"}, tmp_path


@pytest.mark.parametrize("name, data", [
    ("notes.csv", "id,note,note\n1,hello,there\n"),          # a duplicate CSV header
    ("notes.csv", "id,note\n1,\"unterminated\n"),            # a broken CSV record
    ("notes.jsonl", '{"note": "a", "note": "b"}\n'),         # a duplicate JSON key
    ("notes.jsonl", '{"note": \n'),                          # broken JSON
])
def test_no_server_path_in_an_upload_error(service, name, data):
    app, client, a, root = service
    r = client.post("/v1/jobs", headers=a, files={"file": (name, data.encode())},
                    data={"params": json.dumps({"epsilon": 2}), "fields": "note",
                          "keep": "id"})
    body = r.text
    assert r.status_code in (400, 422) or r.status_code == 200, body
    for text in (body, *(json.dumps(j.public()) for j in app.state.jobs.jobs("clinic-a"))):
        assert str(root) not in text and "/data/" not in text, text
        assert str(root.resolve()) not in text


NOTES = ("patient_id,note,doctor\n"
         "p1,\"Marisol Quenby seen <script>alert(1)</script>, call 555-123-4567.\",Dr. Jones\n"
         "p2,The nurse went home early,Dr. Smith\n")


def test_a_file_job_writes_the_release_report_beside_its_output(service):
    app, client, a, _ = service
    r = client.post("/v1/jobs", headers=a, files={"file": ("notes.csv", NOTES.encode())},
                    data={"params": json.dumps({"epsilon": 2}), "fields": "note,doctor",
                          "hash": "patient_id", "unit_field": "patient_id",
                          "entities": json.dumps({"entities": "PHI", "detector": "spacy"})})
    assert r.status_code == 201, r.text
    job = wait_for_job(client, a, r.json()["id"], 300)
    assert job["state"] == "done", job
    page = client.get(f"/v1/jobs/{job['id']}/html", headers=a)
    assert page.status_code == 200
    text = page.text
    for section in ("What was replaced", "Withheld records", "Leak check", "Columns",
                    "The guarantee and its limits", "Ledger charges"):
        assert section in text
    assert "<script>" not in text and "Marisol" not in text and "Quenby" not in text
    assert "555-123-4567" not in text and "p1" not in text.replace("p1,", "")
    assert "PERSON" in text and "keyed pseudonyms" in text
    assert client.get(f"/v1/jobs/{job['id']}/report", headers=a).json()["records"] == 2


def test_the_report_escapes_everything():
    from dptext.corpus.report_html import render

    evil = "<img src=x onerror=alert(1)>"
    page = render({"mechanism": evil, "records": 1, "records_in": 2,
                   "spans_by_type": {evil: {"spans": 1, "treatment": evil}},
                   "columns": {"dropped": [evil]}},
                  rejects=[{"record": 2, "reason": evil}], examples=[evil],
                  leak_check={"ran": True, "leaks": 0, "compared": 1,
                              "by_category": {evil: 1}})
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
