"""Reports as plain JSON-able data and back (to cross process boundaries and table columns)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError

_GUARANTEES = {"per_token"}
_EVENT_LISTS = {"events", "draws"}
_TUPLES = {"entities"}


def _classes() -> dict[str, type[PrivacyReport]]:
    from dptext.mechanisms.dpmlm import RewriteReport
    from dptext.targeted.report import TargetedReport

    return {c.__name__: c for c in (PrivacyReport, RewriteReport, TargetedReport)}


def _guarantee(g: TokenGuarantee) -> dict:
    out = {"kind": g.kind.value, "epsilon": g.epsilon, "scope": g.scope, "metric": g.metric,
           "diameter": g.diameter}
    if g.bounded_range:
        out["bounded_range"] = True
    return out


def _event(e: TokenEvent) -> dict:
    return {"guarantee": _guarantee(e.guarantee), "count": e.count, "reason": e.reason}


def report_to_state(report: PrivacyReport) -> dict:
    """Every field of ``report`` as JSON-able data, with its class name."""
    state: dict[str, Any] = {"class": type(report).__name__}
    for f in dataclasses.fields(report):
        value = getattr(report, f.name)
        if f.name in _GUARANTEES:
            value = _guarantee(value)
        elif f.name in _EVENT_LISTS:
            value = [_event(e) for e in value]
        elif isinstance(value, tuple):
            value = list(value)
        state[f.name] = value
    return state


def report_from_state(state: dict | str) -> PrivacyReport:
    """The report :func:`report_to_state` described (or its JSON text)."""
    if isinstance(state, str):
        state = json.loads(state)
    state = dict(state)
    cls = _classes().get(state.pop("class", None))
    if cls is None:
        raise DPTextError("not a dptext report state")

    def guarantee(d: dict) -> TokenGuarantee:
        return TokenGuarantee(GuaranteeKind(d["kind"]), d["epsilon"], d["scope"], d["metric"],
                              d["diameter"], bool(d.get("bounded_range", False)))

    kwargs = {}
    for name, value in state.items():
        if name in _GUARANTEES:
            value = guarantee(value)
        elif name in _EVENT_LISTS:
            value = [TokenEvent(guarantee(e["guarantee"]), e["count"], e["reason"])
                     for e in value]
        elif name in _TUPLES:
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)
