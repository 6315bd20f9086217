"""One report serialisation: ``PrivacyReport.to_state`` / ``from_state`` (versioned, classes
registered by tag), and the states earlier versions wrote still load: the corpus manifest's
(``"class": "module:Name"``, lists) and the integrations' (no ``version``). The literal old
states below were written by the code before the change (169de07) for the reports built in
``_reports()``."""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields
from typing import ClassVar

import pytest

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.accounting.report import REPORT_CLASSES, STATE_VERSION, PrivacyReport
from dptext.corpus.aggregate import JobAggregate
from dptext.errors import DPTextError
from dptext.mechanisms.dpmlm import RewriteReport
from dptext.targeted.report import TargetedReport


def _reports() -> list[PrivacyReport]:
    g = TokenGuarantee(GuaranteeKind.METRIC, 2.0, "words of the space", "euclidean", 3.5)
    b = TokenGuarantee(GuaranteeKind.PURE, 1.5, "any two contexts", bounded_range=True)
    n = TokenGuarantee(GuaranteeKind.NONE)
    return [
        PrivacyReport("laplace", g, [TokenEvent(g, 4, "word"), TokenEvent(n, 2, "punctuation")],
                      records=3, max_record_epsilon=28.0, warnings={"w": 1},
                      document_budget=10.0, per_token_epsilons=[[1.0, 2], [2.5, 1]]),
        RewriteReport("dpmlm", b, [TokenEvent(b, 5, "word")], records=1,
                      worst_case_epsilon=15.0),
        TargetedReport(
            "targeted", g, [TokenEvent(g, 2, "word"), TokenEvent(n, 7, "undetected")],
            records=2, max_record_epsilon=7.0,
            draws=[TokenEvent(g, 1, "PERSON"), TokenEvent(b, 1, "PHONE_NUMBER")],
            spans={"PERSON": {"treatment": "mechanism", "spans": 1, "draws": 1, "reused": 0,
                              "tokens": 2, "unchanged": 0}},
            detector="spacy", entities=("PERSON", "PHONE_NUMBER"), consistent="document",
            residual={"policy": "protect", "tokens": 1}, withheld=None),
    ]


# corpus/aggregate.report_state before the change (manifest.json's "aggregate")
OLD_MANIFEST = [
    '{"class": "dptext.accounting.report:PrivacyReport", "mechanism": "laplace", "per_token": ["metric", 2.0, "words of the space", "euclidean", 3.5], "events": [[["metric", 2.0, "words of the space", "euclidean", 3.5], "word", 4], [["none", 0.0, "", null, null], "punctuation", 2]], "records": 3, "max_record_epsilon": 28.0, "extra": {"unprotected_attributes": {}, "warnings": {"w": 1}, "document_scope": "", "document_budget": 10.0, "per_token_epsilons": [[1.0, 2], [2.5, 1]]}}',  # noqa: E501
    '{"class": "dptext.mechanisms.dpmlm:RewriteReport", "mechanism": "dpmlm", "per_token": ["pure", 1.5, "any two contexts", null, null, true], "events": [[["pure", 1.5, "any two contexts", null, null, true], "word", 5]], "records": 1, "max_record_epsilon": 0.0, "extra": {"unprotected_attributes": {}, "warnings": {}, "document_scope": "", "document_budget": null, "per_token_epsilons": [], "worst_case_epsilon": 15.0}}',  # noqa: E501
    '{"class": "dptext.targeted.report:TargetedReport", "mechanism": "targeted", "per_token": ["metric", 2.0, "words of the space", "euclidean", 3.5], "events": [[["metric", 2.0, "words of the space", "euclidean", 3.5], "word", 2], [["none", 0.0, "", null, null], "undetected", 7]], "records": 2, "max_record_epsilon": 7.0, "extra": {"unprotected_attributes": {}, "warnings": {}, "document_scope": "", "document_budget": null, "per_token_epsilons": [], "draws": {"__token_events__": [[["metric", 2.0, "words of the space", "euclidean", 3.5], "PERSON", 1], [["pure", 1.5, "any two contexts", null, null, true], "PHONE_NUMBER", 1]]}, "spans": {"PERSON": {"treatment": "mechanism", "spans": 1, "draws": 1, "reused": 0, "tokens": 2, "unchanged": 0}}, "detector": "spacy", "entities": {"__tuple__": ["PERSON", "PHONE_NUMBER"]}, "consistent": "document", "residual": {"policy": "protect", "tokens": 1}, "withheld": null}}',  # noqa: E501
]
# integrations/_state.report_to_state before the change (the HF column, spaCy's dp_report_data)
OLD_INTEGRATIONS = [
    '{"class": "PrivacyReport", "mechanism": "laplace", "per_token": {"kind": "metric", "epsilon": 2.0, "scope": "words of the space", "metric": "euclidean", "diameter": 3.5}, "events": [{"guarantee": {"kind": "metric", "epsilon": 2.0, "scope": "words of the space", "metric": "euclidean", "diameter": 3.5}, "count": 4, "reason": "word"}, {"guarantee": {"kind": "none", "epsilon": 0.0, "scope": "", "metric": null, "diameter": null}, "count": 2, "reason": "punctuation"}], "records": 3, "max_record_epsilon": 28.0, "unprotected_attributes": {}, "warnings": {"w": 1}, "document_scope": "", "document_budget": 10.0, "per_token_epsilons": [[1.0, 2], [2.5, 1]]}',  # noqa: E501
    '{"class": "RewriteReport", "mechanism": "dpmlm", "per_token": {"kind": "pure", "epsilon": 1.5, "scope": "any two contexts", "metric": null, "diameter": null, "bounded_range": true}, "events": [{"guarantee": {"kind": "pure", "epsilon": 1.5, "scope": "any two contexts", "metric": null, "diameter": null, "bounded_range": true}, "count": 5, "reason": "word"}], "records": 1, "max_record_epsilon": 0.0, "unprotected_attributes": {}, "warnings": {}, "document_scope": "", "document_budget": null, "per_token_epsilons": [], "worst_case_epsilon": 15.0}',  # noqa: E501
    '{"class": "TargetedReport", "mechanism": "targeted", "per_token": {"kind": "metric", "epsilon": 2.0, "scope": "words of the space", "metric": "euclidean", "diameter": 3.5}, "events": [{"guarantee": {"kind": "metric", "epsilon": 2.0, "scope": "words of the space", "metric": "euclidean", "diameter": 3.5}, "count": 2, "reason": "word"}, {"guarantee": {"kind": "none", "epsilon": 0.0, "scope": "", "metric": null, "diameter": null}, "count": 7, "reason": "undetected"}], "records": 2, "max_record_epsilon": 7.0, "unprotected_attributes": {}, "warnings": {}, "document_scope": "", "document_budget": null, "per_token_epsilons": [], "draws": [{"guarantee": {"kind": "metric", "epsilon": 2.0, "scope": "words of the space", "metric": "euclidean", "diameter": 3.5}, "count": 1, "reason": "PERSON"}, {"guarantee": {"kind": "pure", "epsilon": 1.5, "scope": "any two contexts", "metric": null, "diameter": null, "bounded_range": true}, "count": 1, "reason": "PHONE_NUMBER"}], "spans": {"PERSON": {"treatment": "mechanism", "spans": 1, "draws": 1, "reused": 0, "tokens": 2, "unchanged": 0}}, "detector": "spacy", "entities": ["PERSON", "PHONE_NUMBER"], "consistent": "document", "residual": {"policy": "protect", "tokens": 1}, "withheld": null}',  # noqa: E501
]


def _same(back: PrivacyReport, report: PrivacyReport) -> None:
    assert type(back) is type(report)
    assert back == report  # every dataclass field, the events' guarantees included
    assert back.to_dict() == report.to_dict()


@pytest.mark.parametrize("i", range(3))
def test_a_state_round_trips_through_json(i):
    report = _reports()[i]
    state = report.to_state()
    assert state["class"] == type(report).tag and state["version"] == STATE_VERSION
    _same(PrivacyReport.from_state(json.loads(json.dumps(state))), report)
    _same(PrivacyReport.from_state(json.dumps(state)), report)


@pytest.mark.parametrize("i", range(3))
def test_the_states_of_earlier_versions_still_load(i):
    report = _reports()[i]
    _same(PrivacyReport.from_state(OLD_MANIFEST[i]), report)
    _same(PrivacyReport.from_state(json.loads(OLD_INTEGRATIONS[i])), report)
    # this version's state is the integrations' with a version: every field they had is
    # written as they wrote it, and a field added since holds its default here
    state, old = report.to_state(), json.loads(OLD_INTEGRATIONS[i])
    assert {k: state[k] for k in old} == old
    defaults = {f.name: f.default_factory() if f.default_factory is not MISSING else f.default
                for f in fields(report)}
    added = {k: v for k, v in state.items() if k not in old and k != "version"}
    assert state["version"] == STATE_VERSION and added == {k: defaults[k] for k in added}


def test_a_manifest_aggregate_of_an_earlier_version_resumes():
    old = {"per_field": {"text": json.loads(OLD_MANIFEST[0]), "title": None},
           "counts": {"records_in": 3, "records_out": 3, "rejected": 0, "withheld": 0},
           "max_record_epsilon": 28.0}
    agg = JobAggregate.from_state(["text", "title"], old)
    _same(agg.per_field["text"], _reports()[0])
    assert agg.per_field["title"] is None
    again = JobAggregate.from_state(["text", "title"], json.loads(json.dumps(agg.state())))
    _same(again.per_field["text"], _reports()[0])
    assert again.counts == old["counts"] and again.max_record_epsilon == 28.0


def test_unknown_classes_and_newer_versions_are_refused():
    state = _reports()[0].to_state()
    for bad in ({**state, "class": "Nope"}, {**state, "version": STATE_VERSION + 1},
                {**state, "version": "1"}, {"mechanism": "x"}, [1, 2]):
        with pytest.raises(DPTextError) as err:
            PrivacyReport.from_state(bad)
        assert "\n" not in str(err.value)


def test_tags_are_a_refusing_registry():
    assert REPORT_CLASSES["RewriteReport"] is RewriteReport
    assert REPORT_CLASSES["TargetedReport"] is TargetedReport
    with pytest.raises(DPTextError, match="already registered"):
        @dataclass
        class Impostor(PrivacyReport):
            tag: ClassVar[str] = "RewriteReport"
    assert REPORT_CLASSES["RewriteReport"] is RewriteReport

    @dataclass
    class Untagged(RewriteReport):  # inherits a tag it did not declare: not saved as its parent
        note: str = ""

    with pytest.raises(DPTextError, match="declares no tag"):
        Untagged("dpmlm", TokenGuarantee(GuaranteeKind.NONE)).to_state()
