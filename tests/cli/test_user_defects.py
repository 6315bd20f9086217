"""The defects a careful user trips on (issue 37), each reproduced: these tests failed on the
code before the fix."""

from __future__ import annotations

import io
import json
import os
import re
import resource
import subprocess
import sys

import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main, parser

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

_ACCOUNT_UNDER_LIMIT = r"""
import contextlib, io, json, sys
from dptext.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main(argv)
    out.append([code, o.getvalue(), e.getvalue()])
print(json.dumps(out))
"""

_PLD_COMMANDS = [
    ("userdp", ["--q-u", "0.05", "--q-e", "0.5", "--q-s", "1.0", "--rounds", "500"], 3.0),
    ("uedp-naive", ["--q-u", "0.02", "--rounds", "300"], 8.0),
]


def _limit_memory():
    two_gb = 2 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (two_gb, two_gb))


def test_pld_calibration_answers_under_2gb_and_its_z_is_the_least_noise():
    """Item 1: both commands of the issue (24 GB, then the OOM killer, before) answer under a
    2 GB address-space limit; the printed z reaches the target under PLD, 0.2% less noise does
    not, and it is below the RDP calibration (PLD is the tighter accountant). A z far too small
    for the PLD's grid is refused in one line, not killed."""
    commands = [["account", "--algo", algo, *rest, "--delta", "1e-5", "--accountant", "pld",
                 "--target-epsilon", str(target)] for algo, rest, target in _PLD_COMMANDS]
    commands.append(["account", "--algo", "userdp", "--q-u", "0.05", "--rounds", "500",
                     "--delta", "1e-5", "--accountant", "pld", "--z", "0.01"])
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _ACCOUNT_UNDER_LIMIT, json.dumps(commands)],
                          capture_output=True, text=True, timeout=120, env=env,
                          preexec_fn=_limit_memory)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    for argv, (code, out, err) in zip(commands[:2], results[:2], strict=True):
        assert code == 0, err
        z = float(out.split("z = ")[1].split()[0])
        args = parser().parse_args(argv)  # the command's own defaults (q_e, q_s, K)
        privacy = TrainingPrivacy(args.algo, args.q_u, z, args.q_e, args.q_s, args.entity_users)
        rounds, target = args.rounds, args.target_epsilon
        assert privacy.epsilon(rounds, 1e-5, accountant="pld") <= target
        assert privacy.with_z(z * 0.998).epsilon(rounds, 1e-5, accountant="pld") > target
        # RDP, the looser accountant, needs at least this much noise: z <= the RDP calibration
        assert privacy.epsilon(rounds, 1e-5, accountant="rdp") >= target
    code, out, err = results[2]
    assert code == 2 and out == ""
    line, = err.strip().splitlines()
    assert line.startswith("dptext: error: PLD accounting at z = 0.01 over 500 rounds")
    assert "--accountant rdp" in line


def _dptext(args, **kw):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, **kw)


@pytest.mark.parametrize("flags", [[], ["--input", "-"]], ids=["no-input", "input-dash"])
def test_a_pipe_needs_no_output_flag_and_reports_briefly(flags):
    """Item 2: piped text with no --input, or --input - alone, is read from stdin and written
    to stdout (one line per line); stderr holds the short report, not the JSON summary."""
    proc = _dptext(["sanitize", "-m", "custext", "-e", "2", "--seed", "1", *flags],
                   input="Alice saw the doctor today.\nBob called about his dose.\n")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 2
    assert "Privacy report (custext)" in proc.stderr
    assert '"records_in"' not in proc.stderr and "{\n" not in proc.stderr


def test_sanitize_with_no_input_on_a_terminal_prints_the_usage(monkeypatch, capsys):
    """Item 2: a terminal on stdin and no input: the usage line and a one-line error."""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert main(["sanitize", "-m", "custext", "-e", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("usage: dptext sanitize")
    assert err[-1] == "dptext: error: no input: pipe text in, or give --input FILE or --text TEXT"


def test_readme_pipe_example_is_the_filter_form():
    """Item 2: README's pipe example needs no --input/--output (tests/project/test_readme.py runs
    it)."""
    from readme_blocks import readme_commands

    pipes = [c for c in readme_commands() if re.search(r"\|\s*dptext sanitize", c)]
    assert pipes
    for command in pipes:
        assert "--output" not in command and "-o " not in command and "--input" not in command


def _last_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("dptext: error:"), err
    return err[-1]


def test_a_misspelt_mechanism_option_gets_a_suggestion(capsys):
    """Item 3: `--epsilnon 2` names the option it was probably meant to be (difflib)."""
    assert main(["sanitize", "-m", "custext", "--epsilnon", "2", "--text", "hi"]) == 2
    line = _last_error(capsys)
    assert "unknown parameter 'epsilnon'" in line and "did you mean --epsilon?" in line
    from dptext.errors import DPTextError
    from dptext.mechanisms.registry import mechanism

    with pytest.raises(DPTextError, match=r"did you mean 'keep_case'\?"):
        mechanism("custext", epsilon=2, keep_cases=True)


@pytest.mark.parametrize("command", ["entities", "train"])
def test_a_file_without_the_text_field_names_text_field(command, tmp_path, capsys):
    """Item 3: `train` and `entities` on a file whose text is under another key say which
    fields it has and name --text-field."""
    data = tmp_path / "notes.jsonl"
    data.write_text('{"user": "u1", "body": "Alice saw Dr. Jones."}\n', encoding="utf-8")
    argv = {"entities": ["entities", str(data), "--no-progress"],
            "train": ["train", "--algo", "noiseless", "--rounds", "1", "--data", str(data),
                      "--output", str(tmp_path / "run")]}[command]
    assert main(argv) == 2
    line = _last_error(capsys)
    assert "record 1 has no 'text' field (its fields: user, body)" in line
    assert line.endswith("name the text field with --text-field")


def _every_option():
    """(command, parser, action) for every option of every command, subcommands included."""
    import argparse

    def walk(p, name):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from walk(child, f"{name} {sub}")
            elif action.help not in (None, argparse.SUPPRESS):
                yield name, p, action

    return list(walk(parser(), "dptext"))


def test_every_help_shows_each_default_once_from_the_parser():
    """Item 5: one source per default. Where an option has a default, --help shows it once,
    from the parser ("(default: X)"); the hand-written text never states it again (it drifted:
    "(default: 1; ...) (default: auto)", "(default 0.99) (default: 0.99)")."""
    import argparse

    from dptext.cli.common import DefaultsFormatter

    checked, wrong = 0, []
    for name, p, action in _every_option():
        shown = DefaultsFormatter(p.prog)._get_help_string(action)
        where = f"{name} {'/'.join(action.option_strings) or action.dest}: {shown!r}"
        if (action.default in (None, False, argparse.SUPPRESS) or not action.option_strings
                or "%(default)" in (action.help or "")):
            continue
        value = (",".join(map(str, action.default)) if isinstance(action.default, list | tuple)
                 else "%(default)s")
        own = action.help or ""
        if (not shown.endswith(f"(default: {value})") or "default" in own.lower()
                or f"({action.default})" in own):
            wrong.append(where)
        checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked > 50


def test_help_of_every_command_renders_with_defaults_once(capsys):
    """Item 5: the rendered --help of every command has no option with two defaults."""
    import argparse

    def parsers(p, name):
        yield name, p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from parsers(child, f"{name} {sub}")

    for name, p in parsers(parser(), "dptext"):
        text = " ".join(p.format_help().split())
        assert not re.search(r"\(default[^()]*\)\s*\(default", text), name


def test_workers_help_says_entity_mode_runs_in_one_process():
    """Item 9: --workers no longer promises what --entities refuses."""
    action = next(a for name, _, a in _every_option()
                  if name == "dptext sanitize" and "--workers" in a.option_strings)
    assert "--entities" in action.help and "one process" in action.help


def test_an_interrupted_evaluation_says_what_is_kept(monkeypatch, tmp_path, capsys):
    """Item 9: ^C during `evaluate` says how many finished cells are kept and that a rerun
    resumes (it said "no partial output was written" although the grid resumes from them)."""
    import dptext.evaluation.grid as grid
    from dptext.evaluation.store import CellStore

    def interrupted(config, out, **kw):
        from pathlib import Path

        Path(out).mkdir(parents=True, exist_ok=True)
        store = CellStore(Path(out) / "cells.jsonl")
        store.add({"key": "a", "status": "ok"})
        store.add({"key": "b", "status": "ok"})
        raise KeyboardInterrupt

    monkeypatch.setattr(grid, "run_grid", interrupted)
    out = tmp_path / "grid"
    code = main(["evaluate", "--mechanisms", "custext", "--epsilons", "1", "--out", str(out),
                 "--no-progress"])
    assert code == 130
    err = capsys.readouterr().err
    assert "no partial output" not in err
    assert (f"dptext: interrupted; 2 finished cells are kept in {out / 'cells.jsonl'}"
            in err) and "run the same command again to resume" in err


def test_audit_says_what_each_draw_count_is_for():
    """Item 7: "2000 draws per input" then "188/1000 draws of x": the summary says how the
    draws split (rank / choose E / estimate) and each test's counts are the estimation draws."""
    import numpy as np

    import dptext
    from dptext.audit import audit
    from dptext.embeddings import EmbeddingSpace

    rng = np.random.default_rng(3)
    space = EmbeddingSpace([f"w{i:03d}" for i in range(30)],
                           rng.standard_normal((30, 2)).astype(np.float32), name="tiny37")
    m = dptext.mechanism("custext", epsilon=2.0, space=space, k=5).fit(cache=False)
    r = audit(m, samples=2000, seed=1)
    text = r.summary()
    assert "2000 draws per input (500 rank the outputs, 500 choose the event E, 1000 estimate " \
           "the bound)" in text
    tests = [line for line in text.splitlines() if " in E; " in line]
    assert tests and all("/1000 estimation draws of x and " in line for line in tests)
    assert all(t.n_x == 1000 and t.n_x_prime == 1000 for t in r.tests)


_FAKE_BUILD = r"""
import shutil, sys, time
from pathlib import Path
from dptext import cache

target, seconds, every = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
with cache.build_lock(target, "the fake model", report_every=every):
    if not target.is_dir():
        tmp = target.with_name(f".{target.name}.build")
        try:
            tmp.mkdir()
            (tmp / "part").write_text("half", encoding="utf-8")
            print("building", flush=True)
            time.sleep(seconds)
            (tmp / "done").write_text(sys.argv[4], encoding="utf-8")
            cache.publish_dir(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
print("built", flush=True)
"""


def test_sigterm_stops_a_build_at_once_and_the_waiter_says_what_it_waits_for(tmp_path):
    """Item 8: a second process waiting on a build lock says for whom, for what and how long
    it has waited; SIGTERM stops the builder at once, its half-written temporary is removed and
    the lock released, so the waiter builds the entry itself (a fake slow build, no model)."""
    import signal
    import time

    env = dict(os.environ, DPTEXT_CACHE=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    target = tmp_path / "cache" / "models" / "fake-v1"
    target.parent.mkdir(parents=True)

    def build(seconds, every, mark, **kw):
        return subprocess.Popen([sys.executable, "-c", _FAKE_BUILD, str(target), str(seconds),
                                 str(every), mark], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)

    first = build(300, 15, "first")
    import threading

    watchdog = threading.Timer(120, first.kill)  # a waiter that never reports cannot hang us
    watchdog.start()
    try:
        assert first.stdout.readline() == "building\n", first.stderr.read()
        second = build(0, 0.5, "second")
        deadline = time.monotonic() + 60
        waited = []
        while time.monotonic() < deadline:  # until the waiter has said how long it waited
            line = second.stderr.readline()
            waited.append(line)
            if "so far" in line:
                break
        first.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        first.wait(timeout=30)
        took = time.monotonic() - stopped
    finally:
        watchdog.cancel()
        first.kill()
    out, err = second.communicate(timeout=60)
    assert took < 10, took
    assert first.returncode != 0
    assert second.returncode == 0 and out == "building\nbuilt\n", err
    assert waited[0].strip() == (f"dptext: waiting for process {first.pid} (building for "
                                 f"{waited[0].split('building for ')[1].split(' s)')[0]} s) "
                                 f"to finish building the fake model")
    assert re.fullmatch(rf"dptext: still waiting for process {first.pid} \(building for \d+ s\) "
                        r"to finish building the fake model: waited \d+ s so far",
                        waited[-1].strip()), waited
    assert (target / "done").read_text(encoding="utf-8") == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["fake-v1"]  # no temporary
    assert not list((tmp_path / "cache" / ".locks").glob("*.owner"))


def test_a_killed_builders_temporary_is_removed_by_the_next_build(tmp_path, monkeypatch):
    """Item 8: SIGKILL leaves a temporary no handler can remove: the next holder of the lock
    removes it before building (nobody else can be writing it)."""
    from dptext import cache

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    target = tmp_path / "models" / "fake-v1"
    orphan = target.with_name(f".{target.name}.abc123")
    orphan.mkdir(parents=True)
    (orphan / "model.safetensors").write_bytes(b"half")
    with cache.build_lock(target, "the fake model"):
        assert not orphan.exists()


def test_ledger_spent_and_verify_count_the_same_units(tmp_path, capsys):
    """Item 6: a unit is a person with a record in the ledger, charged or withheld; `spent`
    said 586 units and `verify` 585 on one ledger (the person whose only record was withheld)."""
    from dptext.accounting.events import PrivacyEvent
    from dptext.ledger import Ledger

    path = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", "--ledger", path]) == 0
    assert main(["ledger", "budget", "--ledger", path, "--owner", "clinic", "--dataset",
                 "notes", "--epsilon", "5"]) == 0
    ledger = Ledger(path)
    rid = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext",
                              params={"epsilon": 1})
    small, large = [PrivacyEvent("pure", 2.0)], [PrivacyEvent("pure", 6.0)]
    ds = ledger.reserve(rid, [("n1", "Ada", small), ("n2", "Alan", small),
                              ("n3", "Grace", large)])  # Grace's only record: withheld
    assert [d.charge_id is None for d in ds] == [False, False, True]
    ledger.commit(rid, [d.charge_id for d in ds if d.charge_id is not None])
    ledger.close()
    capsys.readouterr()
    assert main(["ledger", "spent", "--ledger", path, "--json"]) == 0
    spent = json.loads(capsys.readouterr().out)
    assert main(["ledger", "verify", "--ledger", path]) == 0
    verified = capsys.readouterr().out
    assert spent["units"] == 3 and spent["withheld"] == 1
    assert "3 units" in verified


def test_evaluate_asks_for_a_label_only_where_a_metric_uses_it(tmp_path, monkeypatch):
    """Item 4: `--metrics cost,deniability` on a file without `label` runs (it failed with
    "no column 'label'"), the report gives the split sizes used (it said n_train=1000,
    n_test=500 for a 200-record file), and `utility` still asks for the label in one line."""
    import numpy as np

    from dptext.embeddings import EmbeddingSpace

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    words = [f"w{i:03d}" for i in range(40)]
    space = EmbeddingSpace(words, np.random.default_rng(5).standard_normal((40, 3)),
                           name="eval37")
    space.save(tmp_path / "space.npz")
    rng = np.random.default_rng(1)
    data = tmp_path / "notes.jsonl"
    data.write_text("".join(json.dumps({"text": " ".join(rng.choice(words, 6))}) + "\n"
                            for _ in range(200)), encoding="utf-8")
    base = ["evaluate", "--data", str(data), "--mechanisms", "custext", "--epsilons", "2",
            "--space", str(tmp_path / "space.npz"), "--no-baselines", "--no-progress",
            "--deniability-words", "5", "--deniability-runs", "10", "--encoder", "hashing"]
    out = tmp_path / "grid"
    assert main([*base, "--metrics", "cost,deniability", "--out", str(out)]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "n_train=160 (of 1000 asked)" in report and "n_test=40 (of 500 asked)" in report
    assert main([*base, "--metrics", "utility", "--out", str(tmp_path / "u")]) == 2
