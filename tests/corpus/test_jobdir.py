"""corpus/jobdir: the work directory's layout and reader, as the CLI and the service use it
on a real engine run (interrupted after its first shard, then continued to the end)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dptext
from dptext.corpus import CorpusJob, prepare
from dptext.corpus.jobdir import committed, finished, read_manifest, workdir_of
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError

WORDS = ["the", "patient", "was", "seen", "today", "nurse", "cough", "monday", "home", "went"]


class _Stop(Exception):
    pass


def test_an_interrupted_job_is_read_as_committed_then_finished(tmp_path):
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 8)).astype(np.float32))
    m = dptext.mechanism("custext", epsilon=2, k=3, space=space)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"the patient was seen today {i}"}) + "\n"
                           for i in range(40)))
    out = tmp_path / "out.jsonl"
    seen = []

    def stop_after_first(counts):
        seen.append(counts)
        raise _Stop

    job = dict(mechanism=m, input=str(src), output=str(out), batch_size=8, shard_records=8,
               seed=1)
    with pytest.raises(_Stop):
        prepare(CorpusJob(**job, on_commit=stop_after_first)).run()
    assert workdir_of(out) == tmp_path / "out.jsonl.partial"
    done = committed(out)
    assert done is not None and done.shards == 1
    assert done.records_in == seen[0]["records_in"] == 8 and done.records_out == 8
    assert not finished(out, f"{out}.report.json")
    prepare(CorpusJob(**job)).run()  # the same job continues to the end
    assert committed(out) is None and finished(out, f"{out}.report.json")
    assert len(out.read_text().splitlines()) == 40


def test_a_manifest_of_another_format_is_a_one_line_error(tmp_path):
    wd = workdir_of(tmp_path / "o.jsonl")
    wd.mkdir()
    assert read_manifest(wd) is None
    (wd / "manifest.json").write_text('{"format": 99}')
    with pytest.raises(DPTextError, match="another dptext version; remove"):
        committed(tmp_path / "o.jsonl")
