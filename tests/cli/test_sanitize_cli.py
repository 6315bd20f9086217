"""``dptext sanitize`` on files: several fields, stdin/stdout, path refusals checked before any
work, SIGTERM, temporaries of killed runs, record size limit (issues 10 and 12)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from dptext.embeddings import EmbeddingSpace
from dptext.text import split_words

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sanitize-cli")
    rng = np.random.default_rng(3)
    words = WORDS + [f"word{i}" for i in range(290)]
    space = EmbeddingSpace(words, rng.standard_normal((300, 8)), name="tiny")
    space.geometry(32)
    space.save(root / "space.npz")
    (root / "cache").mkdir()
    return root


def dptext(work: Path, *args: str, stdin: str | None = None, space: bool = True,
           **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "dptext.cli", "sanitize", *args]
    if space:
        cmd += ["--space", str(work / "space.npz"), "--no-progress"]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                          input=stdin, encoding="utf-8", timeout=300, **popen)


def words_of(text: str) -> list[str]:
    return split_words(text)[1::2]


def one_line_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("dptext: error: "), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


NOTES = [("1", "alice met bob in paris", "alice"), ("2", "the dog and the city", "bob"),
         ("3", "bob met the river dog", "alice")]


def _setup(w: Path) -> dict:
    with open(w / "notes.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "note", "patient"])
        writer.writerows(NOTES)
    (w / "same.txt").write_text("alice met bob\n", encoding="utf-8")
    (w / "keep.txt").write_text("previous\n", encoding="utf-8")
    if not (w / "link.txt").exists():
        os.symlink("same.txt", w / "link.txt")
        os.link(w / "same.txt", w / "hard.txt")
        # stand-ins for /dev/stdout (a link to a device) and a FIFO: were a regression to
        # rename over them, it would replace these, never the system's files
        os.symlink("/dev/null", w / "stdout-link")
        os.mkfifo(w / "fifo")
    (w / "long.txt").write_text("alice\n" + "paris " * 400 + "\n", encoding="utf-8")
    s = ("--seed", "1")
    return {
        "two_fields": ("-i", "notes.csv", "-f", "note", "-f", "patient", "--keep", "id", "-o",
                       "two.csv", *s),
        "comma_fields": ("-i", "notes.csv", "-f", "note,patient", "--keep", "id", "-o",
                         "comma.csv", *s),
        "field_twice": ("-i", "notes.csv", "-f", "note", "-f", "note", "-o", "t.csv"),
        "output_twice": ("-i", "same.txt", "-o", "a.txt", "-o", "b.txt"),
        "dev_stdout": ("-i", "same.txt", "-o", "stdout-link"),
        "fifo": ("-i", "same.txt", "-o", "fifo"),
        "same_file": ("-i", "same.txt", "-o", "./same.txt"),
        "symlink": ("-i", "same.txt", "-o", "link.txt"),
        "hard_link": ("-i", "same.txt", "-o", "hard.txt"),
        "report_is_output": ("-i", "same.txt", "-o", "keep.txt", "--report", "keep.txt"),
        "report_dir_missing": ("-i", "same.txt", "-o", "r.txt", "--report", "nodir/r.json"),
        "suffix_mismatch": ("-i", "notes.csv", "-f", "note", "-o", "x.jsonl"),
        "too_long": ("-i", "long.txt", "-o", "long.out", "--max-record-bytes", "1000"),
        "too_long_skip": ("-i", "long.txt", "-o", "skip.out", "--max-record-bytes", "1000",
                          "--on-error", "skip"),
        "resume_nothing": ("-i", "same.txt", "-o", "fresh.txt", "--resume"),
    }


@pytest.fixture(scope="module")
def runs(work: Path) -> dict:
    cases = _setup(work)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(dptext, work, *a) for k, a in cases.items()}
        futures["stdio"] = pool.submit(dptext, work, "-i", "-", "-o", "-", "--seed", "2",
                                       "--report", "stdio.report.json",
                                       stdin="alice met bob\nin paris\n")
        return {k: f.result() for k, f in futures.items()}


def _csv(path: Path) -> list[list[str]]:
    return list(csv.reader(open(path, newline="", encoding="utf-8")))


@pytest.mark.parametrize("case,out", [("two_fields", "two.csv"), ("comma_fields", "comma.csv")])
def test_every_field_given_is_privatized(work, runs, case, out):
    r = runs[case]
    assert r.returncode == 0, r.stderr
    rows = _csv(work / out)
    assert rows[0] == ["id", "note", "patient"] and [x[0] for x in rows[1:]] == ["1", "2", "3"]
    report = json.loads((work / f"{out}.report.json").read_text())
    assert report["fields"]["note"]["tokens_privatized"] == 15
    assert report["fields"]["patient"]["tokens_privatized"] == 3
    assert report["tokens_privatized"] == 18 and report["records"] == 3
    # no column is released verbatim: 'alice bob alice' surviving 3 draws at eps 2 over a
    # set of 20 is below 1% (each kept w.p. e^2/(e^2+19) = 0.28)
    assert [x[2] for x in rows[1:]] != ["alice", "bob", "alice"]
    assert [x[1] for x in rows[1:]] != [n for _, n, _ in NOTES]
    assert _csv(work / "two.csv") == _csv(work / "comma.csv")  # same seed, same fields


ERRORS = [
    ("field_twice", ("'note' given twice",)),
    ("output_twice", ("--output", "given twice")),
    ("dev_stdout", ("stdout-link", "symbolic link", "use - for stdout")),
    ("fifo", ("fifo", "a FIFO")),
    ("same_file", ("is the input",)),
    ("symlink", ("link.txt",)),
    ("hard_link", ("hard.txt", "is the input")),
    ("report_is_output", ("--output and --report are the same file",)),
    ("report_dir_missing", ("output directory does not exist", "nodir")),
    ("suffix_mismatch", ("names jsonl but the input is csv", "--output-format jsonl")),
    ("too_long", ("long.txt", "line 2", "--max-record-bytes 1000")),
    ("resume_nothing", ("--resume", "no interrupted run")),
]


@pytest.mark.parametrize("case,needles", ERRORS, ids=[c for c, _ in ERRORS])
def test_refusals_are_one_line(runs, case, needles):
    one_line_error(runs[case], *needles)


def test_refusals_wrote_nothing(work, runs):
    assert os.path.islink(work / "stdout-link") and (work / "fifo").is_fifo()
    assert (work / "same.txt").read_text() == "alice met bob\n"
    assert (work / "keep.txt").read_text() == "previous\n"
    assert os.path.islink(work / "link.txt")
    for name in ("t.csv", "a.txt", "b.txt", "r.txt", "x.jsonl", "long.out", "fresh.txt"):
        assert not (work / name).exists(), name
        assert not (work / f"{name}.report.json").exists(), name
        assert not (work / f"{name}.partial").exists(), name
    assert not [p.name for p in work.iterdir() if p.name.endswith(".tmp")]


def test_too_long_record_skipped_into_rejects(work, runs):
    r = runs["too_long_skip"]
    assert r.returncode == 0, r.stderr
    assert (work / "skip.out").read_text().count("\n") == 1
    rejects = [json.loads(x) for x in (work / "skip.out.rejects.jsonl").read_text()
               .splitlines()]
    assert [x["line"] for x in rejects] == [2] and "--max-record-bytes" in rejects[0]["reason"]
    assert "1 records rejected" in r.stderr


def test_stdin_to_stdout_with_the_json_report_where_asked(work, runs):
    # stderr holds the short summary; the JSON report goes to --report FILE (issue 37 item 2)
    r = runs["stdio"]
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and [len(words_of(x)) for x in lines] == [3, 2]
    assert "Privacy report" in r.stderr and "\"records\"" not in r.stderr
    report = json.loads((work / "stdio.report.json").read_text())
    assert report["records"] == 2 and report["tokens_privatized"] == 5


def test_sigterm_is_handled_like_sigint_and_the_run_continues(work):
    lines = [" ".join(WORDS[(i + j) % 10] for j in range(6)) for i in range(12_000)]
    (work / "big.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["-i", "big.txt", "--seed", "4", "--shard-size", "500", "--batch-size", "100"]
    ref = dptext(work, *args, "-o", "ref.txt")
    assert ref.returncode == 0, ref.stderr
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "dptext.cli", "sanitize", *args, "-o", "big.out", "--space",
           str(work / "space.npz"), "--no-progress"]
    p = subprocess.Popen(cmd, cwd=work, env=env, stderr=subprocess.PIPE, text=True)
    manifest = work / "big.out.partial" / "manifest.json"
    deadline = time.monotonic() + 120
    while not manifest.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=120)[1]
    if p.returncode == 0:
        pytest.skip("the run finished before SIGTERM arrived (machine too fast)")
    assert p.returncode == 143, err
    assert "terminated" in err and "run the same command again to continue" in err
    assert "Traceback" not in err
    assert not (work / "big.out").exists()
    assert not [x.name for x in work.iterdir() if x.name.endswith(".tmp")]
    again = dptext(work, *args, "-o", "big.out")
    assert again.returncode == 0, again.stderr
    assert "continued an interrupted run" in again.stderr
    assert (work / "big.out").read_bytes() == (work / "ref.txt").read_bytes()


def test_temporaries_of_killed_runs_are_removed(work):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = work / f".stale.txt.dptext-{dead.pid}.tmp"
    stale.write_text("sanitized records of a killed run")
    mine = work / f".stale.txt.dptext-{os.getpid()}.tmp"  # a live process: kept
    mine.write_text("in use")
    r = dptext(work, "-i", "same.txt", "-o", "stale.txt")
    assert r.returncode == 0, r.stderr
    assert not stale.exists() and mine.exists()
    mine.unlink()


def _auto_args(tmp_path, mechanism="dpmlm", lines=40, **kw):
    import argparse

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"note {i}"}) + "\n" for i in range(lines)))
    base = dict(workers="auto", mechanism=mechanism, engine="local", entities=None,
                torch_threads=1, input=path, batch_size=None)
    return argparse.Namespace(**{**base, **kw})


@pytest.mark.parametrize("free, kw, want", [
    (2, {}, 2),                                   # a language model, a long file, 2 free cores
    (1, {}, 1),                                   # only one core free
    (2, {"mechanism": "custext"}, 1),             # word mechanisms: one process
    (2, {"lines": 32}, 1),                        # not more than two batches of 16
    (2, {"lines": 32, "batch_size": 8}, 2),       # ... but more than two batches of 8
    (2, {"torch_threads": 2}, 1),                 # the user asked for threads, not processes
    (2, {"engine": "ray"}, 1),
    (2, {"entities": "PERSON"}, 1),               # targeted runs in one process
    (2, {"input": "-"}, 1),                       # stdin: the length is not known
    (2, {"workers": 3}, 3),                       # an explicit count is kept
])
def test_workers_auto(tmp_path, monkeypatch, free, kw, want):
    import dptext.lm.threads as threads
    from dptext.cli.sanitize import resolve_workers

    monkeypatch.setattr(threads, "free_cores", lambda interval=0: free)
    lines = kw.pop("lines", 40)
    assert resolve_workers(_auto_args(tmp_path, lines=lines, **kw)) == want


def test_workers_must_be_a_count_or_auto(work):
    r = dptext(work, "--input", "x.jsonl", "--output", "y.jsonl", "--workers", "two")
    assert r.returncode == 2 and "expected an integer, got 'two'" in r.stderr
