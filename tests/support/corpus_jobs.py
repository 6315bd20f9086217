"""The corpus tests' small fitted mechanism (the `mech` fixture), their JSONL writer and
job maker (moved from test_corpus, which others imported)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from dptext.corpus import CorpusJob
from dptext.embeddings import EmbeddingSpace
from dptext.mechanisms.registry import mechanism

WORDS = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog"]


@pytest.fixture(scope="module")
def mech(tmp_path_factory):
    """CusText (eps 2, K 5) fitted on a 200-word space, with a private cache."""
    root = tmp_path_factory.mktemp("corpus-cache")
    with pytest.MonkeyPatch.context() as mp:  # this module's own cache, then restored
        mp.setenv("DPTEXT_CACHE", str(root))
        rng = np.random.default_rng(7)
        words = WORDS + [f"w{i}" for i in range(200 - len(WORDS))]
        space = EmbeddingSpace(words, rng.standard_normal((200, 8)), name="tiny")
        space.geometry(16)
        m = mechanism("custext", epsilon=2.0, k=5, space=space).fit()
        yield m


def write_jsonl(path: Path, n: int, *, seed: int = 0, users: int = 7) -> Path:
    rnd = random.Random(seed)
    vocab = WORDS + [f"w{i}" for i in range(30)]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            rec = {"id": i, "text": " ".join(rnd.choices(vocab, k=rnd.randint(1, 8))),
                   "title": " ".join(rnd.choices(vocab, k=2)), "user": f"u{i % users}"}
            f.write(json.dumps(rec) + "\n")
    return path


def job(m, src, out, **kw) -> CorpusJob:
    kw.setdefault("seed", 11)
    return CorpusJob(m, str(src), str(out), **kw)
