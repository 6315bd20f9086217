"""``dptext robustness``: the augmented / IBP / normal training comparison under the genetic
attack (docs/robustness.md). Heavy imports (torch) happen inside the command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dptext.cli.common import int_type, parse_as, progress_wanted
from dptext.errors import DPTextError

# Defaults measured in docs/robustness.md: the gumbel bound of the default space is ~194; in the
# default 384-d space multivariate Laplace changes ~49%, 5.5% and 1.3% of words at 100/150/200.
DEFAULT_EPSILONS = {"gumbel": (250.0, 2000.0, 20000.0), "laplace": (100.0, 150.0, 200.0)}


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not v > 0 or v == float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"epsilons must be finite and > 0, got {text!r}")
    return values


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _optional_size(text: str) -> int | None:
    if text.lower() in ("all", "none"):
        return None
    value = parse_as(int, text, f"expected an integer or 'all', got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _optional_distance(text: str) -> float | None:
    if text.lower() in ("none", "all"):
        return None
    value = parse_as(float, text, f"expected a number or 'none', got {text!r}")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def cmd_robustness(args) -> int:
    from dptext.datasets import load_dataset
    from dptext.resources import default_space
    from dptext.robustness.experiment import (
        ExperimentConfig,
        run_experiment,
        step_count,
        to_markdown,
        write_outputs,
    )
    from dptext.robustness.training import TrainConfig

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise DPTextError(f"--out must be a directory, got the file {out}")
    if args.mechanism not in DEFAULT_EPSILONS:
        raise DPTextError(f"--mechanism must be gumbel or laplace, got {args.mechanism!r}")
    epsilons = args.epsilons or DEFAULT_EPSILONS[args.mechanism]
    config = ExperimentConfig(
        mechanism=args.mechanism, epsilons=epsilons, defences=args.defences,
        train_size=args.train_size, test_size=args.test_size, attack_size=args.attack_size,
        copies=args.copies, ibp_k=args.ibp_k, ibp_delta=args.ibp_delta,
        ibp_epochs=args.ibp_epochs, ibp_warmup=min(2, args.ibp_epochs - 1),
        population=args.population,
        generations=args.generations, max_queries=args.max_queries, seed=args.seed,
        train=TrainConfig(epochs=args.epochs, kappa=args.ibp_kappa),
    )
    show = progress_wanted(args)
    train_set = load_dataset(args.dataset, split="train", seed=args.split_seed)
    test_set = load_dataset(args.dataset, split="test", seed=args.split_seed)
    if args.space:
        from dptext.cli.common import load_space

        space = load_space(args.space, progress=show)
    else:
        space = default_space(progress=show)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    n_test = len(test_set) if config.test_size is None else min(config.test_size, len(test_set))
    n_attack = min(config.attack_size, n_test)
    print(f"dptext robustness: {args.dataset}, {min(len(train_set), config.train_size or 10**9)}"
          f" training texts, clean accuracy on {n_test} test texts, attack on a subsample of "
          f"{n_attack}", file=sys.stderr)
    from tqdm import tqdm

    bar = tqdm(total=step_count(config), disable=not show, unit="step")
    started = []

    def step(message: str) -> None:
        if started:
            bar.update(1)
        started.append(message)
        bar.set_description(message)
        if not show:
            print(f"  {message}", file=sys.stderr)

    rows = run_experiment(train_set, test_set, space, config, progress=step)
    bar.update(1)
    bar.close()
    paths = write_outputs(rows, config, out, n_test=n_test, n_attack=n_attack)
    print(to_markdown(rows, config, n_test=n_test, n_attack=n_attack))
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "robustness",
        help="clean/adversarial accuracy of normal, augmented and IBP training (paper Tables 2-3)",
    )
    p.add_argument("--mechanism", "-m", default="gumbel", help="gumbel or laplace")
    p.add_argument("--epsilons", type=_floats, default=None,
                   help="comma-separated (default: 250,2000,20000 for gumbel, "
                   "100,150,200 for laplace)")
    p.add_argument("--defences", type=_names, default=("normal", "augmented", "ibp"),
                   help="comma-separated subset of normal,augmented,ibp")
    p.add_argument("--dataset", default="rotten_tomatoes", help="a packaged dataset name")
    p.add_argument("--space", help="embedding space: minilm-50k (the default), glove-6b-50d, "
                   "a saved .npz or a vectors file")
    p.add_argument("--threads", type=int_type(1), default=None,
                   help="torch CPU threads (1 is fastest on a busy shared machine)")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--train-size", type=_optional_size, default=2000,
                   help="training texts, a seeded random sample, or 'all'")
    p.add_argument("--test-size", type=_optional_size, default=None,
                   help="test texts for clean accuracy (default all)")
    p.add_argument("--attack-size", type=int_type(1), default=200,
                   help="test texts attacked (a subsample)")
    p.add_argument("--copies", type=int_type(0), default=4, help="augmentation copies")
    p.add_argument("--ibp-k", type=int_type(1), default=8,
                   help="IBP substitution set: the k nearest words (Alzantot's N)")
    p.add_argument("--ibp-delta", type=_optional_distance, default=0.6,
                   help="... within this distance of the word ('none': all k)")
    p.add_argument("--ibp-epochs", type=int_type(1), default=12,
                   help="IBP training epochs (2 warm-up, ramp, plateau)")
    p.add_argument("--ibp-kappa", type=float, default=0.5,
                   help="final weight of the IBP loss term")
    p.add_argument("--population", type=int_type(2), default=20)
    p.add_argument("--generations", type=int_type(1), default=10)
    p.add_argument("--max-queries", type=int_type(1), default=None)
    p.add_argument("--epochs", type=int_type(1), default=6)
    p.add_argument("--seed", type=int, default=0, help="experiment seed (default 0)")
    p.add_argument("--split-seed", type=int, default=0, help="dataset split seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_robustness)
