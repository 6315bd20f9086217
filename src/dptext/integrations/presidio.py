"""Presidio: a ``dptext`` operator for presidio-anonymizer's ``AnonymizerEngine``.

    >>> from presidio_anonymizer import AnonymizerEngine
    >>> from presidio_anonymizer.entities import OperatorConfig
    >>> from dptext.integrations.presidio import DPTextOperator, SpanReports
    >>> engine = AnonymizerEngine()
    >>> engine.add_anonymizer(DPTextOperator)
    >>> reports = SpanReports()
    >>> result = engine.anonymize(text, analyzer_results, operators={
    ...     "PERSON": OperatorConfig("dptext", {"mechanism": "custext", "epsilon": 2,
    ...                                         "reports": reports}),
    ...     "PHONE_NUMBER": OperatorConfig("dptext", {"mechanism": "placeholder"})})
    >>> reports.report(text)      # this call's report

Presidio hands an operator one entity's text at a time (``operate(text, params)``). A word
entity (PERSON, LOCATION, ORGANIZATION, NRP) is privatized by the named dptext mechanism with
the entity's own text as its only context; a pattern entity (EMAIL_ADDRESS, PHONE_NUMBER, ...)
is always replaced whole, never digit by digit: by the placeholder (0-DP), or with
``"mechanism": "surrogate"`` by a surrogate (``epsilon``-DP, :mod:`dptext.targeted.surrogates`).
``"mechanism": "placeholder"`` replaces any entity, names included, by its placeholder.
Params: ``mechanism``, ``epsilon``, ``params`` (other mechanism parameters), ``placeholder``,
``rng`` (a numpy Generator; default fresh OS entropy), ``reports`` (a :class:`SpanReports`
collecting this call's span reports: the engine keeps none). :func:`anonymize` does the
bookkeeping and returns the report with the result.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import numpy as np
from presidio_anonymizer.operators import Operator, OperatorType

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.detect.categories import PRESIDIO_TO_CATEGORY
from dptext.errors import DPTextError
from dptext.integrations._spec import MechanismSpec
from dptext.mechanisms.base import Result
from dptext.targeted.mechanism import count_tokens
from dptext.targeted.report import TargetedReport
from dptext.targeted.spans import Span
from dptext.validation import check_epsilon

PATTERN_ONLY = ("placeholder", "surrogate")
_KEPT = TokenGuarantee(GuaranteeKind.NONE)


class SpanReports:
    """The span reports of one ``anonymize`` call (pass a fresh one per call)."""

    def __init__(self) -> None:
        self.results: list[tuple[str, Result]] = []

    def add(self, entity_type: str, result: Result) -> None:
        self.results.append((entity_type, result))

    def report(self, text: str | None = None) -> TargetedReport:
        """The combined report; with the original ``text``, its tokens outside the entities
        are counted as released verbatim (total tokens minus the entities' tokens)."""
        reports = [r.report for _, r in self.results]
        if reports:
            combined = TargetedReport.combine(reports)
            combined.records, combined.max_record_epsilon = 1, 0.0
        else:
            combined = TargetedReport("targeted:presidio", _KEPT, [], detector="presidio")
        combined.detector = "presidio"
        if text is not None:
            inside = sum(r.tokens_total for r in reports)
            rest = max(count_tokens(text) - inside, 0)
            combined.events = [e for e in combined.events if e.reason != "undetected"]
            if rest:
                combined.events.append(TokenEvent(_KEPT, rest, "undetected"))
        return combined


def _mechanism(params: dict):
    """The targeted mechanism an operator config names (built once per process)."""
    name = params.get("mechanism", "custext")
    options = {"detector": None, "entities": None,
               "placeholder": params.get("placeholder", "<{category}>")}
    if name in PATTERN_ONLY:
        options["word_policy"] = "placeholder"
        if name == "surrogate":
            options["pattern_policy"] = "surrogate"
            options["surrogate_epsilon"] = float(params.get("epsilon", 1.0))
        return _replace_only(json.dumps(options, sort_keys=True))
    mech_params = {**params.get("params", {})}
    if "epsilon" in params:
        mech_params["epsilon"] = params["epsilon"]
    return MechanismSpec.create(name, mech_params, options).build()


@cache
def _replace_only(options_json: str):
    """Every span replaced whole: the wrapped word mechanism is never fitted nor used."""
    from dptext.mechanisms import mechanism
    from dptext.targeted import TargetedMechanism

    return TargetedMechanism(mechanism("custext"), **json.loads(options_json))


class DPTextOperator(Operator):
    """The ``dptext`` anonymize operator (module docstring)."""

    def operate(self, text: str = None, params: dict = None) -> str:
        params = params or {}
        entity_type = params.get("entity_type", "")
        category = PRESIDIO_TO_CATEGORY.get(entity_type, entity_type)
        mech = _mechanism(params)
        result = mech.privatize_spans([text], [[Span(0, len(text), category, "")]],
                                      rng=params.get("rng"))[0]
        if params.get("reports") is not None:
            params["reports"].add(entity_type, result)
        return result.text

    def validate(self, params: dict = None) -> None:
        params = params or {}
        name = params.get("mechanism", "custext")
        if not isinstance(name, str):
            raise DPTextError(f"dptext operator: mechanism must be a name, got {name!r}")
        if name not in PATTERN_ONLY:
            from dptext.mechanisms import registered

            if name not in registered():
                raise DPTextError(f"dptext operator: unknown mechanism {name!r}; available: "
                                  f"{', '.join([*registered(), *PATTERN_ONLY])}")
        if "epsilon" in params:
            check_epsilon(params["epsilon"])
        if not isinstance(params.get("params", {}), dict):
            raise DPTextError("dptext operator: params must be a dict of mechanism parameters")
        rng = params.get("rng")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise DPTextError("dptext operator: rng must be a numpy Generator (a seed would "
                              "repeat the same draw for every entity)")
        reports = params.get("reports")
        if reports is not None and not isinstance(reports, SpanReports):
            raise DPTextError("dptext operator: reports must be a dptext SpanReports")

    def operator_name(self) -> str:
        return "dptext"

    def operator_type(self) -> OperatorType:
        return OperatorType.Anonymize


def engine():
    """An ``AnonymizerEngine`` with the dptext operator added."""
    from presidio_anonymizer import AnonymizerEngine

    e = AnonymizerEngine()
    e.add_anonymizer(DPTextOperator)
    return e


def anonymize(text: str, analyzer_results: list, operators: dict, *,
              anonymizer=None) -> tuple[Any, TargetedReport]:
    """``anonymizer.anonymize(...)`` with a fresh :class:`SpanReports` in every dptext
    operator; returns (Presidio's result, this call's report)."""
    from presidio_anonymizer.entities import OperatorConfig

    anonymizer = anonymizer or engine()
    reports = SpanReports()
    ops = {}
    for entity, config in operators.items():
        if config.operator_name == "dptext":
            config = OperatorConfig("dptext", {**config.params, "reports": reports})
        ops[entity] = config
    result = anonymizer.anonymize(text=text, analyzer_results=analyzer_results, operators=ops)
    return result, reports.report(text)
