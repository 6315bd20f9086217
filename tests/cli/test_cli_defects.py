"""The user-facing defects of the CLI/structure issue, each reproduced (these failed before the
fix): abbreviations, silent defaults, bad values with tracebacks, train checks and hints,
evaluate on a user file, entity spans, the cache commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main, parser
from dptext.errors import DPTextError
from dptext.training.run import DivergenceGuard, TrainJob, wide_entities
from dptext.training.trainer import TrainConfig


def _one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err and err[-1].startswith("dptext: error:"), err
    return err[-1]


def test_no_option_abbreviations_anywhere():
    """`--p 0.3` must never be read as `--param`: abbreviations are off in every parser."""
    p = parser()
    assert p.allow_abbrev is False
    sub = next(a for a in p._actions if a.dest == "command")
    for name, child in sub.choices.items():
        assert child.allow_abbrev is False, name


def test_p_is_a_mechanism_parameter_not_param(capsys):
    code = main(["sanitize", "-m", "custext", "-e", "2", "--p", "0.3", "--text", "hi"])
    assert "unknown parameter 'p' for mechanism 'custext'" in _one_line_error(capsys, code)


def test_a_parameter_given_twice_is_an_error(capsys):
    code = main(["sanitize", "-m", "custext", "--k", "5", "-p", "k=7", "--text", "hi"])
    assert "given twice" in _one_line_error(capsys, code)
    code = main(["sanitize", "-m", "custext", "--k", "5", "--k", "7", "--text", "hi"])
    assert "given twice" in _one_line_error(capsys, code)


@pytest.mark.slow
def test_k_above_the_vocabulary_is_a_one_line_error(capsys):
    code = main(["sanitize", "-m", "custext", "--k", "50000", "-e", "2", "--text", "hi",
                 "--no-progress"])
    assert "k must be <= the vocabulary size" in _one_line_error(capsys, code)


def test_stopwords_as_a_string_is_a_one_line_error(capsys):
    code = main(["sanitize", "-m", "custext+", "-p", "stopwords=foo", "-e", "2", "--text", "hi"])
    assert "stopwords must be a list of words" in _one_line_error(capsys, code)


@pytest.mark.parametrize("z", ["0", "-1", "nan", "inf"])
def test_account_refuses_a_zero_or_bad_noise_multiplier(capsys, z):
    with pytest.raises(SystemExit) as exit_:
        main(["account", "--algo", "uedp", "--z", z, "--rounds", "5"])
    assert exit_.value.code == 2
    assert "--z" in capsys.readouterr().err


def test_help_shows_defaults_and_version(capsys):
    with pytest.raises(SystemExit):
        main(["sanitize", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # independent of the terminal's width
    assert "(default: custext)" in out and "(default: text)" in out
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("dptext ")


def test_default_epsilon_is_said(capsys, tmp_path):
    from dptext.embeddings import EmbeddingSpace

    space = EmbeddingSpace(["cat", "dog", "cow"], np.eye(3, dtype=np.float32), name="toy")
    path = tmp_path / "toy.npz"
    space.save(path)
    assert main(["sanitize", "-m", "custext", "--k", "2", "--space", str(path),
                 "--text", "cat", "--no-progress"]) == 0
    assert "ran at its default epsilon 2" in capsys.readouterr().err


def test_cache_list_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    (tmp_path / "fitted").mkdir()
    (tmp_path / "fitted" / "custext-abc.npz").write_bytes(b"x" * 100)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m").mkdir()
    (tmp_path / "models" / "m" / "w.bin").write_bytes(b"y" * 50)
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "fitted" in out and "models" in out and "2 entries" in out
    assert main(["cache", "clear"]) == 2  # needs --all or --kind
    capsys.readouterr()
    assert main(["cache", "clear", "--kind", "fitted"]) == 0
    assert not (tmp_path / "fitted" / "custext-abc.npz").exists()
    assert (tmp_path / "models" / "m" / "w.bin").exists()
    assert main(["cache", "clear", "--all"]) == 0
    assert not (tmp_path / "models" / "m").exists()


# ---------------------------------------------------------------- train
def test_train_validates_every_argument_before_reading_data(tmp_path, capsys, monkeypatch):
    """A private run without --z/--epsilon fails at once, before entity detection."""
    import dptext.training.run as run

    def boom(*a, **k):
        raise AssertionError("data was read before the arguments were checked")

    monkeypatch.setattr(run, "load_corpus", boom)
    data = tmp_path / "d.jsonl"
    data.write_text('{"user": "u", "text": "hi there"}\n')
    code = main(["train", "--algo", "uedp", "--data", str(data), "--rounds", "2",
                 "--output", str(tmp_path / "out")])
    assert "--epsilon" in _one_line_error(capsys, code)
    code = main(["train", "--algo", "uedp", "--data", str(data), "--rounds", "2", "--z", "1",
                 "--local-lr", "0", "--output", str(tmp_path / "out")])
    assert "--local-lr" in _one_line_error(capsys, code)
    code = main(["train", "--algo", "noiseless", "--data", str(tmp_path / "missing.jsonl"),
                 "--rounds", "2", "--output", str(tmp_path / "out")])
    assert "no such file" in _one_line_error(capsys, code)


def test_train_creates_its_output_directory(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"user": f"u{i % 4}", "text": "The dog ran home. "
                                         "It was late."}) + "\n" for i in range(12)))
    out = tmp_path / "new" / "dir"
    summary = TrainJob(algo="noiseless", data=str(data), rounds=1, vocab_size=50, max_len=8,
                       q_u=1.0).run(out)
    assert (out / "metrics.json").is_file() and (out / "checkpoint.pt").is_file()
    assert summary["rounds"][0]["round"] == 1


def test_divergence_stops_with_the_likely_cause():
    config = TrainConfig(algo="uedp", z=1.0, beta=0.5, q_u=0.1)
    guard = DivergenceGuard(config)
    guard.check({"round": 1, "loss": math.log(5.8e3)})
    with pytest.raises(DPTextError, match="noise .* swamps the clipped signal"):
        guard.check({"round": 5, "loss": math.log(1.2e9)})
    plain = DivergenceGuard(TrainConfig(algo="noiseless"))
    plain.check({"round": 1, "loss": 2.0})
    with pytest.raises(DPTextError, match="learning rate"):
        plain.check({"round": 2, "loss": float("nan")})
    fine = DivergenceGuard(config)
    for t, loss in enumerate([8.0, 7.5, 9.0, 7.0], start=1):
        fine.check({"round": t, "loss": loss})  # noise, not divergence


def test_wide_entity_hint_gives_the_epsilon_that_holds():
    """The run's noise std is z*beta*S_K; for entities held by M > K users the multiplier is
    z*S_K/S_M - much larger epsilon than for K (the old hint printed the same 7.99)."""

    class Corpus:
        def entity_users(self):
            return np.array([1, 1, 25])

    config = TrainConfig(algo="uedp", z=1.0, q_u=0.05, q_e=0.5, q_s=1.0, entity_users=1,
                         rounds=200, population=1000)  # public: no count release
    out = wide_entities(Corpus(), config)
    assert out["entities_held_by_more_than_K_users"] == 1
    wide = out["wide_entities"]
    k1 = TrainingPrivacy("uedp", 0.05, 1.0, 0.5, 1.0, 1)
    k25 = TrainingPrivacy("uedp", 0.05, 1.0, 0.5, 1.0, 25)
    assert wide["noise_multiplier"] == pytest.approx(k1.sensitivity_factor
                                                     / k25.sensitivity_factor)
    expected = k25.with_z(wide["noise_multiplier"]).epsilon(200, 1e-5)
    assert wide["epsilon"] == pytest.approx(expected)
    assert wide["epsilon"] > 5 * k1.epsilon(200, 1e-5)
    assert f"{expected:.4g}" in wide["note"]


# ------------------------------------------------------------ evaluate/entities
def test_evaluate_runs_on_the_users_own_file(tmp_path, capsys):
    data = tmp_path / "mine.csv"
    rows = ["text,label"] + [f'"the film was {w} and {v}",{y}' for w, v, y in
                             [("good", "fun", "pos"), ("bad", "dull", "neg")] * 10]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "res"
    code = main(["evaluate", "--mechanisms", "custext", "--epsilons", "2", "--data", str(data),
                 "--metrics", "cost", "--encoder", "hashing", "--no-baselines",
                 "--out", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    records = json.loads((out / "results.json").read_text())
    assert records and records[0]["status"] == "ok"
    assert json.loads((out / "config.json").read_text())["config"]["data_file"] == str(data)


def test_evaluate_refuses_a_missing_user_file(tmp_path, capsys):
    code = main(["evaluate", "--mechanisms", "custext", "--epsilons", "2",
                 "--data", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")])
    assert "no such file" in _one_line_error(capsys, code)


@pytest.mark.slow
def test_entities_writes_spans(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"user": "u1", "text": "Alice Smith flew to Paris."}) + "\n")
    spans = tmp_path / "spans.jsonl"
    assert main(["entities", str(data), "--spans", str(spans), "--no-progress"]) == 0
    lines = [json.loads(line) for line in spans.read_text().splitlines()]
    found = {(s["text"], s["category"]) for s in lines[0]["spans"]}
    assert ("Alice Smith", "PERSON") in found
    for s in lines[0]["spans"]:
        assert lines[0]["text"][s["start"]:s["end"]] == s["text"]
