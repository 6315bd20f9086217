"""Hugging Face datasets: Dataset.map(batched=True), reports as a column, workers rebuilding the
mechanism from the disk cache; an in-memory Dataset, no hub."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("datasets")

from datasets import Dataset  # noqa: E402

from dptext import EmbeddingSpace, mechanism  # noqa: E402
from dptext.accounting.report import PrivacyReport  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.integrations.hf import _Privatizer, load_report, privatize  # noqa: E402
from dptext.text import split_words  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["alice", "bob", "paris", "london", "anna", "lee", "john", "smith", "met", "in",
         "the", "note", "title", "a", "visit", "report", "rowan", "kim", "ash", "sky"]
ROWS = {"title": ["Alice visit", "A note", None, "Report", "Bob in London", "Sky"],
        "body": ["Alice met Bob in Paris.", "the note", "John Smith met Anna", None,
                 "a visit", "Kim met Ash."],
        "user": ["u1", "u2", "u1", "u3", "u2", "u1"]}


@pytest.fixture(scope="module")
def space_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(2).standard_normal((len(WORDS), 4)),
                   name="hf-tiny").save(path)
    return str(path)


@pytest.fixture(autouse=True)
def _caches(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "dptext"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def _ds():
    return Dataset.from_dict(ROWS)


@pytest.mark.parametrize("num_proc", [None, 2])
def test_several_columns_in_one_pass_with_reports(space_path, num_proc):
    environ = os.environ
    ds, report = privatize(_ds(), ["title", "body"], mechanism="custext", epsilon=2, k=3,
                           space=space_path, num_proc=num_proc, batch_size=2, seed=0,
                           keep="user")
    assert os.environ is environ  # datasets' map replaces it; privatize puts it back
    assert ds.column_names == ["title", "body", "user", "dp_report"]
    assert list(ds["user"]) == ROWS["user"]
    for old, new in zip(ROWS["title"] + ROWS["body"], list(ds["title"]) + list(ds["body"]),
                        strict=True):
        if old is None:
            assert new is None
        else:
            assert split_words(new)[0::2] == split_words(old)[0::2]
            assert all(w.lower() in WORDS for w in split_words(new)[1::2])
    rows = [load_report(s) for s in ds["dp_report"]]
    words = [sum(len(split_words(t)) // 2 for t in (ROWS["title"][i], ROWS["body"][i])
                 if t is not None) for i in range(len(ds))]
    assert [r.tokens_privatized for r in rows] == words
    assert all(r.records == 1 for r in rows)
    assert [r.epsilon for r in rows] == pytest.approx([2.0 * w for w in words])
    assert report.records == len(ds) and report.epsilon == pytest.approx(2.0 * sum(words))
    assert report.to_dict() == PrivacyReport.combine(rows).to_dict()


def test_seeded_runs_repeat_and_units_get_their_own_report(space_path):
    args = dict(mechanism="custext", epsilon=2, k=3, space=space_path, seed=7, batch_size=2,
                keep="title")
    a = privatize(_ds(), ["body"], unit_column="user", **args)
    b = privatize(_ds(), ["body"], unit_column="user", **args)
    assert list(a.data["body"]) == list(b.data["body"])
    assert sorted(a.units) == ["u1", "u2", "u3"]
    u1 = [i for i, u in enumerate(ROWS["user"]) if u == "u1"]
    assert a.units["u1"].records == len(u1)
    assert a.units["u1"].epsilon == pytest.approx(
        sum(load_report(a.data["dp_report"][i]).epsilon for i in u1))
    assert a.units["u3"].tokens_total == 0  # its only body is missing


def test_entity_targeted_columns(space_path):
    rel = privatize(_ds(), ["title", "body"], mechanism="custext", epsilon=2, k=3,
                    space=space_path, entities=["PERSON", "GPE"], detector="spacy",
                    num_proc=2, batch_size=3, keep="user")
    body = list(rel.data["body"])
    assert body[1] == "the note" and body[4] == "a visit"  # nothing detected: verbatim
    assert body[0].split()[1:] != [] and " met " in body[0]
    r0 = load_report(rel.data["dp_report"][0])
    assert r0.spans["PERSON"]["spans"] >= 2 and r0.tokens_undetected >= 2
    assert rel.report.tokens_undetected == sum(
        load_report(s).tokens_undetected for s in rel.data["dp_report"])
    assert "per detected span" in rel.report.document_guarantee()


def test_the_map_function_ships_a_spec_and_workers_load_the_cache(space_path, tmp_path):
    from dptext.integrations._spec import MechanismSpec

    spec = MechanismSpec.create("custext", {"epsilon": 2, "k": 3, "space": space_path})
    fn = _Privatizer(spec, spec.build(), ["body"], None, "dp_report", None)
    blob = pickle.dumps(fn)
    assert len(blob) < 1500 and b"numpy" not in blob
    (tmp_path / "fn.pkl").write_bytes(blob)
    script = textwrap.dedent(f"""
        import pickle
        from dptext.mechanisms.custext import CusText
        def refuse(self, space):
            raise SystemExit("refit in the worker")
        CusText._fit_tables = refuse  # the worker must read the tables the parent cached
        fn = pickle.loads(open({str(tmp_path / "fn.pkl")!r}, "rb").read())
        out = fn({{"body": ["alice met bob"]}}, [0])
        print(out["body"][0].count(" "), len(out["dp_report"]))
    """)
    env = {"PYTHONPATH": str(ROOT / "src"), "DPTEXT_CACHE": str(tmp_path / "dptext"),
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "2"


def test_instances_stay_in_one_process_and_bad_input_is_refused(space_path):
    from dptext.embeddings import EmbeddingSpace as Space

    m = mechanism("custext", epsilon=2, k=3, space=Space.load(space_path))
    ds, _ = privatize(_ds(), "body", mechanism=m, keep_other=True)
    assert len(ds["body"]) == len(ROWS["body"])  # ran in this process
    with pytest.raises(DPTextError, match="several processes need the mechanism by name"):
        privatize(_ds(), "body", mechanism=m, num_proc=2, keep_other=True)
    with pytest.raises(DPTextError, match="no column 'text'"):
        privatize(_ds(), ["text"], mechanism=m)
    with pytest.raises(DPTextError, match="datasets.Dataset"):
        privatize(ROWS, ["body"], mechanism=m)
    with pytest.raises(DPTextError, match="expected text"):
        privatize(Dataset.from_dict({"n": [1, 2]}), ["n"], mechanism=m)
    with pytest.raises(DPTextError, match="one process"):
        privatize(_ds(), "body", mechanism="custext", space=space_path, entities=["PERSON"],
                  consistent="unit", num_proc=2, keep_other=True)
    with pytest.raises(DPTextError, match="only apply with entities"):
        privatize(_ds(), "body", mechanism=m, detector="spacy", keep_other=True)
    with pytest.raises(DPTextError, match="plain values"):
        privatize(_ds(), "body", mechanism="custext", space=Space.load(space_path), keep_other=True)


# ------------------------------------------------------------------ ledger
@dataclasses.dataclass
class Decision:
    allowed: bool
    charge_id: int | None
    reason: str | None = None
    already: bool = False


class FakeLedger:
    """The LEDGER_API contract (docs/integrations.md), in memory: a budget per unit."""

    def __init__(self, budget: float) -> None:
        self.budget, self.spent, self.charges, self.committed = budget, {}, {}, []

    def open_release(self, *, owner, dataset, mechanism, params, release_key=None):
        self.release = (owner, dataset, mechanism)
        return "r1"

    def reserve(self, release_id, items):
        out = []
        for key, unit, events in items:
            cost = sum(e.epsilon * e.count for e in events)
            if self.spent.get(unit, 0.0) + cost > self.budget:
                out.append(Decision(False, None, "budget"))
                continue
            self.spent[unit] = self.spent.get(unit, 0.0) + cost
            self.charges[len(self.charges) + 1] = (key, unit, cost)
            out.append(Decision(True, len(self.charges)))
        return out

    def commit(self, release_id, charge_ids):
        self.committed += list(charge_ids)


def test_ledger_withholds_what_a_unit_cannot_pay_for(space_path):
    ledger = FakeLedger(budget=5.0)  # u1's first targeted body costs 4 (Alice, Bob); then 0-4
    rel = privatize(_ds(), ["body"], mechanism="custext", epsilon=2, k=3, space=space_path,
                    entities=["PERSON"], detector="spacy", unit_column="user", ledger=ledger,
                    owner="clinic", dataset_name="notes", seed=1, keep="title")
    assert ledger.release[:2] == ("clinic", "notes")
    spent_rows = {key for key, _, _ in ledger.charges.values()}
    assert rel.withheld and spent_rows  # both paths taken
    for i in range(len(ROWS["body"])):
        if str(i) in spent_rows:
            assert i not in rel.withheld
        else:
            assert i in rel.withheld and rel.data["body"][i] is None
    assert all(s <= 5.0 for s in ledger.spent.values())
    assert sorted(ledger.committed) == sorted(ledger.charges)
    assert rel.report.records == len(ROWS["body"]) - len(rel.withheld)
    with pytest.raises(DPTextError, match="unit_column"):
        privatize(_ds(), ["body"], mechanism="custext", space=space_path, entities=["PERSON"],
                  ledger=ledger, owner="o", dataset_name="d", keep_other=True)


def test_report_rows_are_json(space_path):
    ds, _ = privatize(_ds(), ["title"], mechanism="custext", epsilon=2, k=3, space=space_path,
                      keep_other=True)
    state = json.loads(ds["dp_report"][0])
    assert state["class"] == "PrivacyReport" and state["mechanism"] == "custext"


# ------------------------------------------------------------ every column accounted for
def test_columns_rule_unnamed_is_an_error_and_keep_drop_hash_apply(space_path, tmp_path,
                                                                   monkeypatch):
    monkeypatch.delenv("DPTEXT_PSEUDONYM_SECRET", raising=False)
    with pytest.raises(DPTextError) as err:
        privatize(_ds(), ["body"], mechanism="custext", k=3, space=space_path)
    msg = str(err.value)
    assert "\n" not in msg and "the dataset: columns title,user are not covered" in msg
    assert "keep_other=True" in msg
    args = dict(mechanism="custext", epsilon=2, k=3, space=space_path, seed=3,
                pseudonym_key=str(tmp_path / "k.key"))
    rel = privatize(_ds(), ["body"], keep="title", hash="user", owner="clinic", **args)
    assert rel.data.column_names == ["title", "body", "user", "dp_report"]
    assert list(rel.data["title"]) == ROWS["title"]
    users = list(rel.data["user"])
    assert users[0] == users[2] == users[5] != users[1] and not set(users) & set(ROWS["user"])
    assert rel.columns["hashed"] == ["user"]
    assert rel.columns["released_verbatim_not_protected"] == ["title"]
    again = privatize(_ds(), ["body"], keep="title", hash="user", owner="clinic", **args)
    assert list(again.data["user"]) == users
    # the unit column is dropped unless kept or hashed; drop= leaves a column out
    rel = privatize(_ds(), ["body"], drop="title", unit_column="user", **args)
    assert rel.data.column_names == ["body", "dp_report"]
    assert rel.columns["dropped"] == ["title", "user"] and sorted(rel.units) == ["u1", "u2", "u3"]
