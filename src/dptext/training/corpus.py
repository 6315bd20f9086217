"""The data model of UeDP (paper sections II and IV): users -> sentences, detected entities E, and
the extended set S in which every sentence without a detected entity is an entity of its own, so
that an entity the detector missed stays protected.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from dptext.errors import DPTextError
from dptext.io import read_lines

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split a text after ., ! or ? followed by space and a capital/digit/quote."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@dataclass(frozen=True)
class UserCorpus:
    """Sentences with their user and their detected entities.

    ``sentence_entities[i]`` are indices into ``entity_keys`` (distinct, sorted). A sentence with
    none is a member of the extended set S (:attr:`extended`).
    """

    users: tuple[str, ...]
    sentences: tuple[str, ...]
    sentence_user: np.ndarray
    entity_keys: tuple[str, ...]
    entity_categories: tuple[str, ...]
    sentence_entities: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.sentences)
        if len(self.sentence_user) != n or len(self.sentence_entities) != n:
            raise DPTextError("sentences, users and entity lists differ in length")
        if self.labels is not None and len(self.labels) != n:
            raise DPTextError("sentences and labels differ in length")

    @property
    def n_users(self) -> int:
        return len(self.users)

    @property
    def n_entities(self) -> int:
        return len(self.entity_keys)

    @property
    def extended(self) -> np.ndarray:
        """Indices of the sentences that form S (no detected entity)."""
        return np.array([i for i, e in enumerate(self.sentence_entities) if not e], dtype=np.int64)

    def incidence(self) -> sparse.csr_matrix:
        """Sentence x entity 0/1 matrix (for vectorized sampling)."""
        rows = [i for i, ents in enumerate(self.sentence_entities) for _ in ents]
        cols = [e for ents in self.sentence_entities for e in ents]
        return sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)),
                                 shape=(len(self.sentences), self.n_entities))

    def entity_users(self) -> np.ndarray:
        """For each entity, the number of distinct users whose sentences contain it."""
        pairs = {(int(self.sentence_user[i]), e)
                 for i, ents in enumerate(self.sentence_entities) for e in ents}
        counts = np.zeros(self.n_entities, dtype=np.int64)
        for _, e in pairs:
            counts[e] += 1
        return counts

    def sensitive_share(self) -> float:
        return 1.0 - len(self.extended) / max(len(self.sentences), 1)

    def deidentified(self, spans: Sequence[Sequence[tuple[int, int, str]]]) -> UserCorpus:
        """The corpus with each entity span replaced by its category tag (``[PERSON]``)."""
        texts = []
        for text, found in zip(self.sentences, spans, strict=True):
            cut = len(text)
            for start, end, category in sorted(found, reverse=True):
                if end <= cut:  # overlapping spans (an URL inside an e-mail): keep the outer one
                    text = text[:start] + f"[{category}]" + text[end:]
                    cut = start
            texts.append(text)
        return UserCorpus(self.users, tuple(texts), self.sentence_user, (), (),
                          tuple(() for _ in texts), self.labels)


@dataclass(frozen=True)
class RawCorpus:
    """Texts with users (and labels), before sentence splitting and detection."""

    texts: list[str]
    users: list[str]
    labels: list[str] | None = None


def synthetic_users(n_texts: int, n_users: int, rng: np.random.Generator) -> list[str]:
    """Assign texts to ``n_users`` synthetic users uniformly at random (corpora without
    authors); every user gets at least one text when ``n_texts >= n_users``."""
    if n_users < 1:
        raise DPTextError(f"number of users must be >= 1, got {n_users}")
    ids = rng.permutation(np.arange(n_texts) % n_users)
    return [f"user{int(i)}" for i in ids]


def read_user_file(path: str | os.PathLike, *, user_field: str = "user", text_field: str = "text",
                   label_field: str = "label") -> RawCorpus:
    """JSONL or CSV with a user and a text field (label optional); CoNLL (``.conll``, token and
    tag columns) gives one text per sentence and no users (assign synthetic ones)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".conll", ".bio"):
        from dptext.datasets import read_conll

        texts = [" ".join(tok for tok, _ in sent) for sent in read_conll(path)]
        return RawCorpus(texts, [""] * len(texts))
    if suffix in (".jsonl", ".json"):
        rows = []
        for number, line in read_lines(path, strip_bom=True):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise DPTextError(f"{path}: line {number} is not JSON ({err.msg})") from None
    elif suffix in (".csv", ".tsv"):
        text = "".join(line for _, line in read_lines(path, strip_bom=True))
        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ","))
    else:
        raise DPTextError(f"{path}: unknown format {suffix!r}; use .jsonl, .csv, .tsv or .conll")
    if not rows:
        raise DPTextError(f"{path}: no records")
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or text_field not in row:
            fields = f" (its fields: {', '.join(map(str, row))})" if isinstance(row, dict) else ""
            raise DPTextError(f"{path}: record {number} has no {text_field!r} field{fields}; "
                              f"name the text field with --text-field")
    has_users = all(user_field in r for r in rows)
    has_labels = all(label_field in r for r in rows)
    return RawCorpus([str(r[text_field]) for r in rows],
                     [str(r[user_field]) for r in rows] if has_users else [""] * len(rows),
                     [str(r[label_field]) for r in rows] if has_labels else None)


def build_corpus(raw: RawCorpus, detector, *, split: bool = True,
                 synthetic: int | None = None, rng: np.random.Generator | None = None,
                 ) -> tuple[UserCorpus, list[list[tuple[int, int, str]]]]:
    """Split texts into sentences, detect entities, index users and entities.

    Returns the corpus and, per sentence, the entity spans (start, end, category) for
    de-identification. ``synthetic``: assign the texts to that many random users first.
    """
    users = raw.users
    if synthetic is not None:
        users = synthetic_users(len(raw.texts), synthetic, rng or np.random.default_rng())
    elif any(not u for u in users):
        raise DPTextError("records without a user: give a user field or synthetic users")
    sentences, owners, labels = [], [], []
    for i, text in enumerate(raw.texts):
        for sent in split_sentences(text) if split else [text.strip()]:
            sentences.append(sent)
            owners.append(users[i])
            labels.append(raw.labels[i] if raw.labels is not None else None)
    if not sentences:
        raise DPTextError("no sentences to train on")
    found = detector.detect(sentences)
    user_index: dict[str, int] = {}
    entity_index: dict[str, int] = {}
    categories: list[str] = []
    sentence_entities, spans = [], []
    for ents in found:
        ids = set()
        for e in ents:
            if e.key not in entity_index:
                entity_index[e.key] = len(entity_index)
                categories.append(e.category)
            ids.add(entity_index[e.key])
        sentence_entities.append(tuple(sorted(ids)))
        spans.append([(e.start, e.end, e.category) for e in ents])
    owner_ids = np.array([user_index.setdefault(u, len(user_index)) for u in owners])
    corpus = UserCorpus(tuple(user_index), tuple(sentences), owner_ids, tuple(entity_index),
                        tuple(categories), tuple(sentence_entities),
                        tuple(labels) if raw.labels is not None else None)
    return corpus, spans
