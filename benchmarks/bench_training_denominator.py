"""The denominator attack of arXiv 2605.15648 on our trainer (docs/uedp.md, "Dividing by q_u |U|").

    nice -n 19 .venv/bin/python benchmarks/bench_training_denominator.py [--runs 20]

Two adjacent data sets: D with 100 users, D' with one more. A round in which nobody is sampled
releases noise only, N(0, (z beta)^2 I) / (q_u |U|); its spread over the d = 200,100 parameters
gives q_u |U| back. The attacker guesses D' when the read-back |U| is above 100.5.

* ``exact count`` - what the trainer did before: |U| = the corpus's count (``population`` set
  to 100 or 101, the values the old default took);
* ``released count`` - the default now: |U| = the count + N(0, (20 x 1)^2), charged;
* ``public population`` - ``--population 150`` in both worlds.

It prints the attacker's accuracy over ``--runs`` runs of each world (a user-level epsilon of
eps bounds the accuracy of any such test by e^eps / (1 + e^eps) + delta).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dptext.training.corpus import UserCorpus  # noqa: E402
from dptext.training.sampling import RoundCoins  # noqa: E402
from dptext.training.tasks import ClassificationTask, classification_rows  # noqa: E402
from dptext.training.trainer import FederatedTrainer, TrainConfig  # noqa: E402

Z, BETA, Q_U = 2.0, 0.1, 0.01


def read_back(n_users: int, population: int | None, seed: int) -> float:
    dim, classes = 2000, 100
    users = tuple(f"u{i}" for i in range(n_users))
    corpus = UserCorpus(users, tuple(f"s{i}" for i in range(n_users)), np.arange(n_users), (),
                        (), tuple(() for _ in range(n_users)), None)
    g = torch.Generator().manual_seed(3)
    rows = classification_rows(torch.randn(n_users, dim, generator=g),
                               torch.arange(n_users) % classes)
    task = ClassificationTask(dim, classes, rows[:2])
    config = TrainConfig(algo="userdp", rounds=1, q_u=Q_U, z=Z, beta=BETA, seed=seed,
                         population=population)
    trainer = FederatedTrainer(corpus, rows, task, config)
    trainer.sampler.draw_coins = lambda rng: RoundCoins(np.zeros(n_users, dtype=bool))
    before = {k: v.clone() for k, v in trainer.params.items()}
    trainer.step()
    step = torch.cat([(trainer.params[k] - before[k]).flatten() for k in before]).double()
    return Z * BETA / (float(step.std()) * Q_U)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = {"exact count (before)": lambda n: n, "released count (now)": lambda n: None,
             "public population 150": lambda n: 150}
    for name, population in cases.items():
        d = [read_back(100, population(100), s) for s in range(args.runs)]
        d1 = [read_back(101, population(101), 1000 + s) for s in range(args.runs)]
        right = sum(x <= 100.5 for x in d) + sum(x > 100.5 for x in d1)
        print(f"{name:24s} read-back |U|: D {np.mean(d):.2f} (sd {np.std(d):.2f}), "
              f"D' {np.mean(d1):.2f} (sd {np.std(d1):.2f}); attacker right "
              f"{right}/{2 * args.runs}", flush=True)


if __name__ == "__main__":
    main()
