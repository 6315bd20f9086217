"""A whole training run as the command line does it, callable from Python: load and detect the
corpus, hold out a tenth of the users, build the task (LSTM, packaged SmolLM2 or a local causal
LM, MiniLM classifier), train, stop on divergence, and write ``metrics.json`` and
``checkpoint.pt``.

    >>> from dptext.training.run import TrainJob
    >>> job = TrainJob(algo="uedp", data="dataset:house_of_commons", rounds=5, z=1.0)
    >>> summary = job.run("out/")

Every argument is checked in :meth:`TrainJob.validate` before any data is read or any entity
is detected (``run`` calls it first).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dptext.errors import DPTextError
from dptext.training.report import (
    Diverged,
    DivergenceGuard,
    entity_epsilons,
    guarantee_epsilons,
    headline,
    learning_summary,
    loss_metrics,
    privacy_so_far,
    wide_entities,
)
from dptext.training.state import (
    STATE_FILE,
    STATE_FORMAT,
    check_resumable,
    corpus_digest,
    read_state,
    without_rounds,
    write_json,
    write_model,
    write_state,
)
from dptext.validation import (
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability,
)

LSTM = "lstm"
SMOLLM2 = "smollm2"
ALGOS = ("uedp", "uedp-naive", "userdp", "noiseless", "deid", "dpsgd-example")
DETECTORS = ("spacy", "presidio", "both")
# Defaults that depend on the model: words per sentence / sub-word tokens, local learning rate,
# users trained at once (a causal LM's logits over its 49k-token vocabulary take ~0.6 GB per
# user of 32 sentences).
MODEL_DEFAULTS = {LSTM: {"max_len": 24, "local_lr": 1.0, "users_per_chunk": 16},
                  "causal": {"max_len": 32, "local_lr": 0.02, "users_per_chunk": 4}}
# metrics.json fields that are not covered by the training guarantee (docs/uedp.md)
NOT_PRIVATE = ("per-round 'users' (sampled users with usable data), 'update_norm' (median "
               "unclipped update norm), 'tokens' (trained on), 'seconds', 'eval_seconds', the "
               "held-out metrics and "
               "'untrained' / 'learning' / 'warning' (evaluated on the held-out users' data, "
               "which the guarantee does not cover) and 'entities_held_by_more_than_K_users' / "
               "'wide_entities' are diagnostics computed from the data without noise: share "
               "checkpoint.pt, not metrics.json")


@dataclass
class TrainJob:
    """The settings of one run (the options of ``dptext train``; ``None``: the model's default)."""

    algo: str
    data: str
    rounds: int
    task: str = "nwp"
    model: str = LSTM
    trainable_blocks: int | None = None
    # causal LM: train LoRA adapters of this rank on the trainable blocks instead of the blocks
    lora_rank: int | None = None
    categories: list[str] | None = None
    detector: str = "spacy"
    synthetic_users: int | None = None
    user_field: str = "user"
    text_field: str = "text"
    # the field of a JSONL/CSV record that holds its class (--task cls)
    label_field: str = "label"
    limit: int | None = None
    seed: int | None = None
    # ChaCha20 for the DP noise and the sampling coins (docs/reliability.md, "Randomness")
    secure_rng: bool = False
    # where the parameters, local training and aggregation run: "cpu", "cuda", "auto"
    device: str = "cpu"
    q_u: float = 0.05
    q_e: float = 0.5
    q_s: float = 1.0
    z: float | None = None
    epsilon: float | None = None
    delta: float = 1e-5
    entity_users: int = 1
    # the public user count of the denominator q_u |U| (None: the corpus's, released with
    # noise; trainer.released_population)
    population: int | None = None
    beta: float = 0.5
    local_steps: int = 2
    local_lr: float | None = None
    server_lr: float = 1.0
    max_sentences: int = 32
    users_per_chunk: int | None = None
    vocab_size: int = 2000
    max_len: int | None = None
    normalizer: str = "usable"
    # dpsgd-example: each user's sentences are cut to a uniform random subset of this many
    examples_per_user: int = 8
    checkpoint_every: int = 10
    # the ledger every training user is charged in (the run's (epsilon, delta), before any
    # model is written); owner and dataset name the budget (docs/ledger.md)
    ledger: str | None = None
    owner: str = "default"
    ledger_dataset: str | None = None
    progress: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ checks
    @property
    def model_kind(self) -> str:
        return LSTM if self.model == LSTM else "causal"

    @property
    def private(self) -> bool:
        return self.algo in ("uedp", "uedp-naive", "userdp", "dpsgd-example")

    def validate(self) -> TrainJob:
        """Check every setting (no data is read); fill in the model's defaults."""
        check_choice(self.algo, "--algo", ALGOS)
        check_choice(self.task, "--task", ("nwp", "cls"))
        check_choice(self.detector, "--detector", DETECTORS)
        from dptext.devices import check_device
        from dptext.validation import check_bool

        check_device(self.device)
        check_bool(self.secure_rng, "--secure-rng")
        check_int(self.rounds, "--rounds", minimum=1)
        if self.model == LSTM:
            for key in ("trainable_blocks", "lora_rank"):
                if getattr(self, key) is not None:
                    raise DPTextError(f"--{key.replace('_', '-')} needs --model smollm2 or a "
                                      f"causal LM directory")
        else:
            if self.task != "nwp":
                raise DPTextError("--model applies to --task nwp only")
            if self.model != SMOLLM2 and not Path(self.model).is_dir():
                raise DPTextError(f"--model: expected {LSTM}, {SMOLLM2} or a local causal LM "
                                  f"directory, got {self.model!r}")
            if self.trainable_blocks is not None:
                check_int(self.trainable_blocks, "--trainable-blocks",
                          minimum=0 if self.lora_rank is None else 1)
            if self.lora_rank is not None:
                check_int(self.lora_rank, "--lora-rank", minimum=1)
        for key, value in MODEL_DEFAULTS[self.model_kind].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        for key in ("max_len", "users_per_chunk", "local_steps", "max_sentences"):
            check_int(getattr(self, key), f"--{key.replace('_', '-')}", minimum=1)
        check_int(self.vocab_size, "--vocab-size", minimum=2)
        check_int(self.checkpoint_every, "--checkpoint-every", minimum=0)
        from dptext.training.trainer import NORMALIZERS

        check_choice(self.normalizer, "--normalizer", NORMALIZERS)
        check_int(self.entity_users, "--entity-users", minimum=0)
        check_int(self.examples_per_user, "--examples-per-user", minimum=1)
        if self.ledger is not None and self.algo == "dpsgd-example":
            raise DPTextError("--ledger is not supported with dpsgd-example (its units are "
                              "examples; the comparison algorithm charges nobody)")
        for key in ("local_lr", "server_lr", "beta"):
            check_positive(getattr(self, key), f"--{key.replace('_', '-')}")
        for key in ("q_u", "q_e", "q_s"):
            check_probability(getattr(self, key), f"--{key.replace('_', '-')}")
        check_delta(self.delta, "--delta")
        if self.ledger is not None and not self.private:
            raise DPTextError(f"--ledger charges a run's (epsilon, delta): {self.algo} training "
                              f"has no DP guarantee to charge")
        if self.limit is not None:
            check_int(self.limit, "--limit", minimum=1)
        if self.synthetic_users is not None:
            check_int(self.synthetic_users, "--synthetic-users", minimum=1)
        if self.private:
            if self.z is None and self.epsilon is None:
                raise DPTextError("give --epsilon (and --delta) or --z for a private algorithm")
            if self.z is not None and self.epsilon is not None:
                raise DPTextError("give --epsilon or --z, not both")
            if self.z is not None:
                check_positive(self.z, "--z")
            if self.epsilon is not None:
                check_positive(self.epsilon, "--epsilon")
        if not self.data.startswith("dataset:") and not Path(self.data).is_file():
            raise DPTextError(f"--data: no such file: {self.data}")
        if self.data.startswith("dataset:"):
            from dptext.datasets import dataset_names

            name = self.data.split(":", 1)[1]
            if name not in dataset_names():
                raise DPTextError(f"unknown dataset {name!r}; packaged: "
                                  f"{', '.join(dataset_names())}")
        return self

    def config(self):
        """The round loop's :class:`~dptext.training.trainer.TrainConfig` (z calibrated to
        ``epsilon`` by the accountant when a target epsilon is given)."""
        from dptext.accounting.uedp import calibrate_z
        from dptext.training.trainer import TrainConfig

        config = TrainConfig(algo=self.algo, rounds=self.rounds, q_u=self.q_u, q_e=self.q_e,
                             q_s=self.q_s, z=self.z or 1.0, beta=self.beta,
                             entity_users=self.entity_users, delta=self.delta,
                             local_steps=self.local_steps, local_lr=self.local_lr,
                             server_lr=self.server_lr, max_sentences=self.max_sentences,
                             max_len=self.max_len, users_per_chunk=self.users_per_chunk,
                             normalizer=self.normalizer, seed=self.seed,
                             examples_per_user=self.examples_per_user,
                             population=self.population, secure_rng=self.secure_rng)
        if config.privacy() is not None and self.epsilon is not None:
            config.z = calibrate_z(config.privacy(), self.rounds, self.epsilon, self.delta)
        return config

    # --------------------------------------------------------------- run
    def unit(self) -> str:
        """What one protected unit is, in words (the result line names it)."""
        if self.synthetic_users:
            return (f"a synthetic user ({self.synthetic_users} random groups of texts, "
                    f"--synthetic-users: not a person)")
        if self.data.startswith("dataset:"):
            return f"the author of a text ({self.data}'s author field)"
        return f"the value of the field '{self.user_field}'"

    def run(self, output: str | Path, *, on_round: Callable[[dict], None] | None = None,
            resume: bool = False, log: Callable[[str], None] | None = None) -> dict:
        """Train and write ``metrics.json`` and ``checkpoint.pt`` into ``output`` (created if
        missing); returns the summary that ``metrics.json`` holds.

        ``metrics.json`` is rewritten (atomically) after every round, with the epsilon spent so
        far; every ``checkpoint_every`` rounds ``checkpoint.pt`` (the model so far) and the
        private ``training_state.pt`` are written too. ``resume=True`` continues the
        unfinished run in ``output`` from its last checkpoint: same settings (``rounds`` may
        grow), same data, same seed, so the result is that of an uninterrupted run. Replayed
        rounds redraw the same coins and noise, so nothing is spent twice. ``log``: called with
        a one-line message at each stage before the rounds (loading, detection, evaluation),
        so that a long start is not silent."""
        from dptext.training.trainer import FederatedTrainer

        self.validate()
        out = Path(output)
        if out.exists() and not out.is_dir():
            raise DPTextError(f"--output exists and is not a directory: {out}")
        saved = read_state(out, resume)
        out.mkdir(parents=True, exist_ok=True)
        # a run without --seed draws its seed from OS entropy once and keeps it in the private
        # state (never in metrics.json or the checkpoint), so that a resumed run replays it
        seed = saved["seed"] if saved else (
            self.seed if self.seed is not None else int(np.random.SeedSequence().entropy))
        say = log or (lambda message: None)
        config = self.config()
        detecting = self.algo not in ("userdp", "noiseless", "dpsgd-example")
        say(f"reading {self.data}" + (f" and detecting entities ({self.detector}; about 1 s "
                                      f"per 50 texts on 2 cores)" if detecting else ""))
        corpus, spans = load_corpus(self, split=self.task == "nwp", seed=seed)
        if self.algo == "deid":
            corpus = corpus.deidentified(spans)
        rng = np.random.default_rng(seed)
        order = rng.permutation(corpus.n_users)
        test_users = order[: max(1, corpus.n_users // 10)]
        is_test = np.isin(corpus.sentence_user, test_users)
        say(f"{corpus.n_users} users, {len(corpus.sentences)} sentences; preparing the "
            f"{self.model} {self.task} task")
        rows, task, extra = self._task_rows(corpus, is_test)
        train_corpus = without_users(corpus, is_test)
        train_rows = select_rows(rows, ~is_test)
        if self.algo == "dpsgd-example":
            train_corpus, keep = per_example(train_corpus, self.examples_per_user,
                                             np.random.default_rng([seed, 1]))
            train_rows = select_rows(train_rows, keep)
        fingerprint = {"job": self._fingerprint(), "config": without_rounds(asdict(config)),
                       "corpus": corpus_digest(train_corpus)}
        if saved:
            check_resumable(saved, fingerprint, self.rounds)
        guard = DivergenceGuard(config)
        summary = {"config": asdict(config), "task": self.task, "model": self.model,
                   **({} if self.model == LSTM else {"trainable_blocks": self.trainable_blocks,
                                                     "lora_rank": self.lora_rank}),
                   "users": train_corpus.n_users, "test_users": len(test_users),
                   "unit": self.unit(),
                   "noise_generator": ("ChaCha20 (secure)" if self.secure_rng else "PCG64"),
                   "not_private": NOT_PRIVATE}
        summary.update(wide_entities(train_corpus, config))
        # the generators: from the seed (drawn or given); a secure run without --seed keys its
        # ChaCha20 generators with 256 fresh bits each (their states are in the private
        # checkpoint state, so a resumed run continues them)
        trainer = FederatedTrainer(train_corpus, train_rows, task, config,
                                   seed=None if self.secure_rng and self.seed is None else seed,
                                   device=self.device)
        # the untrained model on the held-out text (a pretrained model's: the baseline that
        # fine-tuning moves), compared with the trained one at the end (training/learning.py)
        say(f"evaluating the {'untrained' if self.model == LSTM else 'pretrained'} model on "
            f"{int(is_test.sum())} held-out sentences")
        start = task.sentence_losses(trainer.initial)
        untrained = loss_metrics(start, self.task)
        summary["untrained"] = untrained
        if self.model != LSTM:
            summary["pretrained"] = untrained
        if saved:
            trainer.load_state_dict(saved["trainer"])
            for row in trainer.metrics:
                guard.check(row)
        if self.ledger is not None:
            summary["ledger"] = self._charge(config, train_corpus, fingerprint, saved=saved)
            release_key = summary["ledger"].pop("release_key")

        def write_metrics(completed: bool, stopped: str | None = None) -> None:
            summary["rounds"] = trainer.metrics
            summary["completed"] = completed
            summary["privacy"] = privacy_so_far(config, trainer.round)
            if config.privacy() is not None:
                # |U| of the denominator q_u |U|: public, or the count released with noise
                summary["denominator_units"] = {
                    "value": trainer.population,
                    "source": ("public (--population)" if config.population is not None else
                               f"the corpus's count + N(0, {config.privacy().count_std:g}^2), "
                               f"released once and charged")}
            if stopped is not None:
                summary["stopped"] = stopped
            write_json(out / "metrics.json", summary)

        def write_checkpoint() -> None:
            write_model(out / "checkpoint.pt", trainer, config, self.task, extra)
            write_state(out / STATE_FILE, {"format": STATE_FORMAT, "seed": seed,
                                            **fingerprint, "trainer": trainer.state_dict(),
                                            **({"release_key": release_key}
                                               if self.ledger is not None else {})})

        say(f"training rounds {trainer.round + 1}-{config.rounds} "
            f"({train_corpus.n_users} training units, q_u {config.q_u:g})")
        while trainer.round < config.rounds:
            row = trainer.step()
            try:
                guard.check(row)
            except Diverged as err:
                write_metrics(False, str(err))
                (out / STATE_FILE).unlink(missing_ok=True)  # a diverged run is not resumed
                raise DPTextError(f"{err} (metrics so far in {out / 'metrics.json'})") from None
            write_metrics(False)
            if on_round is not None:
                on_round(row)
            every = self.checkpoint_every
            if every and trainer.round % every == 0 and trainer.round < config.rounds:
                write_checkpoint()
        write_model(out / "checkpoint.pt", trainer, config, self.task, extra)
        clusters = corpus.sentence_user[is_test]
        summary.update(learning_summary(trainer, task, start, clusters, self.task,
                                 "untrained" if self.model == LSTM else "pretrained"))
        summary.update(guarantee_epsilons(config, trainer.round, summary.get("wide_entities")))
        summary["headline"] = headline(summary, self.algo)
        write_metrics(True)
        (out / STATE_FILE).unlink(missing_ok=True)
        return summary

    def _charge(self, config, corpus, fingerprint: dict, *, saved: dict | None) -> dict:
        """Charge every training user the whole run's (epsilon, delta) - and, for UeDP, every
        detected entity of the training data (unit ``entity:<normalized text>``) the epsilon
        that holds for it (the run's for an entity held by at most K users, the larger one of
        :func:`entity_epsilons` for a wider one) - before any model is written (a checkpoint
        is a release too). All or nothing: a user or entity over budget stops the run before
        it trains. A resumed run continues the same release (its key is in the run's state
        file; an older state file: the run's fingerprint), so nobody is charged twice; any
        other run - the same command again after completion included - is a new release,
        charged again (issue 32: the key was the fingerprint alone, so a rerun reopened the
        completed release, every user was "already" charged and a new model left uncharged)."""
        import hashlib
        import secrets

        from dptext.ledger import Ledger
        from dptext.ledger.training import training_event

        privacy = config.privacy()
        epsilon = privacy.epsilon(config.rounds, config.delta)
        users = sorted({str(u) for u in corpus.users if str(u)})
        if not users:
            raise DPTextError("the training corpus names no users to charge")
        units = [(f"user:{u}", u, epsilon) for u in users]
        per_entity = entity_epsilons(corpus, config)
        units += [(f"entity:{key}", f"entity:{key}", eps) for key, eps in per_entity.items()]
        dataset = self.ledger_dataset or Path(self.data).name.replace("dataset:", "")
        ledger = Ledger(self.ledger)
        events = {eps: [training_event(eps, config.delta, self.algo)]
                  for eps in {e for _, _, e in units}}
        resumed = bool(saved)
        if not resumed:
            over = [unit for _, unit, eps in units
                    if ledger.would_exceed(unit, events[eps], owner=self.owner, dataset=dataset)]
            if over:
                raise DPTextError(f"{len(over)} of {len(units)} training users and entities "
                                  f"would exceed their budget with this run's ({epsilon:.4g}, "
                                  f"{config.delta:g}) (entities held by more than K users: "
                                  f"up to {max(per_entity.values(), default=epsilon):.4g}) "
                                  f"(first: {over[0]!r}); nothing was trained or charged")
        key = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode())
        release_key = "train:" + key.hexdigest()
        if saved and saved.get("release_key"):
            release_key = saved["release_key"]
        elif not saved:
            release_key += ":" + secrets.token_hex(16)
        release_id = ledger.open_release(
            owner=self.owner, dataset=dataset, mechanism=self.algo,
            params={"epsilon": epsilon, "delta": config.delta, "rounds": config.rounds,
                    "z": config.z, "q_u": config.q_u},
            release_key=release_key)
        decisions = ledger.reserve(release_id, [(record, unit, events[eps])
                                                for record, unit, eps in units],
                                   all_or_nothing=True)
        ledger.commit(release_id, [d.charge_id for d in decisions])
        wide = {k: e for k, e in per_entity.items() if e > epsilon}
        return {"release_id": release_id, "release_key": release_key,
                "users_charged": len(users),
                "entities_charged": len(per_entity), "epsilon": epsilon,
                "entity_epsilon_max": max(per_entity.values(), default=None),
                "wide_entities_charged": len(wide), "delta": config.delta,
                "owner": self.owner, "dataset": dataset}

    def _fingerprint(self) -> dict:
        """The settings a resumed run must share (all but the number of rounds, the
        display/checkpoint options, the device, the target epsilon - its noise multiplier is
        compared in the configuration - and the data's path and label field - its content,
        labels included, is compared by digest)."""
        skip = {"rounds", "progress", "extra", "checkpoint_every", "epsilon", "data", "device",
                "label_field"}
        return {k: v for k, v in asdict(self).items() if k not in skip}

    def _task_rows(self, corpus, is_test):
        """Per-sentence training rows and the task object (next-word LSTM or causal LM, or
        MiniLM classifier), the task evaluating on the sentences of ``is_test``."""
        import torch

        from dptext.training import tasks

        test = torch.as_tensor(is_test)
        if self.task == "nwp" and self.model != LSTM:
            task, path = self._causal_task()
            rows = task.rows(corpus.sentences, progress=self.progress)
            task.test = rows[test]
            return rows, task, {"model": path, "trainable_blocks": task.blocks,
                                "lora_rank": task.lora_rank, "start_token_id": task.start_id}
        if self.task == "nwp":
            from dptext.training.vocab import Vocabulary

            vocab = Vocabulary.public(self.vocab_size)
            rows = vocab.encode(corpus.sentences, self.max_len)
            return rows, tasks.NextWordTask(len(vocab), rows[test]), {"vocab": list(vocab.words)}
        if corpus.labels is None or any(label is None for label in corpus.labels):
            raise DPTextError(f"--task cls needs a label for every text (field "
                             f"{self.label_field!r}; name it with --label-field)")
        classes = sorted(set(corpus.labels))
        labels = torch.tensor([classes.index(label) for label in corpus.labels])
        rows = tasks.classification_rows(tasks.minilm_embeddings(list(corpus.sentences)), labels)
        task = tasks.ClassificationTask(rows.shape[1] - 1, len(classes), rows[test])
        return rows, task, {"classes": classes}

    def _causal_task(self):
        """The pretrained causal LM (packaged SmolLM2 or a local AutoModelForCausalLM dir)."""
        from dptext.lm.loading import default_causal_dir, load_model
        from dptext.training.causal_lm import CausalLMTask

        if self.trainable_blocks is None:
            self.trainable_blocks = 2
        path = (str(default_causal_dir(progress=self.progress)) if self.model == SMOLLM2
                else self.model)
        model, tokenizer = load_model(path, causal=True)
        return CausalLMTask(model, tokenizer, blocks=self.trainable_blocks,
                            max_len=self.max_len, lora_rank=self.lora_rank), path


# ------------------------------------------------------------------ pieces
def load_corpus(job, *, split: bool = True, seed: int | None = None):
    """The user corpus of ``job.data`` with its detected entities (and the detected spans);
    ``seed`` (default ``job.seed``) draws the synthetic users."""
    from dptext.detect import detector
    from dptext.training.corpus import RawCorpus, build_corpus, read_user_file

    source = job.data
    if source.startswith("dataset:"):
        from dptext.datasets import load_dataset

        ds = load_dataset(source.split(":", 1)[1], split="all")
        raw = RawCorpus(ds.texts, ds.authors or [""] * len(ds.texts), ds.labels)
    else:
        if not Path(source).exists():
            raise DPTextError(f"no such file: {source}")
        raw = read_user_file(source, user_field=job.user_field, text_field=job.text_field,
                             label_field=getattr(job, "label_field", "label"))
    if job.limit:
        raw = RawCorpus(raw.texts[: job.limit], raw.users[: job.limit],
                        None if raw.labels is None else raw.labels[: job.limit])
    # user-level DP and noiseless FedAvg use every sentence of a sampled user: no entity is
    # sampled, protected or reported, so detection (minutes on a few thousand sentences) is
    # skipped
    found = (_NoEntities() if getattr(job, "algo", None) in ("userdp", "noiseless",
                                                               "dpsgd-example")
             else detector(job.categories, job.detector))
    return build_corpus(raw, found, split=split,
                        synthetic=job.synthetic_users,
                        rng=np.random.default_rng(job.seed if seed is None else seed))


class _NoEntities:
    """A detector that finds nothing (runs that do not use entities)."""

    @staticmethod
    def detect(texts) -> list[list]:
        return [[] for _ in texts]


def per_example(corpus, k: int, rng: np.random.Generator):
    """(corpus, kept-sentence mask) for example-level DP-SGD: every user's sentences cut to a
    uniform random subset of at most ``k`` (the contribution bound its user-level guarantee
    rests on), each kept sentence a unit of its own (named ``user#i``)."""
    from dptext.training.corpus import UserCorpus

    keep = np.zeros(len(corpus.sentences), dtype=bool)
    for u in range(corpus.n_users):
        mine = np.flatnonzero(corpus.sentence_user == u)
        keep[mine if len(mine) <= k else rng.choice(mine, k, replace=False)] = True
    kept = np.flatnonzero(keep)
    owners = corpus.sentence_user[kept]
    names = tuple(f"{corpus.users[o]}#{j}" for j, o in enumerate(owners))
    return UserCorpus(names, tuple(corpus.sentences[i] for i in kept), np.arange(len(kept)),
                      corpus.entity_keys, corpus.entity_categories,
                      tuple(corpus.sentence_entities[i] for i in kept),
                      None if corpus.labels is None else tuple(corpus.labels[i] for i in kept)
                      ), keep


def select_rows(rows, mask):
    """The rows of the sentences in ``mask`` (lazily for causal_lm.PrefixRows)."""
    import torch

    from dptext.training.causal_lm import PrefixRows

    return rows.subset(mask) if isinstance(rows, PrefixRows) else rows[torch.as_tensor(mask)]


def without_users(corpus, drop_mask):
    """The corpus without the sentences in ``drop_mask`` and without users left with none."""
    from dptext.training.corpus import UserCorpus

    keep = np.flatnonzero(~drop_mask)
    kept_users, owner = np.unique(corpus.sentence_user[keep], return_inverse=True)
    return UserCorpus(tuple(corpus.users[u] for u in kept_users),
                      tuple(corpus.sentences[i] for i in keep), owner,
                      corpus.entity_keys, corpus.entity_categories,
                      tuple(corpus.sentence_entities[i] for i in keep),
                      None if corpus.labels is None else tuple(corpus.labels[i] for i in keep))
