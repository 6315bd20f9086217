"""pandas: privatize_frame and the df.dptext accessor."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from dptext import EmbeddingSpace  # noqa: E402
from dptext.accounting.report import PrivacyReport  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.integrations.pandas import privatize_frame  # noqa: E402
from dptext.text import split_words  # noqa: E402

WORDS = ["alice", "bob", "paris", "note", "visit", "met", "in", "the", "a", "sky", "kim",
         "rowan", "lee", "ash"]


@pytest.fixture(scope="module")
def space_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(3).standard_normal((len(WORDS), 4)),
                   name="pandas-tiny").save(path)
    return str(path)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))


@pytest.fixture
def df():
    return pd.DataFrame({"note": ["Alice met Bob in Paris.", None, "the sky", np.nan],
                         "title": ["A visit", "Note", None, "Kim"],
                         "user": ["u1", "u2", "u1", "u2"], "n": [1, 2, 3, 4]},
                        index=[10, 11, 12, 13])


def test_privatize_frame_returns_a_new_frame_and_the_report(df, space_path):
    before = df.copy()
    frame, report = privatize_frame(df, ["note", "title"], mechanism="custext", epsilon=2,
                                    k=3, space=space_path, report_column="dp_report", rng=0)
    pd.testing.assert_frame_equal(df, before)  # the input is not modified
    assert list(frame.index) == [10, 11, 12, 13] and list(frame["n"]) == [1, 2, 3, 4]
    assert frame.loc[11, "note"] is None and frame.loc[13, "note"] is None
    assert frame.loc[12, "title"] is None
    for col in ("note", "title"):
        for old, new in zip(df[col], frame[col], strict=True):
            if isinstance(old, str):
                assert split_words(new)[0::2] == split_words(old)[0::2]
    rows = list(frame["dp_report"])
    assert [r.tokens_privatized for r in rows] == [7, 1, 2, 1]
    assert report.epsilon == pytest.approx(2.0 * 11)
    assert report.to_dict() == PrivacyReport.combine(rows).to_dict()


def test_accessor_units_and_targeting(df, space_path):
    rel = df.dptext.privatize("note", mechanism="custext", epsilon=2, k=3, space=space_path,
                              entities=["PERSON", "GPE"], detector="spacy", unit_column="user",
                              rng=1)
    frame = rel.data
    assert frame.loc[12, "note"] == "the sky"  # no entity: released verbatim
    assert " met " in frame.loc[10, "note"]
    assert sorted(rel.units) == ["u1", "u2"] and rel.units["u2"].tokens_total == 0
    assert rel.units["u1"].tokens_undetected == rel.report.tokens_undetected
    assert rel.report.spans["PERSON"]["spans"] == 2


def test_bad_input(df, space_path):
    with pytest.raises(DPTextError, match="no column 'body'"):
        privatize_frame(df, ["body"], space=space_path)
    with pytest.raises(DPTextError, match="expected text"):
        privatize_frame(df, ["n"], mechanism="custext", k=3, space=space_path)
    with pytest.raises(DPTextError, match="DataFrame"):
        privatize_frame({"note": ["x"]}, ["note"])
    with pytest.raises(DPTextError, match="at least one column"):
        privatize_frame(df, [], space=space_path)



def test_a_real_ledger_charges_units_and_withholds_over_budget_rows(space_path, tmp_path):
    ledger_mod = pytest.importorskip("dptext.ledger")
    ledger = ledger_mod.Ledger(tmp_path / "ledger.sqlite", secret="a test secret, 16+ bytes")
    ledger.set_budget("clinic", "notes", 5.0)
    df = pd.DataFrame({"note": ["Alice met Bob.", "the sky", "Kim met Ash.", "a visit"],
                       "user": ["u1", "u2", "u2", "u1"]})
    rel = privatize_frame(df, ["note"], mechanism="custext", epsilon=2, k=3, space=space_path,
                          unit_column="user", ledger=ledger, owner="clinic",
                          dataset_name="notes", rng=0)
    # per row 2-DP per word: u1 6 (over the 5-DP budget: withheld), then 4; u2 4, then 6 (over)
    assert rel.withheld == [0, 2]
    assert rel.data["note"].isna().tolist() == [True, False, True, False]
    spent = {u: ledger.spent(u, owner="clinic", dataset="notes") for u in ("u1", "u2")}
    assert spent["u1"].epsilon_basic == pytest.approx(4.0) and spent["u1"].pending == 0
    assert spent["u2"].epsilon_basic == pytest.approx(4.0) and spent["u2"].withheld == 1
    assert rel.report.records == 2 and rel.report.epsilon == pytest.approx(8.0)
    assert rel.units["u1"].epsilon == pytest.approx(4.0)
    ledger.verify()
