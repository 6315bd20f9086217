"""Executors are a table that builds (issue 43): the driver looks the job's executor up in
EXECUTORS by name and builds it from an ExecutorSetup; an executor added to the table is an
engine of its own (``engine=NAME``) and is the one that runs the batches."""

from __future__ import annotations

import numpy as np
import pytest

from dptext import mechanism
from dptext.corpus import CorpusJob, run
from dptext.corpus.executors import EXECUTORS, Executor, InlineExecutor, engines
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError

WORDS = ["anna", "was", "seen", "today", "bob", "called", "back", "w1", "w2", "w3"]


class Counting(InlineExecutor):
    """The inline executor, counting the batches it ran and whether it was closed."""

    name = "test-counting"
    built = batches = closed = 0

    @classmethod
    def build(cls, setup):
        Counting.built += 1
        return super().build(setup)

    def map(self, tasks):
        for out in super().map(tasks):
            Counting.batches += 1
            yield out

    def close(self):
        Counting.closed += 1
        super().close()


@pytest.fixture
def custext():
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 6)).astype(np.float32),
                           name="executors-test")
    return mechanism("custext", epsilon=2, k=3, space=space)


def _job(custext, tmp_path, name, **kw):
    src = tmp_path / "in.txt"
    src.write_text("".join(f"anna was seen today {i}\nbob called back\n" for i in range(20)))
    return CorpusJob(custext, str(src), str(tmp_path / f"{name}.txt"), seed=3, batch_size=8,
                     **kw)


def test_a_registered_executor_is_an_engine_and_runs_the_batches(custext, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setitem(EXECUTORS, "test-counting", Counting)
    assert "test-counting" in engines() and "inline" not in engines()
    Counting.built = Counting.batches = Counting.closed = 0
    run(_job(custext, tmp_path, "counted", engine="test-counting"))
    run(_job(custext, tmp_path, "inline"))
    assert (Counting.built, Counting.batches, Counting.closed) == (1, 5, 1)
    assert (tmp_path / "counted.txt").read_bytes() == (tmp_path / "inline.txt").read_bytes()


def test_an_unknown_engine_is_refused_and_the_interface_is_abstract(custext, tmp_path):
    with pytest.raises(DPTextError, match="engine= must be one of local, ray"):
        run(_job(custext, tmp_path, "x", engine="nope"))

    class Half(Executor):
        name = "half"

        @classmethod
        def build(cls, setup):
            return cls()

    with pytest.raises(TypeError, match="abstract"):
        Half.build(None)
