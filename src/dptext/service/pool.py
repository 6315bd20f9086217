"""Fitted mechanisms shared by every request of a process, and batching of LM requests.

A mechanism is built and fitted once per (name, parameters) and kept (its tables are read-only
after the fit, so concurrent requests may sample from it at the same time: every request
passes its own generator). Word mechanisms are fast enough to run in the request's thread.
Language-model mechanisms (DP-MLM, DP-Prompt) cost one forward pass per step of a batch,
whatever the batch size up to the model's width: a :class:`Batcher` holds each request for at
most ``window`` seconds and runs the texts of all requests that arrived meanwhile in one
``privatize_batch`` call. The service draws from fresh OS entropy only (no seeds), so a
batch shared by several requests gives each text a fresh, independent draw.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.registry import mechanism, registered

LM_MECHANISMS = ("dpmlm", "dpprompt")


def _key(name: str, params: dict) -> str:
    return json.dumps([name, params], sort_keys=True, default=str)


class Batcher:
    """Groups concurrent ``privatize`` calls on one LM mechanism into batches."""

    def __init__(self, m: Mechanism, *, window: float = 0.01, max_texts: int = 64) -> None:
        self.m, self.window, self.max_texts = m, window, max_texts
        self._queue: queue.Queue = queue.Queue()
        self.batches = 0  # batches run (for tests and the benchmark)
        self._thread = threading.Thread(target=self._loop, name=f"batch-{m.name}", daemon=True)
        self._thread.start()

    def submit(self, texts: Sequence[str]) -> list[Result]:
        future: Future = Future()
        self._queue.put((list(texts), future))
        return future.result()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            items = [first]
            deadline = time.monotonic() + self.window
            count = len(first[0])
            while count < self.max_texts:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    item = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                items.append(item)
                count += len(item[0])
            self._run(items)

    def _run(self, items) -> None:
        texts = [t for ts, _ in items for t in ts]
        try:
            results = self.m.privatize_batch(texts, rng=None)  # fresh OS entropy
        except Exception as err:  # noqa: BLE001 - handed to every waiting request
            for _, future in items:
                future.set_exception(err)
            return
        self.batches += 1
        start = 0
        for ts, future in items:
            future.set_result(results[start:start + len(ts)])
            start += len(ts)


class MechanismPool:
    """One fitted instance per (mechanism, parameters), built on first use, thread-safe."""

    def __init__(self, *, batch_window: float = 0.01, batch_max: int = 64) -> None:
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._mechanisms: dict[str, Mechanism] = {}
        self._batchers: dict[str, Batcher] = {}
        self.batch_window, self.batch_max = batch_window, batch_max

    def get(self, name: str, params: dict) -> Mechanism:
        if name not in registered():
            raise DPTextError(f"unknown mechanism {name!r}; available: "
                              f"{', '.join(registered())}")
        key = _key(name, params)
        with self._lock:
            if key in self._mechanisms:
                return self._mechanisms[key]
            lock = self._building.setdefault(key, threading.Lock())
        with lock:  # one build per key; other requests for it wait
            with self._lock:
                if key in self._mechanisms:
                    return self._mechanisms[key]
            m = mechanism(name, **params)
            m.fit()
            with self._lock:
                self._mechanisms[key] = m
            return m

    def privatize(self, name: str, params: dict, texts: Sequence[str], *,
                  batch: bool = True) -> list[Result]:
        """Privatize ``texts`` with fresh OS entropy (LM mechanisms through the shared batcher
        unless ``batch=False``)."""
        m = self.get(name, params)
        if name in LM_MECHANISMS and batch and self.batch_window > 0:
            key = _key(name, params)
            with self._lock:
                batcher = self._batchers.get(key)
                if batcher is None:
                    batcher = self._batchers[key] = Batcher(m, window=self.batch_window,
                                                            max_texts=self.batch_max)
            return batcher.submit(texts)
        return m.privatize_batch(list(texts), rng=None)

    def batcher(self, name: str, params: dict) -> Batcher | None:
        with self._lock:
            return self._batchers.get(_key(name, params))

    @property
    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._mechanisms)
