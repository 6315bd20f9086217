"""Example-level DP-SGD with a user-level guarantee (``--algo dpsgd-example``, Charles et al.
2024's example-level sampling) and the per-round token count behind tokens/s (docs/uedp.md,
"Comparison")."""

import json

import dp_accounting
import numpy as np
import pytest

from dptext.accounting.uedp import TrainingPrivacy
from dptext.cli import main
from dptext.training.corpus import UserCorpus
from dptext.training.run import TrainJob, per_example
from dptext.training.trainer import COUNT_Z

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def test_a_user_of_k_examples_is_accounted_as_k_clipped_updates_at_the_rate_of_any_of_them():
    p = TrainingPrivacy("dpsgd-example", 0.1, 2.0, examples_per_user=4)
    assert p.sensitivity_factor == 4.0
    assert p.sampling_rate == pytest.approx(1 - 0.9 ** 4)
    acc = dp_accounting.rdp.RdpAccountant(list(range(2, 64)) + [80, 96, 128, 192, 256, 512,
                                                                1024])
    acc.compose(dp_accounting.PoissonSampledDpEvent(1 - 0.9 ** 4,
                                                    dp_accounting.GaussianDpEvent(2.0)), 5)
    assert p.epsilon(5, 1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    # one example per user is user-level DP-SGD on examples: the same event as userdp
    one = TrainingPrivacy("dpsgd-example", 0.1, 2.0, examples_per_user=1)
    assert one.epsilon(5, 1e-5) == pytest.approx(
        TrainingPrivacy("userdp", 0.1, 2.0).epsilon(5, 1e-5), rel=1e-12)
    assert p.with_z(3.0).examples_per_user == 4
    with pytest.raises(Exception, match="examples per user"):
        TrainingPrivacy("dpsgd-example", 0.1, 2.0, examples_per_user=0)


def test_per_example_keeps_at_most_k_sentences_of_each_user_each_a_unit_of_its_own():
    counts = [1, 3, 7, 12]
    owner = np.repeat(np.arange(4), counts)
    sentences = tuple(f"s{i}" for i in range(len(owner)))
    corpus = UserCorpus(("a", "b", "c", "d"), sentences, owner, (), (),
                        tuple(() for _ in sentences))
    seen = np.zeros(len(owner))
    for seed in range(200):
        out, keep = per_example(corpus, 4, np.random.default_rng(seed))
        assert np.bincount(owner[keep], minlength=4).tolist() == [1, 3, 4, 4]
        assert out.n_users == 12 and out.sentence_user.tolist() == list(range(12))
        assert out.sentences == tuple(np.array(sentences)[keep])
        assert [u.split("#")[0] for u in out.users] == list(np.array(["a", "b", "c", "d"])[
            owner[keep]])
        seen += keep
    # a uniform subset: each of d's 12 sentences kept 4/12 of the time (binomial, 200 draws,
    # 5 standard deviations)
    rate = seen[owner == 3] / 200
    sd = np.sqrt((1 / 3) * (2 / 3) / 200)
    assert np.all(np.abs(rate - 1 / 3) < 5 * sd), rate


def _users(path):
    texts = ["The weather is good today. I will walk to the park with my dog.",
             "We had dinner at home. The food was very good and the time was nice.",
             "The train was late again. We waited on the cold platform for an hour."]
    rows = [{"user": f"u{i}", "text": texts[(i + j) % 3]} for i in range(12) for j in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_dpsgd_example_run_reports_a_per_user_epsilon_and_counts_its_tokens(tmp_path, capsys):
    data = _users(tmp_path / "u.jsonl")
    argv = ["train", "--algo", "dpsgd-example", "--data", data, "--rounds", "2", "--q-u", "0.5",
            "--z", "1.5", "--examples-per-user", "2", "--vocab-size", "300", "--max-len", "10",
            "--local-steps", "1", "--seed", "0", "--no-progress", "--output",
            str(tmp_path / "out")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    # 11 training users (one held out) of 6 sentences, cut to 2 examples each
    assert metrics["users"] == 22 and metrics["config"]["examples_per_user"] == 2
    # no --population: the example count is released with noise (std 20 x 2) and charged
    eps = TrainingPrivacy("dpsgd-example", 0.5, 1.5, examples_per_user=2,
                          count_z=COUNT_Z).epsilon(2, 1e-5)
    assert metrics["rounds"][-1]["epsilon"] == pytest.approx(eps)
    assert "per user (at most 2 examples each)" in out
    assert metrics["privacy"]["sensitivity"] == "2 * beta"
    assert all(r["tokens"] > 0 for r in metrics["rounds"])
    assert "wide_entities" not in metrics


def test_round_tokens_are_the_predicted_tokens_of_the_trained_sentences(tmp_path):
    data = _users(tmp_path / "u.jsonl")
    job = TrainJob(algo="noiseless", data=data, rounds=1, q_u=1.0, local_steps=3,
                   vocab_size=300, max_len=10, seed=0, max_sentences=32)
    summary = job.run(tmp_path / "out")
    # every training user trains on all its sentences: count the words (+ the closing <eos>)
    from dptext.training.run import load_corpus
    from dptext.training.vocab import Vocabulary

    corpus, _ = load_corpus(job, seed=0)
    rows = Vocabulary.public(300).encode(corpus.sentences, 10)
    held_out = summary["test_users"]
    per_user = [int((rows[corpus.sentence_user == u][:, 1:] != 0).sum())
                for u in range(corpus.n_users)]
    assert summary["users"] + held_out == corpus.n_users
    assert summary["rounds"][0]["tokens"] in {3 * (sum(per_user) - sum(c))
                                              for c in _held_out_choices(per_user, held_out)}


def _held_out_choices(per_user, k):
    from itertools import combinations

    return [tuple(per_user[i] for i in c) for c in combinations(range(len(per_user)), k)]
