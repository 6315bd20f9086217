"""``dptext evaluate``: the evaluation grid (dptext.evaluation.grid) from the command line."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from dptext.errors import DPTextError


def _names(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise DPTextError(f"empty list: {text!r}")
    return names


def _floats(text: str, what: str) -> list[float]:
    out = []
    for item in _names(text):
        try:
            value = float(item)
        except ValueError:
            raise DPTextError(f"{what}: not a number: {item!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise DPTextError(f"{what}: epsilon must be finite and > 0, got {item!r}")
        out.append(value)
    return out


def parse_epsilons(specs: list[str], mechanisms: list[str]) -> dict[str, list[float]]:
    """``1,2,4`` sets the list of every mechanism; ``gumbel=200,300`` overrides one."""
    default: list[float] | None = None
    own: dict[str, list[float]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        if sep:
            own[name.strip()] = _floats(values, f"--epsilons {name.strip()}")
        else:
            default = _floats(spec, "--epsilons")
    unknown = sorted(set(own) - set(mechanisms))
    if unknown:
        raise DPTextError(f"--epsilons names {unknown[0]!r}, which is not in --mechanisms")
    return {m: own.get(m, default or []) for m in mechanisms}


def _size(text: str) -> int | None:
    if text.lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise DPTextError(f"a size must be a positive integer or 'all', got {text!r}") from None
    if value < 1:
        raise DPTextError(f"a size must be >= 1, got {value}")
    return value


def _workers(text: str) -> int:
    """``auto``: one process per available core; else a positive integer."""
    if text == "auto":
        from dptext.evaluation.parallel import available_cores

        return available_cores()
    try:
        value = int(text)
    except ValueError:
        raise DPTextError(f"--workers must be a positive integer or 'auto', got {text!r}"
                          ) from None
    if value < 1:
        raise DPTextError(f"--workers must be >= 1, got {value}")
    return value


def cmd_evaluate(args) -> int:
    from dptext.datasets import dataset_names
    from dptext.evaluation.baselines import split_spec
    from dptext.evaluation.grid import GridConfig, run_grid
    from dptext.mechanisms.registry import registered

    mechanisms = _names(args.mechanisms)
    workers = _workers(args.workers)
    available = set(registered()) | {"noiseless", "random"}
    for spec in mechanisms:
        name = split_spec(spec)[0]
        if name not in available:
            raise DPTextError(f"unknown mechanism {name!r}; available: "
                              f"{', '.join(sorted(available))}")
    data_file = None
    if args.data is not None:
        if args.dataset != "rotten_tomatoes":
            raise DPTextError("give --dataset or --data FILE, not both")
        from dptext.datasets import load_file_dataset

        data_file = args.data
        args.dataset = load_file_dataset(
            data_file, text_field=args.text_field, label_field=args.label_field, split="all",
            require_label="utility" in _names(args.metrics)).name
    datasets = ([] if data_file else [args.dataset]) + _names(args.attribute_datasets)
    for name in datasets:
        if name not in dataset_names():
            raise DPTextError(f"unknown dataset {name!r}; packaged: {', '.join(dataset_names())}")
    config = GridConfig(
        mechanisms=mechanisms, epsilons=parse_epsilons(args.epsilons, mechanisms),
        dataset=args.dataset, metrics=_names(args.metrics), seed=args.seed,
        split_seed=args.split_seed, n_train=_size(args.train), n_test=_size(args.test),
        deniability_words=args.deniability_words, deniability_runs=args.deniability_runs,
        inversion_samples=args.inversion_samples, bayes_samples=args.bayes_samples,
        attribute_datasets=_names(args.attribute_datasets),
        attribute_train=_size(args.attribute_train), attribute_test=_size(args.attribute_test),
        encoder=args.encoder, lm_texts=_size(args.lm_texts), lm_model=args.lm_model,
        lm_kind=args.lm_kind,
        classifier=args.classifier, baselines=not args.no_baselines,
        data_file=data_file, text_field=args.text_field, label_field=args.label_field,
    )
    space = None
    if args.space:
        from dptext.cli.common import load_space

        space = load_space(args.space, progress=not args.no_progress)
    progress = not args.no_progress and sys.stderr.isatty()
    on_cell = None
    if not progress and not args.no_progress:  # no terminal: one line per finished cell
        done = [0]

        def on_cell(record: dict) -> None:
            done[0] += 1
            print(f"dptext: cell {done[0]}: {record['mechanism']} eps={record['epsilon']} "
                  f"{record['metric']}: {record['status']} ({record.get('seconds', 0):.1f} s)",
                  file=sys.stderr, flush=True)

        print(f"dptext: evaluating {len(config.mechanisms)} mechanisms into {args.out} "
              f"(finished cells are kept; a rerun resumes)", file=sys.stderr, flush=True)
    try:
        records = run_grid(config, args.out, space=space, progress=progress, on_cell=on_cell,
                           workers=workers)
    except KeyboardInterrupt:
        from dptext.evaluation.store import CellStore

        store = Path(args.out) / "cells.jsonl"
        kept = len(CellStore(store).cells) if store.is_file() else 0
        print(f"dptext: interrupted; {kept} finished cells are kept in {store} (the cell in "
              f"progress is not): run the same command again to resume", file=sys.stderr)
        return 130
    skipped = sum(r["status"] != "ok" for r in records)
    print(f"{len(records)} cells ({skipped} skipped) -> {Path(args.out) / 'report.md'}")
    return 0


def register(subparsers) -> None:
    from dptext.evaluation import CLASSIFIERS, ENCODERS, METRICS

    p = subparsers.add_parser(
        "evaluate", help="utility / attack / deniability grid over mechanisms and epsilons",
        description="Run the evaluation grid; finished cells in --out are never recomputed.",
    )
    p.add_argument("--mechanisms", required=True,
                   help="comma list of registered mechanisms (noiseless/random run anyway); "
                   "NAME:key=value+key=value sets parameters, e.g. dpmlm:backend=mlm")
    p.add_argument("--epsilons", action="append", default=[],
                   help="'1,2,4,8' for every mechanism, or 'gumbel=200,300' for one; repeatable")
    p.add_argument("--dataset", default="rotten_tomatoes",
                   help="packaged dataset (see dptext.datasets.dataset_names())")
    p.add_argument("--data", metavar="FILE",
                   help="your own CSV/TSV/JSONL file instead of --dataset (labelled for "
                   "the utility metric)")
    p.add_argument("--text-field", default="text", help="with --data: the text field/column")
    p.add_argument("--label-field", default="label",
                   help="with --data: the label field/column (needed only by the utility "
                   "metric)")
    p.add_argument("--metrics", default="utility,inversion,deniability,cost",
                   help=f"comma list from {', '.join(METRICS)}")
    p.add_argument("--out", required=True, help="results directory (resumed if it exists)")
    p.add_argument("--train", default="1000", help="training texts (a seeded sample) or 'all'")
    p.add_argument("--test", default="500", help="test texts (a seeded sample) or 'all'")
    p.add_argument("--seed", type=int, default=0, help="seed of the experiment's draws")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the train/test split")
    p.add_argument("--deniability-words", type=int, default=100)
    p.add_argument("--deniability-runs", type=int, default=200)
    p.add_argument("--inversion-samples", type=int, default=2000)
    p.add_argument("--bayes-samples", type=int, default=400)
    p.add_argument("--attribute-datasets", default="health_tweets",
                   help="datasets of the attribute metric (house_of_commons: opt-in)")
    p.add_argument("--attribute-train", default="1000")
    p.add_argument("--attribute-test", default="400")
    p.add_argument("--encoder", choices=ENCODERS, default="minilm")
    p.add_argument("--classifier", choices=CLASSIFIERS, default="logreg",
                   help="utility classifier: logistic regression on frozen encoder embeddings, "
                   "or fine-tune the packaged MiniLM + a linear head (1 epoch; slow on CPU)")
    p.add_argument("--lm-texts", default="100",
                   help="test texts attacked by the lm_inference metric, or 'all'")
    p.add_argument("--lm-model", help="LM of the lm_inference attack (name or path); "
                   "default: the packaged one of --lm-kind")
    p.add_argument("--lm-kind", choices=("causal", "masked"), default="causal",
                   help="lm_inference attack: masked = the CusText/SanText mask-token attack "
                   "(packaged minilm-mlm), causal = our SmolLM2 adaptation")
    p.add_argument("--space", help="embedding space: minilm-50k (the default), glove-6b-50d "
                   "(real GloVe, the papers' setting), a saved .npz or a vectors file")
    p.add_argument("--workers", default="auto",
                   help="processes running cells side by side, one BLAS/torch thread each "
                   "(same results as 1); auto: one per available core")
    p.add_argument("--no-baselines", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_evaluate)
