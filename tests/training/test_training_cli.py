"""End to end on a tiny corpus: dptext entities, account, train (UeDP and baselines)."""

import json

import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main
from dptext.training.trainer import COUNT_Z

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

TEXTS = [
    "Alice Smith moved to Boston last year. She likes the city and the people.",
    "The weather is good today. I will walk to the park with my dog.",
    "Microsoft hired Bob Jones in London. He works on new products.",
    "We had dinner at home. The food was very good and the time was nice.",
]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "users.jsonl"
    rows = [{"user": f"u{i}", "text": TEXTS[(i + j) % 4], "label": "ab"[(i + j) % 4 // 2]}
            for i in range(12) for j in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_entities_command(corpus_file, capsys):
    assert main(["entities", str(corpus_file), "--categories", "PERSON", "GPE", "ORG"]) == 0
    out = capsys.readouterr().out
    assert "users 12" in out and "PERSON" in out and "GPE" in out
    assert "sensitive sentences" in out


def test_account_command_prints_the_library_epsilon(capsys):
    assert main(["account", "--algo", "uedp", "--q-u", "0.05", "--q-e", "0.5", "--q-s", "1",
                 "--z", "2", "--rounds", "100", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    eps = TrainingPrivacy("uedp", 0.05, 2.0, 0.5, 1.0).epsilon(100, 1e-5)
    assert f"epsilon = {eps:.4f}" in out


def test_account_calibrates_z(capsys):
    assert main(["account", "--algo", "userdp", "--q-u", "0.1", "--target-epsilon", "1.5",
                 "--rounds", "50"]) == 0
    out = capsys.readouterr().out
    z = float(out.split("z = ")[1].split()[0])
    assert TrainingPrivacy("userdp", 0.1, z).epsilon(50, 1e-5) <= 1.5 + 1e-9


def test_account_rejects_missing_noise(capsys):
    assert main(["account", "--algo", "uedp", "--rounds", "10"]) == 2


@pytest.mark.parametrize("algo,extra", [("uedp", ["--z", "1.0"]), ("deid", [])])
def test_train_writes_metrics_and_checkpoint(corpus_file, tmp_path, algo, extra):
    out = tmp_path / algo
    out.mkdir()
    argv = ["train", "--algo", algo, "--task", "nwp", "--data", str(corpus_file),
            "--output", str(out), "--rounds", "2", "--q-u", "0.5", "--vocab-size", "300",
            "--max-len", "12",
            "--seed", "0", "--no-progress", "--categories", "PERSON", "GPE", "ORG", *extra]
    assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    rounds = metrics["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(r["perplexity"] > 1 for r in rounds)
    if algo == "uedp":
        # no --population: the user count is released with noise and charged (COUNT_Z)
        p = TrainingPrivacy("uedp", 0.5, 1.0, 0.5, 1.0, count_z=COUNT_Z)
        assert rounds[-1]["epsilon"] == pytest.approx(p.epsilon(2, 1e-5))
        assert rounds[0]["epsilon"] < rounds[-1]["epsilon"]
    else:
        assert rounds[-1]["epsilon"] is None
    assert (out / "checkpoint.pt").stat().st_size > 0


def test_train_classification_with_minilm(corpus_file, tmp_path):
    argv = ["train", "--algo", "userdp", "--task", "cls", "--data", str(corpus_file),
            "--output", str(tmp_path), "--rounds", "2", "--q-u", "0.5", "--z", "0.5",
            "--seed", "0", "--no-progress", "--local-lr", "5"]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["task"] == "cls"
    last = metrics["rounds"][-1]
    assert 0.0 <= last["error_rate"] <= 1.0
    assert last["epsilon"] == pytest.approx(
        TrainingPrivacy("userdp", 0.5, 0.5, count_z=COUNT_Z).epsilon(2, 1e-5))


def test_train_cls_needs_labels(tmp_path, capsys):
    data = tmp_path / "nolabel.jsonl"
    data.write_text(json.dumps({"user": "a", "text": "Hello there."}) + "\n")
    assert main(["train", "--algo", "noiseless", "--task", "cls", "--data", str(data),
                 "--output", str(tmp_path), "--rounds", "1", "--no-progress"]) == 2
    assert "needs a label" in capsys.readouterr().err


def test_label_field_names_the_class(tmp_path, capsys):
    from dptext.training.run import TrainJob, load_corpus

    data = tmp_path / "kinds.jsonl"
    records = [{"user": u, "text": f"Note {i} of {u}.", "kind": k}
               for i, (u, k) in enumerate([("a", "visit"), ("a", "review"), ("b", "visit")])]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    # without --label-field the classes are looked up in 'label', which these records lack
    assert main(["train", "--algo", "noiseless", "--task", "cls", "--data", str(data),
                 "--output", str(tmp_path / "out"), "--rounds", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'label'" in err and "--label-field" in err
    job = TrainJob(algo="noiseless", data=str(data), rounds=1, task="cls", label_field="kind")
    corpus, _ = load_corpus(job, split=False, seed=0)
    assert list(corpus.labels) == ["visit", "review", "visit"]
    assert load_corpus(TrainJob(algo="noiseless", data=str(data), rounds=1, task="cls"),
                       split=False, seed=0)[0].labels is None


def test_train_says_each_stage_and_round_with_elapsed_and_expected_time(corpus_file, tmp_path,
                                                                        capsys):
    """Issue 45: nothing silent for minutes - a line per stage before the rounds and per round
    with the time elapsed and the time the remaining rounds should take; the result line names
    the unit field, the epsilon at delta 1e-5 and at the run's delta, and what is not
    covered."""
    argv = ["train", "--algo", "userdp", "--data", str(corpus_file), "--output",
            str(tmp_path / "o"), "--rounds", "3", "--q-u", "0.5", "--z", "1", "--delta", "1e-8",
            "--vocab-size", "300", "--max-len", "10", "--seed", "0", "--population", "12"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.startswith("dptext: ")]
    assert err[0].startswith(f"dptext: reading {corpus_file}")
    assert any("evaluating the untrained model on" in line for line in err)
    assert any(line.startswith("dptext: training rounds 1-3 (") for line in err)
    rounds = [line for line in err if line.startswith("dptext: round ")]
    assert [r.split(":")[1].strip() for r in rounds] == ["round 1/3", "round 2/3", "round 3/3"]
    assert all(" elapsed" in r for r in rounds)
    assert "to go" in rounds[0] and "to go" in rounds[1] and rounds[2].endswith(", done")
    headline = captured.out.strip().splitlines()[-1]
    p = TrainingPrivacy("userdp", 0.5, 1.0)  # --population 12: public, no count release
    assert (f"epsilon {p.epsilon(3, 1e-5):.4g} at delta 1e-05 / {p.epsilon(3, 1e-8):.4g} at "
            f"delta 1e-08 per user") in headline
    assert "unit: the value of the field 'user'" in headline
    assert "not covered: an entity" in headline
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert metrics["denominator_units"] == {"value": 12.0, "source": "public (--population)"}
    assert metrics["epsilon_at_delta"] == [[1e-5, pytest.approx(p.epsilon(3, 1e-5))],
                                           [1e-8, pytest.approx(p.epsilon(3, 1e-8))]]


def test_no_progress_keeps_stderr_quiet(corpus_file, tmp_path, capsys):
    argv = ["train", "--algo", "noiseless", "--data", str(corpus_file), "--output",
            str(tmp_path / "o"), "--rounds", "1", "--vocab-size", "300", "--max-len", "10",
            "--seed", "0", "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    # the result's warning is not progress: it stays
    assert [line for line in err if not line.startswith("dptext: warning:")] == []


def test_round_line_expects_the_remaining_rounds_at_the_mean_so_far():
    from dptext.cli.train import round_line

    row = {"round": 3, "loss": 2.5, "epsilon": 1.25}
    # a resumed run: rounds 2 and 3 ran in this session, 100 s for the two
    line = round_line(row, 10, 100.0, 2)
    assert line == ("dptext: round 3/10: loss 2.5, epsilon 1.250; 1 min 40 s elapsed, about "
                    "5 min 50 s to go")
    assert round_line({"round": 10, "loss": 1.0, "epsilon": None}, 10, 7200.0, 10).endswith(
        "2 h 00 min elapsed, done")


def test_account_noisy_count_is_what_train_spends_without_population(capsys):
    argv = ["account", "--algo", "uedp", "--q-u", "1", "--rounds", "4", "--z", "2"]
    assert main(argv + ["--noisy-count"]) == 0
    out = capsys.readouterr().out
    p = TrainingPrivacy("uedp", 1.0, 2.0, 0.5, 1.0, 1, count_z=COUNT_Z)
    assert f"epsilon = {p.epsilon(4, 1e-5):.4f}" in out
    assert "user count released once (noise std 40 users)" in out
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"epsilon = {TrainingPrivacy('uedp', 1.0, 2.0, 0.5, 1.0, 1).epsilon(4, 1e-5):.4f}" in out
    assert "user count" not in out
