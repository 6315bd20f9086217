"""PrivacyReport: every token of a text, what happened to it, and the composed guarantee.

A report is saved as data in one way, :meth:`PrivacyReport.to_state` (JSON-able, versioned,
its class named by a registered tag) and read back by :meth:`PrivacyReport.from_state`, which
also reads the states earlier versions wrote: the corpus manifest's and the integrations'.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dptext.accounting.composition import (
    br_epsilon,
    epsilon_for_delta,
    metric_epsilon,
    pure_epsilon,
)
from dptext.accounting.events import GuaranteeKind, PrivacyEvent, TokenEvent, TokenGuarantee
from dptext.errors import DPTextError

KEPT_REASONS = {
    "punctuation": "punctuation and symbols (always kept)",
    "stopword": "stopwords kept by configuration",
    "oov": "out-of-vocabulary words released verbatim (oov='keep')",
    "non_sensitive": "non-sensitive words released verbatim (SanText+: public by assumption; "
                     "each is kept w.p. 1-p)",
}
# Tokens that carry no guarantee but were not released verbatim either: SanText+'s non-sensitive
# words whose coin (probability p) sent them to a draw from V_s. Counted apart from ``kept``.
RESAMPLED_REASONS = {
    "non_sensitive_resampled": "non-sensitive words resampled from the sensitive words "
                               "(SanText+, w.p. p; no guarantee: the word is public by "
                               "assumption)",
}
# Attributes of privatized tokens released from the input without protection.
UNPROTECTED_ATTRIBUTES = {
    "case_pattern": "case pattern (Title/UPPER) copied from the input word (keep_case=True)",
}
WARNINGS = {
    "non_sensitive_capitalized": "non-sensitive words released verbatim that are capitalised "
                                 "inside a sentence - likely names or places; SanText+ treats "
                                 "its most frequent words (john, london, google, ...) as public",
    "non_sensitive_entity": "non-sensitive words released verbatim inside a detected entity "
                            "(SanText+ treats its most frequent words as public)",
}


_CHARGED = (GuaranteeKind.PURE, GuaranteeKind.METRIC)
#: the delta of the (epsilon, delta) line of a report (the ledger's default delta)
REPORT_DELTA = 1e-6


@functools.lru_cache(maxsize=1024)
def _event_scope(g: TokenGuarantee) -> str:
    if g.kind is GuaranteeKind.METRIC:
        return (f"per privatized token, worst case eps*Delta_max = {g.epsilon:g}*"
                f"{g.diameter if g.diameter is not None else 'unknown'} ({g.metric}, "
                f"among {g.scope})")
    return f"per privatized token, {g.epsilon:g}-DP among {g.scope}"


@dataclass
class PrivacyReport:
    """What a mechanism did to one text (or, combined, to many).

    ``privatized`` tokens were replaced by a randomized draw; ``kept`` counts the tokens released
    verbatim by reason. ``events`` carry the guarantees; the document guarantee is their
    sequential composition (:mod:`dptext.accounting.composition`), stated for the privatized
    tokens with the kept ones named as unprotected.
    """

    #: the class's name in a state (:meth:`to_state`); a subclass that is saved declares its
    #: own, and a tag names one class for good (states on disk and in datasets keep it)
    tag: ClassVar[str] = "PrivacyReport"
    #: the fields that hold lists of :class:`TokenEvent` (a subclass adds its own)
    event_fields: ClassVar[tuple[str, ...]] = ("events",)

    mechanism: str
    per_token: TokenGuarantee
    events: list[TokenEvent] = field(default_factory=list)
    records: int = 1
    max_record_epsilon: float = 0.0
    #: attribute (UNPROTECTED_ATTRIBUTES) -> number of privatized tokens it was released for
    unprotected_attributes: dict[str, int] = field(default_factory=dict)
    #: warning (WARNINGS) -> number of tokens it concerns
    warnings: dict[str, int] = field(default_factory=dict)
    #: between which texts the document guarantee holds (the released skeleton)
    document_scope: str = ""
    #: ``document_epsilon=E`` runs: E, and the per-token epsilons it gave, as
    #: ``[[epsilon, records], ...]`` (ascending; few distinct values: see
    #: :func:`dptext.accounting.composition.token_step`)
    document_budget: float | None = None
    per_token_epsilons: list = field(default_factory=list)
    #: why the text was not released (its output then empty; None: released): a mechanism
    #: that may withhold a text says so here (entity mode: a language the detectors do not
    #: read, an identifier the leak check found), so no reader probes for it
    withheld: str | None = None

    def per_token_epsilon_summary(self) -> dict | None:
        """min / median / max of the derived per-token epsilon over the records (nearest
        rank: each is one record's value), or None when no document budget was given."""
        if self.document_budget is None or not self.per_token_epsilons:
            return None
        pairs = sorted((float(e), int(n)) for e, n in self.per_token_epsilons)
        total = sum(n for _, n in pairs)
        rank, seen, median = math.ceil(0.5 * total), 0, pairs[-1][0]
        for e, n in pairs:
            seen += n
            if seen >= rank:
                median = e
                break
        return {"document_epsilon": self.document_budget, "records": total,
                "per_token_epsilon_min": pairs[0][0], "per_token_epsilon_median": median,
                "per_token_epsilon_max": pairs[-1][0]}

    # ------------------------------------------------------------- counts
    @property
    def kept(self) -> dict[str, int]:
        """Tokens released verbatim, by reason."""
        c: Counter[str] = Counter()
        for e in self.events:
            if e.guarantee.kind is GuaranteeKind.NONE and e.reason not in RESAMPLED_REASONS:
                c[e.reason] += e.count
        return dict(c)

    @property
    def resampled_unprotected(self) -> dict[str, int]:
        """Tokens without a guarantee that were nevertheless redrawn (not verbatim), by reason."""
        c: Counter[str] = Counter()
        for e in self.events:
            if e.guarantee.kind is GuaranteeKind.NONE and e.reason in RESAMPLED_REASONS:
                c[e.reason] += e.count
        return dict(c)

    @property
    def privatized_by_reason(self) -> dict[str, int]:
        c: Counter[str] = Counter()
        for e in self.events:
            if e.guarantee.kind is not GuaranteeKind.NONE:
                c[e.reason] += e.count
        return dict(c)

    @property
    def tokens_privatized(self) -> int:
        return sum(self.privatized_by_reason.values())

    @property
    def tokens_kept(self) -> int:
        return sum(self.kept.values())

    @property
    def tokens_total(self) -> int:
        return (self.tokens_privatized + self.tokens_kept
                + sum(self.resampled_unprotected.values()))

    # ---------------------------------------------------------- guarantees
    @property
    def epsilon(self) -> float:
        """Pure epsilon of the whole input by sequential composition over privatized tokens."""
        return pure_epsilon(e for e in self.events if e.guarantee.kind is not GuaranteeKind.NONE)

    def epsilon_for_delta(self, delta: float) -> float:
        """(epsilon, delta) view of the same composition via dp_accounting's PLD accountant."""
        return epsilon_for_delta(
            (e for e in self.events if e.guarantee.kind is not GuaranteeKind.NONE), delta
        )

    def document_guarantee(self) -> str:
        """The composed guarantee in words."""
        n = self.tokens_privatized
        if n == 0:
            text = "no token was privatized"
        else:
            metric = metric_epsilon(self.events)
            parts = [
                f"{self.epsilon:.4g}-DP for the {n} privatized tokens (sequential composition)"
            ]
            for name, eps in metric.items():
                parts.append(f"{eps:g}*sum_i d(x_i, x'_i) metric DP, d = {name}")
            text = "; ".join(parts)
            if self.document_scope:
                text += f", {self.document_scope}"
            if self.records > 1:
                text += (
                    f"; composed over all {self.records} records (the bound if one person "
                    f"wrote them all). "
                    f"Largest single record: {self.max_record_epsilon:.4g}-DP"
                )
        if self.tokens_kept:
            kept = ", ".join(f"{r} {c}" for r, c in sorted(self.kept.items()))
            text += f". Released verbatim and not protected: {self.tokens_kept} tokens ({kept})"
        resampled = self.resampled_unprotected
        if resampled:
            text += (". Redrawn but not protected: " + ", ".join(
                f"{r} {c}" for r, c in sorted(resampled.items())))
        attributes = {a: c for a, c in self.unprotected_attributes.items() if c}
        if attributes:
            text += (". Released from the input and not protected: " + "; ".join(
                f"{UNPROTECTED_ATTRIBUTES.get(a, a)} for {c} tokens"
                for a, c in sorted(attributes.items())))
        return text

    def privacy_events(self) -> list[PrivacyEvent]:
        """What this report's records cost their privacy unit, as events for the ledger.

        One pure event per distinct token guarantee, ``count`` = the tokens privatized under
        it, epsilon = the guarantee's worst case between any two inputs in scope (pure: eps;
        metric: eps * Delta_max, the diameter; sequential composition over the tokens, module
        :mod:`dptext.accounting.composition`). Tokens released verbatim cost nothing here - they
        are not protected at all, which the report states - and tokens whose output ignores the
        input (0-DP) cost nothing. A metric guarantee with no known diameter gives an event with
        an infinite epsilon, which the ledger refuses to charge. A combined report gives the
        events of all its records (their sequential composition).
        """
        by_guarantee: dict[TokenGuarantee, int] = {}
        for e in self.events:
            if e.count and e.guarantee.kind in _CHARGED:
                by_guarantee[e.guarantee] = by_guarantee.get(e.guarantee, 0) + e.count
        return [PrivacyEvent("pure", g.worst_case_epsilon, 0.0, count, self.mechanism,
                             _event_scope(g),
                             bounded_range=g.bounded_range and g.kind is GuaranteeKind.PURE)
                for g, count in by_guarantee.items()]

    def tight_epsilon(self, delta: float = REPORT_DELTA, *, pld: bool = False) -> float:
        """The charged events composed at ``delta`` as tightly as we can prove for adaptive
        draws: bounded-range composition for exponential-mechanism tokens (Azuma / zCDP),
        dp_accounting's PLD (``pld=True``: about 0.1 s a call and 10 s for the first import,
        so reports leave it to the ledger), or the basic sum, whichever is smallest
        (:func:`dptext.accounting.composition.br_epsilon`)."""
        return br_epsilon(self.privacy_events(), delta, pld=pld)

    def warning_lines(self) -> list[str]:
        """One line per warning (shown by the CLI with the report)."""
        return [f"WARNING: {c} {WARNINGS.get(w, w)}" for w, c in sorted(self.warnings.items())
                if c]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "tag" in cls.__dict__:
            _register(cls)

    # ------------------------------------------------------------ state
    def to_state(self) -> dict:
        """Every field as JSON-able data, with the class's ``tag`` and the state ``version``
        (:data:`STATE_VERSION`); :meth:`from_state` reads it back."""
        cls = type(self)
        if "tag" not in cls.__dict__:
            raise DPTextError(f"{cls.__name__} declares no tag: its reports cannot be saved")
        state: dict[str, Any] = {"class": cls.tag, "version": STATE_VERSION}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, TokenGuarantee):
                value = _guarantee_state(value)
            elif f.name in cls.event_fields:
                value = [{"guarantee": _guarantee_state(e.guarantee), "count": e.count,
                          "reason": e.reason} for e in value]
            elif isinstance(value, tuple):
                value = list(value)
            state[f.name] = value
        return state

    @staticmethod
    def from_state(state: dict | str) -> PrivacyReport:
        """The report a state describes (or its JSON text), of the class its tag names:
        this version's states, the integrations' states before versions (``version`` absent)
        and the corpus manifest's before versions (``"class": "module:Name"``)."""
        if isinstance(state, str):
            state = json.loads(state)
        if not isinstance(state, dict) or not isinstance(state.get("class"), str):
            raise DPTextError("not a dptext report state")
        if ":" in state["class"]:
            return _from_manifest_state(state)
        version = state.get("version", 0)
        if not isinstance(version, int) or not 0 <= version <= STATE_VERSION:
            raise DPTextError(f"report state version {version!r}: this dptext reads versions "
                              f"0 to {STATE_VERSION}")
        cls = REPORT_CLASSES.get(state["class"])
        if cls is None:
            raise DPTextError(f"not a dptext report state: unknown report class "
                              f"{state['class']!r} (known: {', '.join(sorted(REPORT_CLASSES))})")
        tuples = {f.name for f in dataclasses.fields(cls) if isinstance(f.default, tuple)}
        kwargs = {}
        for name, value in state.items():
            if name in ("class", "version"):
                continue
            if name == "per_token":
                value = _guarantee_from_state(value)
            elif name in cls.event_fields:
                value = [TokenEvent(_guarantee_from_state(e["guarantee"]), e["count"],
                                    e["reason"]) for e in value]
            elif name in tuples:
                value = tuple(value)
            kwargs[name] = value
        return cls(**kwargs)

    # ------------------------------------------------------------ combine
    @classmethod
    def combine(cls, reports: Iterable[PrivacyReport]) -> PrivacyReport:
        """Sum the counts of many reports (one file); composition is over all of them."""
        reports = list(reports)
        if not reports:
            raise ValueError("nothing to combine")
        grouped: Counter[tuple[TokenGuarantee, str]] = Counter()
        attributes: Counter[str] = Counter()
        warnings: Counter[str] = Counter()
        derived: Counter[float] = Counter()
        for r in reports:
            for e in r.events:
                grouped[(e.guarantee, e.reason)] += e.count
            attributes.update(r.unprotected_attributes)
            warnings.update(r.warnings)
            for eps, n in r.per_token_epsilons:
                derived[float(eps)] += int(n)
        return cls(
            mechanism=reports[0].mechanism,
            per_token=reports[0].per_token,
            events=[TokenEvent(g, c, reason) for (g, reason), c in grouped.items() if c],
            records=sum(r.records for r in reports),
            # a combined report's own epsilon composes all its records: use its largest record
            max_record_epsilon=max(
                max(r.epsilon, r.max_record_epsilon) if r.records == 1 else r.max_record_epsilon
                for r in reports
            ),
            unprotected_attributes=dict(attributes),
            warnings=dict(warnings),
            document_scope=reports[0].document_scope,
            document_budget=reports[0].document_budget,
            per_token_epsilons=[[e, n] for e, n in sorted(derived.items())],
        )

    # ------------------------------------------------------------- output
    def to_dict(self) -> dict:
        eps = self.epsilon
        return {
            "mechanism": self.mechanism,
            "records": self.records,
            "tokens_total": self.tokens_total,
            "tokens_privatized": self.tokens_privatized,
            "privatized_by_reason": self.privatized_by_reason,
            "tokens_kept": self.tokens_kept,
            "kept_by_reason": self.kept,
            "resampled_unprotected_by_reason": self.resampled_unprotected,
            "unprotected_attributes": {a: c for a, c in self.unprotected_attributes.items()
                                       if c},
            "warnings": self.warning_lines(),
            "per_token_guarantee": self.per_token.describe(),
            "document_epsilon": eps if math.isfinite(eps) else None,
            "max_record_epsilon": max(self.max_record_epsilon, eps if self.records == 1 else 0),
            "document_guarantee": self.document_guarantee(),
            **self._tight_dict(),
            **({"document_budget": budget} if (budget := self.per_token_epsilon_summary())
               else {}),
        }

    def _tight_dict(self) -> dict:
        events = self.privacy_events()
        if not events:
            return {}
        basic = sum(e.total_epsilon for e in events)
        tight = br_epsilon(events, REPORT_DELTA, pld=False)
        if not math.isfinite(tight):
            return {}
        return {"composed": {"epsilon_basic": basic, "epsilon": tight, "delta": REPORT_DELTA,
                             "bounded_range": any(e.bounded_range for e in events)}}

    def __str__(self) -> str:
        d = self.to_dict()
        lines = [
            f"Privacy report ({self.mechanism})",
            f"  tokens total       {d['tokens_total']}",
            f"  privatized         {d['tokens_privatized']}"
            + (f"  {d['privatized_by_reason']}" if d["privatized_by_reason"] else ""),
            f"  kept verbatim      {d['tokens_kept']}"
            + (f"  {d['kept_by_reason']}" if d["kept_by_reason"] else ""),
            f"  per token          {d['per_token_guarantee']}",
            f"  document           {d['document_guarantee']}",
        ]
        composed = d.get("composed")
        if composed and composed["epsilon"] < composed["epsilon_basic"]:
            how = ("bounded-range composition of the exponential-mechanism draws"
                   if composed["bounded_range"] else "advanced composition (Azuma / zCDP)")
            lines.insert(5, f"  at delta {composed['delta']:g}   ({composed['epsilon']:.4g}, "
                            f"{composed['delta']:g})-DP by {how} (basic sum "
                            f"{composed['epsilon_basic']:.4g}, the one the ledger enforces by "
                            "default)")
        budget = d.get("document_budget")
        if budget:
            lines.insert(5, (
                f"  document budget    {budget['document_epsilon']:g} per record: per-token "
                f"epsilon min {budget['per_token_epsilon_min']:.4g}, median "
                f"{budget['per_token_epsilon_median']:.4g}, max "
                f"{budget['per_token_epsilon_max']:.4g} over {budget['records']} records"))
        resampled = d["resampled_unprotected_by_reason"]
        if resampled:
            lines.insert(4, f"  redrawn, no guarantee {sum(resampled.values())}  {resampled}")
        return "\n".join(lines + d["warnings"])


# ------------------------------------------------------------------ states
#: the version :meth:`PrivacyReport.to_state` writes. 1: the integrations' form (every field by
#: name, guarantees and events as objects) with ``version``; 0: that form without it, or the
#: corpus manifest's (``"class": "module:Name"``, guarantees and events as lists, ``extra``)
STATE_VERSION = 1

#: report classes by tag; a subclass declaring ``tag`` is added when its module is imported
REPORT_CLASSES: dict[str, type[PrivacyReport]] = {}


def _register(cls: type[PrivacyReport]) -> None:
    tag = cls.__dict__["tag"]
    if not isinstance(tag, str) or not tag or ":" in tag:
        raise DPTextError(f"{cls.__name__}: a report tag is a non-empty name without ':', "
                          f"got {tag!r}")
    old = REPORT_CLASSES.get(tag)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__,
                                                                  cls.__qualname__):
        raise DPTextError(f"report tag {tag!r} is already registered by "
                          f"{old.__module__}.{old.__qualname__}")
    REPORT_CLASSES[tag] = cls


REPORT_CLASSES[PrivacyReport.tag] = PrivacyReport


def _guarantee_state(g: TokenGuarantee) -> dict:
    out = {"kind": g.kind.value, "epsilon": g.epsilon, "scope": g.scope, "metric": g.metric,
           "diameter": g.diameter}
    if g.bounded_range:
        out["bounded_range"] = True
    return out


def _guarantee_from_state(d: dict) -> TokenGuarantee:
    return TokenGuarantee(GuaranteeKind(d["kind"]), d["epsilon"], d["scope"], d["metric"],
                          d["diameter"], bool(d.get("bounded_range", False)))


def _listed_guarantee(state: list) -> TokenGuarantee:
    kind, eps, scope, metric, diameter, *rest = state
    return TokenGuarantee(GuaranteeKind(kind), eps, scope, metric, diameter,
                          bounded_range=bool(rest and rest[0]))


def _listed_extra(value):
    if isinstance(value, dict) and "__token_events__" in value:
        return [TokenEvent(_listed_guarantee(g), c, reason)
                for g, reason, c in value["__token_events__"]]
    if isinstance(value, dict) and "__tuple__" in value:
        return tuple(value["__tuple__"])
    return value


def _from_manifest_state(state: dict) -> PrivacyReport:
    """A state the corpus manifest held before versions: the class as ``module:Name`` (a
    class outside the registry reads as a plain :class:`PrivacyReport`, as it did)."""
    by_path = {f"{c.__module__}:{c.__qualname__}": c for c in REPORT_CLASSES.values()}
    cls = by_path.get(state["class"], PrivacyReport)
    return cls(
        mechanism=state["mechanism"], per_token=_listed_guarantee(state["per_token"]),
        events=[TokenEvent(_listed_guarantee(g), c, reason) for g, reason, c in state["events"]],
        records=state["records"], max_record_epsilon=state["max_record_epsilon"],
        **{k: _listed_extra(v) for k, v in state.get("extra", {}).items()},
    )
