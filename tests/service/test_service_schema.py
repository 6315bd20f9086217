"""Schemathesis against the service's own OpenAPI schema: no generated request gets a 500
(with and without a valid key), and every response is JSON where the schema says so."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")

from hypothesis import HealthCheck, settings  # noqa: E402

from dptext.service.app import Settings, create_app  # noqa: E402
from dptext.service.limits import Limits  # noqa: E402

_DIR = Path(tempfile.mkdtemp(prefix="dptext-schema-"))
APP = create_app(Settings(ledger=str(_DIR / "ledger.sqlite"), data_dir=_DIR / "data",
                          limits=Limits(rate_burst=100_000, rate_per_second=100_000.0)))
KEY = APP.state.keys.create("fuzzer")
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_with_a_key(case):
    response = case.call(headers={"Authorization": f"Bearer {KEY}"})
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    assert "Traceback" not in response.text


@schema.parametrize()
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_and_no_data_without_a_key(case):
    response = case.call()
    assert response.status_code < 500
    if case.path.startswith("/v1"):  # refused before anything is read (405: no such method)
        assert response.status_code in (401, 405), (case.method, case.path)
