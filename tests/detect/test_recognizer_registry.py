"""The recognizer table builds (issue 43): an entry registered is built into the default set,
its categories become detectable, and detection uses it; a taken name is refused."""

from __future__ import annotations

import pytest

from dptext import mechanism
from dptext.detect.recognizers import (
    RECOGNIZERS,
    PatternRecognizer,
    builtin_recognizers,
    register,
    supported_categories,
    unregister,
)
from dptext.errors import DPTextError
from dptext.targeted import TargetedMechanism

SPACE = dict(words=["the", "account", "is", "paid", "w1", "w2", "w3", "w4", "w5", "w6"],
             seed=3, dim=4, name="registry-tiny")  # the space fixture (conftest.py)


def _iban() -> PatternRecognizer:
    return PatternRecognizer("test-iban", "IBAN_CODE", r"\bGB\d{2}[A-Z]{4}\d{14}\b")


@pytest.fixture
def iban():
    register("test-iban", _iban)
    yield
    unregister("test-iban")


def test_the_categories_are_those_the_recognizers_declare():
    assert supported_categories() == frozenset().union(
        *(r.categories for r in builtin_recognizers()))
    # a recognizer naming several categories declares them all
    ids = next(r for r in builtin_recognizers() if r.name == "ids")
    assert "ids" in RECOGNIZERS and ids.categories == frozenset(ids.contexts) != {ids.category}
    assert {"MEDICAL_RECORD", "ACCOUNT_NUMBER", "PHONE_NUMBER", "AGE"} <= supported_categories()
    assert "IBAN_CODE" not in supported_categories()


def test_a_registered_entry_is_built_and_used(space, iban):
    assert builtin_recognizers()[-1].name == "test-iban"
    assert "IBAN_CODE" in supported_categories()
    custext = mechanism("custext", epsilon=2, k=3, space=space)
    m = TargetedMechanism(custext, entities=["IBAN_CODE"], detector="spacy", recognizers=True)
    text = "the account is GB29NWBK60161331926819 paid"
    (r,) = m.privatize_batch([text], rng=0)
    out = r.text
    assert "GB29NWBK60161331926819" not in out and "[IBAN_CODE]" in out, out
    assert out.startswith("the account is ") and out.endswith(" paid"), out
    assert r.report.spans["IBAN_CODE"]["spans"] == 1


def test_without_the_entry_the_category_is_refused(space):
    custext = mechanism("custext", epsilon=2, k=3, space=space)
    with pytest.raises(DPTextError, match="never reports IBAN_CODE"):
        TargetedMechanism(custext, entities=["IBAN_CODE"], detector="spacy", recognizers=True)


def test_a_taken_name_is_refused_unless_forced(iban):
    with pytest.raises(DPTextError, match="already registered"):
        register("phone", _iban)
    with pytest.raises(DPTextError, match="already registered"):
        register("test-iban", lambda: _iban())
    register("test-iban", _iban)  # the same entry again is no duplicate
    wrong = lambda: PatternRecognizer("other", "IBAN_CODE", "x")  # noqa: E731
    register("test-iban", wrong, force=True)
    with pytest.raises(DPTextError, match="builds one named 'other'"):
        builtin_recognizers()
