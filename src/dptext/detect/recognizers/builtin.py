"""The built-in recognizers as a table: :data:`RECOGNIZERS`, name -> how to build it.

A new rule is one line here (``_entry(Class, "name", "CATEGORY", ...)``), or at run time
:func:`register` (refused for a taken name unless ``force=True``, as
:func:`dptext.mechanisms.registry.register`). Nothing is built on import: the first
:func:`builtin_recognizers` builds every entry, in the table's order (a later entry's span gives
way to an earlier one's where the detector resolves overlaps the same way), and a registration
builds them afresh. The categories a detector with the rules can report are those the
recognizers declare (:func:`supported_categories`, after Presidio's
``get_supported_entities()``), not a list kept beside them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, partial

from dptext.detect.places import PlaceGazetteerRecognizer
from dptext.detect.recognizers.atoms import (
    _AT,
    _CAPS_WORD,
    _CREDENTIALS,
    _DOT,
    _LO,
    _MONTH,
    _NAME_WORD,
    _ORDINAL_WORDS,
    _SALUTED_NAME,
    _STATE_NAMES,
    _STREET_TYPES,
    _TITLED_NAME,
    _TLDS,
    _UP,
    _US_STATES,
    _WEEKDAY,
)
from dptext.detect.recognizers.base import PatternRecognizer, Recognizer
from dptext.detect.recognizers.evidence import (
    AnnouncedNameRecognizer,
    KeyValueNameRecognizer,
    OtherScriptRecognizer,
    ShortDateRecognizer,
    TableNameRecognizer,
)
from dptext.detect.recognizers.ids import ContextIdRecognizer
from dptext.detect.recognizers.names import (
    NameContextRecognizer,
    _first_not_context,
    _not_clinical,
    _not_ordinary_after,
)
from dptext.detect.recognizers.phone import PhoneRecognizer, SpelledDigitsRecognizer
from dptext.detect.validators import ipv4, ipv6, luhn, vin
from dptext.detect.vocabulary import ID_CONTEXTS
from dptext.errors import DPTextError

Build = Callable[[], Recognizer]


def _entry(cls: type[Recognizer], name: str, category: str, *args, **kwargs) -> tuple[str, Build]:
    return name, partial(cls, name, category, *args, **kwargs)


def _spelled(value: str) -> bool:
    """An address with its "dot" or a bracketed "(at)" written out ("Results at www.x.org" is
    a sentence and a URL)."""
    return bool(_SPELLED.search(value))


_SPELLED = re.compile(r"(?i)\bdot\b|[(\[{<][ \t]*at[ \t]*[)\]}>]")


#: every built-in recognizer: name -> a function building it (module docstring)
RECOGNIZERS: dict[str, Build] = dict((
    _entry(PhoneRecognizer, "phone", "PHONE_NUMBER"),
    _entry(PatternRecognizer, "email", "EMAIL_ADDRESS",
           r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    # an address spelled out against harvesters: "john dot smith at example dot com",
    # "jsmith(at)example(dot)org", "j.smith [at] example.org"
    _entry(PatternRecognizer, "email-spelled", "EMAIL_ADDRESS",
           rf"(?i)(?<![\w.+-])[\w+-]+(?:{_DOT}[\w+-]+)*{_AT}[\w-]+"
           rf"(?:{_DOT}[\w-]+)*{_DOT}(?:{_TLDS})(?![\w-])",
           validate=_spelled),
    _entry(PatternRecognizer, "url", "URL",
           r"(?i)\b(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"),
    _entry(PatternRecognizer, "url-domain", "URL",
           rf"(?i)(?<![@\w.-])(?:[a-z0-9-]+\.)+(?:{_TLDS})"
           r"(?:/[^\s<>\"']*[^\s<>\"'.,;:!?)\]])?(?![\w@])"),
    _entry(PatternRecognizer, "ipv4", "IP_ADDRESS", r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)",
           validate=ipv4),
    _entry(PatternRecognizer, "ipv6", "IP_ADDRESS",
           r"(?i)(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])",
           validate=ipv6),
    _entry(PatternRecognizer, "ssn", "US_SSN", r"(?<![\w-])\d{3}([- ])\d{2}\1\d{4}(?![\w-])"),
    _entry(PatternRecognizer, "ssn-context", "US_SSN", r"(?<![\w-])\d{9}(?![\w-])",
           context=("ssn", "social security", "ss#")),
    _entry(PatternRecognizer, "card", "CREDIT_CARD", r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])",
           validate=luhn),
    _entry(PatternRecognizer, "vin", "VEHICLE_ID",
           r"(?<![\w-])(?=[A-HJ-NPR-Z0-9]*\d)[A-HJ-NPR-Z0-9]{17}(?![\w-])",
           validate=vin),
    _entry(PatternRecognizer, "mrn-glued", "MEDICAL_RECORD", r"(?i)mrn[:#\s]*(?P<v>\d{3,}\w*)"),
    _entry(ContextIdRecognizer, "ids", "ID_NUMBER", contexts=ID_CONTEXTS),
    _entry(PatternRecognizer, "age", "AGE",
           r"(?i)(?<![\w-])(?:\d{1,3}|[a-z]+(?:-[a-z]+)?)[- ](?:years?|yrs?|months?|mos?)"
           r"[- ]old\b|(?<![\w/-])\d{1,3}\s?(?:y/?o|y\.o\.|yo|yr old)(?![\w/])|"
           r"\b(?:aged?|age:)\s*(?P<v>\d{1,3})\b|"
           r"(?<![\w/-])\d{1,3}\s+years?\s+of\s+age\b"),
    # an age over 89 with the sex after it ("94F", "(101 M)"); never a temperature
    _entry(PatternRecognizer, "age-sex", "AGE", r"(?<![\w./°-])(?:9\d|1[0-2]\d)[ \t]?[MF](?![\w°])",
           exclude=("temp", "temperature", "t", "tmax", "tm", "fever", "febrile",
                    "afebrile", "to", "of")),
    _entry(PatternRecognizer, "date-numeric", "DATE",
           r"(?<![\w/.-])(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/-]\d{1,2}[/-]\d{2,4}|"
           r"\d{1,2}\.\d{1,2}\.\d{4}|\d{1,2}/\d{2}(?!\d)|\d{1,2}/\d{4})(?![\w/]|-\d)"),
    _entry(PatternRecognizer, "date-more", "DATE",
           # 04-Mar-1950, 2019/03/04, 20190304 (a valid date), "March of 2019"
           rf"(?<![\w/.-])(?:\d{{1,2}}[-/ ](?i:{_MONTH})[-/ ]\d{{2,4}}|"
           r"\d{4}/\d{1,2}/\d{1,2}|"
           r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?![\w/]|-\d)|"
           rf"\b{_MONTH}\s+of\s+\d{{4}}\b"),
    _entry(PatternRecognizer, "date-words", "DATE",
           rf"\b(?:{_WEEKDAY},?\s+)?(?:{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
           rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?(?:,?\s+\d{{4}})?|"
           rf"(?:the\s+)?(?:{_ORDINAL_WORDS})\s+of\s+{_MONTH}|"
           r"(?:January|February|April|June|July|August|September|October|November|December)"
           rf"(?:\s+\d{{4}})?|{_MONTH}\.?\s+\d{{4}})\b"),
    _entry(PatternRecognizer, "po-box", "STREET_ADDRESS",
           r"(?i)\bP\.?[ \t]?O\.?[ \t]*Box[ \t]*#?[ \t]*\d+\b"),
    _entry(PatternRecognizer, "street", "STREET_ADDRESS",
           rf"\b\d{{1,6}}[A-Za-z]?\s+(?:[NSEW]\.?\s+)?(?:{_NAME_WORD}\s+){{1,4}}"
           rf"{_STREET_TYPES}\b\.?(?:,?\s+(?:Apt|Suite|Ste|Unit|#)\.?\s*\w+)?"),
    _entry(PatternRecognizer, "city-state-zip", "GPE",
           rf"(?P<v>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}}),\s+"
           rf"(?:(?:{_US_STATES.replace(' ', '|')})\s+\d{{5}}\b|{_STATE_NAMES}\b)"),
    # a city in lower case in an address line ("4478 flatbush blvd, nashua NH 62171")
    _entry(PatternRecognizer, "city-lower", "GPE",
           rf"(?:,|\b(?:in|at|from))[ \t]*(?P<v>[a-z][a-z'-]+(?:[ \t][a-z][a-z'-]+){{0,2}}),?[ \t]+"
           rf"(?:(?:{_US_STATES.replace(' ', '|')})|(?i:{_US_STATES.replace(' ', '|')}))"
           r"\.?,?[ \t]+\d{5}(?:-\d{4})?\b"),
    _entry(PatternRecognizer, "zip-state", "ZIP_CODE",
           rf"\b(?:{_US_STATES.replace(' ', '|')}|{_STATE_NAMES})\s+"
           r"(?P<v>\d{5}(?:-\d{4})?)\b"),
    # a street in lower case ("12 oak hill road"); only the unambiguous street words
    _entry(PatternRecognizer, "street-lower", "STREET_ADDRESS",
           r"\b\d{1,6}[a-z]?[ \t]+(?:[nsew]\.?[ \t]+)?(?:[a-z]{2,}[ \t]+){1,2}(?:st|street|rd|"
           r"road|ave|avenue|blvd|boulevard|lane|ln|drive|court|terrace|parkway|pkwy|hwy|"
           r"highway)\b\.?"),
    _entry(PatternRecognizer, "zip-context", "ZIP_CODE", r"(?<![\w-])\d{5}(?:-\d{4})?(?![\w-])",
           context=("zip", "zip code", "postal code", "postcode")),
    # a salutation and title with the name after them are one name span ("Dear Dr.
    # Smith", "Mrs. J. Lopez"): the name treatments keep the title words (split_title)
    _entry(PatternRecognizer, "honorific", "PERSON", _TITLED_NAME),
    _entry(PatternRecognizer, "salutation", "PERSON", _SALUTED_NAME, validate=_not_ordinary_after),
    _entry(PatternRecognizer, "patient", "PERSON",
           rf"\bPatient[ \t]+(?P<v>(?:[A-Z]\.[ \t]*)?{_NAME_WORD}"
           rf"(?:[ \t]+(?:[A-Z]\.[ \t]*)?{_NAME_WORD})?)"),
    _entry(PatternRecognizer, "signature", "PERSON",
           rf"(?P<v>{_CAPS_WORD}(?:\s+[A-Z]\.?)?\s+{_CAPS_WORD}),?\s+"
           r"(?:M\.?D\.?|D\.?O\.?|R\.?N\.?|N\.?P\.?|P\.?A\.?|Ph\.?D\.?)\b"),
    _entry(PatternRecognizer, "dictation", "PERSON",
           r"(?m)\b[A-Z]{2,4}:(?P<v>[a-z]{2,}(?:/[a-z]{2,})?)\b"),
    _entry(PatternRecognizer, "last-first", "PERSON",
           rf"(?<!\w)(?P<v>[{_UP}]{{2,}}[{_UP}{_LO}'-]*,[ \t]?(?!{_CREDENTIALS}\b)"
           rf"[{_UP}][{_UP}{_LO}'-]+(?:[ \t][{_UP}]\.?(?![\w.]))?)(?![\w])",
           validate=_first_not_context),
    # initials: after "initials", in a sign-off ("-- JS, RN", "JS/mk"), after "per"/"cc"
    _entry(PatternRecognizer, "initials", "PERSON",
           r"(?i:initials?)[ \t]*:?[ \t]*"
           r"(?P<v>[A-Z](?:\.[ \t]?)?[A-Z](?:\.(?=[ \t]?[A-Z]\b))?(?:[ \t]?[A-Z])?)"
           r"(?![\w])"),
    _entry(PatternRecognizer, "signed-initials", "PERSON",
           rf"(?m)(?:^[ \t]*(?:--?|/|\u2013)[ \t]*|(?<![\w/])(?=[A-Z]{{2,3}},[ \t]*"
           rf"{_CREDENTIALS}\b)|(?<![\w/])(?=[A-Z]{{2,3}}/[a-z]{{2,3}}\b))"
           r"(?P<v>[A-Z]{2,3})(?![\w.])"),
    _entry(PatternRecognizer, "per-initials", "PERSON",
           r"\b(?:per|cc:?|by|signed|co-signed|initialed)[ \t]+"
           r"(?P<v>[A-Z]{2,3})(?![\w.])", validate=_not_clinical),
    _entry(NameContextRecognizer, "name-context", "PERSON"),
    # name evidence that generalizes (recognizers/evidence.py, issue 44 item 3)
    _entry(AnnouncedNameRecognizer, "announced-name", "PERSON"),
    _entry(KeyValueNameRecognizer, "key-value-name", "PERSON"),
    _entry(TableNameRecognizer, "table-name", "PERSON"),
    _entry(OtherScriptRecognizer, "other-script", "PERSON"),
    _entry(ShortDateRecognizer, "short-date", "DATE"),
    _entry(SpelledDigitsRecognizer, "spelled-digits", "PHONE_NUMBER"),
    _entry(PlaceGazetteerRecognizer, "place-gazetteer", "GPE"),
))


def register(name: str, build: Build, *, force: bool = False) -> None:
    """Add recognizer ``name`` (``build()`` makes it; its ``name`` must be ``name``) to the
    built-in set, after the others; a taken name is refused unless ``force=True``."""
    if not isinstance(name, str) or not name:
        raise DPTextError("a recognizer needs a name")
    if name in RECOGNIZERS and RECOGNIZERS[name] is not build and not force:
        raise DPTextError(f"recognizer name {name!r} is already registered; pass force=True "
                          "to replace it")
    RECOGNIZERS[name] = build
    builtin_recognizers.cache_clear()


def unregister(name: str) -> None:
    """Remove a registered recognizer (for tests and plugins that registered one)."""
    if RECOGNIZERS.pop(name, None) is not None:
        builtin_recognizers.cache_clear()


@cache
def builtin_recognizers() -> tuple[Recognizer, ...]:
    """The recognizers of :data:`RECOGNIZERS`, built (shared, read-only)."""
    out = []
    for name, build in RECOGNIZERS.items():
        rec = build()
        if rec.name != name:
            raise DPTextError(f"recognizer {name!r} builds one named {rec.name!r}")
        out.append(rec)
    return tuple(out)


def supported_categories(recognizers: Iterable[Recognizer] | None = None) -> frozenset[str]:
    """Every category ``recognizers`` (the built-in ones by default) can report."""
    recs = builtin_recognizers() if recognizers is None else recognizers
    return frozenset().union(*(r.categories for r in recs))
