"""A small UeDP TrainJob and a way to kill it after a round, shared by the resume and the
randomness tests (tests/training/test_training_resume.py, tests/training/test_training_rng.py)."""

from __future__ import annotations

import json

from dptext.training.run import TrainJob

TEXTS = [
    "Alice Smith moved to Boston last year. She likes the city and the people.",
    "The weather is good today. I will walk to the park with my dog.",
    "Microsoft hired Bob Jones in London. He works on new products.",
    "We had dinner at home. The food was very good and the time was nice.",
]


def write_users(path) -> str:
    """12 users with 2 texts each, as JSONL at ``path``; returns the path as a string."""
    rows = [{"user": f"u{i}", "text": TEXTS[(i + j) % 4]} for i in range(12) for j in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def uedp_job(data: str, **kw) -> TrainJob:
    """A seeded UeDP job small enough for a test (5 rounds, checkpoint every 2)."""
    base = dict(algo="uedp", data=data, rounds=5, z=1.0, q_u=0.5, q_e=0.5, q_s=0.5,
                vocab_size=300, max_len=10, seed=0, checkpoint_every=2,
                categories=["PERSON", "GPE", "ORG"])
    return TrainJob(**{**base, **kw})


class Killed(Exception):
    """What ``kill_at`` raises: the run stops as if killed after that round's checkpoint."""


def kill_at(round_number: int):
    def on_round(row):
        if row["round"] == round_number:
            raise Killed
    return on_round


def stable(rows):
    """Round metrics without their timings (which differ between runs)."""
    return [{k: v for k, v in r.items() if k not in ("seconds", "eval_seconds")} for r in rows]
