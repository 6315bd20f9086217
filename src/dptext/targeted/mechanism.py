"""Entity-targeted sanitization: privatize the detected entities, release the rest verbatim.

``TargetedMechanism(mechanism, entities=[...], detector=...)`` wraps any mechanism. Detected
word spans (names, places, organisations) are privatized by that mechanism - a word-level one
on the span's words; DP-MLM on the span's words with the whole text as the context
(:meth:`dptext.mechanisms.dpmlm.DPMLM.privatize_spans`). Pattern spans (contact details, IDs,
dates, numbers) are replaced whole by a type placeholder or a surrogate
(:mod:`dptext.targeted.surrogates`). Everything outside the detected spans is released as it
is; the report (:class:`~dptext.targeted.report.TargetedReport`) says so with the count.

Consistency (``consistent="document"`` or ``"unit"``): the same entity (category and
normalized surface, :func:`dptext.detect.normalize_entity`) within one text, or within one
privacy unit across texts, gets the replacement drawn at its first occurrence. Its other
occurrences are post-processing of that draw, so the composition counts one draw per distinct
entity instead of one per occurrence; the price is that which spans are the same entity is
released.

With a ledger that may withhold texts, a draw must not reach a later text of the unit for free
when the text it was drawn in is never released (issue 32): ``settle=False`` keeps the new
draws of a call *tentative* - a later text that reuses a tentative draw made in another text
pays for it (its report carries the draw's events) - until :meth:`TargetedMechanism.settle`
says which results were released: the draws of released texts become free to reuse, those
only of withheld texts are forgotten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.detect.categories import (
    CATEGORY_GROUPS,
    DEFAULT_CATEGORIES,
    DETECTABLE,
    PHI_CATEGORIES,
    resolve_categories,
    undetectable,
)
from dptext.detect.entities import BACKENDS, EntityDetector
from dptext.detect.leaks import survivors
from dptext.detect.recognizers import DenyListRecognizer, parse_pattern
from dptext.detect.recognizers.builtin import builtin_recognizers, supported_categories
from dptext.detect.residual import ResidualNet
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.rng import RngLike, as_generator
from dptext.targeted.options import OPTIONS, resolve
from dptext.targeted.report import SpanRow, TargetedReport
from dptext.targeted.spans import Span, merge_spans, outside
from dptext.targeted.surrogates import NameDraws
from dptext.targeted.treatments import Context, Treatment, choose
from dptext.text import count_punctuation, split_words

CONSISTENCY = OPTIONS["consistent"].choices
PATTERN_POLICIES = OPTIONS["pattern_policy"].choices
_KEPT = TokenGuarantee(GuaranteeKind.NONE)


def count_tokens(text: str) -> int:
    """Words plus punctuation tokens, as every :class:`PrivacyReport` counts them."""
    parts = split_words(text)
    return len(parts) // 2 + count_punctuation(parts[0::2])


class TargetedMechanism(Mechanism):
    """Privatize only the detected entity spans of each text (module docstring).

    ``entities``: categories or groups (:func:`dptext.detect.resolve_categories`; ``None``:
    the default sensitive categories the detector can find; with ``detector=None``: every span
    given). ``detector``: ``"spacy"``,
    ``"presidio"``, ``"both"``, an :class:`~dptext.detect.EntityDetector`, or ``None`` when
    the spans are always given (:meth:`privatize_spans`: the spaCy component, the Presidio
    operator). ``pattern_policy``: ``"placeholder"`` (0-DP) or ``"surrogate"``
    (``surrogate_epsilon``-DP per span). ``placeholder``: the replacement text, ``{category}``
    filled in. ``word_policy="placeholder"`` replaces word spans whole by the placeholder too
    (0-DP, nothing of the name kept) instead of privatizing their words;
    ``word_policy="surrogate"`` (de-identification's default) replaces places and
    organisations (GPE, LOC, FAC, ORG) whole by a public surrogate that shares no word with
    the input, the other word categories by the placeholder, names by ``name_policy`` - none
    can come back verbatim. Under ``"mechanism"`` the report counts the word spans the
    mechanism returned unchanged, per category.

    De-identification (docs/deid.md; :func:`build_deid` turns all of it on):
    ``recognizers=True`` adds the built-in rule recognizers (phones in every format, record /
    account / licence numbers after their context words, SSN, IP, URL, ZIP, street, ages,
    dates; :mod:`dptext.detect.recognizers`); ``patterns`` the user's (``"NAME=REGEX"``,
    ``"NAME@context,words=REGEX"`` or recognizer objects; their categories are added);
    ``deny_list`` names that must never appear (category ``DENY_LIST``, replaced whole);
    ``allow_list`` words that are never identifiers. ``residual``: ``"keep"`` (default here),
    ``"report"`` (counted, released) or ``"protect"`` - tokens outside every span that are not
    ordinary words (:mod:`dptext.detect.residual`) are replaced whole as ``RESIDUAL``.
    ``name_policy``: ``"mechanism"`` (PERSON words privatized by the mechanism, which returns
    a share of them unchanged - counted in the report), ``"surrogate"`` (a public name drawn
    independently of the input, 0-DP) or ``"placeholder"``. ``check=True`` runs the leak check
    (:func:`dptext.detect.leaks.survivors`) on each released text and withholds a text with a
    surviving identifier (empty text, ``report.withheld`` names the categories, never the
    values). ``languages``: the languages the detectors support (``("en",)``); a text in another
    language is withheld (``other_languages="withhold"``) or privatized whole by the wrapped
    mechanism (``"whole"``), never released verbatim; ``None`` skips language detection.
    """

    name: ClassVar[str] = "targeted"
    summary: ClassVar[str] = ("privatize only detected entities (names by the mechanism, "
                              "contact details replaced whole); the rest is released verbatim")
    guarantee_summary: ClassVar[str] = ("per detected span; undetected text is released "
                                        "verbatim and not protected")

    def __init__(self, mechanism: Mechanism, **options: Any) -> None:
        """``options``: those of :data:`dptext.targeted.options.OPTIONS` (the class docstring;
        an unknown name is a one-line error), the others at their library default."""
        if not isinstance(mechanism, Mechanism) or isinstance(mechanism, TargetedMechanism):
            raise DPTextError("TargetedMechanism wraps a word or LM mechanism, e.g. "
                              "dptext.mechanism('custext', epsilon=2)")
        if mechanism.rewrites_whole_texts:
            raise DPTextError("the add/delete variant of dpmlm rewrites whole texts; "
                              "use p_add=p_del=0 for entity-targeted sanitization")
        o = self.options = resolve(options)
        entities, detector = o["entities"], o["detector"]
        self.mechanism = mechanism
        if isinstance(entities, str):
            entities = [e for e in entities.split(",") if e.strip()]
        backend = detector.backend if isinstance(detector, EntityDetector) else detector
        if backend is not None and backend not in BACKENDS:
            raise DPTextError(f"unknown detector {detector!r}; choose from {', '.join(BACKENDS)}")
        self.recognizers = o["recognizers"]
        user = [parse_pattern(p) if isinstance(p, str) else p for p in o["patterns"]]
        self.deny_list = o["deny_list"]
        self.allow_list = frozenset(o["allow_list"])
        if self.deny_list:
            user.append(DenyListRecognizer("deny-list", "DENY_LIST", entries=self.deny_list))
        extra = supported_categories(user)
        rules = (builtin_recognizers() if self.recognizers else ()) + tuple(user)
        ruled = supported_categories(rules)  # what the rules report, the user's included
        self.categories: frozenset[str] | None
        entities = None if entities is None else list(entities)
        if entities:
            self.categories = resolve_categories(entities) | extra
            # a group (PHI, PII, ...) is narrowed to what the detector finds; a category
            # named on its own that it never finds is an error
            named = [e for e in entities if e.strip().upper() not in CATEGORY_GROUPS
                     and e.strip().upper() != "ALL"]
            if backend and len(named) < len(list(entities)):
                grouped = resolve_categories([e for e in entities if e not in named])
                drop = set(undetectable(grouped, backend, ruled))
                drop -= set(resolve_categories(named)) if named else set()
                self.categories -= drop
            missing = undetectable(self.categories, backend, ruled) if backend else []
            if missing:
                other = [b for b in BACKENDS if not undetectable(self.categories, b, ruled)]
                hint = (f"; use --detector {other[0]}" if other else
                        "" if self.recognizers else "; the rule recognizers find it")
                raise DPTextError(
                    f"detector {backend!r} never reports {', '.join(missing)}" + hint)
        elif backend is None:
            self.categories = None  # spans are given: privatize every one of them
        else:
            found = DETECTABLE[backend] | ruled
            self.categories = (frozenset(PHI_CATEGORIES if self.recognizers
                                         else DEFAULT_CATEGORIES) & found) | extra
        if isinstance(detector, EntityDetector):
            self._detector: EntityDetector | None = detector
        elif detector is None:
            self._detector = None
        else:
            self._detector = EntityDetector(self.categories, backend, rules, self.allow_list)
        self.residual = o["residual"]
        self._residual = ResidualNet(self.allow_list) if self.residual != "keep" else None
        self.name_policy, self.check = o["name_policy"], o["check"]
        self.languages, self.other_languages = o["languages"], o["other_languages"]
        self.detector = backend
        self.pattern_policy, self.word_policy = o["pattern_policy"], o["word_policy"]
        self.surrogate_epsilon, self.consistent = o["surrogate_epsilon"], o["consistent"]
        try:
            o["placeholder"].format(category="PERSON")
        except (AttributeError, KeyError, IndexError, ValueError):
            raise DPTextError(f"placeholder must be a text with at most a {{category}} field, "
                              f"got {o['placeholder']!r}") from None
        self.placeholder = o["placeholder"]
        self._treatments: dict[str, Treatment] = {}  # category -> its treatment, once chosen
        # consistent="unit" in the library (no keyed draws): per person, the name draws and
        # the date offset (treatments.Context)
        self._unit_names: dict[str, NameDraws] = {}
        self._unit_offsets: dict[str, int] = {}
        self._memory: dict[tuple[str, str, str], str] = {}  # (unit, category, key) -> text
        # settle=False: draws not yet known released, ident -> (text, the draw's events), and
        # per unsettled result (by id) the draws it made or paid for
        self._tentative: dict[tuple[str, str, str], tuple[str, list]] = {}
        self._unsettled: dict[int, tuple[Result, list]] = {}

    # ------------------------------------------------------------ interface
    @property
    def is_fitted(self) -> bool:
        """The wrapped mechanism's answer (the detector loads its models when first used)."""
        return self.mechanism.is_fitted

    def fit(self, **kwargs: Any) -> TargetedMechanism:
        """Fit the wrapped mechanism and load the detector's models (once per process, so
        forked workers inherit them)."""
        self.mechanism.fit(**kwargs)
        return self.load_detector()

    def load_detector(self) -> TargetedMechanism:
        """Load the detector's models now (once per process: they are cached per process)."""
        if self._detector is not None:
            self._detector.detect(["warm up"])
        return self

    def shell(self) -> TargetedMechanism:
        """This wrapper without its wrapped mechanism or remembered draws (what a worker is
        sent; the wrapped mechanism travels its own way), completed by :meth:`with_mechanism`."""
        import copy

        out = copy.copy(self)
        out.mechanism = None
        out._memory, out._tentative, out._unsettled = {}, {}, {}
        out._unit_names, out._unit_offsets = {}, {}
        out._treatments = {}  # they read the wrapped mechanism
        return out

    def with_mechanism(self, mechanism: Mechanism) -> TargetedMechanism:
        self.mechanism = mechanism  # completes a shell()
        self._treatments = {}
        return self

    @property
    def guarantee(self) -> TokenGuarantee:
        """The per-token guarantee of the words of word spans (the wrapped mechanism's)."""
        return self.mechanism.guarantee

    def forget(self) -> None:
        """Drop the replacements remembered for ``consistent="unit"``."""
        self._memory.clear()
        self._tentative.clear()
        self._unsettled.clear()
        self._unit_names.clear()
        self._unit_offsets.clear()

    def settle(self, results: Sequence[Result], released: Sequence[bool]) -> None:
        """After a ledger decided (``privatize_spans(..., settle=False)``): the draws made or
        paid for in ``released`` results are remembered for free reuse; those made only in
        withheld ones are forgotten, so they never reach a later text uncharged."""
        if len(results) != len(released):
            raise DPTextError(f"{len(results)} results but {len(released)} release flags")
        withheld = []
        for r, ok in zip(results, released, strict=True):
            entry = self._unsettled.pop(id(r), None)
            if entry is None:
                continue
            if ok:
                for ident, text in entry[1]:
                    self._memory[ident] = text
                    self._tentative.pop(ident, None)
            else:
                withheld.extend(ident for ident, _ in entry[1])
        for ident in withheld:
            self._tentative.pop(ident, None)

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans to privatize in each text (snapped to words, overlaps merged)."""
        if self._detector is None:
            raise DPTextError("this TargetedMechanism has no detector: pass the spans "
                              "(privatize_spans)")
        return [merge_spans(t, ents, self.categories)
                for t, ents in zip(texts, self._detector.detect(texts), strict=True)]

    def residual_tokens(self, text: str, spans: Sequence[Any]) -> list[Span]:
        """The residual net's tokens of ``text`` outside ``spans`` (empty under ``keep``)."""
        if self._residual is None:
            return []
        return [Span(e.start, e.end, e.category, e.key) for e in self._residual.find(text, spans)]

    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None,
                        units: Sequence[str] | None = None, settle: bool = True,
                        draw_rng: Callable[[str], np.random.Generator] | None = None
                        ) -> list[Result]:
        """Detect and privatize the entity spans of ``texts``; ``units`` (one id per text)
        scopes ``consistent="unit"``; ``settle``, ``draw_rng``: see :meth:`privatize_spans`."""
        for t in texts:
            if not isinstance(t, str):
                raise DPTextError(f"texts must be strings, got {type(t).__name__}")
        if self.languages is None:
            return self.privatize_spans(texts, self.detect(texts), rng=rng, units=units,
                                        settle=settle, draw_rng=draw_rng)
        from dptext.detect.language import detect_language

        langs = [detect_language(t) for t in texts]
        mine = [i for i, lang in enumerate(langs) if lang.code in self.languages]
        out: list[Result | None] = [None] * len(texts)
        gen = as_generator(rng)
        if mine:
            sub = [texts[i] for i in mine]
            done = self.privatize_spans(sub, self.detect(sub), rng=gen,
                                        units=None if units is None else [units[i] for i in mine],
                                        settle=settle, draw_rng=draw_rng)
            for i, r in zip(mine, done, strict=True):
                out[i] = r
        for i, lang in enumerate(langs):
            if out[i] is not None:
                continue
            if self.other_languages == "whole":
                r = self.mechanism.privatize_batch([texts[i]], rng=gen)[0]
                out[i] = r
            else:
                out[i] = self._withheld(texts[i], f"language {lang.code}: the detectors support "
                                        f"{', '.join(sorted(self.languages))}")
        return out

    def _withheld(self, text: str, reason: str) -> Result:
        report = TargetedReport(
            mechanism=f"targeted:{self.mechanism.name}", per_token=self.mechanism.guarantee,
            events=[], draws=[], spans={}, detector=self.detector or "",
            entities=tuple(sorted(self.categories or ())), consistent=self.consistent,
            withheld=reason)
        return Result("", report)

    # ------------------------------------------------------------- the work
    def treatment(self, category: str) -> Treatment:
        """How spans of ``category`` are replaced (:mod:`dptext.targeted.treatments`)."""
        got = self._treatments.get(category)
        if got is None:
            got = self._treatments[category] = choose(self, category)
        return got

    def privatize_spans(self, texts: Sequence[str], spans: Sequence[Iterable[Any]], *,
                        rng: RngLike = None,
                        units: Sequence[str] | None = None, settle: bool = True,
                        draw_rng: Callable[[str], np.random.Generator] | None = None
                        ) -> list[Result]:
        """Privatize the given spans of each text (objects with ``start``, ``end``,
        ``category``: :class:`Span`, :class:`~dptext.detect.Entity`, ...); the rest of each
        text is released verbatim and reported as such.

        ``settle=False`` (a ledger will decide which results are released): with
        ``consistent="unit"`` the new draws stay tentative, a text reusing a tentative draw of
        another text pays for it, and :meth:`settle` must be called with the decisions.

        ``draw_rng`` (``consistent="unit"`` with ``units``; the corpus engine): draw name (unit,
        category, entity) -> its generator. Nothing is remembered: each text of a unit draws
        its entities from their generators (the same value in every call and process), charges
        them and names them in ``report.shared_draws`` for :mod:`dptext.corpus.draws`."""
        if len(spans) != len(texts):
            raise DPTextError(f"{len(texts)} texts but {len(spans)} span lists")
        if units is not None and len(units) != len(texts):
            raise DPTextError(f"{len(texts)} texts but {len(units)} units")
        if draw_rng is not None and (units is None or self.consistent != "unit"):
            raise DPTextError("draw_rng draws per unit: it needs consistent='unit' and units")
        for t in texts:
            if not isinstance(t, str):
                raise DPTextError(f"texts must be strings, got {type(t).__name__}")
        gen = as_generator(rng)
        spans = [merge_spans(t, s, self.categories) for t, s in zip(texts, spans, strict=True)]
        residual = [self.residual_tokens(t, s) for t, s in zip(texts, spans, strict=True)]
        if self.residual == "protect":
            spans = [merge_spans(t, list(s) + r) if r else s
                     for t, s, r in zip(texts, spans, residual, strict=True)]
        scope = self.consistent if (self.consistent != "unit" or units is not None) else "document"
        keyed = draw_rng is not None
        memory = self._memory if scope == "unit" and not keyed else {}
        tentative = self._tentative if scope == "unit" and not settle and not keyed else {}
        # 1. which spans draw, which reuse the draw of an earlier occurrence (and whether the
        # reuse pays: a draw of another text not known to be released, settle=False only)
        first: dict[tuple, tuple[int, int]] = {}
        plan: list[list[tuple | None]] = []  # per span: (identity, pays) it reuses, or None
        for t, text_spans in enumerate(spans):
            row = []
            for j, s in enumerate(text_spans):
                # keyed: a text's first occurrence draws (the unit's generator), later ones reuse
                ident = None if scope == "none" else (
                    str(units[t]) if scope == "unit" and not keyed else f"#{t}", s.category,
                    s.key)
                if ident is not None and ident in memory:
                    row.append((ident, False))
                elif ident is not None and (ident in first or ident in tentative):
                    pays = scope == "unit" and not settle and not keyed and (
                        ident in tentative or first[ident][0] != t)
                    row.append((ident, pays))
                else:
                    row.append(None)
                    if ident is not None:
                        first[ident] = (t, j)
            plan.append(row)
        # 2. the draws
        new: dict[tuple[int, int], Result | str] = {}
        names = {(t, j): repr((str(units[t]), spans[t][j].category, spans[t][j].key))
                 for t, ss in enumerate(spans) for j in range(len(ss))} if keyed else {}
        words = [(t, j) for t, ss in enumerate(spans) for j, s in enumerate(ss)
                 if plan[t][j] is None and not self.treatment(s.category).whole]
        if words and keyed:
            new.update(self._privatize_keyed(texts, spans, words, names, draw_rng))
        elif words:
            new.update(self._privatize_words(texts, spans, words, gen))
        for t, ss in enumerate(spans):
            ctx = self._context(gen, None if units is None else str(units[t]), scope,
                                draw_rng)
            for j, s in enumerate(ss):
                treatment = self.treatment(s.category)
                if plan[t][j] is None and treatment.whole:
                    more = {"ctx": ctx} if treatment.takes_context else {}
                    new[(t, j)] = treatment.replace(texts[t][s.start:s.end],
                                                    draw_rng(names[(t, j)]) if keyed else gen,
                                                    frozenset(), **more)
        drawn = {}  # ident -> (text, the draw's events) of this call
        for ident, (t, j) in first.items():
            got = new[(t, j)]
            s = spans[t][j]
            paid = self.treatment(s.category).account(texts[t][s.start:s.end], 0, got)
            drawn[ident] = (paid.text, paid.draws)
        if settle or scope != "unit":
            memory.update({ident: text for ident, (text, _) in drawn.items()})
        else:
            tentative.update(drawn)

        def lookup(ident) -> tuple[str, list]:
            if ident in drawn:
                return drawn[ident]
            if ident in memory:
                return memory[ident], []
            return tentative[ident]
        # 3. the texts and their reports
        results = [self._assemble(texts[t], spans[t], plan[t],
                                  [new.get((t, j)) for j in range(len(spans[t]))], lookup, scope,
                                  len(residual[t]))
                   for t in range(len(texts))]
        if self.check:
            for t, r in enumerate(results):
                reason = _survivors_reason(texts[t], r.text, spans[t], self.treatment)
                if reason:
                    results[t] = self._withheld(texts[t], reason)
        if keyed:  # each text names the draws it shows (charged once per unit by the caller)
            for ident, (t, j) in first.items():
                events = drawn[ident][1]
                report = results[t].report
                if events and report.withheld is None:
                    report.shared_draws[names[(t, j)]] = events
        elif scope == "unit" and not settle:
            if len(self._unsettled) > 100_000:  # never settled: forget (their draws stay
                for key in list(self._unsettled)[:50_000]:  # tentative, the safe side)
                    del self._unsettled[key]
            for t, r in enumerate(results):
                mine = [(ident, drawn[ident][0]) for ident, (tt, _) in first.items()
                        if tt == t]
                mine += [(p[0], lookup(p[0])[0]) for p in plan[t] if p is not None and p[1]]
                self._unsettled[id(r)] = (r, mine)
        return results

    def _context(self, gen, unit: str | None, scope: str, draw_rng) -> Context:
        """What the spans of one text share (:class:`~dptext.targeted.treatments.Context`):
        with a person (``consistent="unit"``), their date offset and name draws - keyed by the
        pseudonym key (``unit_key``) when given, else by the engine's per-person generators,
        else one book of name draws per person kept here (forgotten by :meth:`forget`)."""
        if scope != "unit" or unit is None:
            return Context(gen)
        key = self.options.get("unit_key")
        if key is not None or draw_rng is not None:
            return Context(gen, unit, keyed=draw_rng, unit_key=key)
        names = self._unit_names.get(unit)
        if names is None:
            if len(self._unit_names) > 100_000:
                self._unit_names.clear()
            names = self._unit_names[unit] = NameDraws(gen)
        ctx = Context(gen, unit, names=names)
        ctx._offset = self._unit_offsets.get(unit)
        if ctx._offset is None and self.options.get("dates") == "shift":
            self._unit_offsets[unit] = ctx.date_offset(self.options["date_shift_weeks"])
        return ctx

    def _privatize_keyed(self, texts, spans, which, names, draw_rng
                         ) -> dict[tuple[int, int], Result]:
        """Each word span drawn alone from its own generator (``draw_rng``); word mechanisms
        only (a DP-MLM draw depends on its sentence: the engine refuses it)."""
        out = {}
        for t, j in which:
            s = spans[t][j]
            out[(t, j)] = self.mechanism.privatize_batch(
                [texts[t][s.start:s.end]], rng=draw_rng(names[(t, j)]))[0]
        return out

    def _privatize_words(self, texts, spans, which, gen) -> dict[tuple[int, int], Result]:
        if self.mechanism.supports("privatize_spans"):  # the whole text as the context
            by_text: dict[int, list[int]] = {}
            for t, j in which:
                by_text.setdefault(t, []).append(j)
            order = sorted(by_text)
            results = self.mechanism.privatize_spans(
                [texts[t] for t in order],
                [[(spans[t][j].start, spans[t][j].end) for j in by_text[t]] for t in order],
                rng=gen)
            return {(t, j): r for t, rs in zip(order, results, strict=True)
                    for j, r in zip(by_text[t], rs, strict=True)}
        results = self.mechanism.privatize_batch(
            [texts[t][spans[t][j].start:spans[t][j].end] for t, j in which], rng=gen)
        return dict(zip(which, results, strict=True))

    def _assemble(self, text: str, spans: list[Span], plan: list, drawn: list, lookup,
                  scope: str, n_residual: int = 0) -> Result:
        events, draws, tally, out = [], [], {}, []
        for s, reuse, got in zip(spans, plan, drawn, strict=True):
            treatment = self.treatment(s.category)
            row = tally.setdefault(s.category, SpanRow(treatment.report_line()))
            n = count_tokens(text[s.start:s.end])
            row.spans += 1
            row.tokens += n
            if reuse is not None:
                text_, paid = lookup(reuse[0])
                out.append(text_)
                row.reused += 1
                events.append(TokenEvent(treatment.guarantee, n, "reused"))
                if reuse[1]:  # a draw of another text not known released: charged here too
                    draws.extend(paid)
            else:
                d = treatment.account(text[s.start:s.end], n, got)
                out.append(d.text)
                row.draws += 1
                row.unchanged += d.unchanged
                events.extend(d.events)
                draws.extend(d.draws)
        rest = outside(text, spans)
        events.append(TokenEvent(_KEPT, sum(count_tokens(p) for p in rest), "undetected"))
        pieces = [rest[0]]
        for new, after in zip(out, rest[1:], strict=True):
            pieces += [new, after]
        report = TargetedReport(
            mechanism=f"targeted:{self.mechanism.name}", per_token=self.mechanism.guarantee,
            events=_grouped(events), draws=_grouped(draws),
            spans={c: row.as_dict() for c, row in tally.items()},
            detector=self.detector or "", entities=tuple(sorted(self.categories or ())),
            consistent=scope,
            residual={"policy": self.residual, "tokens": n_residual} if self._residual else {})
        return Result("".join(pieces), report)

    def __repr__(self) -> str:
        entities = None if self.categories is None else sorted(self.categories)
        return (f"TargetedMechanism({self.mechanism!r}, entities={entities}, "
                f"detector={self.detector!r}, pattern_policy={self.pattern_policy!r}, "
                f"consistent={self.consistent!r})")


def _grouped(events: list[TokenEvent]) -> list[TokenEvent]:
    counts: dict[tuple[TokenGuarantee, str], int] = {}
    for e in events:
        counts[(e.guarantee, e.reason)] = counts.get((e.guarantee, e.reason), 0) + e.count
    return [TokenEvent(g, c, r) for (g, r), c in counts.items() if c]


def _survivors_reason(text: str, released: str, spans, treatment) -> str | None:
    """Why a released text is withheld by the check (None: nothing survived). A value
    released by design (an age kept, a date cut to its year) is no leak."""
    left = [x for x in survivors(text, released, spans)
            if not any(x.start < s.end and s.start < x.end and treatment(s.category).released
                       for s in spans)]
    if not left:
        return None
    cats = sorted({s.category for s in left})
    return f"surviving identifier: {', '.join(cats)} ({len(left)})"
