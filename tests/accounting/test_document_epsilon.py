"""A document budget (``document_epsilon=E`` / ``--document-epsilon E``): every record costs at
most E whatever its length, the per-token epsilon comes from the record's shape, the report
states its min/median/max, and an E that cannot be met is refused before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dptext
from dptext.accounting.composition import per_token_epsilon, token_step
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError

WORDS = [f"w{i:02d}" for i in range(40)]


SPACE = dict(words=WORDS, seed=5, dim=6, float32=True, name="tiny", metric="euclidean",
             geometry=16)  # the space fixture (conftest.py)


def test_ladder_keeps_every_length_between_three_quarters_and_all_of_e():
    steps = {token_step(n) for n in range(1, 100_001)}
    assert sorted(steps)[:10] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12]
    assert len([s for s in steps if 100 <= s < 1000]) == 10  # ten per factor of ten
    for cost in (1.0, 1.574, 5.746):
        for n in range(1, 5001):
            eps = per_token_epsilon(40.0, n, cost_per_epsilon=cost)
            spent = n * eps * cost
            assert spent <= 40.0
            assert spent >= 0.75 * 40.0 * (1 - 1e-12), (n, cost)
    assert per_token_epsilon(40.0, 0) == 40.0
    with pytest.raises(ValueError):
        per_token_epsilon(0.0, 3)


@pytest.mark.parametrize("name,params", [("custext", {"k": 5}), ("santext", {}),
                                         ("laplace", {})])
def test_every_record_costs_at_most_e(space, name, params):
    e = 12.0
    m = dptext.mechanism(name, space=space, document_epsilon=e, **params)
    texts = ["w01 w02 w03", " ".join(WORDS[:9]), "w05, w06! unknownword", " ".join(WORDS * 3),
             "nothing here"]
    results = m.privatize_batch(texts, rng=3)
    counts = m.token_counts(texts)
    assert counts == [3, 9, 2, 120, 0]
    per_token = []
    for r, n in zip(results, counts, strict=True):
        rep = r.report
        assert rep.tokens_privatized - rep.privatized_by_reason.get("oov_placeholder", 0) == n
        charged = sum(ev.total_epsilon for ev in rep.privacy_events())
        assert charged <= e  # what the ledger charges: basic composition, worst case
        if n:
            assert charged >= 0.75 * e
            # the per-token epsilon is the record's own: pure eps, or metric eps * Delta_max
            cost = rep.per_token.worst_case_epsilon / rep.per_token.epsilon
            assert rep.per_token.epsilon == per_token_epsilon(e, n, cost_per_epsilon=cost)
            per_token.append(rep.per_token.epsilon)
    assert len(set(per_token)) == 4  # 3, 9 (-> 10), 2 and 120 tokens: four epsilons
    combined = PrivacyReport.combine([r.report for r in results]).to_dict()["document_budget"]
    assert combined["document_epsilon"] == e and combined["records"] == 4  # not the empty one
    assert combined["per_token_epsilon_min"] == min(per_token)
    assert combined["per_token_epsilon_max"] == max(per_token)
    assert combined["per_token_epsilon_median"] == sorted(per_token)[1]  # nearest rank 2 of 4


def test_epsilon_and_document_epsilon_are_exclusive(space):
    with pytest.raises(DPTextError, match="not both"):
        dptext.mechanism("custext", space=space, epsilon=2, document_epsilon=10)
    with pytest.raises(DPTextError, match="unknown parameter"):
        dptext.mechanism("custext", space=space, document_epsilon=10, nope=1)


def test_gumbel_refuses_an_unreachable_budget_before_any_fit(space):
    m = dptext.mechanism("gumbel", space=space, document_epsilon=10)
    least = m.least_epsilon()
    assert least > 10
    with pytest.raises(DPTextError, match="cannot be met by gumbel"):
        m.fit()
    assert not m._instances  # nothing was fitted
    # a budget that one short record meets but a long one does not: the long one is named
    e = 1.01 * least * 2 * space.delta_max
    ok = dptext.mechanism("gumbel", space=space, document_epsilon=e).fit()
    assert ok.privatize("w01 w02", rng=0).report.epsilon <= e
    with pytest.raises(DPTextError, match=r"cannot be met for text 1 \(3 tokens\)"):
        ok.privatize_batch(["w01", "w01 w02 w03"], rng=0)


def test_gumbel_refuses_a_low_epsilon_before_fitting(space):
    m = dptext.mechanism("gumbel", space=space, epsilon=5)
    with pytest.raises(DPTextError, match="below the truncated Gumbel bound"):
        m.check_admissible()
    with pytest.raises(DPTextError, match="below the truncated Gumbel bound"):
        m.fit(cache=False)
    assert not m.is_fitted


def test_dpmlm_counts_its_word_slots_without_a_model():
    m = dptext.mechanism("dpmlm", epsilon=50)
    assert m._lm is None
    assert m.token_counts(["Alice met the dog in Paris.", ""]) == [4, 0]  # the, in: kept
    add = dptext.mechanism("dpmlm", epsilon=50, p_add=0.1)
    assert add.token_counts(["Alice met the dog in Paris."]) == [4 + 6]


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache")}
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_document_epsilon(tmp_path, space):
    space.save(tmp_path / "space.npz")
    rows = [{"text": " ".join(WORDS[: n])} for n in (3, 9, 30, 2)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    common = ["sanitize", "-m", "custext", "-p", "k=5", "--space", str(tmp_path / "space.npz"),
              "--no-progress", "-i", "in.jsonl"]
    r = _cli(tmp_path, *common, "-o", "out.jsonl", "--document-epsilon", "6", "--seed", "1")
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "out.jsonl.report.json").read_text("utf-8"))
    found = json.dumps(report)
    assert '"per_token_epsilon_min": 0.2' in found  # 30 tokens: 6 / 30
    assert '"per_token_epsilon_max": 3.0' in found  # 2 tokens: 6 / 2
    assert "document budget    6 per record" in r.stderr
    assert "no --epsilon given" not in r.stderr
    both = _cli(tmp_path, *common, "-o", "x.jsonl", "--document-epsilon", "6", "-e", "2")
    assert both.returncode != 0 and both.stderr.count("\n") == 1
    assert "not both" in both.stderr and not (tmp_path / "x.jsonl").exists()
    two = _cli(tmp_path, *common, "-o", "y.jsonl", "--document-epsilon", "6", "-f", "text,b")
    assert two.returncode != 0 and "one --field" in two.stderr
    low = _cli(tmp_path, "sanitize", "-m", "gumbel", "-e", "5", "--space",
               str(tmp_path / "space.npz"), "--no-progress", "-i", "in.jsonl", "-o", "g.jsonl")
    assert low.returncode != 0
    assert low.stderr.strip().splitlines() == [low.stderr.strip()]  # no "fitting" line first
    assert "below the truncated Gumbel bound" in low.stderr
    assert not list((tmp_path / "cache").rglob("gumbel-*"))


def test_custext_builds_its_output_sets_once_for_every_epsilon(space):
    from dptext.mechanisms.custext import build_output_sets
    from dptext.mechanisms.frequency import frequency_order

    a = dptext.mechanism("custext", space=space, k=5, epsilon=1).fit(cache=False)
    b = dptext.mechanism("custext", space=space, k=5, epsilon=3).fit(cache=False)
    assert a._tables["members"] is b._tables["members"]  # one build, shared read-only
    assert np.array_equal(a._tables["members"],
                          build_output_sets(space, 5, frequency_order(space)))
    assert not a._tables["members"].flags.writeable
    other_k = dptext.mechanism("custext", space=space, k=4, epsilon=1).fit(cache=False)
    assert other_k._tables["members"].shape[1] == 4


@pytest.mark.slow
def test_demo_takes_a_document_epsilon(tmp_path, space):
    space.save(tmp_path / "space.npz")
    r = _cli(tmp_path, "demo", "-m", "custext", "-p", "k=5", "--space",
             str(tmp_path / "space.npz"), "--document-epsilon", "5", "--seed", "0")
    assert r.returncode == 0, r.stderr
    assert "Sanitized (custext, document epsilon=5)" in r.stdout
