"""Phone and fax numbers: libphonenumber and the North American shapes
(:class:`PhoneRecognizer`), and digits spelled as words (:class:`SpelledDigitsRecognizer`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dptext.detect.entities import Entity, normalize_entity
from dptext.detect.recognizers.atoms import _CONTEXT_WINDOW, _context_re
from dptext.detect.recognizers.base import Recognizer
from dptext.detect.vocabulary import ID_CONTEXTS


@dataclass
class PhoneRecognizer(Recognizer):
    """Phone and fax numbers through ``phonenumbers`` (national formats of ``region`` and every
    international one), the North American shapes and E.164 whether or not the number is
    assigned, and short local numbers ("555-0142") after a phone context word."""

    region: str = "US"

    def find(self, text: str) -> list[Entity]:
        import phonenumbers

        out = []
        # national formats of the region are the North American shapes below; libphonenumber
        # (a tenth of the detection time) is asked only where an international prefix or a
        # bare run of 10-11 digits stands
        if _INTERNATIONAL.search(text):
            for m in phonenumbers.PhoneNumberMatcher(text, self.region,
                                                     leniency=phonenumbers.Leniency.VALID):
                out.append(self._entity(text, m.start, m.end))
        # the North American shapes and E.164 whatever the number's assignment (libphonenumber
        # refuses unassigned area codes and exchanges; a made-up or new number is still one)
        for m in _NANP_PHONE.finditer(text):
            out.append(self._entity(text, m.start(), m.end()))
        for m in _LOCAL_PHONE.finditer(text):
            if _PHONE_CONTEXT.search(text[max(0, m.start() - _CONTEXT_WINDOW):m.start()]):
                out.append(self._entity(text, m.start(), m.end()))
        return out


_INTERNATIONAL = re.compile(r"(?:\+|\b00)\s?\(?\d|(?<!\d)\d{10,11}(?!\d)")
# an extension after a number is part of it ("555-123-4567 ext. 123", "x4521")
_EXTENSION = r"(?:,?[ \t]*(?:ext\.?|x|extension)[ \t]*\d{1,5})?"
_NANP_PHONE = re.compile(r"(?<![\w+])(?:(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s./-])"
                         rf"\d{{3}}[\s.-]\d{{4}}|\+\d{{10,15}}){_EXTENSION}(?![\w-])")
_LOCAL_PHONE = re.compile(r"(?<![\w/.-])(?:\d{3}[-.\s]\d{4}|x\d{4,5}|\d{5}|\d{10})"
                          rf"{_EXTENSION}(?![\w/-])")
_PHONE_CONTEXT = _context_re(("phone", "tel", "telephone", "call", "cell", "mobile", "pager",
                              "beeper", "fax", "ext", "extension", "contact", "number"))


@dataclass
class SpelledDigitsRecognizer(Recognizer):
    """Digits written as words ("five five five, one two three four", "five-five-five ...",
    "oh"/"o" for zero, "double"/"triple" before a digit): a run of seven digits or more is a
    phone number, or an identifier of the kind a context word before it names ("MRN five
    eight ..."); a run after a phone word, or of 7, 10 or 11 digits with no identifier word
    before it, is a phone number, any other an ``ID_NUMBER``. ``category`` is ignored."""

    @property
    def categories(self) -> frozenset[str]:
        return frozenset({"PHONE_NUMBER", "ID_NUMBER"}) | frozenset(ID_CONTEXTS)

    def find(self, text: str) -> list[Entity]:
        out = []
        for m in _SPELLED_RUN.finditer(text):
            words = re.findall(r"[a-z]+", m.group().casefold())
            count = sum({"double": 1, "triple": 2}.get(w, 1) for w in words)
            if count < 7:
                continue
            before = text[max(0, m.start() - _CONTEXT_WINDOW):m.start()]
            # the nearest context word names the kind ("record number": a record, not a phone)
            near = [(c.end(), 1, cat) for cat, ctx in _ID_CONTEXT_RES
                    for c in ctx.finditer(before)]
            near += [(c.end(), 0, "PHONE_NUMBER") for c in _PHONE_CONTEXT.finditer(before)
                     if not near or c.group().casefold() != "number"]  # "account number"
            if near:
                category = max(near)[2]
            else:
                category = "PHONE_NUMBER" if count in (7, 10, 11) else "ID_NUMBER"
            out.append(Entity(normalize_entity(m.group()), category, m.start(), m.end()))
        return out


_DIGIT_WORD = (r"(?:(?:double|triple)[ \t-]+)?"
               r"(?:zero|oh|o|one|two|three|four|five|six|seven|eight|nine)")
_SPELLED_RUN = re.compile(rf"(?i)(?<![\w'-]){_DIGIT_WORD}"
                          rf"(?:(?:[ \t]*[,./-][ \t]*|[ \t]+(?:dash[ \t]+)?){_DIGIT_WORD}){{2,}}"
                          r"(?![\w'-])")
_ID_CONTEXT_RES = [(c, _context_re(words)) for c, words in ID_CONTEXTS.items()]
