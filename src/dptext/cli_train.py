"""``dptext entities``, ``dptext account``, ``dptext train`` and ``dptext canary``: private
training of language models (UeDP, user-level DP-FedAvg, baselines; docs/uedp.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from dptext.errors import DPTextError


def _rate(text: str) -> float:
    try:
        q = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1], got {text!r}") from None
    if not 0.0 <= q <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1], got {text!r}")
    return q


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--categories", nargs="+", help="entity categories or groups (PII, ALL, ...)")
    p.add_argument("--detector", choices=("spacy", "presidio", "both"), default="spacy")
    p.add_argument("--synthetic-users", type=int, metavar="N",
                   help="assign the texts to N random users (corpora without authors)")
    p.add_argument("--user-field", default="user")
    p.add_argument("--text-field", default="text")
    p.add_argument("--limit", type=int, help="use only the first N texts")
    p.add_argument("--seed", type=int, help="seed for experiments (default: OS entropy)")


def _load_corpus(args, source: str, split: bool = True):
    import numpy as np

    from dptext.detect import detector
    from dptext.training.corpus import RawCorpus, build_corpus, read_user_file

    if source.startswith("dataset:"):
        from dptext.datasets import load_dataset

        ds = load_dataset(source.split(":", 1)[1], split="all")
        raw = RawCorpus(ds.texts, ds.authors or [""] * len(ds.texts), ds.labels)
    else:
        if not Path(source).exists():
            raise DPTextError(f"no such file: {source}")
        raw = read_user_file(source, user_field=args.user_field, text_field=args.text_field)
    if args.limit:
        raw = RawCorpus(raw.texts[: args.limit], raw.users[: args.limit],
                        None if raw.labels is None else raw.labels[: args.limit])
    return build_corpus(raw, detector(args.categories, args.detector), split=split,
                        synthetic=args.synthetic_users, rng=np.random.default_rng(args.seed))


def cmd_entities(args) -> int:
    corpus, _ = _load_corpus(args, args.file)
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


def _privacy(args):
    from dptext.accounting.uedp import TrainingPrivacy

    return TrainingPrivacy(args.algo, args.q_u, args.z or 1.0, args.q_e, args.q_s,
                           args.entity_users)


def cmd_account(args) -> int:
    from dptext.accounting.uedp import calibrate_z

    privacy = _privacy(args)
    if args.target_epsilon is not None:
        z = calibrate_z(privacy, args.rounds, args.target_epsilon, args.delta,
                        accountant=args.accountant)
        privacy = privacy.with_z(z)
        print(f"z = {z:.4f}")
    elif args.z is None:
        raise DPTextError("give --z or --target-epsilon")
    eps = privacy.epsilon(args.rounds, args.delta, accountant=args.accountant)
    print(f"epsilon = {eps:.4f} at delta = {args.delta:g} after {args.rounds} rounds "
          f"({args.algo}, q_eff = {privacy.sampling_rate:.5f}, noise std = {privacy.z:.4g} x "
          f"{privacy.sensitivity_factor:g} beta, accountant {args.accountant})")
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


LSTM = "lstm"
SMOLLM2 = "smollm2"
# Defaults that depend on the model: words per sentence / sub-word tokens, local learning rate,
# users trained at once (a causal LM's logits over its 49k-token vocabulary take ~0.6 GB per
# user of 32 sentences).
_DEFAULTS = {LSTM: {"max_len": 24, "local_lr": 1.0, "users_per_chunk": 16},
             "causal": {"max_len": 32, "local_lr": 0.02, "users_per_chunk": 4}}


def _model_kind(args) -> str:
    """Check --model and --trainable-blocks before any data is loaded."""
    if args.model == LSTM:
        if args.trainable_blocks is not None:
            raise DPTextError("--trainable-blocks needs --model smollm2 or a causal LM directory")
        return LSTM
    if args.task != "nwp":
        raise DPTextError("--model applies to --task nwp only")
    if args.model != SMOLLM2 and not Path(args.model).is_dir():
        raise DPTextError(f"--model: expected {LSTM}, {SMOLLM2} or a local causal LM directory, "
                          f"got {args.model!r}")
    if args.trainable_blocks is not None and args.trainable_blocks < 0:
        raise DPTextError(f"--trainable-blocks must be >= 0, got {args.trainable_blocks}")
    return "causal"


def _causal_task(args):
    """The pretrained causal LM (packaged SmolLM2 or a local AutoModelForCausalLM directory)."""
    from dptext.lm.loading import default_causal_dir, load_model
    from dptext.training.causal_lm import CausalLMTask

    if args.trainable_blocks is None:
        args.trainable_blocks = 2
    path = (str(default_causal_dir(progress=not args.no_progress)) if args.model == SMOLLM2
            else args.model)
    model, tokenizer = load_model(path, causal=True)
    return CausalLMTask(model, tokenizer, blocks=args.trainable_blocks, max_len=args.max_len), path


def _task_rows(args, corpus, is_test):
    """Per-sentence training rows and the task object (next-word LSTM or causal LM, or MiniLM
    classifier), the task evaluating on the sentences of ``is_test``."""
    import torch

    from dptext.training import tasks

    test = torch.as_tensor(is_test)
    if args.task == "nwp" and args.model != LSTM:
        task, path = _causal_task(args)
        rows = task.rows(corpus.sentences, progress=not args.no_progress)
        task.test = rows[test]
        return rows, task, {"model": path, "trainable_blocks": task.blocks,
                            "start_token_id": task.start_id}
    if args.task == "nwp":
        from dptext.training.vocab import Vocabulary

        vocab = Vocabulary.public(args.vocab_size)
        rows = vocab.encode(corpus.sentences, args.max_len)
        return rows, tasks.NextWordTask(len(vocab), rows[test]), {"vocab": list(vocab.words)}
    if corpus.labels is None or any(label is None for label in corpus.labels):
        raise DPTextError("--task cls needs a label for every text (field 'label')")
    classes = sorted(set(corpus.labels))
    labels = torch.tensor([classes.index(label) for label in corpus.labels])
    rows = tasks.classification_rows(tasks.minilm_embeddings(list(corpus.sentences)), labels)
    task = tasks.ClassificationTask(rows.shape[1] - 1, len(classes), rows[test])
    return rows, task, {"classes": classes}


def _select(rows, mask):
    """The rows of the sentences in ``mask`` (lazily for causal_lm.PrefixRows)."""
    import torch

    return rows.subset(mask) if hasattr(rows, "subset") else rows[torch.as_tensor(mask)]


def cmd_train(args) -> int:
    import numpy as np
    import torch

    from dptext.accounting.uedp import calibrate_z
    from dptext.io import atomic_write
    from dptext.training.trainer import TrainConfig, train

    out = Path(args.output)
    if not out.is_dir():
        raise DPTextError(f"output directory does not exist: {out}")
    defaults = _DEFAULTS[_model_kind(args)]
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for key in ("max_len", "users_per_chunk", "local_steps", "max_sentences"):
        if getattr(args, key) < 1:
            raise DPTextError(f"--{key.replace('_', '-')} must be >= 1, got {getattr(args, key)}")
    for key in ("local_lr", "server_lr"):
        if not getattr(args, key) > 0:
            raise DPTextError(f"--{key.replace('_', '-')} must be > 0, got {getattr(args, key)}")
    corpus, spans = _load_corpus(args, args.data, split=args.task == "nwp")
    if args.algo == "deid":
        corpus = corpus.deidentified(spans)
    config = TrainConfig(algo=args.algo, rounds=args.rounds, q_u=args.q_u, q_e=args.q_e,
                         q_s=args.q_s, z=args.z or 1.0, beta=args.beta,
                         entity_users=args.entity_users, delta=args.delta,
                         local_steps=args.local_steps, local_lr=args.local_lr,
                         server_lr=args.server_lr, max_sentences=args.max_sentences,
                         max_len=args.max_len, users_per_chunk=args.users_per_chunk,
                         seed=args.seed)
    if config.privacy() is not None:
        if args.epsilon is not None:
            config.z = calibrate_z(config.privacy(), args.rounds, args.epsilon, args.delta)
        elif args.z is None:
            raise DPTextError("give --epsilon (and --delta) or --z for a private algorithm")
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(corpus.n_users)
    test_users = order[: max(1, corpus.n_users // 10)]
    is_test = np.isin(corpus.sentence_user, test_users)
    rows, task, extra = _task_rows(args, corpus, is_test)
    train_corpus = _without_users(corpus, is_test)
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=config.rounds, desc=args.algo)

    def on_round(row: dict) -> None:
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{row['loss']:.3f}", eps=row["epsilon"])

    # a pretrained model's held-out metrics before any round (the baseline fine-tuning moves)
    pretrained = None if args.model == LSTM else task.evaluate(task.init())
    params, metrics = train(train_corpus, _select(rows, ~is_test), task, config, on_round)
    if bar is not None:
        bar.close()
    from dataclasses import asdict

    spread = train_corpus.entity_users()
    wide = int((spread > args.entity_users).sum()) if len(spread) else 0
    if wide and config.privacy() is not None and args.algo != "userdp":
        print(f"note: {wide} detected entities are held by more than K={args.entity_users} "
              f"users (at most {int(spread.max())}); for them run `dptext account "
              f"--entity-users {int(spread.max())}` with the same settings (docs/uedp.md)")
    with atomic_write(out / "metrics.json") as f:
        json.dump({"config": asdict(config), "task": args.task, "model": args.model,
                   **({} if args.model == LSTM else {"trainable_blocks": args.trainable_blocks}),
                   **({} if pretrained is None else {"pretrained": pretrained}),
                   "users": train_corpus.n_users,
                   "test_users": len(test_users),
                   "entities_held_by_more_than_K_users": wide,
                   "rounds": metrics}, f, indent=1)
    with atomic_write(out / "checkpoint.pt", "wb") as f:
        torch.save({"params": params, "config": asdict(config), "task": args.task, **extra}, f)
    last = metrics[-1]
    metric = (f"perplexity {last['perplexity']:.2f}" if args.task == "nwp"
              else f"error rate {last['error_rate']:.3f}")
    if pretrained is not None:
        metric += f" (pretrained {pretrained['perplexity']:.2f})"
    print(f"{args.algo}: {metric} after {config.rounds} rounds"
          + ("" if last["epsilon"] is None else
             f", epsilon {last['epsilon']:.3f} at delta {config.delta:g}"))
    return 0


def _without_users(corpus, drop_mask):
    """The corpus without the sentences in ``drop_mask`` and without users left with none."""
    import numpy as np

    from dptext.training.corpus import UserCorpus

    keep = np.flatnonzero(~drop_mask)
    kept_users, owner = np.unique(corpus.sentence_user[keep], return_inverse=True)
    return UserCorpus(tuple(corpus.users[u] for u in kept_users),
                      tuple(corpus.sentences[i] for i in keep), owner,
                      corpus.entity_keys, corpus.entity_categories,
                      tuple(corpus.sentence_entities[i] for i in keep),
                      None if corpus.labels is None else tuple(corpus.labels[i] for i in keep))


def add_commands(subparsers) -> None:
    e = subparsers.add_parser("entities", help="count sensitive entities in a file")
    e.add_argument("file", help="JSONL/CSV with user and text fields, CoNLL, or dataset:NAME")
    _add_data_args(e)
    e.set_defaults(func=cmd_entities)

    a = subparsers.add_parser("account", help="epsilon of UeDP / user-level DP training")
    _add_privacy_args(a)
    a.add_argument("--target-epsilon", type=float, help="calibrate z to reach this epsilon")
    a.add_argument("--accountant", choices=("rdp", "pld"), default="rdp")
    a.add_argument("--plot", help="write an epsilon-vs-rounds PNG (f_E+, f_E, user-level DP)")
    a.set_defaults(func=cmd_account)

    t = subparsers.add_parser("train", help="train a language model privately")
    t.add_argument("--algo", choices=("uedp", "uedp-naive", "userdp", "noiseless", "deid"),
                   required=True)
    t.add_argument("--task", choices=("nwp", "cls"), default="nwp")
    t.add_argument("--data", required=True, help="JSONL/CSV/CoNLL file or dataset:NAME")
    t.add_argument("--output", required=True, help="directory for metrics.json, checkpoint.pt")
    _add_data_args(t)
    _add_privacy_args(t, algo=False)
    t.add_argument("--epsilon", type=float, help="target epsilon (calibrates z)")
    t.add_argument("--beta", type=float, default=0.5, help="clipping bound (global L2)")
    t.add_argument("--local-steps", type=int, default=2)
    t.add_argument("--local-lr", type=float,
                   help="local SGD learning rate (default 1.0; 0.02 for a causal LM)")
    t.add_argument("--server-lr", type=float, default=1.0)
    t.add_argument("--max-sentences", type=int, default=32,
                   help="sentences a sampled user trains on per round (a random subset)")
    t.add_argument("--users-per-chunk", type=int,
                   help="users trained at once (default 16; 4 for a causal LM)")
    t.add_argument("--model", default=LSTM,
                   help="nwp model: lstm (from scratch, default), smollm2 (the packaged "
                        "SmolLM2-135M-Instruct) or a local AutoModelForCausalLM directory")
    t.add_argument("--trainable-blocks", type=int, metavar="N",
                   help="causal LM: fine-tune the last N blocks and the final norm (default 2; "
                        "0 = final norm only)")
    t.add_argument("--vocab-size", type=int, default=2000)
    t.add_argument("--max-len", type=int,
                   help="words per sentence (LSTM, default 24) or sub-word tokens (causal LM, "
                        "default 32)")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=cmd_train)


def _add_privacy_args(p: argparse.ArgumentParser, algo: bool = True) -> None:
    if algo:
        p.add_argument("--algo", choices=("uedp", "uedp-naive", "userdp"), required=True)
    p.add_argument("--q-u", type=_rate, default=0.05, help="user sampling rate")
    p.add_argument("--q-e", type=_rate, default=0.5, help="detected-entity sampling rate")
    p.add_argument("--q-s", type=_rate, default=1.0, help="extended-entity sampling rate")
    p.add_argument("--z", type=float, help="noise multiplier (std / sensitivity)")
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--entity-users", type=int, default=1, metavar="K",
                   help="protected entities are held by at most K users besides the user")
