"""The API's span categories are the report's (issue 45): a placeholder released for a
category is marked with that category, also where replaced spans stand next to each other
("Andrea,[DATE],[PHONE_NUMBER]": one window took the first span's category for all)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from dptext.service.spans import entity_spans  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SPACE = dict(words=["the", "patient", "was", "seen", "today", "and", "call", "email", "on"],
             seed=45, dim=6, name="service-spans")  # the space fixture


def _mismatches(deid, texts):
    bad = []
    for t in texts:
        r = deid.privatize_batch([t], rng=0)[0]
        for s in entity_spans(deid, t, r.text, r.report):
            piece = r.text[s["start"]:s["end"]]
            cats = re.findall(r"\[([A-Z_]+)\]", piece)
            if s["kind"] == "entity" and cats and (set(cats) != {s["category"]}):
                bad.append((s["category"], piece))
            if s["kind"] == "verbatim" and cats:
                bad.append(("verbatim", piece))
    return bad


def test_adjacent_placeholders_get_their_own_categories(deid):
    texts = ["Pt Anna Lee,03/04/2021,555-123-4567,MRN 4821933 seen.",
             "Email anna.lee@mail.com or call (617) 555-0142, a 67 y/o, on 03/04/2021.",
             "id,name,dob,phone\n1,Ann Quorvath,20-NOV-1980,+1 (242) 492-4700\n",
             "id,name,dob,phone,mrn\n1,Quixbeilis Klurmeigir,20-NOV-1980,+1 (242) 492-4700,"
             "3869579\n2,Andrea Brolt,12-JUN-1981,(926) 676 3624,4399030\n"]
    assert _mismatches(deid, texts) == []


def test_categories_over_generated_notes_and_tables(deid):
    from dptext.deid.adversarial import generate_adversarial
    from dptext.deid.notes import generate_notes

    texts = [r.text for r in generate_notes(25, seed=3)]
    texts += [r.text for r in generate_adversarial(120, seed=3) if r.id in ("table", "contact")]
    assert len(_mismatches(deid, texts)) <= 2  # 6 before; the 2 left: re-detection
