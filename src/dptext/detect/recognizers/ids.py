"""Identifiers after a context word of their kind ("MRN 6578712", "member ID HPX-77-40921")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dptext.detect.entities import Entity, normalize_entity
from dptext.detect.recognizers.atoms import _CONTEXT_WINDOW, _context_re
from dptext.detect.recognizers.base import Recognizer


@dataclass
class ContextIdRecognizer(Recognizer):
    """Identifier-shaped tokens (at least two digits, or a letter-digit code) right after a
    context word; each context occurrence claims the first such token within 40 characters
    after it, and a token claimed by several contexts takes the nearest one's category (a
    specific one before the generic ``ID_NUMBER``).
    ``category`` is ignored: each context list names its own."""

    contexts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _ctx: list[tuple[str, re.Pattern]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._ctx = [(c, _context_re(words)) for c, words in self.contexts.items()]

    @property
    def categories(self) -> frozenset[str]:
        return frozenset(self.contexts)

    def find(self, text: str) -> list[Entity]:
        best: dict[tuple[int, int], tuple[tuple[bool, int], str]] = {}
        for category, ctx in self._ctx:
            for c in ctx.finditer(text):
                m = _ID_TOKEN.search(text, c.end(), c.end() + _CONTEXT_WINDOW)
                if m is None or not _FILLER.fullmatch(text, c.end(), m.start()):
                    continue
                # a specific category beats the generic ID_NUMBER, then the nearest context
                rank = (category == "ID_NUMBER", m.start() - c.end())
                span = m.span()
                if span not in best or rank < best[span][0]:
                    best[span] = (rank, category)
        return [Entity(normalize_entity(text[s:e]) or text[s:e], category, s, e)
                for (s, e), (_, category) in sorted(best.items())]


# what may stand between a context word and its value: "MRN: 123", "account number is 123",
# "member ID # 123", "plate on file 8XYZ432"
_FILLER = re.compile(r"(?i)[\s:#=.,(-]*(?:(?:numbers?|nos?|num|nr|ids?|is|are|was|of|the|on|"
                     r"file|code|member|serial|ending|in|reads)\b\.?[\s:#=.,(-]*)"
                     r"{0,4}")
# a token with two digits or more (letters, digits, - / . inside): 4821933, HPX-77-40921,
# 560-40-78-5, XW277/90683, 1HGCM82633A004352, 8XYZ432
_ID_TOKEN = re.compile(r"(?<![\w-])(?=[\w./-]*\d[\w./-]*\d)[A-Za-z0-9][\w/.-]*[A-Za-z0-9]"
                       r"(?![\w-])")
