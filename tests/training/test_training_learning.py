"""Did a run learn? The trained model against the untrained one and the uniform distribution on
held-out text (training/learning.py), the one-line warning with the likely cause, and the
wide-entity epsilon in the headline result and in the ledger (issue 35, item 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main
from dptext.ledger import Ledger
from dptext.training.learning import MIN_GAIN, learning_check, likely_cause, paired_gain
from dptext.training.trainer import COUNT_Z, TrainConfig

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def test_paired_gain_is_the_per_token_drop_and_its_standard_error_matches_replicates():
    # exact: two sentences of 4 and 6 tokens, NLL down by 2 and 3 nats -> 5 / 10 per token
    gain, se = paired_gain(np.array([10.0, 12.0]), np.array([8.0, 9.0]), np.array([4, 6]))
    assert gain == pytest.approx(0.5)
    # residuals 2 - 0.5*4 = 0 and 3 - 0.5*6 = 0: no spread, no error
    assert se == pytest.approx(0.0)
    # statistical: 60 users with 5 sentences each, per-sentence gains with a user effect; the
    # standard error must match the spread of the gain over independent replicates
    rng = np.random.default_rng(0)
    gains, ses = [], []
    for _ in range(400):
        tokens = rng.integers(5, 20, 300).astype(float)
        users = np.repeat(np.arange(60), 5)
        effect = rng.normal(0, 0.3, 60)[users]
        before = tokens * 5.0
        after = before - tokens * (0.1 + effect) - rng.normal(0, 1.0, 300) * np.sqrt(tokens)
        g, s = paired_gain(before, after, tokens, users)
        gains.append(g)
        ses.append(s)
    # the empirical std of 400 replicates is within ~4 / sqrt(2 * 400) = 14% of the truth;
    # the SE estimate over 60 clusters is biased by less than a few percent
    assert np.mean(ses) == pytest.approx(np.std(gains), rel=0.15)
    assert np.mean(gains) == pytest.approx(0.1, abs=4 * np.std(gains) / math.sqrt(400))


def _losses(per_token, tokens):
    return np.asarray(per_token) * tokens, tokens


def test_learning_check_needs_a_visible_significant_gain_over_untrained_and_uniform():
    rng = np.random.default_rng(1)
    tokens = rng.integers(5, 15, 200).astype(float)
    users = np.arange(200) // 4
    noise = rng.normal(0, 0.05, 200)
    start = _losses(np.full(200, 5.3), tokens)  # the untrained model, ~uniform over 200
    uniform = math.log(200)
    # a 30% perplexity drop: learned
    good = learning_check(start, _losses(5.3 - 0.36 + noise, tokens), uniform, users)
    assert good["learned"] and good["gain_nats"] == pytest.approx(0.36, abs=0.02)
    # a 1.5% drop (the 199.94 against chance): significant, but not visible
    small = learning_check(start, _losses(5.3 - 0.015 + noise / 10, tokens), uniform, users)
    assert small["gain_nats"] > 2 * small["gain_se"] and not small["learned"]
    # better than the (bad) start but no better than uniform
    bad_start = _losses(np.full(200, 7.0), tokens)
    worse = learning_check(bad_start, _losses(np.full(200, uniform + 0.01), tokens), uniform,
                           users)
    assert worse["gain_nats"] > MIN_GAIN and not worse["learned"]
    # a visible mean drop (~0.1 nats) from 4 held-out users who disagree: within noise
    few = np.arange(200) // 50
    per_user = np.array([0.9, -0.6, 0.5, -0.4])[few]
    loud = learning_check(start, _losses(5.3 - per_user, tokens), uniform, few)
    assert loud["gain_nats"] > MIN_GAIN and loud["gain_se"] > loud["gain_nats"] / 2
    assert not loud["learned"]


def test_likely_cause_names_noise_clipping_learning_rate_or_rounds():
    private = TrainConfig(algo="userdp", q_u=1.0, z=1.0, beta=0.001, rounds=2)
    # sqrt(85,000) = 292 > q_u |U| = 100: the noise swamps the signal
    assert likely_cause(private, 85_000, 100, rose=False).startswith("noise against clipped")
    # 10,000 users a round: the noise is small; updates of norm 2 clipped to 0.001
    assert likely_cause(private, 85_000, 10_000, rose=False,
                        update_norm=2.0).startswith("clipping")
    plain = TrainConfig(algo="noiseless", rounds=2, local_lr=5.0)
    assert likely_cause(plain, 85_000, 100, rose=True).startswith("learning rate")
    assert likely_cause(plain, 85_000, 100, rose=False).startswith("too few rounds")


TEXTS = ["The doctor in Boston saw the patient today and the patient was fine.",
         "We walked to the park in Boston and the weather was good.",
         "The patient said the pain was better after the new medicine.",
         "The nurse in Boston called the patient about the test results."]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    """20 users with three notes each; "Boston" appears in the notes of every user."""
    path = tmp_path_factory.mktemp("data") / "notes.jsonl"
    rows = [{"patient": f"p{i}", "note": TEXTS[(i + j) % 4]} for i in range(20)
            for j in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _train(corpus_file, out, *extra):
    return main(["train", "--data", str(corpus_file), "--user-field", "patient",
                 "--text-field", "note", "--vocab-size", "300", "--max-len", "14",
                 "--seed", "0", "--no-progress", "--output", str(out), *extra])


def test_a_run_that_learns_nothing_ends_with_one_warning_line_naming_the_cause(
        corpus_file, tmp_path, capsys):
    # the README settings: every user every round, z 1, beta 0.001
    assert _train(corpus_file, tmp_path / "flat", "--algo", "userdp", "--rounds", "2",
                  "--z", "1", "--q-u", "1", "--beta", "0.001") == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and captured.err.rstrip().endswith(warnings[0])
    assert "nothing visibly learned" in warnings[0]
    assert "likely cause: noise against clipped signal" in warnings[0]
    summary = json.loads((tmp_path / "flat" / "metrics.json").read_text())
    assert not summary["learning"]["learned"] and summary["warning"] in warnings[0]
    assert "untrained" in captured.out


def test_a_run_that_learns_says_so_against_the_untrained_model(corpus_file, tmp_path, capsys):
    assert _train(corpus_file, tmp_path / "ok", "--algo", "noiseless", "--rounds", "4",
                  "--q-u", "1") == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    summary = json.loads((tmp_path / "ok" / "metrics.json").read_text())
    check = summary["learning"]
    assert check["learned"] and check["gain_nats"] >= max(MIN_GAIN, 2 * check["gain_se"])
    before = summary["untrained"]["perplexity"]
    after = summary["rounds"][-1]["perplexity"]
    assert after < before / 1.05
    assert f"held-out perplexity {after:.2f} after 4 rounds (untrained {before:.2f})" \
        in captured.out


def test_the_wide_entity_epsilon_is_in_the_headline_and_charged_by_the_ledger(
        corpus_file, tmp_path, capsys):
    ledger_path = tmp_path / "l.sqlite"
    Ledger(str(ledger_path)).close()
    assert _train(corpus_file, tmp_path / "u", "--algo", "uedp", "--rounds", "2", "--z", "2",
                  "--q-u", "0.5", "--q-e", "0.5", "--q-s", "0.5", "--categories", "GPE",
                  "--ledger", str(ledger_path), "--owner", "clinic",
                  "--dataset", "notes") == 0
    captured = capsys.readouterr()
    summary = json.loads((tmp_path / "u" / "metrics.json").read_text())
    wide = summary["wide_entities"]
    held = summary["entities_held_by_more_than_K_users"]
    assert held >= 1 and wide["most_other_holders"] == summary["users"]  # Boston: everybody
    config = TrainConfig(algo="uedp", rounds=2, q_u=0.5, q_e=0.5, q_s=0.5, z=2.0)
    k1 = TrainingPrivacy("uedp", 0.5, 2.0, 0.5, 0.5, 1, count_z=COUNT_Z)
    expected = k1.for_entity_users(summary["users"]).epsilon(2, 1e-5)
    assert wide["epsilon"] == pytest.approx(expected) and expected > 2 * k1.epsilon(2, 1e-5)
    headline = captured.out.strip().splitlines()[-1]
    assert headline == summary["headline"]
    assert f"epsilon {k1.epsilon(2, 1e-5):.4g} at delta 1e-05 per user" in headline
    assert f"the {held} entities held by more users" in headline
    assert f"which get only epsilon {expected:.4g} at delta 1e-05" in headline
    assert "note:" not in captured.err
    # the ledger: every training user pays the run's epsilon, Boston the wide one
    ledger = Ledger(str(ledger_path))
    boston = ledger.spent("entity:boston", owner="clinic", dataset="notes")
    assert boston.records == 1 and boston.epsilon_basic == pytest.approx(expected, rel=1e-6)
    users = [ledger.spent(f"p{i}", owner="clinic", dataset="notes") for i in range(20)]
    charged = [s for s in users if s.records]
    assert len(charged) == summary["users"]
    assert all(s.epsilon_basic == pytest.approx(k1.epsilon(2, 1e-5), rel=1e-6) for s in charged)
    assert summary["ledger"]["entity_epsilon_max"] == pytest.approx(expected)
    assert config.privacy().epsilon(2, 1e-5) == pytest.approx(summary["ledger"]["epsilon"])


def test_a_budget_the_wide_entities_would_exceed_stops_the_run(corpus_file, tmp_path, capsys):
    """Users fit the budget, the entity held by everybody does not: nothing is trained."""
    k1 = TrainingPrivacy("uedp", 0.5, 2.0, 0.5, 0.5, 1)
    ledger_path = tmp_path / "l.sqlite"
    ledger = Ledger(str(ledger_path))
    ledger.set_budget("clinic", "notes", 1.5 * k1.epsilon(2, 1e-5), 1e-3)
    code = _train(corpus_file, tmp_path / "u", "--algo", "uedp", "--rounds", "2", "--z", "2",
                  "--q-u", "0.5", "--q-e", "0.5", "--q-s", "0.5", "--categories", "GPE",
                  "--ledger", str(ledger_path), "--owner", "clinic", "--dataset", "notes")
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "would exceed their budget" in err and "entity:boston" in err
    assert not (tmp_path / "u" / "checkpoint.pt").exists()
    assert ledger.spent("p0", owner="clinic", dataset="notes").records == 0


def test_a_classifier_that_learned_only_the_class_prior_has_not_learned():
    # a held-out set of 3 classes with frequencies 0.6 / 0.3 / 0.1: a head that predicts exactly
    # those frequencies for every example beats uniform by log(3) - H(p) = 0.20 nats, far over
    # the 5% bar, but is no better than the class prior - it has learned nothing of the texts
    import torch

    from dptext.training.tasks import ClassificationTask, classification_rows

    labels = torch.tensor([0] * 60 + [1] * 30 + [2] * 10)
    features = torch.randn(100, 4, generator=torch.Generator().manual_seed(0))
    task = ClassificationTask(dim=4, n_classes=3, test=classification_rows(features, labels))
    name, prior = task.baseline
    p = np.array([0.6, 0.3, 0.1])
    assert name == "class prior" and prior == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12)
    users = np.arange(100) % 20
    start = task.sentence_losses(task.init(torch.Generator()))  # zeros: uniform
    prior_only = {"w": torch.zeros(3, 4), "b": torch.log(torch.tensor(p, dtype=torch.float32))}
    final = task.sentence_losses(prior_only)
    check = learning_check(start, final, prior, users, baseline=name)
    assert check["gain_nats"] == pytest.approx(math.log(3) - prior, abs=1e-5)
    assert check["gain_nats"] >= MIN_GAIN and not check["learned"]
    assert "class prior" in check["criterion"]
    # the same head judged against uniform alone would have passed: the old, lenient check
    assert learning_check(start, final, task.uniform_loss, users)["learned"]
    # a head that separates the classes learns: features carry the label
    separable = classification_rows(torch.nn.functional.one_hot(labels, 3).float() * 4, labels)
    task = ClassificationTask(dim=3, n_classes=3, test=separable)
    good = task.sentence_losses({"w": torch.eye(3), "b": torch.zeros(3)})
    assert learning_check(task.sentence_losses(task.init(torch.Generator())), good,
                          task.baseline[1], users, baseline="class prior")["learned"]
