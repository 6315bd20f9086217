"""The premise of the UeDP sampling rate, checked on the real training code (issue 11, item 1).

docs/uedp.md ("Sampling rate q_eff") needs: between user-entity adjacent D and D' (D' holds one
more user u' and one more entity e'), with every coin fixed, the round's noise-free output (the
sum of clipped updates) is the same on D and D' unless the event A occurs - "u' sampled, or e'
sampled and a holder of e' sampled" (for an extended entity s' of f_E+: "u' sampled, or s'
sampled and its holder sampled"; user-level DP: "u' sampled").

Every test here builds D and D' as corpora, fixes all coins by the identity of the unit they
belong to (user name, entity key, sentence text; :class:`FixedCoins` replaces only the coin
source of the real :class:`RoundSampler`), runs the real round (packing, subsets, normaliser,
vmapped local training of the LSTM, clipping, sum) and compares bit for bit: identical for every
assignment where A fails (every way it can fail, times several assignments of all other coins),
different where A occurs and changes a usable sentence (so the test can fail). Before the fix
the holder's loss was divided by its total number of sentences (larger in D'), and the round
"holder sampled, u' not, alice in, bob out" differed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from dptext.training.corpus import UserCorpus
from dptext.training.sampling import RoundCoins, RoundSampler
from dptext.training.tasks import ClassificationTask, NextWordTask, classification_rows
from dptext.training.trainer import FederatedTrainer, TrainConfig
from dptext.training.vocab import Vocabulary

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (conftest.py)


WORDS = ("alice bob carol went home the sky is blue likes tea a quiet day river runs dogs bark "
         "saw here and cold weather turned me too late met").split()
VOCAB = Vocabulary(("<pad>", "<unk>", "<eos>", *WORDS))

# (user, sentence, entities); sentences without entities form S
BASE = [
    ("v1", "alice went home", ("alice",)),
    ("v1", "the sky is blue", ()),
    ("v1", "alice met carol", ("alice", "carol")),
    ("v1", "a quiet day", ()),
    ("v2", "alice likes tea", ("alice",)),
    ("v2", "carol went home too", ("carol",)),
    ("v2", "dogs bark", ()),
    ("w", "the river runs", ()),
    ("w", "a late day", ()),
]
U_PRIME = [("u'", "bob and me", ("bob",)), ("u'", "the weather turned cold", ())]


def _corpus(rows) -> UserCorpus:
    users = list(dict.fromkeys(u for u, _, _ in rows))
    keys = list(dict.fromkeys(e for _, _, ents in rows for e in ents))
    return UserCorpus(tuple(users), tuple(s for _, s, _ in rows),
                      np.array([users.index(u) for u, _, _ in rows]), tuple(keys),
                      ("PERSON",) * len(keys),
                      tuple(tuple(sorted(keys.index(e) for e in ents)) for _, _, ents in rows))


def _insert(rows, at, extra):
    return rows[:at] + extra + rows[at:]


# D' of each kind: the differing entity's sentences sit between the holder's own (so every
# sentence index after them shifts) and u' is added
BOB_V1 = [("v1", "bob saw alice", ("alice", "bob")), ("v1", "bob is here", ("bob",))]
BOB_V2 = [("v2", "bob went home", ("bob",))]
S_PRIME = [("v1", "me too late", ())]
SCENARIOS = {
    # name: (algo, D, D', the differing unit's coin key, holders, K)
    "f_E detected entity": ("uedp-naive", BASE, _insert(BASE, 2, BOB_V1) + U_PRIME,
                            "entity:bob", ["v1"], 1),
    "f_E+ detected entity": ("uedp", BASE, _insert(BASE, 2, BOB_V1) + U_PRIME,
                             "entity:bob", ["v1"], 1),
    "f_E two holders": ("uedp-naive", BASE,
                        _insert(_insert(BASE, 5, BOB_V2), 2, BOB_V1) + U_PRIME,
                        "entity:bob", ["v1", "v2"], 2),
    "f_E+ extended entity": ("uedp", BASE, _insert(BASE, 1, S_PRIME) + U_PRIME,
                             "sentence:me too late", ["v1"], 1),
    "user-level DP": ("userdp", BASE, BASE + U_PRIME, None, [], 0),
}


class FixedCoins(RoundSampler):
    """The real sampler with its coins read from ``coins`` by unit identity (missing: False)."""

    def __init__(self, corpus: UserCorpus, coins: dict[str, bool], **kw) -> None:
        super().__init__(corpus, **kw)
        self.coins = coins

    def draw_coins(self, rng: np.random.Generator) -> RoundCoins:
        c, corpus = self.coins, self.corpus
        users = np.array([c.get(f"user:{u}", False) for u in corpus.users], dtype=bool)
        entities = np.array([c.get(f"entity:{e}", False) for e in corpus.entity_keys],
                            dtype=bool)
        extended = np.array([c.get(f"sentence:{s}", False) for s in corpus.sentences],
                            dtype=bool)
        return RoundCoins(users, entities, extended)


def _units(rows) -> list[str]:
    return ([f"user:{u}" for u in dict.fromkeys(u for u, _, _ in rows)]
            + [f"entity:{e}" for e in dict.fromkeys(e for _, _, es in rows for e in es)]
            + [f"sentence:{s}" for _, s, es in rows if not es])


def _features(sentences) -> torch.Tensor:
    """A fixed 'embedding' and label per sentence text (a function of the text alone)."""
    out = []
    for s in sentences:
        g = torch.Generator().manual_seed(sum(map(ord, s)) * 7919 + len(s))
        out.append(torch.randn(5, generator=g))
    labels = torch.tensor([len(s) % 3 for s in sentences])
    return classification_rows(torch.stack(out), labels)


def _trainer(rows, algo, coins, k, *, model="linear", max_sentences=2,
             **extra) -> FederatedTrainer:
    corpus = _corpus(rows)
    config = TrainConfig(algo=algo, rounds=3, q_u=0.5, q_e=0.5, q_s=0.5, z=1.0, beta=0.05,
                         entity_users=k, local_steps=2, local_lr=1.0,
                         max_sentences=max_sentences, users_per_chunk=2, max_len=6, seed=0,
                         **extra)
    if model == "lstm":  # the next-word LSTM of `dptext train`
        encoded = VOCAB.encode(corpus.sentences, 6)
        task = NextWordTask(len(VOCAB), encoded[:2], dim=6, hidden=6)
    else:  # the classification head of `dptext train --task cls`, on fixed features
        encoded = _features(corpus.sentences)
        task = ClassificationTask(5, 3, encoded[:2])
    mode = algo if algo != "userdp" else "user"
    sampler = FixedCoins(corpus, coins, q_u=0.5, q_e=0.5, q_s=0.5, mode=mode)
    return FederatedTrainer(corpus, encoded, task, config, sampler=sampler)


def _round_sum(rows, algo, coins, k, **extra) -> dict[str, torch.Tensor]:
    trainer = _trainer(rows, algo, coins, k, **extra)
    trainer.params = {k: v + 0.1 for k, v in trainer.params.items()}  # away from zero init
    return trainer.noise_free_sum(trainer.sampler.sample(trainer.rng))


def _same(a, b) -> bool:
    return all(torch.equal(a[key], b[key]) for key in a)


def _event_a(coins, unit, holders) -> bool:
    if coins.get("user:u'"):
        return True
    return unit is not None and coins.get(unit, False) and any(
        coins.get(f"user:{h}", False) for h in holders)


def _assignments(unit, holders, others, n_random=2, seed=0):
    """Every combination of the coins A reads (u', the differing unit, its holders), each with
    all other coins on, all off, and ``n_random`` random assignments."""
    rng = np.random.default_rng(seed)
    relevant = ["user:u'"] + ([unit] if unit else []) + [f"user:{h}" for h in holders]
    for bits in itertools.product([False, True], repeat=len(relevant)):
        fixed = dict(zip(relevant, bits, strict=True))
        fills = [np.ones(len(others), bool), np.zeros(len(others), bool)]
        fills += [rng.random(len(others)) < 0.5 for _ in range(n_random)]
        for fill in fills:
            yield {**dict(zip(others, fill.tolist(), strict=True)), **fixed}


@pytest.mark.parametrize("max_sentences", [2, 8])
@pytest.mark.parametrize("normalizer", ["usable", "constant"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_noise_free_output_is_identical_whenever_event_a_fails(scenario, normalizer,
                                                               max_sentences):
    # max_sentences 2: users train on random subsets of their usable sentences (drawn from the
    # same generator state in D and D'); 8: on all of them, so every change of the usable data
    # where A occurs must move the output
    algo, d, d_prime, unit, holders, k = SCENARIOS[scenario]
    relevant = {"user:u'", unit, *(f"user:{h}" for h in holders)}
    others = [x for x in _units(d_prime) if x not in relevant]
    failed = changed = moved = 0
    for coins in _assignments(unit, holders, others):
        a = _round_sum(d, algo, coins, k, normalizer=normalizer, max_sentences=max_sentences)
        b = _round_sum(d_prime, algo, coins, k, normalizer=normalizer,
                       max_sentences=max_sentences)
        if not _event_a(coins, unit, holders):
            failed += 1
            assert _same(a, b), f"{scenario}: output moved without A: {coins}"
        elif _changes_usable_data(algo, coins, unit, holders):
            changed += 1
            moved += not _same(a, b)
    assert failed > 0 and changed > 0
    if max_sentences == 8:
        assert moved == changed, f"{scenario}: A changed the usable data, the output stayed"
    else:
        assert moved > 0


def _changes_usable_data(algo, coins, unit, holders) -> bool:
    """A occurred in a way that puts a D'-only sentence into a sampled user's usable data."""
    if algo == "userdp":
        return bool(coins.get("user:u'"))
    if coins.get("user:u'") and algo == "uedp" and coins.get("sentence:the weather turned cold"):
        return True  # u''s sentence of S is used
    if coins.get("user:u'") and coins.get("entity:bob"):
        return True  # u''s "bob and me" is used
    holder_in = any(coins.get(f"user:{h}") for h in holders)
    return bool(holder_in and coins.get(unit))  # "bob is here" / "me too late" is used


def test_the_issue_s_round_holder_in_u_prime_out_alice_in_bob_out():
    # the round of issue 11: the holder v1 trains on its alice sentences in both corpora
    coins = {"user:v1": True, "entity:alice": True, "entity:carol": True}
    for algo in ("uedp-naive", "uedp"):
        d_prime = _insert(BASE, 2, BOB_V1) + U_PRIME
        a = _round_sum(BASE, algo, coins, 1, model="lstm")
        b = _round_sum(d_prime, algo, coins, 1, model="lstm")
        assert float(sum(v.norm() ** 2 for v in a.values())) > 0  # somebody trained
        assert _same(a, b)


@pytest.mark.parametrize("scenario", ["f_E+ detected entity", "user-level DP"])
def test_released_parameters_after_rounds_without_a_are_bit_identical(scenario):
    # the whole release path, noise included: same seed, public |U| fixed, A never occurs
    algo, d, d_prime, unit, holders, k = SCENARIOS[scenario]
    coins = {"user:v1": True, "user:v2": True, "user:w": True, "entity:alice": True,
             "entity:carol": True, "sentence:the sky is blue": True, "sentence:dogs bark": True}
    runs = []
    for rows in (d, d_prime):
        trainer = _trainer(rows, algo, coins, k, model="lstm", population=4)
        for _ in range(3):
            trainer.step()
        runs.append(trainer)
    assert _same(runs[0].params, runs[1].params)
    # and A in the third round (u' sampled) moves the release
    moved = _trainer(d_prime, algo, coins, k, model="lstm", population=4)
    moved.step()
    moved.step()
    moved.sampler.coins = {**coins, "user:u'": True, "sentence:the weather turned cold": True,
                           "entity:bob": True}
    moved.step()
    assert not _same(runs[1].params, moved.params)
