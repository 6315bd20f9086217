"""Span treatments are a table that builds (issue 43): each category's treatment is chosen from
TREATMENTS by the options, and a treatment registered there is used - its replacement, its
events and its report line - without any other change."""

from __future__ import annotations

import re

import pytest

from dptext import mechanism
from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.errors import DPTextError
from dptext.targeted import Span, TargetedMechanism
from dptext.targeted.treatments import TREATMENTS, Placeholder, Treatment, register, unregister

SPACE = dict(words=["the", "visit", "was", "on", "anna", "lee", "w1", "w2", "w3"], seed=7,
             dim=4, name="treatments-tiny")  # the space fixture (conftest.py)


@pytest.fixture
def custext(space):
    return mechanism("custext", epsilon=2, k=3, space=space)


@pytest.mark.parametrize("options, chosen", [
    ({}, {"PERSON": "by-mechanism", "GPE": "by-mechanism", "EMAIL_ADDRESS": "placeholder"}),
    ({"name_policy": "surrogate", "word_policy": "surrogate"},
     {"PERSON": "name-surrogate", "GPE": "word-surrogate", "NORP": "placeholder",
      "DENY_LIST": "name-surrogate"}),
    ({"pattern_policy": "surrogate", "word_policy": "placeholder"},
     {"EMAIL_ADDRESS": "pattern-surrogate", "PERSON": "placeholder", "AGE": "placeholder"}),
])
def test_the_options_choose_the_treatment(custext, options, chosen):
    m = TargetedMechanism(custext, detector=None, **options)
    assert {c: m.treatment(c).name for c in chosen} == chosen
    assert all(m.treatment(c).whole == (n != "by-mechanism") for c, n in chosen.items())


class KeepYear(Treatment):
    """A date replaced by its year (a test entry)."""

    name = "test-keep-year"
    reason = "year kept"

    @classmethod
    def applies(cls, m, category):
        return category == "DATE"

    def _guarantee(self):
        return TokenGuarantee(GuaranteeKind.NONE)  # the year is released verbatim

    def report_line(self):
        return "the year kept, the rest of the date dropped"

    def replace(self, value, rng, taken):
        year = re.search(r"\d{4}", value)
        return year.group() if year else "[DATE]"


def test_a_registered_treatment_is_used(custext):
    register(KeepYear)
    try:
        assert list(TREATMENTS)[-2:] == ["test-keep-year", "placeholder"]
        m = TargetedMechanism(custext, detector=None, name_policy="placeholder")
        text = "the visit was on 12 March 2019 w1"
        start = text.index("12 March")
        (r,) = m.privatize_spans([text], [[Span(start, start + 13, "DATE", "12 March 2019")]],
                                 rng=0)
        assert r.text == "the visit was on 2019 w1"
        row = r.report.spans["DATE"]
        assert row["treatment"] == "the year kept, the rest of the date dropped"
        assert row["spans"] == 1 and row["draws"] == 1
        assert any(e.reason == "year kept" and e.count == 3 for e in r.report.events)
    finally:
        unregister("test-keep-year")
    assert "test-keep-year" not in TREATMENTS


def test_the_table_refuses_a_taken_name():
    with pytest.raises(DPTextError, match="already registered"):
        register(type("Impostor", (Placeholder,), {"name": "name-surrogate"}))
    register(Placeholder)  # the same class again is no duplicate
    assert list(TREATMENTS)[-1] == "placeholder"
