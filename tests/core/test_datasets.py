"""Packaged corpora (read from the installed data packages) and the user-file loaders."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dptext.datasets import (
    TEST_FRACTION,
    Dataset,
    dataset_names,
    load_dataset,
    load_tagged,
    read_conll,
    read_csv,
    read_jsonl,
    read_tsv_glue,
    split_indices,
)
from dptext.errors import DPTextError


def test_split_is_stratified_disjoint_and_seeded():
    labels = ["a"] * 50 + ["b"] * 30 + ["c"] * 20 + ["solo1", "solo2", "solo3", "solo4", "solo5"]
    train = split_indices(labels, "train", 0)
    test = split_indices(labels, "test", 0)
    assert set(train).isdisjoint(test)
    assert sorted([*train, *test]) == list(range(len(labels)))
    counts = Counter(labels[i] for i in test)
    assert counts["a"] == round(TEST_FRACTION * 50) and counts["b"] == round(TEST_FRACTION * 30)
    assert sum(counts[f"solo{i}"] for i in range(1, 6)) == 1  # singletons pooled: 20% of 5
    assert list(split_indices(labels, "test", 0)) == list(test)
    assert list(split_indices(labels, "test", 1)) != list(test)
    assert sorted(split_indices(labels, "all", 0)) == list(range(len(labels)))
    with pytest.raises(DPTextError, match="split"):
        split_indices(labels, "dev", 0)


def test_rotten_tomatoes_excludes_plots_and_splits_80_20():
    train = load_dataset("rotten_tomatoes")
    test = load_dataset("rotten_tomatoes", split="test")
    assert set(train.labels) == set(test.labels) == {"fresh", "rotten"}
    total = len(train) + len(test)
    assert abs(len(test) - TEST_FRACTION * total) <= 2
    assert set(train.texts).isdisjoint(test.texts) or len(set(train.texts) & set(test.texts)) < 20
    assert train.authors is None
    plots = load_dataset("movie_plots", split="all")
    assert len(plots) > 1000 and not set(plots.texts) & set(train.texts)
    again = load_dataset("rotten_tomatoes", split="test")
    assert again.texts[:50] == test.texts[:50]


@pytest.mark.slow
def test_author_corpora_expose_authors():
    tweets = load_dataset("health_tweets", split="test")
    assert tweets.authors == tweets.labels and len(set(tweets.labels)) == 16
    commons = load_dataset("house_of_commons", split="all")
    assert "Con" in commons.labels and "NA" not in commons.labels
    assert commons.authors is not None and len(set(commons.authors)) > 100
    debates = load_dataset("presidential_debates", split="all")
    assert {"TRUMP", "CLINTON"} <= set(debates.authors)
    news = load_dataset("news_articles", split="test")
    assert "bbc.co.uk" in news.labels


def test_every_packaged_name_loads_and_unknown_is_refused():
    for name in dataset_names():
        assert len(load_dataset(name, split="test")) > 0
    with pytest.raises(DPTextError, match="unknown dataset"):
        load_dataset("imdb")


def test_twitter_ner_tagged_sentences():
    sentences = load_tagged(split="all")
    assert len(sentences) == len(load_dataset("twitter_ner", split="all"))
    tags = Counter(tag for s in sentences for _, tag in s)
    assert tags["O"] > 10 * tags["B-person"] > 0
    flat = load_dataset("twitter_ner", split="test")
    first = flat.texts[0].split(" ")
    assert len(first) == len(flat.labels[0].split(" "))


def test_head_and_select():
    d = Dataset("x", ["a", "b", "c"], ["1", "2", "3"], ["p", "q", "r"])
    assert d.head(2).texts == ["a", "b"] and d.head(2).authors == ["p", "q"]
    assert d.head(None) is d and d.select([2, 0]).labels == ["3", "1"]
    with pytest.raises(DPTextError):
        Dataset("x", ["a"], [])


def test_read_csv(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text('\ufefftext,label,who\n"good, really",pos,ann\nbad,neg,bob\n', encoding="utf-8")
    d = read_csv(path, "text", "label", author_col="who")
    assert d.texts == ["good, really", "bad"] and d.labels == ["pos", "neg"]
    assert d.authors == ["ann", "bob"] and d.name == "reviews"
    with pytest.raises(DPTextError, match="no column 'sentiment'"):
        read_csv(path, "text", "sentiment")


def test_read_tsv_glue(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text('sentence\tlabel\nit\'s "fine"\t1\nawful\t0\n', encoding="utf-8")
    d = read_tsv_glue(path)
    assert d.texts == ['it\'s "fine"', "awful"] and d.labels == ["1", "0"]
    path.write_text("sentence\tlabel\nonly one field\n", encoding="utf-8")
    with pytest.raises(DPTextError, match="line 2"):
        read_tsv_glue(path)


def test_read_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [{"text": "hi", "label": 1, "author": "a"}, {"text": "yo", "label": 0, "author": "b"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    d = read_jsonl(path, author_key="author")
    assert d.texts == ["hi", "yo"] and d.labels == ["1", "0"] and d.authors == ["a", "b"]
    path.write_text('{"text": "hi"}\n', encoding="utf-8")
    with pytest.raises(DPTextError, match="line 1"):
        read_jsonl(path)
    path.write_text("not json\n", encoding="utf-8")
    with pytest.raises(DPTextError, match="not valid JSON"):
        read_jsonl(path)


def test_read_conll(tmp_path):
    path = tmp_path / "ner.conll"
    path.write_text("-DOCSTART- O\n\nAlice NNP B-PER\nruns VBZ O\n\t\nParis NNP B-LOC\n",
                    encoding="utf-8")
    assert read_conll(path) == [[("Alice", "B-PER"), ("runs", "O")], [("Paris", "B-LOC")]]
    path.write_text("lonely\n", encoding="utf-8")
    with pytest.raises(DPTextError, match="no tag"):
        read_conll(path)
