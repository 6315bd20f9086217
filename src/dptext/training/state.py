"""The files of a training run (training/run.py): ``metrics.json``, the released
``checkpoint.pt`` and the private ``training_state.pt`` a resumed run continues from, each
written atomically; and what a resumed run must share with the interrupted one (settings,
training configuration, a digest of the training data).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from dptext.errors import DPTextError

# The private training state a resumed run continues from (the random generators' states: whoever
# has this file can remove the noise from the released model; never publish it). Deleted when
# the run completes.
STATE_FILE = "training_state.pt"
STATE_FORMAT = 2  # 2: the generators are numpy states (dptext.rng.generator_state)


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


def without_rounds(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "rounds"}


def write_json(path: Path, data: dict) -> None:
    from dptext.io import atomic_write

    with atomic_write(path) as f:
        json.dump(data, f, indent=1)


def write_model(path: Path, trainer, config, task: str, extra: dict) -> None:
    """The released model: trainable parameters, settings, the round reached (no generator
    state)."""
    import torch

    from dptext.io import atomic_write

    with atomic_write(path, "wb") as f:
        params = {k: v.detach().cpu() for k, v in trainer.params.items()}
        torch.save({"params": params, "config": asdict(config), "task": task,
                    "round": trainer.round, **extra}, f)


def write_state(path: Path, state: dict) -> None:
    """Atomically and durably, readable by the owner only (0600 from creation: it holds the
    noise's generator state)."""
    import torch

    from dptext.io import atomic_write

    with atomic_write(path, "wb", durable=True, permissions=0o600) as f:
        torch.save(state, f)


def read_state(out: Path, resume: bool) -> dict | None:
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


def check_resumable(saved: dict, fingerprint: dict, rounds: int) -> None:
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
