"""The service's file jobs as a reviewer and a client see them (issue 45 and issue 47 N7): no
server path in any response, the release report beside every job's output."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402


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
