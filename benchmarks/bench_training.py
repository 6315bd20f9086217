"""UeDP training benchmarks: the paper's Fig. 4 epsilons under our accountant, the cost of a UeDP
round against a noiseless FedAvg round on the same sampled data, and canary exposure.

    .venv/bin/python benchmarks/bench_training.py fig4
    .venv/bin/python benchmarks/bench_training.py cost
    .venv/bin/python benchmarks/bench_training.py canary [--texts 60 --rounds 15 --copies 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from dptext.accounting.uedp import TrainingPrivacy


def fig4() -> None:
    """Paper section VI, Fig. 4: q_u=0.05, q_e=0.5, q_s=1, z=2, delta=1e-5."""
    print("rounds  f_E+ (rdp/pld)    f_E (rdp/pld)     user-level DP (rdp/pld)")
    for t in (100, 200, 300, 400, 500):
        row = []
        for algo in ("uedp", "uedp-naive", "userdp"):
            p = TrainingPrivacy(algo, 0.05, 2.0, 0.5, 1.0, entity_users=1)
            row.append(f"{p.epsilon(t, 1e-5):6.3f}/{p.epsilon(t, 1e-5, accountant='pld'):6.3f}")
        print(f"{t:6d}  " + "   ".join(row))
    for k in (0, 2, 5):
        p = TrainingPrivacy("uedp", 0.05, 2.0, 0.5, 1.0, entity_users=k)
        print(f"K={k}: f_E+ epsilon after 500 rounds {p.epsilon(500, 1e-5):.3f} "
              f"(q_eff {p.sampling_rate:.4f}, sensitivity {p.sensitivity_factor:g} beta)")


def _corpus(n_texts: int, seed: int):
    from dptext.datasets import load_dataset
    from dptext.detect import detector
    from dptext.training.corpus import RawCorpus, build_corpus

    ds = load_dataset("house_of_commons", split="all")
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(ds))[:n_texts]
    raw = RawCorpus([ds.texts[i] for i in idx], [ds.authors[i] for i in idx])
    return build_corpus(raw, detector())


def cost(n_texts: int = 120, repeats: int = 6, seed: int = 0) -> None:
    from dptext.training.lstm import init_lstm
    from dptext.training.sampling import RoundSampler
    from dptext.training.trainer import TrainConfig, aggregate, pack_round, round_updates
    from dptext.training.vocab import Vocabulary

    corpus, _ = _corpus(n_texts, seed)
    vocab = Vocabulary.public(2000)
    enc = vocab.encode(corpus.sentences, 24)
    rng = np.random.default_rng(seed)
    sampler = RoundSampler(corpus, q_u=0.3, q_e=0.5, q_s=1.0, mode="uedp")
    sizes = np.bincount(corpus.sentence_user, minlength=corpus.n_users)
    params = init_lstm(len(vocab), dim=48, hidden=96)
    gen = torch.Generator().manual_seed(seed)
    times = {"noiseless": [], "uedp": []}
    server = {"noiseless": [], "uedp": []}
    warm = pack_round(sampler.sample(rng), enc, sizes, 32, rng)
    round_updates(params, warm, TrainConfig(algo="noiseless"))  # first-call overheads
    for r in range(repeats):
        batch = pack_round(sampler.sample(rng), enc, sizes, 32, rng)
        for algo in (list(times) if r % 2 == 0 else list(times)[::-1]):
            cfg = TrainConfig(algo=algo, z=1.0, beta=0.5, q_u=0.3)
            start = time.perf_counter()
            updates = round_updates(params, batch, cfg)
            middle = time.perf_counter()
            aggregate(updates, cfg, corpus.n_users, gen)
            end = time.perf_counter()
            times[algo].append(end - start)
            server[algo].append(end - middle)
    a, b = np.median(times["uedp"]), np.median(times["noiseless"])
    print(f"{corpus.n_users} users, {len(corpus.sentences)} sentences, {repeats} rounds each; "
          f"median round: UeDP {a:.2f}s, noiseless FedAvg {b:.2f}s, ratio {a / b:.3f}")
    print(f"of which clipping + aggregation + noise: UeDP {np.median(server['uedp']):.3f}s, "
          f"noiseless mean {np.median(server['noiseless']):.3f}s")


def canary(n_texts: int, rounds: int, copies: int, q_u: float, seed: int) -> None:
    from dptext.training.canary import canary_text, exposure, random_secret
    from dptext.training.corpus import UserCorpus
    from dptext.training.tasks import NextWordTask
    from dptext.training.trainer import TrainConfig, train
    from dptext.training.vocab import Vocabulary

    corpus, _ = _corpus(n_texts, seed)
    rng = np.random.default_rng(seed)
    secret = random_secret(6, rng)
    owner = int(rng.integers(corpus.n_users))
    planted = UserCorpus(corpus.users, corpus.sentences + (canary_text(secret),) * copies,
                         np.concatenate([corpus.sentence_user, np.full(copies, owner)]),
                         corpus.entity_keys, corpus.entity_categories,
                         corpus.sentence_entities + ((),) * copies)
    vocab = Vocabulary.public(2000)
    enc = vocab.encode(planted.sentences, 24)
    test = enc[: min(300, len(corpus.sentences))]
    print(f"{planted.n_users} users, {len(planted.sentences)} sentences, canary x{copies} "
          f"at user {owner}; max measurable exposure {np.log2(2001):.2f} bits")
    for algo, z in (("noiseless", 1.0), ("uedp", 1.0)):
        cfg = TrainConfig(algo=algo, rounds=rounds, q_u=q_u, q_e=0.5, q_s=1.0, z=z, beta=1.0,
                          local_steps=3, local_lr=1.0, server_lr=1.0, seed=seed)
        params, metrics = train(planted, enc, NextWordTask(len(vocab), test), cfg)
        exp = exposure(params, vocab, secret, n_candidates=2000, rng=np.random.default_rng(1))
        eps = metrics[-1]["epsilon"]
        print(f"{algo}: exposure {exp:.2f} bits, perplexity {metrics[-1]['perplexity']:.1f}"
              + ("" if eps is None else f", epsilon {eps:.2f} at delta 1e-5"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("fig4", "cost", "canary"))
    ap.add_argument("--texts", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--q-u", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(2)
    if args.what == "fig4":
        fig4()
    elif args.what == "cost":
        cost(args.texts, seed=args.seed)
    else:
        canary(args.texts, args.rounds, args.copies, args.q_u, args.seed)


if __name__ == "__main__":
    main()
