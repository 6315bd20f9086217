"""End to end on a tiny corpus: dptext entities, account, train (UeDP and baselines)."""

import json

import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main

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
        p = TrainingPrivacy("uedp", 0.5, 1.0, 0.5, 1.0)
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
    assert last["epsilon"] == pytest.approx(TrainingPrivacy("userdp", 0.5, 0.5).epsilon(2, 1e-5))


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
