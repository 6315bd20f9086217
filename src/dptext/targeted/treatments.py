"""Span treatments: how the spans of one category are replaced, as small declared classes.

A :class:`Treatment` (after Presidio's anonymizer ``Operator``) states, for one category under
a :class:`~dptext.targeted.TargetedMechanism`'s options, its guarantee, its replacement
(:meth:`Treatment.replace`), the events a span is charged by (:meth:`Treatment.account`) and its
line in the report (:meth:`Treatment.report_line`). :data:`TREATMENTS` lists them in order of
precedence: a category gets the first whose :meth:`~Treatment.applies` says yes, and the
placeholder (last) takes every category replaced whole that no other takes.

- ``by-mechanism``: word spans (names, places, organisations where the options say so)
  privatized word by word by the wrapped mechanism, which accounts for them itself;
- ``name-surrogate``: names replaced whole by a public name drawn independently of the input;
- ``pattern-surrogate``: contact details, IDs, dates replaced by a surrogate drawn by the
  exponential mechanism (``surrogate_epsilon`` per span);
- ``word-surrogate``: places and organisations replaced whole by a public value of the same
  kind (a hospital by a hospital, a city by a city), drawn independently of the input's words;
- ``date-shift``, ``date-year``: dates moved by the person's secret offset, or cut to their
  year (:mod:`dptext.targeted.dates`; ``dates`` option); ``age-keep``: ages up to 89 as
  written, 90 and over "90+" (``ages`` option) - released values, not DP: the report says so;
- ``realistic-surrogate``: contact details, IDs, addresses and dates replaced by a realistic
  value of the input's shape (:mod:`dptext.targeted.shapes`; ``pattern_policy="realistic"``);
- ``placeholder``: the type placeholder (a name's title kept: "Dear Dr. [PERSON]").

A :class:`Context` travels with one text's spans: its person, the person-keyed generators,
the person's date offset and :class:`~dptext.targeted.surrogates.NameDraws` (one surrogate
per name word for the person, a shared surname stays shared).

A new treatment (a date shifted, an age kept) is one class here or in its own module and one
:func:`register` call (or one line of :data:`TREATMENTS`): :func:`register` refuses a taken
name unless ``force=True`` and puts the class before the placeholder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.errors import DPTextError
from dptext.targeted.dates import (
    date_offset,
    keep_age,
    keyed_generator,
    random_offset,
    shift_date,
    year_of,
)
from dptext.targeted.spans import is_pattern
from dptext.targeted.surrogates import (
    SURROGATE_SETS,
    WORD_SURROGATES,
    NameDraws,
    name_surrogate_guarantee,
    placeholder_guarantee,
    split_title,
    surrogate_name,
    surrogate_word,
    word_surrogate_guarantee,
)

if TYPE_CHECKING:
    import numpy as np

    from dptext.mechanisms.base import Mechanism, Result


class Wrapper(Protocol):
    """What a treatment reads of the :class:`~dptext.targeted.TargetedMechanism` it serves:
    the wrapped mechanism and the options (:mod:`dptext.targeted.options`)."""

    mechanism: Mechanism
    options: dict[str, Any]
    word_policy: str
    name_policy: str
    pattern_policy: str
    surrogate_epsilon: float
    placeholder: str

#: the categories of names (a surrogate or a placeholder keeps their title)
NAMES = frozenset({"PERSON", "DENY_LIST"})


class Context:
    """What the spans of one text share (module docstring). ``rng``: the text's generator;
    ``unit``: its person (None: the text is its own); ``keyed``: ``name -> generator`` of the
    person's draws (the engine's job key); ``unit_key``: the pseudonym key, which, when given
    with a unit, keys the date offset and the name draws instead (so they hold across
    releases made with that key); ``names``: a person's :class:`NameDraws` to continue (the
    library's ``consistent="unit"`` keeps one per person)."""

    def __init__(self, rng: np.random.Generator, unit: str | None = None, *,
                 keyed: Callable[[str], np.random.Generator] | None = None,
                 unit_key: bytes | None = None, names: NameDraws | None = None) -> None:
        self.rng, self.unit, self.keyed, self.unit_key = rng, unit, keyed, unit_key
        self._names, self._offset = names, None

    def person_generator(self) -> Callable[[str], np.random.Generator] | None:
        if self.unit is not None and self.unit_key is not None:
            return keyed_generator(self.unit_key, self.unit)
        if self.unit is not None and self.keyed is not None:
            unit, keyed = self.unit, self.keyed
            return lambda name: keyed(repr((unit, "person", name)))
        return None

    @property
    def names(self) -> NameDraws:
        if self._names is None:
            keyed = self.person_generator()
            self._names = NameDraws(keyed=keyed) if keyed else NameDraws(self.rng)
        return self._names

    def date_offset(self, weeks: str) -> int:
        """The days every date of this text (of this person, with a unit) moves by."""
        if self._offset is None:
            lo, hi = (int(x) for x in weeks.split(":"))
            if self.unit is not None and self.unit_key is not None:
                self._offset = date_offset(self.unit_key, self.unit, lo, hi)
            else:
                keyed = self.person_generator()
                self._offset = random_offset(keyed("date-shift") if keyed else self.rng,
                                             lo, hi)
        return self._offset


@dataclass
class Drawn:
    """What one span's draw releases and costs: the replacement, its events (the tokens it
    covers), the draws it is charged by, and whether the mechanism returned it unchanged."""

    text: str
    events: list[TokenEvent]
    draws: list[TokenEvent] = field(default_factory=list)
    unchanged: bool = False


class Treatment(ABC):
    """How the spans of one category are replaced (module docstring); built once per category
    and mechanism, from the mechanism's options."""

    name: ClassVar[str]
    #: replaced whole here (False: the wrapped mechanism draws the span's words, in batches)
    whole: ClassVar[bool] = True
    #: the reason of the event a replaced span is counted under
    reason: ClassVar[str] = ""
    #: :meth:`replace` takes the text's :class:`Context` (keyword ``ctx``)
    takes_context: ClassVar[bool] = False
    #: the replacement releases (part of) the value by design (an age kept, a year): the leak
    #: check does not count it
    released: ClassVar[bool] = False

    def __init__(self, m: Wrapper, category: str) -> None:
        self.m, self.category = m, category
        self.guarantee = self._guarantee()

    @classmethod
    @abstractmethod
    def applies(cls, m: Wrapper, category: str) -> bool:
        """Whether spans of ``category`` get this treatment under ``m``'s options."""

    @abstractmethod
    def _guarantee(self) -> TokenGuarantee:
        """The per-token guarantee of a replaced span."""

    def report_line(self) -> str:
        """The treatment as the report names it for the category."""
        return self.guarantee.describe()

    def replace(self, value: str, rng: np.random.Generator, taken: frozenset[str],
                ctx: Context | None = None) -> str:
        """The replacement of ``value`` (``taken``: the record's name words, no longer read:
        no draw may depend on the input, issue 45; ``ctx``: what the text's spans share)."""
        raise DPTextError(f"treatment {self.name!r} does not replace spans whole")

    def draws(self) -> list[TokenEvent]:
        """The draws one replacement is charged by (none: 0-DP)."""
        return []

    def account(self, value: str, tokens: int, got: str | Result) -> Drawn:
        """What a span of ``tokens`` tokens replaced by ``got`` releases and costs."""
        return Drawn(got, [TokenEvent(self.guarantee, tokens, self.reason)], self.draws())


def _whole(m: Wrapper, category: str) -> bool:
    """Whether spans of ``category`` are replaced whole (patterns; words by choice)."""
    return (is_pattern(category) or m.word_policy == "placeholder"
            or (category == "PERSON" and m.name_policy != "mechanism")
            or (m.word_policy == "surrogate" and category not in NAMES))


class ByMechanism(Treatment):
    """Word spans privatized word by word by the wrapped mechanism (its guarantee per word;
    DP-MLM with the whole text as the context)."""

    name = "by-mechanism"
    whole = False

    @classmethod
    def applies(cls, m, category):
        return not _whole(m, category)

    def _guarantee(self):
        return self.m.mechanism.guarantee

    def report_line(self):
        return f"{self.m.mechanism.name}, per word: {self.guarantee.describe()}"

    def account(self, value, tokens, got):
        paid = [e for e in got.report.events if e.guarantee.kind is not GuaranteeKind.NONE]
        return Drawn(got.text, list(got.report.events), paid,
                     got.text.casefold() == value.casefold())


class NameSurrogate(Treatment):
    """A public name drawn independently of the input (:func:`surrogate_name`)."""

    name = "name-surrogate"
    reason = "name surrogate"
    takes_context = True

    @classmethod
    def applies(cls, m, category):
        return category in NAMES and m.name_policy == "surrogate"

    def _guarantee(self):
        return name_surrogate_guarantee()

    def replace(self, value, rng, taken, ctx=None):
        return surrogate_name(value, draws=(ctx or Context(rng)).names)


class PatternSurrogate(Treatment):
    """A surrogate of the type drawn by the exponential mechanism (``surrogate_epsilon``)."""

    name = "pattern-surrogate"
    reason = "surrogate"

    @classmethod
    def applies(cls, m, category):
        return m.pattern_policy == "surrogate" and category in SURROGATE_SETS

    def _guarantee(self):
        return SURROGATE_SETS[self.category].guarantee(self.m.surrogate_epsilon)

    def replace(self, value, rng, taken, ctx=None):
        return SURROGATE_SETS[self.category].draw(value, self.m.surrogate_epsilon, rng)

    def draws(self):
        return [TokenEvent(self.guarantee, 1, f"surrogate {self.category}")]


class RealisticSurrogate(Treatment):
    """A realistic value of the input's shape (:mod:`dptext.targeted.shapes`), 0-DP among
    values of that shape; the placeholder where the value has no shape we read."""

    name = "realistic-surrogate"
    reason = "realistic surrogate"

    @classmethod
    def applies(cls, m, category):
        from dptext.targeted.shapes import CATEGORIES

        return m.pattern_policy == "realistic" and category in CATEGORIES

    def _guarantee(self):
        from dptext.targeted.shapes import realistic_guarantee

        return realistic_guarantee(self.category)

    def replace(self, value, rng, taken):
        from dptext.targeted.shapes import realistic

        got = realistic(self.category, value, rng)
        return got if got is not None else self.m.placeholder.format(category=self.category)


class Placeholder(Treatment):
    """The type placeholder (0-DP); a name's title stays ("Dear Dr. [PERSON]")."""

    name = "placeholder"
    reason = "placeholder"

    @classmethod
    def applies(cls, m, category):
        return True  # every category replaced whole that no treatment before it takes

    def _guarantee(self):
        return placeholder_guarantee(self.category,
                                     self.m.placeholder.format(category=self.category))

    def report_line(self):
        note = "; no surrogate set for this type" if self.m.pattern_policy == "surrogate" else ""
        return self.guarantee.describe() + note

    def replace(self, value, rng, taken, ctx=None):
        prefix = split_title(value)[0] if self.category in NAMES else ""
        return prefix + self.m.placeholder.format(category=self.category)


class WordSurrogate(Treatment):
    """Places and organisations: a public value of the input's kind, drawn independently of
    its words
    (:func:`surrogate_word`), the placeholder where every value shares one."""

    name = "word-surrogate"
    reason = "word surrogate"

    @classmethod
    def applies(cls, m, category):
        return m.word_policy == "surrogate" and category in WORD_SURROGATES \
            and category not in NAMES

    def _guarantee(self):
        return word_surrogate_guarantee(self.category)

    def replace(self, value, rng, taken, ctx=None):
        got = surrogate_word(self.category, value, rng)
        return got if got is not None else Placeholder.replace(self, value, rng, taken)


class _Released(Treatment):
    """A value released changed but not drawn (a shifted date, a year, an age): no DP
    guarantee - the report counts its tokens as released, not protected, and names the
    rule; a value the rule cannot read becomes the placeholder."""

    whole = True
    takes_context = True
    released = True
    option: ClassVar[str]
    choice: ClassVar[str]
    categories: ClassVar[frozenset[str]]
    rule: ClassVar[str]

    @classmethod
    def applies(cls, m, category):
        return category in cls.categories and m.options.get(cls.option) == cls.choice

    def _guarantee(self):
        return TokenGuarantee(GuaranteeKind.NONE, scope=f"{self.category} values; {self.rule}")

    def report_line(self):
        return f"{self.rule}; NOT protected by differential privacy (docs/deid.md)"

    def rewrite(self, value: str, ctx: Context) -> str | None:
        raise NotImplementedError

    def replace(self, value, rng, taken, ctx=None):
        got = self.rewrite(value, ctx or Context(rng))
        return got if got is not None else self.m.placeholder.format(category=self.category)


class DateShift(_Released):
    name, reason, option, choice = "date-shift", "date shifted", "dates", "shift"
    categories = frozenset({"DATE"})
    rule = ("every date of a person moved by one secret offset of whole weeks (a keyed HMAC of "
            "the person), written in its own format: intervals kept, the real dates not")

    def rewrite(self, value, ctx):
        return shift_date(value, ctx.date_offset(self.m.options["date_shift_weeks"]))


class DateYear(_Released):
    name, reason, option, choice = "date-year", "date year", "dates", "year"
    categories = frozenset({"DATE"})
    rule = "a date cut to its year (Safe Harbor keeps the year); one without a year replaced"

    def rewrite(self, value, ctx):
        return year_of(value)


class AgeKeep(_Released):
    name, reason, option, choice = "age-keep", "age kept", "ages", "keep"
    categories = frozenset({"AGE"})
    rule = "an age up to 89 released as written, 90 and over as \"90+\" (Safe Harbor's rule)"

    def rewrite(self, value, ctx):
        return keep_age(value)


#: every treatment by name, in order of precedence (module docstring); the placeholder last
TREATMENTS: dict[str, type[Treatment]] = {cls.name: cls for cls in (
    ByMechanism, NameSurrogate, DateShift, DateYear, AgeKeep, RealisticSurrogate,
    PatternSurrogate, WordSurrogate, Placeholder)}


def register(cls: type[Treatment], *, force: bool = False) -> type[Treatment]:
    """Add a treatment before the placeholder (a class decorator too); a taken name is
    refused unless ``force=True``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise DPTextError(f"{cls.__name__} needs a class attribute `name` to be registered")
    taken = TREATMENTS.get(name)
    if taken is not None and taken is not cls and not force:
        raise DPTextError(f"treatment name {name!r} is already registered by "
                          f"{taken.__module__}.{taken.__qualname__}; pass force=True to "
                          "replace it")
    if taken is None:
        last = TREATMENTS.pop(Placeholder.name)
        TREATMENTS[name] = cls
        TREATMENTS[Placeholder.name] = last
    else:
        TREATMENTS[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a registered treatment (the placeholder stays)."""
    if name != Placeholder.name:
        TREATMENTS.pop(name, None)


def choose(m: Wrapper, category: str) -> Treatment:
    """The treatment of ``category`` under ``m``'s options: the first of :data:`TREATMENTS`
    that applies (the placeholder for every category replaced whole)."""
    for cls in TREATMENTS.values():
        if cls.applies(m, category):
            return cls(m, category)
    raise DPTextError(f"no treatment for {category}")  # pragma: no cover - Placeholder applies

