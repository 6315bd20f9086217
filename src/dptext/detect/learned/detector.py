"""The learned detector: loads the shipped weights (``model.npz``, checked against the digest
recorded in ``model.sha256`` before it is parsed) once, on first use, and tags texts with the
numpy network (:mod:`.network`). No torch, no spaCy at inference."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import numpy as np

from dptext.detect.learned.features import BUCKETS, FEATURES, POSITION, Featurizer
from dptext.detect.learned.network import REACH, forward_chunked
from dptext.detect.learned.tags import CATEGORIES, TAGS, LearnedSpan, decode
from dptext.errors import DPTextError

PACKAGE_DIR = Path(__file__).resolve().parent
WEIGHTS = PACKAGE_DIR / "model.npz"
_NAMES = ("emb", "inp_w", "inp_b", "out_w", "out_b")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_digest(weights: Path) -> tuple[str, int]:
    """The recorded ``sha256 <hex> <bytes>`` beside ``weights`` (``NAME.sha256``)."""
    record = weights.with_suffix(".sha256")
    try:
        kind, hexdigest, size = record.read_text(encoding="ascii").split()
        if kind != "sha256" or len(hexdigest) != 64:
            raise ValueError
        return hexdigest, int(size)
    except (OSError, ValueError, UnicodeDecodeError):
        raise DPTextError(f"learned detector: no valid digest record {record}") from None


def load_weights(weights: str | Path = WEIGHTS) -> tuple[dict[str, np.ndarray], dict]:
    """The parameters (float32) and the metadata of a weights file, after its size and sha256
    match its digest record; a one-line :class:`DPTextError` otherwise."""
    weights = Path(weights)
    hexdigest, size = read_digest(weights)
    try:
        actual_size = weights.stat().st_size
    except OSError as err:
        raise DPTextError(f"learned detector: cannot read {weights} ({err.strerror})") from None
    if actual_size != size or file_sha256(weights) != hexdigest:
        raise DPTextError(f"learned detector: {weights} does not match its recorded sha256 "
                          f"{hexdigest[:12]}... (corrupt or replaced); reinstall dptext or "
                          "rebuild it with benchmarks/train_detector.py")
    try:
        with np.load(weights, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(bytes(arrays.pop("meta")).decode("utf-8"))
    except Exception as err:  # noqa: BLE001 - any parse failure is one message
        raise DPTextError(f"learned detector: {weights} is not a weights file ({err})") from None
    if tuple(meta.get("tags", ())) != TAGS or meta.get("buckets") != BUCKETS or \
            meta.get("features") != FEATURES or meta.get("position") != POSITION:
        raise DPTextError(f"learned detector: {weights} was built for another tag set or "
                          "feature layout than this dptext")
    params = {k: v.astype(np.float32) for k, v in arrays.items()}
    missing = [n for n in _NAMES if n not in params]
    if missing:
        raise DPTextError(f"learned detector: {weights} lacks {', '.join(missing)}")
    return params, meta


class LearnedDetector:
    """Finds PHI spans with the learned token tagger: :meth:`find` for one text,
    :meth:`find_many` for many (texts are tagged together, ``batch_tokens`` rows at a time).
    ``threshold``: spans whose mean tag probability is below it are dropped. The weights load
    on the first call (``weights``: another file with its ``.sha256`` record beside it)."""

    def __init__(self, weights: str | Path = WEIGHTS, threshold: float = 0.0,
                 batch_tokens: int = 4096) -> None:
        self.weights = Path(weights)
        self.threshold = float(threshold)
        self.batch_tokens = int(batch_tokens)
        self.categories = CATEGORIES
        self._params: dict[str, np.ndarray] | None = None
        self.meta: dict = {}
        self._featurizer = Featurizer()
        self._lock = threading.Lock()

    def load(self) -> LearnedDetector:
        with self._lock:
            if self._params is None:
                self._params, self.meta = load_weights(self.weights)
        return self

    def find(self, text: str) -> list[LearnedSpan]:
        return self.find_many([text])[0]

    def find_many(self, texts: Iterable[str]) -> list[list[LearnedSpan]]:
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise DPTextError(f"learned detector: texts must be str, not "
                                  f"{type(t).__name__}")
        self.load()
        out: list[list[LearnedSpan]] = [[] for _ in texts]
        batch: list[tuple[int, tuple]] = []  # (index, encoded text): at most batch_tokens rows
        rows = 0
        for i, text in enumerate(texts):
            enc = self._featurizer.encode(text)
            if batch and rows + len(enc[0]) > self.batch_tokens:
                self._tag(batch, out)
                batch, rows = [], 0
            batch.append((i, enc))
            rows += len(enc[0]) + REACH
        if batch:
            self._tag(batch, out)
        return out

    def _tag(self, batch: list[tuple[int, tuple]], out: list) -> None:
        gap_ids = np.zeros((REACH, FEATURES), dtype=np.int64)
        gap_dense = np.zeros((REACH, POSITION), dtype=np.float32)
        parts_ids, parts_dense, parts_mask, bounds = [], [], [], []
        row = 0
        for _, (ids, dense, _) in batch:
            parts_ids += [ids, gap_ids]
            parts_dense += [dense, gap_dense]
            parts_mask += [np.ones(len(ids), np.float32), np.zeros(REACH, np.float32)]
            bounds.append((row, row + len(ids)))
            row += len(ids) + REACH
        logits = forward_chunked(self._params, np.concatenate(parts_ids),
                                 np.concatenate(parts_dense), np.concatenate(parts_mask))
        logits -= logits.max(1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(1, keepdims=True)
        tags = probs.argmax(1)
        best = probs.max(1)
        for (i, (_, _, token_spans)), (lo, hi) in zip(batch, bounds, strict=True):
            spans = decode(tags[lo:hi], best[lo:hi], token_spans)
            out[i] = [s for s in spans if s.score >= self.threshold]


@cache
def shared_detector(weights: str = str(WEIGHTS)) -> LearnedDetector:
    """One detector per weights file for the process (its weights load on first use): what the
    entity detector and :class:`~dptext.detect.learned.recognizer.LearnedRecognizer` use."""
    return LearnedDetector(weights)
