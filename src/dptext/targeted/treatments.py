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
- ``word-surrogate``: places and organisations replaced whole by a public value sharing no
  word with the input (the placeholder where every value shares one);
- ``placeholder``: the type placeholder (a name's title kept: "Dear Dr. [PERSON]").

A new treatment (a date shifted, an age kept) is one class here or in its own module and one
:func:`register` call (or one line of :data:`TREATMENTS`): :func:`register` refuses a taken
name unless ``force=True`` and puts the class before the placeholder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.errors import DPTextError
from dptext.targeted.spans import is_pattern
from dptext.targeted.surrogates import (
    SURROGATE_SETS,
    WORD_SURROGATES,
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

    def replace(self, value: str, rng: np.random.Generator, taken: frozenset[str]) -> str:
        """The replacement of ``value`` (``taken``: the record's name words, never drawn)."""
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

    @classmethod
    def applies(cls, m, category):
        return category in NAMES and m.name_policy == "surrogate"

    def _guarantee(self):
        return name_surrogate_guarantee()

    def replace(self, value, rng, taken):
        return surrogate_name(value, rng, taken)


class PatternSurrogate(Treatment):
    """A surrogate of the type drawn by the exponential mechanism (``surrogate_epsilon``)."""

    name = "pattern-surrogate"
    reason = "surrogate"

    @classmethod
    def applies(cls, m, category):
        return m.pattern_policy == "surrogate" and category in SURROGATE_SETS

    def _guarantee(self):
        return SURROGATE_SETS[self.category].guarantee(self.m.surrogate_epsilon)

    def replace(self, value, rng, taken):
        return SURROGATE_SETS[self.category].draw(value, self.m.surrogate_epsilon, rng)

    def draws(self):
        return [TokenEvent(self.guarantee, 1, f"surrogate {self.category}")]


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

    def replace(self, value, rng, taken):
        prefix = split_title(value)[0] if self.category in NAMES else ""
        return prefix + self.m.placeholder.format(category=self.category)


class WordSurrogate(Treatment):
    """Places and organisations: a public value sharing no word with the input
    (:func:`surrogate_word`), the placeholder where every value shares one."""

    name = "word-surrogate"
    reason = "word surrogate"

    @classmethod
    def applies(cls, m, category):
        return m.word_policy == "surrogate" and category in WORD_SURROGATES \
            and category not in NAMES

    def _guarantee(self):
        return word_surrogate_guarantee(self.category)

    def replace(self, value, rng, taken):
        got = surrogate_word(self.category, value, rng)
        return got if got is not None else Placeholder.replace(self, value, rng, taken)


#: every treatment by name, in order of precedence (module docstring); the placeholder last
TREATMENTS: dict[str, type[Treatment]] = {cls.name: cls for cls in (
    ByMechanism, NameSurrogate, PatternSurrogate, WordSurrogate, Placeholder)}


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

