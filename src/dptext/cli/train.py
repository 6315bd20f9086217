"""``dptext entities``, ``dptext account``, ``dptext train`` and ``dptext canary``: private
training of language models (UeDP, user-level DP-FedAvg, baselines; docs/uedp.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter

from dptext.cli.common import int_type, positive_type, rate_type
from dptext.errors import DPTextError


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--categories", nargs="+", help="entity categories or groups (PII, ALL, ...)")
    p.add_argument("--detector", choices=("spacy", "presidio", "both"), default="spacy")
    p.add_argument("--synthetic-users", type=int_type(1), metavar="N",
                   help="assign the texts to N random users (corpora without authors)")
    p.add_argument("--user-field", default="user")
    p.add_argument("--text-field", default="text")
    p.add_argument("--limit", type=int_type(1), help="use only the first N texts")
    p.add_argument("--seed", type=int, help="seed for experiments (default: OS entropy)")


def _load_corpus(args, source: str, split: bool = True):
    from types import SimpleNamespace

    from dptext.training.run import load_corpus

    return load_corpus(SimpleNamespace(data=source, **{k: getattr(args, k) for k in (
        "user_field", "text_field", "limit", "categories", "detector", "synthetic_users",
        "seed")}), split=split)


def cmd_entities(args) -> int:
    from dptext.cli.common import Stage

    if args.spans:
        from dptext.io import check_output_path

        check_output_path(args.spans)
    with Stage(f"detecting entities in {args.file} ({args.detector})",
               estimate="about 1 s per 50 texts on 2 cores", quiet=args.no_progress):
        corpus, spans = _load_corpus(args, args.file)
    if args.spans:
        _write_spans(args.spans, corpus, spans)
    per_category = Counter(corpus.entity_categories)
    mentions = Counter(corpus.entity_categories[e] for ents in corpus.sentence_entities
                       for e in ents)
    spread = corpus.entity_users()
    print(f"users {corpus.n_users}, sentences {len(corpus.sentences)}, "
          f"sensitive sentences {corpus.sensitive_share():.1%}, "
          f"extended entities (S) {len(corpus.extended)}")
    print(f"{'category':<16}{'entities':>10}{'sentences':>11}")
    for cat, n in per_category.most_common():
        print(f"{cat:<16}{n:>10}{mentions[cat]:>11}")
    if len(spread):
        print(f"entities held by more than one user: {int((spread > 1).sum())} "
              f"(most: {int(spread.max())} users)")
    return 0


def _write_spans(path: str, corpus, spans) -> None:
    """One JSON object per sentence: its user, text and detected spans (character offsets)."""
    from dptext.io import atomic_write

    with atomic_write(path, encoding="utf-8", newline="\n") as f:
        for i, (sentence, found) in enumerate(zip(corpus.sentences, spans, strict=True)):
            record = {"sentence": i, "user": corpus.users[int(corpus.sentence_user[i])],
                      "text": sentence,
                      "spans": [{"start": a, "end": b, "category": c, "text": sentence[a:b]}
                                for a, b, c in found]}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def _privacy(args):
    from dptext.accounting.uedp import TrainingPrivacy
    from dptext.training.trainer import COUNT_Z

    # without --z (calibrating with --target-epsilon) z is a placeholder the calibration replaces
    return TrainingPrivacy(args.algo, args.q_u, 1.0 if args.z is None else args.z, args.q_e,
                           args.q_s, args.entity_users,
                           count_z=COUNT_Z if getattr(args, "noisy_count", False) else None)


def cmd_account(args) -> int:
    from dptext.accounting.uedp import calibrate_z

    privacy = _privacy(args)
    if args.target_epsilon is not None:
        z = calibrate_z(privacy, args.rounds, args.target_epsilon, args.delta,
                        accountant=args.accountant)
        # the printed z is the one the epsilon below holds for: rounded up, never down
        z = math.ceil(z * 1e4) / 1e4
        privacy = privacy.with_z(z)
        print(f"z = {z:.4f}")
    elif args.z is None:
        raise DPTextError("give --z or --target-epsilon")
    eps = privacy.epsilon(args.rounds, args.delta, accountant=args.accountant)
    print(f"epsilon = {eps:.4f} at delta = {args.delta:g} after {args.rounds} rounds "
          f"({args.algo}, q_eff = {privacy.sampling_rate:.5f}, noise std = {privacy.z:.4g} x "
          f"{privacy.sensitivity_factor:g} beta, accountant {args.accountant})"
          + ("" if privacy.count_z is None else
             f" with the user count released once (noise std {privacy.count_std:g} users)"))
    if args.plot:
        _plot(args, privacy)
    return 0


def _plot(args, privacy) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dptext.accounting.uedp import TrainingPrivacy, epsilon_curve
    from dptext.io import atomic_write

    rounds = sorted({max(1, round(args.rounds * i / 20)) for i in range(1, 21)})
    fig, ax = plt.subplots(figsize=(6, 4))
    for algo, label in (("uedp", "UeDP f_E+"), ("uedp-naive", "UeDP f_E"),
                        ("userdp", "user-level DP")):
        p = TrainingPrivacy(algo, privacy.q_u, privacy.z, privacy.q_e, privacy.q_s,
                            privacy.entity_users)
        ax.plot(rounds, epsilon_curve(p, rounds, args.delta, accountant=args.accountant),
                label=label)
    ax.set_yscale("log")
    ax.set_xlabel("rounds T")
    ax.set_ylabel(f"epsilon (delta={args.delta:g})")
    ax.set_title(f"q_u={privacy.q_u}, q_e={privacy.q_e}, q_s={privacy.q_s}, z={privacy.z:g}, "
                 f"K={privacy.entity_users}")
    ax.legend()
    fig.tight_layout()
    with atomic_write(args.plot, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    print(f"plot written to {args.plot}")


def _job(args):
    from dptext.training.run import TrainJob

    return TrainJob(
        algo=args.algo, data=args.data, rounds=args.rounds, task=args.task, model=args.model,
        trainable_blocks=args.trainable_blocks, lora_rank=args.lora_rank,
        categories=args.categories,
        detector=args.detector, synthetic_users=args.synthetic_users,
        user_field=args.user_field, text_field=args.text_field, label_field=args.label_field,
        limit=args.limit,
        seed=args.seed, q_u=args.q_u, q_e=args.q_e, q_s=args.q_s, z=args.z,
        epsilon=args.epsilon, delta=args.delta, entity_users=args.entity_users, beta=args.beta,
        population=args.population,
        local_steps=args.local_steps, local_lr=args.local_lr, server_lr=args.server_lr,
        max_sentences=args.max_sentences, users_per_chunk=args.users_per_chunk,
        vocab_size=args.vocab_size, max_len=args.max_len, normalizer=args.normalizer,
        examples_per_user=args.examples_per_user,
        checkpoint_every=args.checkpoint_every, ledger=args.ledger, owner=args.owner,
        ledger_dataset=args.dataset, secure_rng=args.secure_rng, device=args.device,
        progress=not args.no_progress and sys.stderr.isatty())


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def round_line(row: dict, total: int, elapsed: float, done: int) -> str:
    """The line printed after a round: its loss and epsilon, the time since the rounds began
    and the time the remaining rounds should take at this session's mean per round (``done``
    rounds run in this session: a resumed run does not count the replayed ones)."""
    eps = "" if row["epsilon"] is None else f", epsilon {row['epsilon']:.3f}"
    left = total - row["round"]
    expect = (f", about {_duration(elapsed / max(done, 1) * left)} to go" if left
              else ", done")
    return (f"dptext: round {row['round']}/{total}: loss {row['loss']:.4g}{eps}; "
            f"{_duration(elapsed)} elapsed{expect}")


def cmd_train(args) -> int:
    import time

    job = _job(args).validate()  # every argument checked before any data is read
    bar = None
    if job.progress:
        from tqdm import tqdm

        bar = tqdm(total=job.rounds, desc=job.algo)
    clock = {"start": time.monotonic(), "first": None}

    def log(message: str) -> None:
        clock["start"] = time.monotonic()  # the rounds are timed from the last stage message
        if not args.no_progress:
            print(f"dptext: {message}", file=sys.stderr, flush=True)

    def on_round(row: dict) -> None:
        if clock["first"] is None:
            clock["first"] = row["round"] - 1  # rounds before this session (a resume)
        if bar is not None:
            bar.update(row["round"] - bar.n)
            bar.set_postfix(loss=f"{row['loss']:.3f}", eps=row["epsilon"])
        elif not args.no_progress:
            print(round_line(row, job.rounds, time.monotonic() - clock["start"],
                             row["round"] - clock["first"]), file=sys.stderr, flush=True)

    try:
        summary = job.run(args.output, on_round=on_round, resume=args.resume, log=log)
    finally:
        if bar is not None:
            bar.close()
    if "ledger" in summary:
        c = summary["ledger"]
        print(f"dptext: charged {c['users_charged']} training users ({c['epsilon']:.4g}, "
              f"{c['delta']:g}) each in the ledger (owner {c['owner']}, dataset "
              f"{c['dataset']})" + (f", and {c['entities_charged']} detected entities up to "
                                    f"epsilon {c['entity_epsilon_max']:.4g}"
                                    if c.get("entities_charged") else ""), file=sys.stderr)
    print(summary["headline"])
    if "warning" in summary:
        print(f"dptext: warning: {summary['warning']}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    e = subparsers.add_parser("entities", help="count sensitive entities in a file")
    e.add_argument("file", help="JSONL/CSV with user and text fields, CoNLL, or dataset:NAME")
    e.add_argument("--spans", metavar="OUT.jsonl",
                   help="write each sentence's detected spans (offsets, category) as JSONL")
    e.add_argument("--no-progress", action="store_true", help="no stage messages")
    _add_data_args(e)
    e.set_defaults(func=cmd_entities)

    a = subparsers.add_parser("account", help="epsilon of UeDP / user-level DP training")
    _add_privacy_args(a)
    a.add_argument("--target-epsilon", type=positive_type, help="calibrate z to reach this epsilon")
    a.add_argument("--accountant", choices=("rdp", "pld"), default="rdp")
    a.add_argument("--noisy-count", action="store_true",
                   help="include the noisy release of the user count that `train` makes "
                        "without --population (docs/uedp.md, 'Dividing by q_u |U|')")
    a.add_argument("--plot", help="write an epsilon-vs-rounds PNG (f_E+, f_E, user-level DP)")
    a.set_defaults(func=cmd_account)

    t = subparsers.add_parser("train", help="train a language model privately")
    t.add_argument("--algo", choices=("uedp", "uedp-naive", "userdp", "noiseless", "deid",
                                      "dpsgd-example"),
                   required=True,
                   help="dpsgd-example: example-level DP-SGD, each user cut to "
                        "--examples-per-user sentences, --q-u the rate of an example, the "
                        "epsilon per user (docs/uedp.md, 'Comparison')")
    t.add_argument("--task", choices=("nwp", "cls"), default="nwp")
    t.add_argument("--label-field", default="label",
                   help="--task cls: the field of a JSONL/CSV record that holds its class")
    t.add_argument("--data", required=True, help="JSONL/CSV/CoNLL file or dataset:NAME")
    t.add_argument("--output", required=True, help="directory for metrics.json, checkpoint.pt")
    _add_data_args(t)
    _add_privacy_args(t, algo=False)
    t.add_argument("--epsilon", type=positive_type, help="target epsilon (calibrates z)")
    t.add_argument("--population", type=int_type(1), metavar="N",
                   help="the public number of users (or a public bound on it) that the noised "
                        "sum is divided by (q_u N); without it the training corpus's own count "
                        "is released once with Gaussian noise and charged (docs/uedp.md, "
                        "'Dividing by q_u |U|')")
    t.add_argument("--beta", type=positive_type, default=0.5, help="clipping bound (global L2)")
    t.add_argument("--local-steps", type=int, default=2)
    t.add_argument("--local-lr", type=float,
                   help="local SGD learning rate (default 1.0; 0.02 for a causal LM)")
    t.add_argument("--server-lr", type=float, default=1.0)
    t.add_argument("--max-sentences", type=int, default=32,
                   help="sentences a sampled user trains on per round (a random subset)")
    t.add_argument("--users-per-chunk", type=int,
                   help="users trained at once (default 16; 4 for a causal LM)")
    t.add_argument("--model", default="lstm",
                   help="nwp model: lstm (from scratch), smollm2 (the packaged "
                        "SmolLM2-135M-Instruct) or a local AutoModelForCausalLM directory")
    t.add_argument("--trainable-blocks", type=int, metavar="N",
                   help="causal LM: fine-tune the last N blocks and the final norm (default 2; "
                        "0 = final norm only)")
    t.add_argument("--lora-rank", type=int, metavar="R",
                   help="causal LM: train LoRA adapters of rank R on the linear layers of the "
                        "last N blocks instead (their weights and the norm frozen; needs peft)")
    t.add_argument("--vocab-size", type=int, default=2000)
    t.add_argument("--examples-per-user", type=int, default=8, metavar="K",
                   help="dpsgd-example: the most sentences one user contributes")
    t.add_argument("--max-len", type=int,
                   help="words per sentence (LSTM, default 24) or sub-word tokens (causal LM, "
                        "default 32)")
    t.add_argument("--normalizer", choices=("usable", "constant"), default="usable",
                   help="usable: a sampled user's loss is divided by the weight of its usable "
                        "sentences of the round; constant: by --max-sentences; docs/uedp.md")
    t.add_argument("--ledger", metavar="URL",
                   help="charge every training user the run's (epsilon, delta) in this ledger "
                        "before any model is written (docs/ledger.md)")
    t.add_argument("--owner", default="default", help="ledger owner of the data")
    t.add_argument("--dataset", help="ledger dataset name (default: the --data name)")
    t.add_argument("--checkpoint-every", type=int_type(0), default=10, metavar="N",
                   help="write checkpoint.pt and the private training_state.pt every N rounds "
                        "(0: only at the end); metrics.json is rewritten every round")
    t.add_argument("--resume", action="store_true",
                   help="continue the unfinished run in --output from its last checkpoint "
                        "(same options; gives the result of an uninterrupted run)")
    t.add_argument("--secure-rng", action="store_true",
                   help="draw the DP noise and the sampling coins from ChaCha20 keyed by the OS "
                        "(with --seed: keyed from the seed, for experiments) instead of PCG64 "
                        "(docs/reliability.md)")
    t.add_argument("--device", default="cpu", metavar="{cpu,cuda,auto}",
                   help="where the local training and aggregation run (auto: the GPU when "
                        "torch sees one)")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=cmd_train)


def _add_privacy_args(p: argparse.ArgumentParser, algo: bool = True) -> None:
    if algo:
        p.add_argument("--algo", choices=("uedp", "uedp-naive", "userdp"), required=True)
    p.add_argument("--q-u", type=rate_type, default=0.05, help="user sampling rate")
    p.add_argument("--q-e", type=rate_type, default=0.5, help="detected-entity sampling rate")
    p.add_argument("--q-s", type=rate_type, default=1.0, help="extended-entity sampling rate")
    p.add_argument("--z", type=positive_type, help="noise multiplier (std / sensitivity)")
    p.add_argument("--rounds", type=int_type(1), required=True, help="federated rounds T")
    p.add_argument("--delta", type=positive_type, default=1e-5, help="target delta")
    p.add_argument("--entity-users", type=int, default=1, metavar="K",
                   help="protected entities are held by at most K users besides the user")
