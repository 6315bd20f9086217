"""The dptext operator in Presidio's AnonymizerEngine, with Presidio's analyzer on the packaged
spaCy model (offline)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("presidio_anonymizer")

from presidio_anonymizer import AnonymizerEngine  # noqa: E402
from presidio_anonymizer.entities import OperatorConfig  # noqa: E402

from dptext import EmbeddingSpace  # noqa: E402
from dptext.detect.entities import _presidio_analyzer  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.integrations.presidio import DPTextOperator, SpanReports, anonymize  # noqa: E402
from dptext.targeted import SURROGATE_SETS  # noqa: E402
from dptext.targeted.mechanism import count_tokens  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

TEXT = "David Johnson from Maine: call him at 212-555-0187 or write to david.j@example.com."
WORDS = ["david", "johnson", "maine", "anna", "paris", "call", "him", "lee", "kim", "ash", "rowan"]


@pytest.fixture(scope="module")
def space_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(0).standard_normal((len(WORDS), 4)),
                   name="presidio-tiny").save(path)
    return str(path)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))


@pytest.fixture(scope="module")
def analyzed():
    return _presidio_analyzer().analyze(text=TEXT, language="en")


def _person(analyzed):
    return next(r for r in analyzed if r.entity_type == "PERSON")


def _person_words(analyzed) -> int:
    person = _person(analyzed)
    return len(TEXT[person.start:person.end].split())


def _config(space_path, reports=None, **extra):
    params = {"mechanism": "custext", "epsilon": 2, "params": {"k": 3, "space": space_path}}
    if reports is not None:
        params["reports"] = reports
    return OperatorConfig("dptext", {**params, **extra})


def test_anonymizer_engine_end_to_end_with_a_per_call_report(analyzed, space_path):
    types = {r.entity_type for r in analyzed}
    assert {"PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS"} <= types
    engine = AnonymizerEngine()
    engine.add_anonymizer(DPTextOperator)
    assert "dptext" in engine.get_anonymizers()
    reports = SpanReports()
    result = engine.anonymize(TEXT, analyzed, operators={
        "PERSON": _config(space_path, reports),
        "DEFAULT": OperatorConfig("dptext", {"mechanism": "placeholder", "reports": reports})})
    out = result.text
    first_words = out.split(" from ")[0].split()
    assert len(first_words) == 2 and all(w.lower() in WORDS for w in first_words)
    assert "<PHONE_NUMBER>" in out and "<EMAIL_ADDRESS>" in out
    assert not re.search(r"\d", out) and "example.com" not in out
    assert ": call him at " in out and " or write to " in out  # the rest is released
    report = reports.report(TEXT)
    person = _person(analyzed)
    assert report.spans["PERSON"]["spans"] == 1
    assert report.spans["PERSON"]["tokens"] == count_tokens(TEXT[person.start:person.end])
    assert report.spans["PHONE_NUMBER"]["spans"] == report.spans["EMAIL_ADDRESS"]["spans"] == 1
    assert report.epsilon == pytest.approx(2.0 * _person_words(analyzed))
    assert report.tokens_undetected == count_tokens(TEXT) - report.tokens_privatized - \
        sum(v for k, v in report.kept.items() if k != "undetected")
    assert "NOT protected" in report.document_guarantee()


def test_each_call_has_its_own_report(analyzed, space_path):
    ops = {"PERSON": _config(space_path),
           "PHONE_NUMBER": OperatorConfig("dptext", {"mechanism": "surrogate", "epsilon": 1.5})}
    first_result, first = anonymize(TEXT, analyzed, ops)
    short = "Anna called."
    second_result, second = anonymize(short, [r for r in analyzed if False], ops)
    assert second_result.text == short and second.spans_total == 0
    assert second.tokens_undetected == count_tokens(short)
    assert first.spans_total == 2  # PERSON and PHONE_NUMBER; the e-mail used Presidio's default
    phone = first.spans["PHONE_NUMBER"]
    assert phone["draws"] == 1 and "surrogate" in phone["treatment"]
    assert any(v in first_result.text for v in SURROGATE_SETS["PHONE_NUMBER"].values)
    assert "<EMAIL_ADDRESS>" in first_result.text  # Presidio's own "replace"
    assert first.epsilon == pytest.approx(2.0 * _person_words(analyzed) + 1.5)


def test_operator_validates_its_parameters():
    op = DPTextOperator()
    assert op.operator_name() == "dptext"
    with pytest.raises(DPTextError, match="unknown mechanism"):
        op.validate({"mechanism": "nope"})
    with pytest.raises(DPTextError, match="epsilon"):
        op.validate({"mechanism": "custext", "epsilon": -1})
    with pytest.raises(DPTextError, match="Generator"):
        op.validate({"mechanism": "placeholder", "rng": 3})
    with pytest.raises(DPTextError, match="SpanReports"):
        op.validate({"mechanism": "placeholder", "reports": []})
    op.validate({"mechanism": "surrogate", "epsilon": 1, "rng": np.random.default_rng(0)})
