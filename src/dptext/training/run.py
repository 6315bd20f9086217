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
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dptext.errors import DPTextError
from dptext.validation import (
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability,
)

LSTM = "lstm"
SMOLLM2 = "smollm2"
ALGOS = ("uedp", "uedp-naive", "userdp", "noiseless", "deid")
DETECTORS = ("spacy", "presidio", "both")
# Defaults that depend on the model: words per sentence / sub-word tokens, local learning rate,
# users trained at once (a causal LM's logits over its 49k-token vocabulary take ~0.6 GB per
# user of 32 sentences).
MODEL_DEFAULTS = {LSTM: {"max_len": 24, "local_lr": 1.0, "users_per_chunk": 16},
                  "causal": {"max_len": 32, "local_lr": 0.02, "users_per_chunk": 4}}
# A run whose held-out loss (nats) grows by more than this over the first round's is stopped:
# log(100), perplexity multiplied by 100.
DIVERGENCE_NATS = math.log(100.0)
# The private training state a resumed run continues from (the random generators' states: whoever
# has this file can remove the noise from the released model; never publish it). Deleted when
# the run completes.
STATE_FILE = "training_state.pt"
STATE_FORMAT = 2  # 2: the generators are numpy states (dptext.rng.generator_state)
# metrics.json fields that are not covered by the training guarantee (docs/uedp.md)
NOT_PRIVATE = ("per-round 'users' (sampled users with usable data), 'update_norm' (median "
               "unclipped update norm), 'seconds', 'eval_seconds', the held-out metrics and "
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
    categories: list[str] | None = None
    detector: str = "spacy"
    synthetic_users: int | None = None
    user_field: str = "user"
    text_field: str = "text"
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
    beta: float = 0.5
    local_steps: int = 2
    local_lr: float | None = None
    server_lr: float = 1.0
    max_sentences: int = 32
    users_per_chunk: int | None = None
    vocab_size: int = 2000
    max_len: int | None = None
    normalizer: str = "usable"
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
        return self.algo in ("uedp", "uedp-naive", "userdp")

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
            if self.trainable_blocks is not None:
                raise DPTextError("--trainable-blocks needs --model smollm2 or a causal LM "
                                  "directory")
        else:
            if self.task != "nwp":
                raise DPTextError("--model applies to --task nwp only")
            if self.model != SMOLLM2 and not Path(self.model).is_dir():
                raise DPTextError(f"--model: expected {LSTM}, {SMOLLM2} or a local causal LM "
                                  f"directory, got {self.model!r}")
            if self.trainable_blocks is not None:
                check_int(self.trainable_blocks, "--trainable-blocks", minimum=0)
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
                             secure_rng=self.secure_rng)
        if config.privacy() is not None and self.epsilon is not None:
            config.z = calibrate_z(config.privacy(), self.rounds, self.epsilon, self.delta)
        return config

    # --------------------------------------------------------------- run
    def run(self, output: str | Path, *, on_round: Callable[[dict], None] | None = None,
            resume: bool = False) -> dict:
        """Train and write ``metrics.json`` and ``checkpoint.pt`` into ``output`` (created if
        missing); returns the summary that ``metrics.json`` holds.

        ``metrics.json`` is rewritten (atomically) after every round, with the epsilon spent so
        far; every ``checkpoint_every`` rounds ``checkpoint.pt`` (the model so far) and the
        private ``training_state.pt`` are written too. ``resume=True`` continues the
        unfinished run in ``output`` from its last checkpoint: same settings (``rounds`` may
        grow), same data, same seed, so the result is that of an uninterrupted run. Replayed
        rounds redraw the same coins and noise, so nothing is spent twice."""
        from dptext.training.trainer import FederatedTrainer

        self.validate()
        out = Path(output)
        if out.exists() and not out.is_dir():
            raise DPTextError(f"--output exists and is not a directory: {out}")
        saved = _read_state(out, resume)
        out.mkdir(parents=True, exist_ok=True)
        # a run without --seed draws its seed from OS entropy once and keeps it in the private
        # state (never in metrics.json or the checkpoint), so that a resumed run replays it
        seed = saved["seed"] if saved else (
            self.seed if self.seed is not None else int(np.random.SeedSequence().entropy))
        config = self.config()
        corpus, spans = load_corpus(self, split=self.task == "nwp", seed=seed)
        if self.algo == "deid":
            corpus = corpus.deidentified(spans)
        rng = np.random.default_rng(seed)
        order = rng.permutation(corpus.n_users)
        test_users = order[: max(1, corpus.n_users // 10)]
        is_test = np.isin(corpus.sentence_user, test_users)
        rows, task, extra = self._task_rows(corpus, is_test)
        train_corpus = without_users(corpus, is_test)
        fingerprint = {"job": self._fingerprint(), "config": _without_rounds(asdict(config)),
                       "corpus": corpus_digest(train_corpus)}
        if saved:
            _check_resumable(saved, fingerprint, self.rounds)
        guard = DivergenceGuard(config)
        summary = {"config": asdict(config), "task": self.task, "model": self.model,
                   **({} if self.model == LSTM else {"trainable_blocks": self.trainable_blocks}),
                   "users": train_corpus.n_users, "test_users": len(test_users),
                   "noise_generator": ("ChaCha20 (secure)" if self.secure_rng else "PCG64"),
                   "not_private": NOT_PRIVATE}
        summary.update(wide_entities(train_corpus, config))
        # the generators: from the seed (drawn or given); a secure run without --seed keys its
        # ChaCha20 generators with 256 fresh bits each (their states are in the private
        # checkpoint state, so a resumed run continues them)
        trainer = FederatedTrainer(train_corpus, select_rows(rows, ~is_test), task, config,
                                   seed=None if self.secure_rng and self.seed is None else seed,
                                   device=self.device)
        # the untrained model on the held-out text (a pretrained model's: the baseline that
        # fine-tuning moves), compared with the trained one at the end (training/learning.py)
        start = task.sentence_losses(trainer.initial)
        untrained = _loss_metrics(start, self.task)
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
            summary["privacy"] = _privacy_so_far(config, trainer.round)
            if stopped is not None:
                summary["stopped"] = stopped
            _write_json(out / "metrics.json", summary)

        def write_checkpoint() -> None:
            _write_model(out / "checkpoint.pt", trainer, config, self.task, extra)
            _write_state(out / STATE_FILE, {"format": STATE_FORMAT, "seed": seed,
                                            **fingerprint, "trainer": trainer.state_dict(),
                                            **({"release_key": release_key}
                                               if self.ledger is not None else {})})

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
        _write_model(out / "checkpoint.pt", trainer, config, self.task, extra)
        clusters = corpus.sentence_user[is_test]
        summary.update(_learning(trainer, task, start, clusters, self.task,
                                 "untrained" if self.model == LSTM else "pretrained"))
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
        compared in the configuration - and the data's path - its content is compared by
        digest)."""
        skip = {"rounds", "progress", "extra", "checkpoint_every", "epsilon", "data", "device"}
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
                                "start_token_id": task.start_id}
        if self.task == "nwp":
            from dptext.training.vocab import Vocabulary

            vocab = Vocabulary.public(self.vocab_size)
            rows = vocab.encode(corpus.sentences, self.max_len)
            return rows, tasks.NextWordTask(len(vocab), rows[test]), {"vocab": list(vocab.words)}
        if corpus.labels is None or any(label is None for label in corpus.labels):
            raise DPTextError("--task cls needs a label for every text (field 'label')")
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
                            max_len=self.max_len), path


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
        raw = read_user_file(source, user_field=job.user_field, text_field=job.text_field)
    if job.limit:
        raw = RawCorpus(raw.texts[: job.limit], raw.users[: job.limit],
                        None if raw.labels is None else raw.labels[: job.limit])
    # user-level DP and noiseless FedAvg use every sentence of a sampled user: no entity is
    # sampled, protected or reported, so detection (minutes on a few thousand sentences) is
    # skipped
    found = (_NoEntities() if getattr(job, "algo", None) in ("userdp", "noiseless")
             else detector(job.categories, job.detector))
    return build_corpus(raw, found, split=split,
                        synthetic=job.synthetic_users,
                        rng=np.random.default_rng(job.seed if seed is None else seed))


class _NoEntities:
    """A detector that finds nothing (runs that do not use entities)."""

    @staticmethod
    def detect(texts) -> list[list]:
        return [[] for _ in texts]


def corpus_digest(corpus) -> str:
    """SHA-256 of a corpus's users, sentences, owners, entities and labels (a resumed run must
    train on the same data)."""
    import hashlib

    h = hashlib.sha256()
    for part in (corpus.users, corpus.sentences, corpus.sentence_user.tolist(),
                 corpus.entity_keys, corpus.sentence_entities, corpus.labels):
        h.update(json.dumps(part, ensure_ascii=False, default=list).encode())
        h.update(b"\x00")
    return h.hexdigest()


def headline(summary: dict, algo: str) -> str:
    """The run's result in one line: the held-out metric after training against the untrained
    model's, and the guarantee - for UeDP both the epsilon of users and of entities held by at
    most K users and the (larger) epsilon of the entities held by more (docs/uedp.md)."""
    last = summary["rounds"][-1]
    rounds = last["round"]
    before = "pretrained" if "pretrained" in summary else "untrained"
    if summary["task"] == "nwp":
        result = (f"held-out perplexity {last['perplexity']:.2f} after {rounds} rounds "
                  f"({before} {summary['untrained']['perplexity']:.2f})")
    else:
        result = (f"held-out error rate {last['error_rate']:.3f}, loss {last['loss']:.4g} after "
                  f"{rounds} rounds (untrained loss {summary['untrained']['loss']:.4g})")
    line = f"{algo}: {result}"
    if last.get("epsilon") is None:
        return line + "; no DP guarantee"
    config = summary["config"]
    delta, k = config["delta"], config["entity_users"]
    if algo == "userdp":
        return line + f"; epsilon {last['epsilon']:.4g} at delta {delta:g} per user"
    line += (f"; epsilon {last['epsilon']:.4g} at delta {delta:g} per user and per entity held "
             f"by at most K={k} users")
    wide = summary.get("wide_entities")
    if wide:
        line += (f", epsilon {wide['epsilon']:.4g} for the "
                 f"{summary['entities_held_by_more_than_K_users']} entities held by more "
                 f"(up to {wide['most_other_holders']} users)")
    return line


def _loss_metrics(losses, task: str) -> dict:
    """Held-out perplexity (nwp) or mean cross-entropy (cls) from per-sentence losses."""
    nll, tokens = losses
    loss = float(nll.sum()) / max(float(tokens.sum()), 1.0)
    return {"perplexity": math.exp(loss), "loss": loss} if task == "nwp" else {"loss": loss}


def _learning(trainer, task, start, clusters, kind: str, before: str = "untrained") -> dict:
    """The trained model against the untrained one and the uniform distribution on the
    held-out text; when it learned nothing visible, a one-line ``warning`` with the likely
    cause (training/learning.py)."""
    from dptext.training.learning import learning_check, likely_cause

    check = learning_check(start, task.sentence_losses(trainer.params), task.uniform_loss,
                           clusters)
    out: dict[str, Any] = {"learning": check}
    if check["learned"]:
        return out
    norms = [r["update_norm"] for r in trainer.metrics if r.get("update_norm") is not None]
    cause = likely_cause(trainer.config, sum(v.numel() for v in trainer.params.values()),
                         trainer.population,
                         rose=check["final_loss"] > check["untrained_loss"],
                         update_norm=float(np.median(norms)) if norms else None)
    if kind == "nwp":
        seen = (f"held-out perplexity {math.exp(check['final_loss']):.4g} against "
                f"{math.exp(check['untrained_loss']):.4g} {before} and "
                f"{math.exp(check['uniform_loss']):.4g} uniform")
    else:
        seen = (f"held-out loss {check['final_loss']:.4g} against "
                f"{check['untrained_loss']:.4g} {before} and {check['uniform_loss']:.4g} "
                f"uniform")
    out["warning"] = f"nothing visibly learned ({seen}); likely cause: {cause}"
    return out


def _without_rounds(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "rounds"}


def _privacy_so_far(config, rounds: int) -> dict | None:
    """What metrics.json says about the budget spent after ``rounds`` rounds (the accountant's
    state: the event composed ``rounds`` times)."""
    privacy = config.privacy()
    if privacy is None:
        return None
    return {"epsilon_spent": privacy.epsilon(rounds, config.delta), "delta": config.delta,
            "rounds_composed": rounds, "accountant": "rdp (dp_accounting)",
            "event": f"SelfComposed(PoissonSampled({privacy.sampling_rate:.6g}, "
                     f"Gaussian(z={privacy.z:.6g})), {rounds})",
            "sensitivity": f"{privacy.sensitivity_factor:g} * beta"}


def _write_json(path: Path, data: dict) -> None:
    from dptext.io import atomic_write

    with atomic_write(path) as f:
        json.dump(data, f, indent=1)


def _write_model(path: Path, trainer, config, task: str, extra: dict) -> None:
    """The released model: trainable parameters, settings, the round reached (no generator
    state)."""
    import torch

    from dptext.io import atomic_write

    with atomic_write(path, "wb") as f:
        params = {k: v.detach().cpu() for k, v in trainer.params.items()}
        torch.save({"params": params, "config": asdict(config), "task": task,
                    "round": trainer.round, **extra}, f)


def _write_state(path: Path, state: dict) -> None:
    """Atomically, readable by the owner only (0600 from creation: it holds the noise's
    generator state)."""
    import os
    import tempfile

    import torch

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_state(out: Path, resume: bool) -> dict | None:
    import torch

    path = out / STATE_FILE
    if not resume:
        if path.exists():
            raise DPTextError(f"{out} holds an unfinished run ({STATE_FILE}): pass --resume to "
                              f"continue it, or choose another --output")
        return None
    if not path.is_file():
        raise DPTextError(f"--resume: no unfinished run in {out} ({STATE_FILE} is missing; a "
                          f"completed run deletes it)")
    try:
        state = torch.load(path, weights_only=True)
    except Exception as err:  # truncated or foreign file
        raise DPTextError(f"--resume: cannot read {path}: {err}") from None
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise DPTextError(f"--resume: {path} is not a dptext training state (format "
                          f"{STATE_FORMAT})")
    return state


def _check_resumable(saved: dict, fingerprint: dict, rounds: int) -> None:
    for key, what in (("job", "settings"), ("config", "training configuration"),
                      ("corpus", "training data")):
        if saved[key] != fingerprint[key]:
            diff = ""
            if isinstance(saved[key], dict):
                names = sorted(k for k in set(saved[key]) | set(fingerprint[key])
                               if saved[key].get(k) != fingerprint[key].get(k))
                diff = f" ({', '.join(names)})"
            raise DPTextError(f"--resume: the {what} differ from the interrupted run's{diff}; "
                              f"resume with the same options")
    done = int(saved["trainer"]["round"])
    if rounds < done:
        raise DPTextError(f"--resume: the checkpoint is at round {done}, past --rounds {rounds}")


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


def wide_entities(corpus, config) -> dict:
    """Entities held by more than K users, and the epsilon that really holds for them: the
    run's noise std is z * beta * S_K, so for an entity held by M > K other users the noise
    multiplier is z * S_K / S_M at the sampling rate of M holders (computed by the accountant;
    docs/uedp.md)."""
    spread = corpus.entity_users()
    privacy = config.privacy()
    # conservatively, every holder of the entity counts as another holder
    wide = int((spread > config.entity_users).sum()) if len(spread) else 0
    out: dict[str, Any] = {"entities_held_by_more_than_K_users": wide}
    if wide and privacy is not None and config.algo != "userdp":
        most = int(spread.max())
        wider = privacy.for_entity_users(most)
        eps = wider.epsilon(config.rounds, config.delta)
        out["wide_entities"] = {
            "most_other_holders": most, "noise_multiplier": wider.z,
            "epsilon": eps, "delta": config.delta,
            "note": (f"{wide} detected entities are held by more than K={config.entity_users} "
                     f"other users (at most {most}); for them this run is ({eps:.4g}, "
                     f"{config.delta:g})-DP (noise multiplier z*S_K/S_M = {wider.z:.4g}), "
                     f"not the epsilon printed for K"),
        }
    return out


def entity_epsilons(corpus, config) -> dict[str, float]:
    """Each detected entity of ``corpus`` (held by at least one user) with the epsilon this run
    gives it at ``config.delta``: the run's epsilon when at most K users hold it, else the one of
    :meth:`TrainingPrivacy.for_entity_users` at its number of holders (every holder counted as
    another holder, as in :func:`wide_entities`). Empty for runs without an entity-level
    guarantee (user-level DP; non-private runs)."""
    privacy = config.privacy()
    if privacy is None or config.algo == "userdp" or corpus.n_entities == 0:
        return {}
    spread = corpus.entity_users()
    by_spread: dict[int, float] = {}
    base = privacy.epsilon(config.rounds, config.delta)
    out = {}
    for e in np.flatnonzero(spread > 0):
        m = int(spread[e])
        if m <= config.entity_users:
            out[corpus.entity_keys[e]] = base
            continue
        if m not in by_spread:
            by_spread[m] = privacy.for_entity_users(m).epsilon(config.rounds, config.delta)
        out[corpus.entity_keys[e]] = by_spread[m]
    return out


class Diverged(DPTextError):
    def __init__(self, message: str, metrics: list[dict]) -> None:
        super().__init__(message)
        self.metrics = metrics


class DivergenceGuard:
    """Stops a run whose held-out loss is not finite or grows by more than ``DIVERGENCE_NATS``
    over the first round's (perplexity x100), with the likely cause: for a private run, the
    noise norm against the clipped signal; otherwise the learning rate."""

    def __init__(self, config) -> None:
        self.config = config
        self.first: float | None = None
        self.seen: list[dict] = []

    def check(self, row: dict) -> None:
        self.seen.append(row)
        loss = row.get("loss")
        if loss is None:
            return
        if self.first is None and math.isfinite(loss):
            self.first = loss
        bad = not math.isfinite(loss) or (self.first is not None
                                          and loss - self.first > DIVERGENCE_NATS)
        if not bad:
            return
        c = self.config
        if c.privacy() is not None:
            std = c.z * c.beta * c.privacy().sensitivity_factor
            cause = (f"the noise (std {std:.3g} per coordinate, divided by q_u*|U|) swamps the "
                     f"clipped signal (norm <= beta = {c.beta:g} per user): use more users, a "
                     f"larger q_u, fewer rounds, or a smaller --local-lr/--server-lr "
                     f"({c.local_lr:g}/{c.server_lr:g})")
        else:
            cause = (f"the learning rate is likely too high (--local-lr {c.local_lr:g}, "
                     f"--server-lr {c.server_lr:g})")
        raise Diverged(f"training diverged at round {row['round']}: held-out loss {loss:.4g} "
                       f"(first round {self.first if self.first is not None else 'n/a'}); "
                       f"{cause}", list(self.seen))
