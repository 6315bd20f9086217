"""The recognizer interface (a name, the categories it reports, ``find(text) -> [Entity]``),
the regular-expression recognizer, and the user's ``--pattern NAME[@ctx1,ctx2]=REGEX``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from dptext.detect.entities import Entity, normalize_entity
from dptext.detect.recognizers.atoms import _CONTEXT_WINDOW, _context_re
from dptext.errors import DPTextError


@dataclass
class Recognizer:
    """A named rule that reports spans of one category (subclasses implement :meth:`find`)."""

    name: str
    category: str

    @property
    def categories(self) -> frozenset[str]:
        """Every category :meth:`find` may report (``category``; a rule naming several says
        so)."""
        return frozenset({self.category})

    def find(self, text: str) -> list[Entity]:  # pragma: no cover - interface
        raise NotImplementedError

    def _entity(self, text: str, start: int, end: int) -> Entity:
        return Entity(normalize_entity(text[start:end]) or text[start:end], self.category,
                      start, end)


@dataclass
class PatternRecognizer(Recognizer):
    """A regular expression (its group ``v`` if it has one, else the whole match); with
    ``context``, a match counts only when one of the context words ends within 40 characters
    before it (case-insensitive); ``validate`` may refuse a value (a checksum)."""

    regex: str = ""
    context: tuple[str, ...] = ()
    validate: Callable[[str], bool] | None = None
    flags: int = 0
    exclude: tuple[str, ...] = ()  # no match right after these words (12 characters before)
    user: bool = False  # a user's pattern: bounded in time and memory (detect/safe_regex)
    _re: re.Pattern = field(init=False, repr=False)
    _ctx: re.Pattern | None = field(init=False, repr=False)
    _not: re.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.user:
            from dptext.detect.safe_regex import compile_user

            self._re = compile_user(self.regex, self.category, self.flags)
        else:
            try:
                self._re = re.compile(self.regex, self.flags)
            except re.error as err:
                raise DPTextError(f"pattern {self.name}: not a regular expression "
                                  f"({err})") from None
        self._ctx = _context_re(self.context) if self.context else None
        self._not = _context_re(self.exclude) if self.exclude else None

    def find(self, text: str) -> list[Entity]:
        out = []
        named = "v" in self._re.groupindex
        for m in self._re.finditer(text):
            start, end = m.span("v") if named and m.start("v") >= 0 else m.span()
            if end <= start:
                continue
            if self._ctx is not None and not self._ctx.search(
                    text[max(0, start - _CONTEXT_WINDOW):start]):
                continue
            if self._not is not None and self._not.search(text[max(0, start - 12):start]):
                continue
            if self.validate is not None and not self.validate(text[start:end]):
                continue
            out.append(self._entity(text, start, end))
        return out


_PATTERN_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def parse_pattern(spec: str) -> PatternRecognizer:
    """``NAME=REGEX`` or ``NAME@ctx1,ctx2=REGEX`` (a context word list) -> a recognizer of
    category ``NAME`` (upper case letters, digits, _)."""
    head, sep, regex = spec.partition("=")
    if not sep or not regex:
        raise DPTextError(f"--pattern {spec!r}: give NAME=REGEX or NAME@context,words=REGEX")
    name, _, ctx = head.partition("@")
    name = name.strip().upper()
    if not _PATTERN_NAME.fullmatch(name):
        raise DPTextError(f"--pattern {spec!r}: the name must be letters, digits and _, "
                          "starting with a letter")
    context = tuple(w.strip() for w in ctx.split(",") if w.strip())
    rec = PatternRecognizer(f"pattern:{name}", name, regex, context=context, user=True)
    if rec._re.search(""):
        raise DPTextError(f"--pattern {name}: the expression matches the empty text")
    return rec
