"""The dry run (``sanitize --estimate``, ``POST /v1/estimate``): per-record costs equal what a
real run charges, the withheld counts equal what the ledger then withholds, and nothing is
privatized, charged or written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dptext
from dptext.corpus.estimate import CostEstimate

WORDS = [f"w{i:02d}" for i in range(40)]


SPACE = dict(words=WORDS, seed=7, dim=6, float32=True, name="tiny", metric="euclidean",
             geometry=16)  # the space fixture (conftest.py)


TEXTS = ["w01 w02 w03", " ".join(WORDS[:12]), "w05, w06! unknownword", "", " ".join(WORDS)]


@pytest.mark.parametrize("name,params", [("custext", {"k": 5, "epsilon": 1.5}),
                                         ("santext", {"epsilon": 3}),
                                         ("laplace", {"epsilon": 4}),
                                         ("custext", {"k": 5, "document_epsilon": 9})])
def test_estimated_costs_are_what_a_real_run_charges(space, name, params):
    m = dptext.mechanism(name, space=space, **params)
    est = CostEstimate(m)
    est.add_texts(TEXTS)
    s = est.summary()
    real = [sum(e.total_epsilon for e in r.report.privacy_events())
            for r in m.privatize_batch(TEXTS, rng=0)]
    assert s["records"] == len(TEXTS) and s["charged"] is False
    assert s["record_epsilon"]["max"] == pytest.approx(max(real))
    assert s["record_epsilon"]["min"] == pytest.approx(min(real))
    assert s["record_epsilon_total"] == pytest.approx(sum(real))
    if "document_epsilon" in params:
        assert max(real) <= 9 and s["per_token_epsilon"]["max"] == 9 / 2  # "w05, w06": 2
    else:
        example = s["document_epsilon_example"]
        assert example["document_epsilon"] == s["record_epsilon"]["median"]


def test_the_budget_rule_is_the_ledgers(space):
    m = dptext.mechanism("custext", space=space, k=5, epsilon=1)
    est = CostEstimate(m, budget=10, unit_field="who")
    # costs 3, 12, 3, 40, 3 for one person: 3 fits, 12 passes 10 (withheld), 3 fits (6),
    # 40 withheld, 3 fits (9)
    texts = ["w01 w02 w03", " ".join(WORDS[:12]), "w04 w05 w06", " ".join(WORDS), "w07 w08 w09"]
    est.add([texts], ["ann"] * 5)
    s = est.summary()
    assert s["records_withheld"] == 2
    assert s["unit_epsilon"]["max"] == 9
    assert s["units_with_withheld_records"] == 1 and s["units_fully_withheld"] == 0


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache")}
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_estimate_matches_the_ledger_and_writes_nothing(tmp_path, space):
    space.save(tmp_path / "space.npz")
    rows = []
    for i, who in enumerate(["a", "b", "a", "c", "a", "b", "a"]):
        rows.append({"who": who, "text": " ".join(WORDS[: 3 + 4 * i])})
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    common = ["sanitize", "-m", "custext", "-p", "k=5", "-e", "1", "--space",
              str(tmp_path / "space.npz"), "--no-progress", "-i", "in.jsonl",
              "--user-field", "who", "--budget", "30"]
    before = sorted(p.name for p in tmp_path.iterdir())
    r = _cli(tmp_path, *common, "--estimate", "-o", "out.jsonl")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert s["records"] == 7 and s["units"] == 3
    assert s["record_epsilon"]["min"] == 3 and s["record_epsilon"]["max"] == 27
    assert "would withhold" in r.stderr
    real = _cli(tmp_path, *common, "-o", "out.jsonl", "--ledger", str(tmp_path / "l.sqlite"),
                "--owner", "o", "--dataset", "d", "--on-error", "skip")
    assert real.returncode == 0, real.stderr
    report = json.loads((tmp_path / "out.jsonl.report.json").read_text("utf-8"))
    withheld = report["counts"]["records_withheld"] if "counts" in report else None
    if withheld is None:
        withheld = sum(1 for _ in (tmp_path / "out.jsonl.rejects.jsonl").open())
    assert withheld == s["records_withheld"] > 0
    written = sum(1 for _ in (tmp_path / "out.jsonl").open())
    assert written == 7 - s["records_withheld"]


def test_api_estimate_charges_nothing(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from dptext.service.app import Settings, create_app

    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d"))
    client = TestClient(app)
    h = {"Authorization": f"Bearer {app.state.keys.create('o')}"}
    assert client.post("/v1/budgets", headers=h,
                       json={"dataset": "n", "epsilon": 10}).status_code == 200
    body = {"texts": ["Alice met Bob in Paris.", "A longer text about the river and the city "
                      "and the dog that lived there."], "mechanism": "custext",
            "params": {"epsilon": 1}, "units": ["alice", "alice"], "dataset": "n"}
    r = client.post("/v1/estimate", headers=h, json=body)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["budget"] == 10 and s["charged"] is False  # the dataset budget, from the ledger
    assert s["records"] == 2 and s["records_withheld"] == 1  # 5 fits in 10, then ~14 does not
    assert s["record_epsilon"]["min"] == 5
    spent = client.get("/v1/units/alice/budget?dataset=n", headers=h)
    assert spent.status_code == 404  # no charge, no unit
    explicit = client.post("/v1/estimate", headers=h, json={**body, "budget": 100}).json()
    assert explicit["records_withheld"] == 0 and explicit["budget"] == 100
    doc = client.post("/v1/estimate", headers=h,
                      json={**body, "params": {"document_epsilon": 4}}).json()
    assert doc["record_epsilon"]["max"] <= 4 and doc["per_token_epsilon"]["max"] == 4 / 5
