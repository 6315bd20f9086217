"""The grid runner: files, resumability after an interruption, settings checks, the CLI."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dptext.errors import DPTextError
from dptext.evaluation.encoders import make_encoder
from dptext.evaluation.grid import GridConfig, cells_of, run_grid
from dptext.evaluation.store import CellStore

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Fitted tables of the tiny spaces go to a temporary cache, not the user's."""
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))


def _grid_words() -> list[str]:
    import wordfreq

    return [w for w in wordfreq.top_n_list("en", 400) if w.isalpha()][:250]


SPACE = dict(words=_grid_words, seed=7, dim=6, name="grid-tiny",
             geometry=16)  # the space fixture (conftest.py)


def config(**overrides) -> GridConfig:
    base = dict(mechanisms=["custext"], epsilons={"custext": [2.0]},
                metrics=["utility", "inversion", "deniability", "cost"], n_train=40, n_test=30,
                deniability_words=8, deniability_runs=20, inversion_samples=150,
                bayes_samples=40, encoder="hashing")
    base.update(overrides)
    return GridConfig(**base)


class Stop(Exception):
    pass


def _values(records):
    # timings differ between runs; everything else is seeded per cell
    skip = ("seconds", "tokens_per_s")
    return {r["key"]: {k: v for k, v in r["values"].items() if not any(s in k for s in skip)}
            for r in records}


@pytest.fixture(scope="module")
def full(space, tmp_path_factory) -> tuple[Path, list]:
    """One uninterrupted tiny grid: 2 baselines + custext at one epsilon, 4 metrics."""
    out = tmp_path_factory.mktemp("full")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPTEXT_CACHE", str(out / "cache"))
        records = run_grid(config(), out, space=space, encoder=make_encoder("hashing"),
                           progress=False)
    return out, records


def test_grid_writes_results_plots_and_report(full):
    tmp_path, records = full
    assert len(records) == len(cells_of(config())) == 3 * 4
    for name in ("results.json", "results.csv", "report.md", "config.json",
                 "utility_vs_epsilon.png", "attack_vs_epsilon.png", "sw_vs_nw.png",
                 "utility_vs_privacy.png"):
        assert (tmp_path / name).is_file(), name
    report = (tmp_path / "report.md").read_text()
    assert "noiseless" in report and "random" in report and "![sw_vs_nw](sw_vs_nw.png)" in report
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    acc = [r for r in rows if r["name"] == "accuracy" and r["mechanism"] == "noiseless"]
    assert len(acc) == 1 and 0.0 <= float(acc[0]["value"]) <= 1.0
    by_key = {r["key"]: r for r in records}
    assert by_key["noiseless|-|inversion"]["values"]["nn_top1"] == 1.0
    assert by_key["noiseless|-|deniability"]["values"]["N_w_fraction"] == 1.0


def test_interrupted_grid_resumes_to_the_same_results_without_duplicates(tmp_path, space, full):
    cfg = config()
    full = full[1]
    seen = []

    def stop_after_five(record):
        seen.append(record["key"])
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        run_grid(cfg, tmp_path / "resumed", space=space, progress=False,
                 on_cell=stop_after_five)
    store = tmp_path / "resumed" / "cells.jsonl"
    assert len(store.read_text().splitlines()) == 5
    with store.open("a") as f:  # a cell torn by a kill mid-write
        f.write('{"key": "custext|2.0|cost", "val')
    again = []
    resumed = run_grid(cfg, tmp_path / "resumed", space=space, progress=False,
                       on_cell=lambda r: again.append(r["key"]))
    assert not set(again) & set(seen) and len(again) == len(full) - 5
    keys = [json.loads(line)["key"] for line in store.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == len(full)
    assert _values(resumed) == _values(full)
    # a third run computes nothing
    run_grid(cfg, tmp_path / "resumed", space=space, progress=False,
             on_cell=lambda r: pytest.fail("recomputed " + r["key"]))


def test_other_settings_in_the_same_directory_are_refused(tmp_path, space):
    run_grid(config(metrics=["cost"]), tmp_path, space=space, progress=False)
    with pytest.raises(DPTextError, match="n_train"):
        run_grid(config(metrics=["cost"], n_train=41), tmp_path, space=space, progress=False)
    # more epsilons or metrics in the same directory are fine: only the new cells run
    new = []
    run_grid(config(metrics=["cost"], epsilons={"custext": [2.0, 4.0]}),
             tmp_path, space=space, progress=False, on_cell=lambda r: new.append(r["key"]))
    assert new == ["custext|4.0|cost"]


def test_directory_of_an_older_version_is_resumed_when_new_settings_keep_their_defaults(
        tmp_path, space):
    run_grid(config(metrics=["cost"]), tmp_path, space=space, progress=False)
    path = tmp_path / "config.json"
    saved = json.loads(path.read_text())
    for key in ("lm_texts", "lm_model", "classifier"):  # settings an older version lacked
        del saved["result_settings"][key]
    saved["result_settings"]["attribute_datasets"] = ["health_tweets"]  # no longer a setting
    path.write_text(json.dumps(saved))
    run_grid(config(metrics=["cost"], attribute_datasets=["house_of_commons"]), tmp_path,
             space=space, progress=False, on_cell=lambda r: pytest.fail("recomputed"))
    path.write_text(json.dumps(saved))
    with pytest.raises(DPTextError, match="lm_texts"):
        run_grid(config(metrics=["cost"], lm_texts=7), tmp_path, space=space, progress=False)


def test_mechanism_refusing_an_epsilon_is_recorded_as_skipped(tmp_path, space):
    cfg = config(mechanisms=["gumbel"], epsilons={"gumbel": [1.0]}, metrics=["cost"],
                 baselines=False)
    (record,) = run_grid(cfg, tmp_path, space=space, progress=False)
    assert record["status"] == "skipped" and "epsilon" in record["reason"]
    assert "Skipped cells" in (tmp_path / "report.md").read_text()


def test_store_refuses_a_duplicate_cell(tmp_path):
    store = CellStore(tmp_path / "cells.jsonl")
    store.add({"key": "a|-|cost", "values": {}})
    with pytest.raises(DPTextError, match="already"):
        store.add({"key": "a|-|cost", "values": {}})
    assert "a|-|cost" in CellStore(tmp_path / "cells.jsonl")


def test_unknown_metric_is_refused():
    with pytest.raises(DPTextError, match="unknown metric"):
        config(metrics=["speed"])


def test_cli_evaluate(tmp_path, space):
    space.save(tmp_path / "space.npz")
    env = {**os.environ, "DPTEXT_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "dptext.cli", "evaluate", "--mechanisms", "custext",
           "--epsilons", "1,3", "--metrics", "cost,deniability", "--train", "20", "--test",
           "20", "--deniability-words", "5", "--deniability-runs", "10", "--encoder", "hashing",
           "--space", str(tmp_path / "space.npz"), "--out", str(tmp_path / "out"),
           "--workers", "1"]  # the parallel path: test_parallel_grid_gives_the_serial_values
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    records = json.loads(Path(tmp_path / "out" / "results.json").read_text())
    assert {r["key"] for r in records} >= {"custext|1.0|cost", "custext|3.0|deniability"}
    bad = subprocess.run([*cmd[:5], "nope", "--out", str(tmp_path / "x")], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("dptext: error: unknown mechanism")
    bad = subprocess.run([*cmd[:5], "custext", "--epsilons", "gumbel=3", "--out",
                          str(tmp_path / "y")], capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and "not in --mechanisms" in bad.stderr


def test_tables_list_each_mechanism_together_sorted_by_epsilon():
    from dptext.evaluation.tables import metric_table

    def rec(m, e):
        return {"mechanism": m, "epsilon": e, "metric": "cost", "status": "ok",
                "values": {"tokens": 1}}

    records = [rec("noiseless", None), rec("santext", 2.0), rec("laplace", 1.0),
               rec("santext", 16.0), rec("santext", 1.0)]
    rows = [line.split(" | ")[:2] for line in metric_table(records, "cost", ["tokens"])
            .splitlines()[2:]]
    assert rows == [["| noiseless", "-"], ["| santext", "1"], ["| santext", "2"],
                    ["| santext", "16"], ["| laplace", "1"]]


@pytest.mark.slow  # starts two pools of real worker processes
def test_parallel_grid_gives_the_serial_values_and_resumes(tmp_path, space, full):
    """Two worker processes (spawned: ~5 s of imports each, hence two pools only): the same
    cells and values as the serial grid, also when interrupted and resumed."""
    full = full[1]
    seen = []

    def stop_early(record):
        seen.append(record["key"])
        if len(seen) == 3:
            raise Stop

    with pytest.raises(Stop):
        run_grid(config(), tmp_path / "par", space=space, progress=False, workers=2,
                 on_cell=stop_early)
    stored = [json.loads(line)["key"] for line in
              (tmp_path / "par" / "cells.jsonl").read_text().splitlines()]
    assert 3 <= len(stored) < len(full)
    again = []
    records = run_grid(config(), tmp_path / "par", space=space, progress=False, workers=2,
                       on_cell=lambda r: again.append(r["key"]))
    assert sorted(again + stored) == sorted(r["key"] for r in full)
    assert [r["key"] for r in records] == [r["key"] for r in full]
    assert _values(records) == _values(full)


def test_runs_keep_a_mechanisms_cells_together_longest_first():
    from dptext.evaluation.parallel import group_runs

    cfg = config(mechanisms=["custext", "santext", "laplace"],
                 epsilons={"custext": [1.0, 2.0], "santext": [1.0, 2.0], "laplace": [3.0]})
    runs = group_runs(cfg, cells_of(cfg))
    assert [(r[0].mechanism, len(r)) for r in runs][:2] == [("laplace", 4), ("santext", 8)]
    # SanText fits all its epsilons in one shared pass: one run; others one run per epsilon
    assert sorted((r[0].mechanism, r[0].epsilon) for r in runs if r[0].mechanism != "santext") \
        == [("custext", 1.0), ("custext", 2.0), ("laplace", 3.0), ("noiseless", None),
            ("random", None)]
    assert all(len({(c.mechanism, c.epsilon) for c in r}) == 1 for r in runs
               if r[0].mechanism != "santext")


def test_cli_workers_must_be_positive(tmp_path):
    from dptext.cli.evaluate import _workers

    assert _workers("3") == 3 and _workers("auto") >= 1
    for bad in ("0", "-1", "two"):
        with pytest.raises(DPTextError, match="--workers"):
            _workers(bad)
