"""What a worker hands the ledger per record (corpus/work.py, ledger mode): the events of
equal records are one shared list (fewer objects in flight for the garbage collector), each
still equal to its own record's events, and the written records' ordinals and lines."""

from __future__ import annotations

import dataclasses
import json

import pytest
from corpus_jobs import mech, write_jsonl  # noqa: F401  (mech: the module's fixture)

from dptext.accounting.events import PrivacyEvent
from dptext.corpus import budget as budget_mod
from dptext.corpus import work
from dptext.corpus.ranges import scan
from dptext.corpus.sources import expand
from dptext.corpus.work import BatchTask, JobLayout, Worker

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def test_items_share_equal_event_lists_and_keep_each_records_events(mech, tmp_path):  # noqa: F811
    src = write_jsonl(tmp_path / "in.jsonl", 120, seed=3)
    layout = JobLayout(expand(str(src)), ["text"], "jsonl", "jsonl", 5, False, 1 << 20,
                       user_field="user", ledger=True, units=True)
    tasks = [BatchTask(i, 0, range=r) for i, r in enumerate(scan(src, "jsonl", 40))]
    w = Worker(mech, layout)
    try:
        outs = [w.run(t) for t in tasks]
    finally:
        w.close()
    lines = src.read_text().splitlines()
    ids, shared = set(), 0
    for out in outs:
        assert len(out.items) == out.written == len(out.where[0]) == len(out.where[1])
        for i, (key, unit, events) in enumerate(out.items):
            # each record's own events, whatever list holds them
            assert events == budget_mod.privacy_events(out.reports[0][i])
            ordinal, line = out.where[0][i], out.where[1][i]
            assert key.endswith(f"#{ordinal}")
            assert unit == json.loads(lines[line - 1])["user"]
            shared += id(events) in ids
            ids.add(id(events))
    assert shared > 0  # equal events (same token counts) share one list


def test_the_event_key_is_every_field_of_an_event():
    # a field added to PrivacyEvent is part of the key by construction: two events that
    # differ in any field never share a list
    names = [f.name for f in dataclasses.fields(PrivacyEvent)]
    e = PrivacyEvent("approx", 1.5, 1e-6, 3, "m", "s", bounded_range=False)
    assert work._event_key(e) == tuple(getattr(e, n) for n in names)
    for n, other in (("kind", "pure"), ("epsilon", 2.0), ("count", 4), ("mechanism", "x"),
                     ("scope", "t"), ("delta", 2e-6)):
        f = dataclasses.replace(e, **{n: other, **({"delta": 0.0} if other == "pure" else {})})
        assert work._event_key(f) != work._event_key(e)
