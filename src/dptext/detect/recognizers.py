"""Rule recognizers for the identifiers a data steward expects (HIPAA Safe Harbor's list).

spaCy's NER and Presidio find names, places and some contact details; the identifiers of
clinical and administrative records - record numbers after "MRN", phone numbers in every
national and international format, ages, street addresses, ZIP codes - need rules. Each
recognizer here is registered like the built-in ones of Presidio's registry (a name, the
category it reports, ``find(text) -> [Entity]``):

- :class:`PatternRecognizer`: a regular expression, optionally only where a *context word*
  stands shortly before the match ("MRN", "acct #", "plate"), optionally a validator
  (checksums, address ranges);
- :class:`PhoneRecognizer`: the ``phonenumbers`` library (Google's libphonenumber, as Presidio
  uses), which reads national and E.164 formats of every region;
- :class:`ContextIdRecognizer`: an identifier-shaped token (two or more digits) right after a
  context word of its category, the nearest context winning ("Record number 6578712",
  "health plan member ID is HPX-77-40921");
- :class:`DenyListRecognizer`: the user's names of staff, patients and places, case-folded,
  each word of a several-word entry found alone too ("Lee" of "Anna Lee").

:func:`builtin_recognizers` is the default set; :func:`parse_pattern` reads the command line's
``--pattern NAME[@ctx1,ctx2]=REGEX``; :func:`read_word_list` reads a deny or allow list file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from dptext.detect.entities import Entity, normalize_entity
from dptext.detect.places import PlaceGazetteerRecognizer
from dptext.detect.validators import ipv4, ipv6, luhn, vin
from dptext.detect.vocabulary import (
    ID_CONTEXTS,
    SALUTATIONS,
    TITLES,
    common_words,
    frequent_words,
)
from dptext.errors import DPTextError

_CONTEXT_WINDOW = 40  # characters before a match searched for a context word
_CONTEXT_WORDS = frozenset(w for words in ID_CONTEXTS.values() for w in words)


@dataclass
class Recognizer:
    """A named rule that reports spans of one category (subclasses implement :meth:`find`)."""

    name: str
    category: str

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
    _re: re.Pattern = field(init=False, repr=False)
    _ctx: re.Pattern | None = field(init=False, repr=False)
    _not: re.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            self._re = re.compile(self.regex, self.flags)
        except re.error as err:
            raise DPTextError(f"pattern {self.name}: not a regular expression ({err})") from None
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


def _context_re(words: Iterable[str]) -> re.Pattern:
    alts = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len,
                                                                         reverse=True))
    return re.compile(rf"(?i)(?<![A-Za-z])(?:{alts})(?![a-z])")


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


@dataclass
class NameContextRecognizer(Recognizer):
    """Names in lower case after a word that announces a name - a title ("dr smith"), a
    relative ("wife mary", "son, tom"), "pt", "patient", "per", "seen by", "spoke with", ... -
    one to three words, each a first name or surname of the public lists that is not an
    ordinary word, or a word public English text does not know at all (not a medical term).
    Capitalised names there are the residual net's and the other rules' (this rule never
    takes an ordinary word: "wife is", "per protocol")."""

    def find(self, text: str) -> list[Entity]:
        out = []
        for c in _NAME_CONTEXT.finditer(text):
            run = _LOWER_RUN.match(text, c.end())
            if run is None:
                continue
            end = None
            context = " ".join(c.group().casefold().split())
            words = list(re.finditer(r"\S+", run.group("v")))
            if context in _AUTHORSHIP and _LOWER_INITIALS.fullmatch(words[0].group()) and \
                    words[0].group() not in frequent_words():
                out.append(self._entity(text, run.start("v"), run.start("v") + words[0].end()))
                continue
            strong = context in _STRONG
            if not strong and len(words) > 1 and not _lower_name(words[0].group(), False):
                # "pt petrine larsen": a rare first word counts when a name follows it
                strong = _lower_name(words[0].group(), True) and \
                    _lower_name(words[1].group(), False)
            for w in words:
                if not _lower_name(w.group(), strong or end is not None):
                    break
                end = run.start("v") + w.end()
            if end is not None:
                out.append(self._entity(text, run.start("v"), end))
        return out


@dataclass
class SpelledDigitsRecognizer(Recognizer):
    """Digits written as words ("five five five, one two three four", "five-five-five ...",
    "oh"/"o" for zero, "double"/"triple" before a digit): a run of seven digits or more is a
    phone number, or an identifier of the kind a context word before it names ("MRN five
    eight ..."); a run after a phone word, or of 7, 10 or 11 digits with no identifier word
    before it, is a phone number, any other an ``ID_NUMBER``. ``category`` is ignored."""

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


@dataclass
class DenyListRecognizer(Recognizer):
    """Every entry of a deny list (case-folded, on word boundaries or where lower case turns
    upper, :meth:`find`); each word of an entry of several words, three letters or more, is
    found alone too."""

    entries: tuple[str, ...] = ()
    _re: re.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        terms = set()
        for entry in self.entries:
            entry = " ".join(entry.split())
            if not entry:
                continue
            terms.add(entry)
            words = re.findall(r"[^\W\d_][\w'-]*", entry)
            if len(words) > 1:
                terms.update(w for w in words if len(w) >= 3)
        alts = "|".join(re.escape(t).replace(r"\ ", r"\s+")
                        for t in sorted(terms, key=len, reverse=True))
        self._re = re.compile(rf"(?i)(?:{alts})") if alts else None

    def find(self, text: str) -> list[Entity]:
        """Each entry on word boundaries, or where the case changes from lower to upper: a
        name glued to a word ("seenThornbury", in the view of "seen\u200bThornbury" with a
        zero-width space) is found too."""
        if self._re is None:
            return []
        out, pos = [], 0
        while (m := self._re.search(text, pos)) is not None:
            a = m.start()
            # the longest entry starting here that ends on an edge: a shorter one where a
            # longer ends inside a word ("John" of "John Smith" in "John Smithers")
            while m is not None and not _edge(text, m.end()):
                m = self._re.match(text, a, m.end() - 1) if m.end() - 1 > a else None
            if m is not None and _edge(text, a):
                out.append(self._entity(text, a, m.end()))
                pos = m.end()
            else:
                pos = a + 1
        return out


def _edge(text: str, at: int) -> bool:
    """Whether ``at`` is a word boundary of ``text``, or a change from a lower-case letter to
    an upper-case one."""
    if at == 0 or at == len(text):
        return True
    before, after = text[at - 1], text[at]
    return not _is_word_char(before) or not _is_word_char(after) or (
        before.islower() and after.isupper())


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WEEKDAY = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
_ORDINAL_WORDS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
                  "twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|"
                  "nineteenth|twentieth|twenty-\\w+|thirtieth|thirty-first")
_STREET_TYPES = (r"(?:St|Street|Rd|Road|Ave|Avenue|Blvd|Boulevard|Dr|Drive|Ln|Lane|Way|Ct|"
                 r"Court|Pl|Place|Ter|Terrace|Pkwy|Parkway|Hwy|Highway|Cir|Circle|Sq|Square|"
                 r"Trl|Trail|Loop|Row)")
_STATE_NAMES = ("(?:Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|"
                "Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|"
                "Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|"
                "Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|"
                "North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|"
                "South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
                "Wisconsin|Wyoming)")
_US_STATES = ("AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE "
              "NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR")
# upper and lower case letters of Latin script, accents included ("Salómonsson", "Øster")
_UP = "".join(c for c in map(chr, range(0x41, 0x250)) if c.isalpha() and c.isupper())
_LO = "".join(c for c in map(chr, range(0x61, 0x250)) if c.isalpha() and c.islower())
_NAME_WORD = rf"[{_UP}][{_LO}]+(?:[{_UP}][{_LO}]+)?(?:[-'][{_UP}][{_LO}]+)?"  # McDonald, O'Neil
_CAPS_WORD = rf"[{_UP}][{_UP}{_LO}]+(?:[-'][{_UP}][{_UP}{_LO}]+)?"  # "Bright" or "BRIGHT"

# titles and salutations before a name (split_title keeps them in a name's replacement)
_SALUTATION = "(?:" + "|".join(SALUTATIONS) + r")[.:]?"
_INITIALS = r"(?:[A-Z]\.[ \t]*){1,2}"
# surname particles ("van der Torre", "de la Cruz", "bin Said")
_PARTICLES = (r"(?:(?:van|von|der|den|de|del|della|di|da|du|la|le|bin|ibn|al|el|ten|ter|dos|"
              r"das|do)[ \t]+){0,3}")
_NAME_PART = rf"{_PARTICLES}{_NAME_WORD}"
# one to three name words after a title, initials allowed ("J. Lopez", "Ana M. Ruiz"), on
# one line; a CAPITALS title takes one CAPITALS name ("DR. SMITH"; a second word in
# capitals may be the sentence going on: "DR. OKAFOR IN THE ED")
_TITLED_NAME = (
    rf"\b(?:{_SALUTATION}[ \t]+)?(?:"
    rf"(?:{'|'.join(TITLES + tuple(t.lower() for t in TITLES))})\.?[ \t]+(?:{_INITIALS})?"
    rf"{_NAME_PART}"
    rf"(?:[ \t]+(?:{_INITIALS})?{_NAME_PART}){{0,2}}|"
    rf"(?:{'|'.join(t.upper() for t in TITLES if len(t) > 1)})\.?[ \t]+(?:{_INITIALS})?"
    rf"[{_UP}]{{2,}}(?:[-'][{_UP}]{{2,}})?)(?!\w)")  # "Dr. Thorne's": the name, not the 's
# "Dear Ana Ruiz," - a salutation before a name without a title; the first word must not be
# an ordinary word ("Dear Colleague", "Dear Sir")
_SALUTED_NAME = (rf"\b(?:{_SALUTATION})[ \t]+(?:{_INITIALS})?{_NAME_WORD}"
                 rf"(?:[ \t]+(?:{_INITIALS})?{_NAME_PART}){{0,2}}(?=[ \t]*[,:\n!])")


def _spelled(value: str) -> bool:
    """An address with its "dot" or a bracketed "(at)" written out ("Results at www.x.org" is
    a sentence and a URL)."""
    return bool(_SPELLED.search(value))


_SPELLED = re.compile(r"(?i)\bdot\b|[(\[{<][ \t]*at[ \t]*[)\]}>]")
_TLDS = ("com|org|net|edu|gov|io|us|uk|de|ca|au|fr|es|nl|ch|se|dk|fi|ie|nz|jp|br|mx|eu|biz|"
         "care|clinic|hospital|app|dev|online|site|info|health|example")
_DOT = r"(?:\.|[ \t]*[(\[{<][ \t]*dot[ \t]*[)\]}>][ \t]*|[ \t]+dot[ \t]+)"
_AT = r"(?:@|[ \t]*[(\[{<][ \t]*at[ \t]*[)\]}>][ \t]*|[ \t]+at[ \t]+)"
_CREDENTIALS = r"(?:M\.?D|D\.?O|R\.?N|N\.?P|P\.?A|Ph\.?D|LPN|CNA|APRN|PharmD|MSW|LCSW|PT|OT)"


def _not_clinical(value: str) -> bool:
    from dptext.detect.vocabulary import is_clinical

    return not is_clinical(value)


def _first_not_context(value: str) -> bool:
    """"LAST, First": the first name is no context word of an identifier ("SMITH, Acct #",
    "SMITH, Record number" are no names)."""
    first = value.split(",", 1)[1].split()
    return bool(first) and first[0].casefold() not in _CONTEXT_WORDS


def _not_ordinary_after(value: str) -> bool:

    words = re.findall(r"[^\W\d_][\w'-]*", value)
    return len(words) > 1 and words[1].casefold() not in common_words()




_RELATIVES = ("wife", "husband", "spouse", "partner", "son", "daughter", "mother", "father",
              "mom", "dad", "sister", "brother", "niece", "nephew", "aunt", "uncle", "cousin",
              "grandson", "granddaughter", "grandmother", "grandfather", "grandma", "grandpa",
              "stepson", "stepdaughter", "fiance", "fiancee", "boyfriend", "girlfriend",
              "friend", "neighbor", "neighbour", "caregiver", "guardian", "roommate")
# who wrote, typed or signed a record: the word after is a name or initials ("jmk", "lrt")
_AUTHORSHIP = ("dictated by", "transcribed by", "typed by", "entered by", "written by",
               "reviewed by", "signed by", "co-signed by", "cosigned by", "approved by",
               "prepared by", "verified by", "electronically signed by", "authored by")
_NAME_CONTEXT = _context_re(tuple(t.lower() for t in TITLES) + _RELATIVES + _AUTHORSHIP + (
    "pt", "patient", "per", "seen by", "spoke with", "spoke to", "talked to", "discussed with",
    "called", "cc", "signed", "attending", "resident", "np", "rn", "name", "mrs", "mr", "ms"))
_LOWER_RUN = re.compile(rf"[.:,]?[ \t]+(?P<v>[{_LO}][{_LO}'-]*(?:[ \t]+[{_LO}][{_LO}'-]*){{0,2}})")


_LOWER_INITIALS = re.compile(r"[a-z]{2,3}")
_STRONG = frozenset(t.casefold() for t in TITLES) | frozenset(_RELATIVES) | {"mr", "mrs", "ms"}


def _lower_name(word: str, strong: bool) -> bool:
    """A lower-case word that is a name of the public lists and no ordinary word, or one
    public English text does not know (:class:`NameContextRecognizer`); after a title or a
    relative (``strong``), or after a first name, any word outside the most frequent English
    words ("dr abramovich", "sister alik") that is no clinical term."""
    from dptext.detect.vocabulary import (
        common_words,
        frequent_words,
        is_clinical,
        is_medical_word,
        known_words,
        name_list,
    )

    low = word.casefold().strip("'-")
    if not low.isalpha() or len(low) < 2 or is_clinical(low):
        return False
    if low in name_list():
        return low not in common_words()  # "will", "may": stopwords
    if strong:
        return len(low) >= 3 and low not in frequent_words() and not is_medical_word(low)
    return len(low) >= 3 and low not in known_words() and not is_medical_word(low)


@cache
def builtin_recognizers() -> tuple[Recognizer, ...]:
    """The default rule recognizers (module docstring); shared, read-only."""
    return (
        PhoneRecognizer("phone", "PHONE_NUMBER"),
        PatternRecognizer("email", "EMAIL_ADDRESS",
                          r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
        # an address spelled out against harvesters: "john dot smith at example dot com",
        # "jsmith(at)example(dot)org", "j.smith [at] example.org"
        PatternRecognizer("email-spelled", "EMAIL_ADDRESS",
                          rf"(?i)(?<![\w.+-])[\w+-]+(?:{_DOT}[\w+-]+)*{_AT}[\w-]+"
                          rf"(?:{_DOT}[\w-]+)*{_DOT}(?:{_TLDS})(?![\w-])",
                          validate=_spelled),
        PatternRecognizer("url", "URL",
                          r"(?i)\b(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"),
        PatternRecognizer("url-domain", "URL",
                          rf"(?i)(?<![@\w.-])(?:[a-z0-9-]+\.)+(?:{_TLDS})"
                          r"(?:/[^\s<>\"']*[^\s<>\"'.,;:!?)\]])?(?![\w@])"),
        PatternRecognizer("ipv4", "IP_ADDRESS", r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)",
                          validate=ipv4),
        PatternRecognizer("ipv6", "IP_ADDRESS",
                          r"(?i)(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])",
                          validate=ipv6),
        PatternRecognizer("ssn", "US_SSN", r"(?<![\w-])\d{3}([- ])\d{2}\1\d{4}(?![\w-])"),
        PatternRecognizer("ssn-context", "US_SSN", r"(?<![\w-])\d{9}(?![\w-])",
                          context=("ssn", "social security", "ss#")),
        PatternRecognizer("card", "CREDIT_CARD", r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])",
                          validate=luhn),
        PatternRecognizer("vin", "VEHICLE_ID",
                          r"(?<![\w-])(?=[A-HJ-NPR-Z0-9]*\d)[A-HJ-NPR-Z0-9]{17}(?![\w-])",
                          validate=vin),
        PatternRecognizer("mrn-glued", "MEDICAL_RECORD", r"(?i)mrn[:#\s]*(?P<v>\d{3,}\w*)"),
        ContextIdRecognizer("ids", "ID_NUMBER", contexts=ID_CONTEXTS),
        PatternRecognizer(
            "age", "AGE",
            r"(?i)(?<![\w-])(?:\d{1,3}|[a-z]+(?:-[a-z]+)?)[- ](?:years?|yrs?|months?|mos?)"
            r"[- ]old\b|(?<![\w/-])\d{1,3}\s?(?:y/?o|y\.o\.|yo|yr old)(?![\w/])|"
            r"\b(?:aged?|age:)\s*(?P<v>\d{1,3})\b|"
            r"(?<![\w/-])\d{1,3}\s+years?\s+of\s+age\b"),
        # an age over 89 with the sex after it ("94F", "(101 M)"); never a temperature
        PatternRecognizer("age-sex", "AGE", r"(?<![\w./°-])(?:9\d|1[0-2]\d)[ \t]?[MF](?![\w°])",
                          exclude=("temp", "temperature", "t", "tmax", "tm", "fever", "febrile",
                                   "afebrile", "to", "of")),
        PatternRecognizer(
            "date-numeric", "DATE",
            r"(?<![\w/.-])(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/-]\d{1,2}[/-]\d{2,4}|"
            r"\d{1,2}\.\d{1,2}\.\d{4}|\d{1,2}/\d{2}(?!\d)|\d{1,2}/\d{4})(?![\w/]|-\d)"),
        PatternRecognizer(
            "date-more", "DATE",
            # 04-Mar-1950, 2019/03/04, 20190304 (a valid date), "March of 2019"
            rf"(?<![\w/.-])(?:\d{{1,2}}[-/ ](?i:{_MONTH})[-/ ]\d{{2,4}}|"
            r"\d{4}/\d{1,2}/\d{1,2}|"
            r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?![\w/]|-\d)|"
            rf"\b{_MONTH}\s+of\s+\d{{4}}\b"),
        PatternRecognizer(
            "date-words", "DATE",
            rf"\b(?:{_WEEKDAY},?\s+)?(?:{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
            rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?(?:,?\s+\d{{4}})?|"
            rf"(?:the\s+)?(?:{_ORDINAL_WORDS})\s+of\s+{_MONTH}|"
            r"(?:January|February|April|June|July|August|September|October|November|December)"
            rf"(?:\s+\d{{4}})?|{_MONTH}\.?\s+\d{{4}})\b"),
        PatternRecognizer("po-box", "STREET_ADDRESS",
                          r"(?i)\bP\.?[ \t]?O\.?[ \t]*Box[ \t]*#?[ \t]*\d+\b"),
        PatternRecognizer(
            "street", "STREET_ADDRESS",
            rf"\b\d{{1,6}}[A-Za-z]?\s+(?:[NSEW]\.?\s+)?(?:{_NAME_WORD}\s+){{1,4}}"
            rf"{_STREET_TYPES}\b\.?(?:,?\s+(?:Apt|Suite|Ste|Unit|#)\.?\s*\w+)?"),
        PatternRecognizer(
            "city-state-zip", "GPE",
            rf"(?P<v>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}}),\s+"
            rf"(?:(?:{_US_STATES.replace(' ', '|')})\s+\d{{5}}\b|{_STATE_NAMES}\b)"),
        PatternRecognizer("zip-state", "ZIP_CODE",
                          rf"\b(?:{_US_STATES.replace(' ', '|')}|{_STATE_NAMES})\s+"
                          r"(?P<v>\d{5}(?:-\d{4})?)\b"),
        # a street in lower case ("12 oak hill road"); only the unambiguous street words
        PatternRecognizer(
            "street-lower", "STREET_ADDRESS",
            r"\b\d{1,6}[a-z]?[ \t]+(?:[nsew]\.?[ \t]+)?(?:[a-z]{2,}[ \t]+){1,2}(?:st|street|rd|"
            r"road|ave|avenue|blvd|boulevard|lane|ln|drive|court|terrace|parkway|pkwy|hwy|"
            r"highway)\b\.?"),
        PatternRecognizer("zip-context", "ZIP_CODE", r"(?<![\w-])\d{5}(?:-\d{4})?(?![\w-])",
                          context=("zip", "zip code", "postal code", "postcode")),
        # a salutation and title with the name after them are one name span ("Dear Dr.
        # Smith", "Mrs. J. Lopez"): the name treatments keep the title words (split_title)
        PatternRecognizer("honorific", "PERSON", _TITLED_NAME),
        PatternRecognizer("salutation", "PERSON", _SALUTED_NAME, validate=_not_ordinary_after),
        PatternRecognizer(
            "patient", "PERSON",
            rf"\bPatient[ \t]+(?P<v>(?:[A-Z]\.[ \t]*)?{_NAME_WORD}"
            rf"(?:[ \t]+(?:[A-Z]\.[ \t]*)?{_NAME_WORD})?)"),
        PatternRecognizer("signature", "PERSON",
                          rf"(?P<v>{_CAPS_WORD}(?:\s+[A-Z]\.?)?\s+{_CAPS_WORD}),?\s+"
                          r"(?:M\.?D\.?|D\.?O\.?|R\.?N\.?|N\.?P\.?|P\.?A\.?|Ph\.?D\.?)\b"),
        PatternRecognizer("dictation", "PERSON",
                          r"(?m)\b[A-Z]{2,4}:(?P<v>[a-z]{2,}(?:/[a-z]{2,})?)\b"),
        PatternRecognizer("last-first", "PERSON",
                          rf"(?<!\w)(?P<v>[{_UP}]{{2,}}[{_UP}{_LO}'-]*,[ \t]?(?!{_CREDENTIALS}\b)"
                          rf"[{_UP}][{_UP}{_LO}'-]+(?:[ \t][{_UP}]\.?(?![\w.]))?)(?![\w])",
                          validate=_first_not_context),
        # initials: after "initials", in a sign-off ("-- JS, RN", "JS/mk"), after "per"/"cc"
        PatternRecognizer("initials", "PERSON",
                          r"(?i:initials?)[ \t]*:?[ \t]*"
                          r"(?P<v>[A-Z](?:\.[ \t]?)?[A-Z](?:\.(?=[ \t]?[A-Z]\b))?(?:[ \t]?[A-Z])?)"
                          r"(?![\w])"),
        PatternRecognizer("signed-initials", "PERSON",
                          rf"(?m)(?:^[ \t]*(?:--?|/|\u2013)[ \t]*|(?<![\w/])(?=[A-Z]{{2,3}},[ \t]*"
                          rf"{_CREDENTIALS}\b)|(?<![\w/])(?=[A-Z]{{2,3}}/[a-z]{{2,3}}\b))"
                          r"(?P<v>[A-Z]{2,3})(?![\w.])"),
        PatternRecognizer("per-initials", "PERSON",
                          r"\b(?:per|cc:?|by|signed|co-signed|initialed)[ \t]+"
                          r"(?P<v>[A-Z]{2,3})(?![\w.])", validate=_not_clinical),
        NameContextRecognizer("name-context", "PERSON"),
        SpelledDigitsRecognizer("spelled-digits", "PHONE_NUMBER"),
        PlaceGazetteerRecognizer("place-gazetteer", "GPE"),
    )


# ------------------------------------------------------------ user recognizers
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
    rec = PatternRecognizer(f"pattern:{name}", name, regex, context=context)
    if rec._re.search(""):
        raise DPTextError(f"--pattern {name}: the expression matches the empty text")
    return rec


def read_word_list(path: str | Path, what: str) -> tuple[str, ...]:
    """One entry per line (blank lines and lines starting with # skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DPTextError(f"{what} {path}: no such file") from None
    except UnicodeDecodeError:
        raise DPTextError(f"{what} {path}: not UTF-8 text") from None
    out = tuple(s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#"))
    if not out:
        raise DPTextError(f"{what} {path}: the file has no entries")
    return out
