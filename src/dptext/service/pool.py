"""Fitted mechanisms shared by every request of a process, and batching of LM requests.

A mechanism is built and fitted once per (name, parameters) and kept (its tables are read-only
after the fit, so concurrent requests may sample from it at the same time: every request
passes its own generator). The pool is bounded: at most ``max_mechanisms`` fitted instances
and ``max_bytes`` of their arrays (the shared word space not counted), the least recently
used dropped first; and an owner may have at most ``max_new_per_owner_hour`` distinct
parameter sets fitted for it in any hour (a 429 naming the limit, before any fit). Word
mechanisms are fast enough to run in the request's thread.
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
from collections import OrderedDict, deque
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.registry import mechanism, registered
from dptext.service.limits import LimitExceeded

LM_MECHANISMS = ("dpmlm", "dpprompt")


def _key(name: str, params: dict, entities: dict | None = None) -> str:
    return json.dumps([name, params] + ([entities] if entities else []), sort_keys=True,
                      default=str)


class Batcher:
    """Groups concurrent ``privatize`` calls on one LM mechanism into batches."""

    def __init__(self, m: Mechanism, *, window: float = 0.01, max_texts: int = 64) -> None:
        self.m, self.window, self.max_texts = m, window, max_texts
        self._queue: queue.Queue = queue.Queue()
        self.batches = 0  # batches run (for tests and the benchmark)
        self._closed = False
        self._submit = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"batch-{m.name}", daemon=True)
        self._thread.start()

    def submit(self, texts: Sequence[str]) -> list[Result]:
        future: Future = Future()
        with self._submit:
            closed = self._closed
            if not closed:
                self._queue.put((list(texts), future))
        if closed:  # dropped from the pool meanwhile: run alone
            return self.m.privatize_batch(list(texts), rng=None)
        return future.result()

    def close(self) -> None:
        """Stop the thread once the requests queued before now have run (so the mechanism
        can be freed); later submits run alone."""
        with self._submit:
            self._closed = True
            self._queue.put(None)

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
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
                if item is None:  # closed: run what came before, then stop
                    self._run(items)
                    return
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


def memory_bytes(m: Mechanism) -> int:
    """The bytes of the arrays a fitted mechanism holds itself: numpy arrays and torch tensors
    among its attributes, in dicts, lists and tuples of them, and the parameters of torch
    modules (the word space, shared by every mechanism on it, is another object: not
    counted)."""
    seen: set[int] = set()

    def size(value, depth: int) -> int:
        if id(value) in seen or depth > 3:
            return 0
        seen.add(id(value))
        if isinstance(value, np.ndarray):
            return int(value.nbytes)
        kind = type(value).__module__.split(".")[0]
        if kind == "torch":
            if hasattr(value, "element_size") and hasattr(value, "nelement"):
                return int(value.element_size() * value.nelement())
            if hasattr(value, "parameters"):
                return sum(int(p.element_size() * p.nelement()) for p in value.parameters())
            return 0
        if isinstance(value, dict):
            return sum(size(v, depth + 1) for v in value.values())
        if isinstance(value, list | tuple):
            return sum(size(v, depth + 1) for v in value)
        return 0

    return sum(size(v, 0) for v in vars(m).values())


class MechanismPool:
    """Fitted instances per (mechanism, parameters), built on first use, thread-safe, bounded
    (least recently used dropped first) by ``max_mechanisms`` and ``max_bytes``; an owner may
    cause at most ``max_new_per_owner_hour`` distinct parameter sets to be fitted an hour."""

    def __init__(self, *, batch_window: float = 0.01, batch_max: int = 64,
                 max_mechanisms: int = 32, max_bytes: int = 2 * 2**30,
                 max_new_per_owner_hour: int = 20) -> None:
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._mechanisms: OrderedDict[str, tuple[Mechanism, int]] = OrderedDict()
        self._batchers: dict[str, Batcher] = {}
        self._owners: dict[str, deque[tuple[float, str]]] = {}
        self.batch_window, self.batch_max = batch_window, batch_max
        self.max_mechanisms, self.max_bytes = max_mechanisms, max_bytes
        self.max_new_per_owner_hour = max_new_per_owner_hour
        self.bytes = 0  # of the kept mechanisms (memory_bytes)
        self.evicted = 0

    def get(self, name: str, params: dict, *, owner: str | None = None,
            entities: dict | None = None) -> Mechanism:
        """The fitted mechanism; built (and counted against ``owner``'s hourly limit of new
        parameter sets, before the fit) when it is not kept. ``entities``: the checked entity
        options (:func:`dptext.service.entities.parse`): the entity-targeted mechanism around
        it, its detectors loaded once."""
        if name not in registered():
            raise DPTextError(f"unknown mechanism {name!r}; available: "
                              f"{', '.join(registered())}")
        from dptext.service.entities import misplaced

        wrong = misplaced(params)
        if wrong is not None:
            raise DPTextError(f"unknown parameter {wrong!r} for mechanism {name!r}: entity "
                              f"parameters go in \"entities\", e.g. {{\"entities\": "
                              f"{{\"entities\": \"PHI\", \"{wrong}\": ...}}}}")
        key = _key(name, params, entities)
        with self._lock:
            if key in self._mechanisms:
                self._mechanisms.move_to_end(key)
                return self._mechanisms[key][0]
            if owner is not None:
                self._count_new(owner, key)
            lock = self._building.setdefault(key, threading.Lock())
        with lock:  # one build per key; other requests for it wait
            with self._lock:
                if key in self._mechanisms:
                    self._mechanisms.move_to_end(key)
                    return self._mechanisms[key][0]
            try:
                m = mechanism(name, **params)
                if entities is not None:
                    from dptext.service.entities import build

                    m = build(m, entities)
                m.fit()
                size = memory_bytes(m)
                with self._lock:
                    self._mechanisms[key] = (m, size)
                    self.bytes += size
                    self._evict(keep=key)
            except BaseException:
                if owner is not None:  # a refused parameter set is not a fitted one
                    with self._lock:
                        recent = self._owners.get(owner, deque())
                        for item in [i for i in recent if i[1] == key]:
                            recent.remove(item)
                raise
            finally:
                with self._lock:
                    self._building.pop(key, None)
            return m

    def _count_new(self, owner: str, key: str) -> None:
        """Refuse (429) a new parameter set past the owner's hourly limit (under the lock)."""
        now = time.monotonic()
        recent = self._owners.setdefault(owner, deque())
        while recent and now - recent[0][0] > 3600.0:
            recent.popleft()
        if any(k == key for _, k in recent):
            return  # fitted for this owner within the hour (and dropped since): not new
        if len(recent) >= self.max_new_per_owner_hour:
            raise LimitExceeded(
                429, "max_new_mechanisms_per_owner_hour", self.max_new_per_owner_hour,
                f"at most {self.max_new_per_owner_hour} distinct mechanism parameter sets "
                "fitted per owner and hour: reuse the parameters of an earlier request")
        recent.append((now, key))

    def _evict(self, keep: str) -> None:
        """Drop the least recently used mechanisms (never ``keep``) while over a bound."""
        while len(self._mechanisms) > 1 and (len(self._mechanisms) > self.max_mechanisms
                                             or self.bytes > self.max_bytes):
            key = next(iter(self._mechanisms))
            if key == keep:
                self._mechanisms.move_to_end(key)
                key = next(iter(self._mechanisms))
            _, size = self._mechanisms.pop(key)
            self.bytes -= size
            self.evicted += 1
            batcher = self._batchers.pop(key, None)
            if batcher is not None:
                batcher.close()

    def privatize(self, name: str, params: dict, texts: Sequence[str], *,
                  batch: bool = True, owner: str | None = None,
                  entities: dict | None = None) -> list[Result]:
        """Privatize ``texts`` with fresh OS entropy (LM mechanisms through the shared batcher
        unless ``batch=False``; entity mode runs in the request's thread)."""
        m = self.get(name, params, owner=owner, entities=entities)
        if name in LM_MECHANISMS and batch and self.batch_window > 0 and entities is None:
            key = _key(name, params)
            with self._lock:
                batcher = self._batchers.get(key)
                if (batcher is None or batcher.m is not m) and key in self._mechanisms:
                    if batcher is not None:
                        batcher.close()
                    batcher = self._batchers[key] = Batcher(m, window=self.batch_window,
                                                            max_texts=self.batch_max)
            if batcher is not None and batcher.m is m:
                return batcher.submit(texts)
        return m.privatize_batch(list(texts), rng=None)

    def batcher(self, name: str, params: dict) -> Batcher | None:
        with self._lock:
            return self._batchers.get(_key(name, params))

    @property
    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._mechanisms)
