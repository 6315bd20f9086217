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
                                    k=3, space=space_path, report_column="dp_report", rng=0,
                                    keep="user,n")
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
                              rng=1, keep_other=True)
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
        privatize_frame(df, ["n"], mechanism="custext", k=3, space=space_path, keep_other=True)
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
                          dataset_name="notes", rng=0, keep="user")
    # per row 2-DP per word: u1 6 (over the 5-DP budget: withheld), then 4; u2 4, then 6 (over)
    assert rel.withheld == [0, 2]
    assert rel.data["note"].isna().tolist() == [True, False, True, False]
    spent = {u: ledger.spent(u, owner="clinic", dataset="notes") for u in ("u1", "u2")}
    assert spent["u1"].epsilon_basic == pytest.approx(4.0) and spent["u1"].pending == 0
    assert spent["u2"].epsilon_basic == pytest.approx(4.0) and spent["u2"].withheld == 1
    assert rel.report.records == 2 and rel.report.epsilon == pytest.approx(8.0)
    assert rel.units["u1"].epsilon == pytest.approx(4.0)
    ledger.verify()


# ------------------------------------------------------------ every column accounted for
def test_an_unnamed_column_is_a_one_line_error_before_any_work(df, space_path, monkeypatch):
    import dptext.integrations.pandas as mod

    called = []
    monkeypatch.setattr(mod, "privatize_records", lambda *a, **k: called.append(1))
    with pytest.raises(DPTextError) as err:
        privatize_frame(df, ["note"], mechanism="custext", k=3, space=space_path)
    msg = str(err.value)
    assert "\n" not in msg and "columns title,user,n are not covered" in msg
    assert "keep=" in msg and "keep_other=True" in msg
    with pytest.raises(DPTextError, match="columns n are not covered"):
        privatize_frame(df, ["note"], mechanism="custext", k=3, space=space_path,
                        keep="title", unit_column="user")  # the unit column is covered
    with pytest.raises(DPTextError, match="no column doctor in the input"):
        privatize_frame(df, ["note"], space=space_path, keep_other=True, drop="doctor")
    with pytest.raises(DPTextError, match="'title' given to both"):
        privatize_frame(df, ["note", "title"], space=space_path, keep="title", drop="user,n")
    assert called == []  # nothing was privatized


def test_keep_drop_hash_and_the_unit_column(df, space_path, tmp_path, monkeypatch):
    monkeypatch.delenv("DPTEXT_PSEUDONYM_SECRET", raising=False)
    with pytest.raises(DPTextError, match="hash= needs a pseudonym key"):
        privatize_frame(df, ["note"], space=space_path, hash="user", keep="title,n")
    key = tmp_path / "ids.key"
    args = dict(mechanism="custext", epsilon=2, k=3, space=space_path, rng=0,
                pseudonym_key=str(key))
    rel = privatize_frame(df, ["note"], keep="title", drop="n", hash="user", owner="clinic",
                          **args)
    assert list(rel.data.columns) == ["note", "title", "user"]
    assert list(rel.data["title"].iloc[:2]) == ["A visit", "Note"]  # kept verbatim
    pseudonyms = list(rel.data["user"])
    assert pseudonyms[0] == pseudonyms[2] != pseudonyms[1] and "u1" not in pseudonyms
    assert rel.columns == {"privatized": ["note"], "released_verbatim_not_protected": ["title"],
                           "dropped": ["n"], "hashed": ["user"], "keep_other": False}
    assert (key.stat().st_mode & 0o777) == 0o600
    again = privatize_frame(df, ["note"], keep="title", drop="n", hash="user", owner="clinic",
                            **args)
    other = privatize_frame(df, ["note"], keep="title", drop="n", hash="user", owner="lab",
                            **args)
    assert list(again.data["user"]) == pseudonyms  # stable across releases of one owner
    assert not set(other.data["user"]) & set(pseudonyms)  # another owner: other pseudonyms
    # the unit column is dropped unless kept or hashed
    rel = privatize_frame(df, ["note"], keep="title,n", unit_column="user", **args)
    assert list(rel.data.columns) == ["note", "title", "n"] and rel.columns["dropped"] == ["user"]
    assert sorted(rel.units) == ["u1", "u2"]
    # keep_other: the rest released verbatim, and listed
    rel = privatize_frame(df, ["note"], keep_other=True, **args)
    assert rel.columns["released_verbatim_not_protected"] == ["title", "user", "n"]
