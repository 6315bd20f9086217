"""The report of entity-targeted sanitization: per detected span, never per document.

Two lists of events. ``events`` (as in every :class:`PrivacyReport`) say what happened to each
token: privatized inside a span, kept inside a span (punctuation, a stopword the mechanism
keeps), or released verbatim outside every span (reason ``undetected``). ``draws`` are what is
composed: one event per random draw - a word of a word span, one surrogate per pattern span -
and nothing for a placeholder (0-DP) or for a span that reused an earlier draw of the same
entity (consistent replacements: one draw per distinct entity). The guarantee stated is the
sequential composition of the draws; the verbatim tokens are named as unprotected.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import ClassVar

from dptext.accounting.composition import epsilon_for_delta, metric_epsilon, pure_epsilon
from dptext.accounting.events import GuaranteeKind, TokenEvent
from dptext.accounting.report import PrivacyReport


@dataclass
class SpanRow:
    """One category's row of the report (``TargetedReport.spans`` holds it as a dict, the
    form its JSON and every reader take): the treatment's report line and the counts."""

    treatment: str
    spans: int = 0
    draws: int = 0
    reused: int = 0
    tokens: int = 0
    unchanged: int = 0  # word spans the mechanism returned as they were

    def add(self, other: dict) -> None:
        for k in _COUNTS:
            setattr(self, k, getattr(self, k) + other.get(k, 0))

    def as_dict(self) -> dict:
        return {"treatment": self.treatment, **{k: getattr(self, k) for k in _COUNTS}}


_COUNTS = tuple(f.name for f in fields(SpanRow) if f.name != "treatment")


@dataclass
class TargetedReport(PrivacyReport):
    """A :class:`PrivacyReport` of entity-targeted sanitization (module docstring).

    ``spans``: per entity category, ``{"treatment": str, "spans", "draws", "reused", "tokens",
    "unchanged"}`` (``unchanged``: word spans the mechanism returned as they were).
    ``residual``: ``{"policy": ..., "tokens": n}`` when the residual net ran (tokens it found
    outside every detected span). ``withheld``: why the text was not released (then empty).
    """

    tag: ClassVar[str] = "TargetedReport"
    event_fields: ClassVar[tuple[str, ...]] = ("events", "draws")

    draws: list[TokenEvent] = field(default_factory=list)
    spans: dict[str, dict] = field(default_factory=dict)
    detector: str = ""
    entities: tuple[str, ...] = ()
    consistent: str = "none"
    residual: dict = field(default_factory=dict)
    #: the draws of this text shared with the person's other texts (``consistent="unit"``
    #: with keyed draws: :meth:`TargetedMechanism.privatize_spans`'s ``draw_rng``): draw name ->
    #: its events, all of them also in ``draws``. The corpus engine takes them out of the
    #: record's own cost and charges each once per person (:mod:`dptext.corpus.draws`);
    #: never combined, serialized or shown.
    shared_draws: dict = field(default_factory=dict)

    # ------------------------------------------------------------ counts
    @property
    def tokens_undetected(self) -> int:
        return self.kept.get("undetected", 0)

    @property
    def spans_total(self) -> int:
        return sum(s["spans"] for s in self.spans.values())

    @property
    def draws_total(self) -> int:
        return sum(e.count for e in self.draws)

    # -------------------------------------------------------- guarantees
    @property
    def epsilon(self) -> float:
        """Pure epsilon of the detected spans: sequential composition over the draws."""
        return pure_epsilon(self.draws)

    def epsilon_for_delta(self, delta: float) -> float:
        return epsilon_for_delta(self.draws, delta)

    def privacy_events(self) -> list:
        """What this record (or combined report) costs, for the ledger (docs/integrations.md):
        one event per group of draws with their worst-case pure epsilon; placeholders and
        reused draws cost nothing. Needs ``dptext.accounting.events.PrivacyEvent``."""
        return self.events_of(self.draws)

    def own_events(self) -> list:
        """:meth:`privacy_events` without the :attr:`shared_draws` (what the text costs beyond
        the draws it shares with its person's other texts)."""
        if not self.shared_draws:
            return self.privacy_events()
        left = Counter({(e.guarantee, e.reason): e.count for e in self.draws})
        for events in self.shared_draws.values():
            left.subtract({(e.guarantee, e.reason): e.count for e in events})
        return self.events_of([TokenEvent(g, c, r) for (g, r), c in left.items() if c > 0])

    def events_of(self, draws: Iterable[TokenEvent]) -> list:
        """Privacy events (for a ledger) of token events ``draws`` of this report's
        mechanism."""
        from dptext.accounting.events import PrivacyEvent

        out = []
        for e in draws:
            eps = e.guarantee.worst_case_epsilon
            if e.count and eps > 0:
                out.append(PrivacyEvent(kind="pure", epsilon=eps, count=e.count,
                                        mechanism=self.mechanism,
                                        scope=f"per detected span ({e.reason}): "
                                              f"{e.guarantee.describe()}",
                                        bounded_range=e.guarantee.bounded_range
                                        and e.guarantee.kind is GuaranteeKind.PURE))
        return out

    def document_guarantee(self) -> str:
        """The guarantee in words (each type's treatment is in ``spans``/``spans_by_type``)."""
        scope = f"entities {', '.join(self.entities)}" if self.entities else "entities"
        found = [(c, s) for c, s in sorted(self.spans.items()) if s["spans"]]
        if not found:
            text = f"no span of the {scope} was detected: nothing was privatized"
        else:
            kinds = ", ".join(f"{c} {s['spans']}" for c, s in found)
            text = (f"Guarantee per detected span, not per document: {self.epsilon:.4g}-DP "
                    f"composed over the {self.draws_total} draws for the {self.spans_total} "
                    f"detected spans ({kinds})")
            for name, eps in metric_epsilon(self.draws).items():
                text += f"; {eps:g}*sum_i d(x_i, x'_i) metric DP over the drawn words, d = {name}"
            if self.consistent != "none":
                reused = sum(s["reused"] for _, s in found)
                text += (f"; consistent replacements per {self.consistent}: one draw per "
                         f"distinct entity, reused for {reused} further occurrence(s) at no "
                         "cost, and which spans are the same entity is released")
            if self.records > 1:
                text += (f"; composed over all {self.records} records (the bound if one "
                         f"person wrote them all), largest "
                         f"single record {self.max_record_epsilon:.4g}-DP")
        same = {c: s["unchanged"] for c, s in sorted(self.spans.items()) if s.get("unchanged")}
        if same:
            listed = ", ".join(f"{c} {n}" for c, n in same.items())
            text += (f"; {sum(same.values())} detected word span(s) returned unchanged by the "
                     f"word mechanism, as its guarantee allows ({listed}): released verbatim")
        text += (f". Released verbatim and NOT protected: {self.tokens_undetected} tokens "
                 "outside the detected spans (anything the detector missed is among them)")
        inside = {r: c for r, c in self.kept.items() if r != "undetected"}
        if inside:
            listed = ", ".join(f"{r} {c}" for r, c in sorted(inside.items()))
            text += f", and {sum(inside.values())} tokens kept inside the spans ({listed})"
        return text + ("; where the spans are and their types (for word spans also their "
                       "number of words) are not protected either")

    # ------------------------------------------------------------ combine
    @classmethod
    def combine(cls, reports: Iterable[PrivacyReport]) -> TargetedReport:
        reports = list(reports)
        base = PrivacyReport.combine(reports)
        draws: Counter = Counter()
        rows: dict[str, SpanRow] = {}
        for r in reports:
            for e in getattr(r, "draws", []):
                draws[(e.guarantee, e.reason)] += e.count
            for category, s in getattr(r, "spans", {}).items():
                rows.setdefault(category, SpanRow(s["treatment"])).add(s)
        spans = {c: row.as_dict() for c, row in rows.items()}
        first = reports[0]
        consistent = {getattr(r, "consistent", "none") for r in reports}
        residual: dict = {}
        for r in reports:
            res = getattr(r, "residual", None) or {}
            if res:
                residual["policy"] = res.get("policy")
                residual["tokens"] = residual.get("tokens", 0) + res.get("tokens", 0)
        return cls(**vars(base), draws=[TokenEvent(g, c, r) for (g, r), c in draws.items() if c],
                   residual=residual, spans=spans, detector=getattr(first, "detector", ""),
                   entities=getattr(first, "entities", ()),
                   consistent=consistent.pop() if len(consistent) == 1 else "mixed")

    # ------------------------------------------------------------- output
    def to_dict(self) -> dict:
        eps = self.epsilon
        return {
            **super().to_dict(),
            "guarantee_scope": "per detected span (not per document)",
            "detector": self.detector,
            "entities": list(self.entities),
            "consistent": self.consistent,
            "spans_total": self.spans_total,
            "spans_by_type": {c: dict(s) for c, s in sorted(self.spans.items())},
            "draws": self.draws_total,
            "span_epsilon": eps if math.isfinite(eps) else None,
            "tokens_undetected": self.tokens_undetected,
            **({"residual": dict(self.residual)} if self.residual else {}),
            **({"withheld": self.withheld} if self.withheld else {}),
        }

    def __str__(self) -> str:
        lines = [f"Privacy report ({self.mechanism}; detector {self.detector or 'given spans'})",
                 f"  tokens total       {self.tokens_total}",
                 f"  privatized         {self.tokens_privatized} tokens in {self.spans_total} "
                 "detected spans"]
        for c, s in sorted(self.spans.items()):
            reused = f", {s['reused']} reused" if s["reused"] else ""
            same = (f", {s['unchanged']} of {s['draws']} returned unchanged by the mechanism"
                    if s.get("unchanged") else "")
            lines.append(f"    {c:<16} {s['spans']} spans, {s['tokens']} tokens{reused}{same}: "
                         f"{s['treatment']}")
        if self.residual:
            what = {"protect": "replaced whole", "report": "released verbatim (report only)",
                    "keep": ""}.get(self.residual.get("policy"), "")
            lines.append(f"  residual net       {self.residual.get('tokens', 0)} tokens outside "
                         f"the detected spans that are not ordinary words: {what}")
        if self.withheld:
            lines.append(f"  WITHHELD           {self.withheld}")
        lines += [f"  NOT protected      {self.tokens_undetected} tokens outside the detected "
                  "spans, released verbatim",
                  f"  guarantee          {self.document_guarantee()}"]
        return "\n".join(lines)
