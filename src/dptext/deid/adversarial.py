"""Adversarial clinical-style records with gold identifier spans: the formats an outside
auditor tries that :mod:`dptext.deid.notes` does not (a generator for benchmarks and tests;
nothing here is a real person).

Seventeen formats, one per record in turn (the record's ``id`` names it, so figures can be
given per format):

- ``caps_header``: ``PATIENT: JOHN SMITH`` headers, ``DOB:``, ``ATTENDING: DR. LAST``;
- ``last_first``: ``Smith, John`` in running text, ``SMITH, JOHN A`` in a header;
- ``initials``: ``J. Smith``, ``JS`` after "initials", in a sign-off, ``JS/mk`` dictation;
- ``lowercase``: names in lower case in running text ("pt john smith", "dr smith",
  "wife mary");
- ``hyphen_apostrophe``: ``O'Brien``, ``Mary-Kate``, ``McAllister``, ``D'Angelo-Ruiz``;
- ``punctuation``: names against brackets, quotes, slashes, digits ("(Smith)",
  "Smith/Jones", "rm4 Smith", "Smith2");
- ``titles``: Dr./Mr./Mrs./Ms./Nurse/NP in several cases and spellings;
- ``table``: CSV-like and pipe-table lines with names, dates, phones, record numbers;
- ``ids``: record numbers ("MRN: 12-345-67", "Med Rec #0012345", "acct 12345678", ...) and
  SSNs ("SSN 123-45-6789", "SS# 123456789", "social security number 123 45 6789");
- ``phones``: "(555) 123 4567", "555.123.4567", "+1-555-123-4567", "... ext. 123", "x4521";
- ``contact``: e-mails (upper case, in brackets, after ``mailto:``), URLs, IPv4/IPv6;
- ``dates``: "04-Mar-1950", "3/4/50", "March 4th", "4 March 2019", "Mar. 4, 2019",
  "2019/03/04", "20190304", "Tuesday, March 4";
- ``addresses``: street addresses (direction, unit, P.O. box, lower case), cities with full
  state names, ZIP and ZIP+4, a city in lower case after a residence phrase ("originally
  from boise", "her son lives in salt lake city");
- ``ages_relatives``: ages over 89 ("92 yo", "age 93", "(94F)", "ninety-two year old",
  "95 years of age") and relatives' names ("her daughter Ana", "son, Tom Reyes,");
- ``word_names``: identities whose surname is one of the 25,000 most frequent English words
  ("Kai Badger", "Grace Bell"), in running text and alone;
- ``obfuscated``: names, e-mails, record numbers and phones with characters a reader does not
  see or does not tell apart - zero-width characters and soft hyphens inside ("Sm\\u200bith"),
  Cyrillic and Greek look-alike letters ("\\u0410nna"), fullwidth letters and digits,
  Arabic-Indic digits, "O"/"l" for 0/1;
- ``spelled_digits``: phone numbers and record numbers with their digits written as words
  ("five five five, one two three four", "oh", "double five", "five-five-five-...").

Names come from presidio-evaluator's FakeNameGenerator identities (when installed) and a
syllable generator (:func:`dptext.deid.notes.made_up_name`) - never from Faker, whose lists the
residual net uses. Gold categories: NAME, PHONE, EMAIL, ID, SSN, DATE, AGE, LOCATION, URL, IP.
Ages of 89 and under are not gold (Safe Harbor keeps them). Filler sentences carry what must
stay readable: vital signs, doses, abbreviations, section headers.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from dptext.deid.gold import GoldRecord
from dptext.deid.notes import GoldTextBuilder, identities, made_up_name

_CITIES = ["Tulare", "Oxnard", "Yakima", "Pueblo", "Billings", "Duluth", "Ithaca",
           "Kalamazoo", "Muncie", "Topeka", "Bangor", "Laredo", "Provo", "Macon"]
_STATES = [("CA", "California"), ("WA", "Washington"), ("CO", "Colorado"),
           ("MT", "Montana"), ("MN", "Minnesota"), ("NY", "New York"), ("MI", "Michigan"),
           ("IN", "Indiana"), ("KS", "Kansas"), ("ME", "Maine"), ("TX", "Texas")]
_STREET_TYPES = ["St", "Street", "Ave", "Avenue", "Rd", "Road", "Blvd", "Lane", "Drive",
                 "Ct", "Way", "Pl"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_RELATIVES = ["daughter", "son", "wife", "husband", "mother", "father", "sister",
              "brother", "niece", "grandson", "partner"]
_FILLER = [
    "Vitals: BP 128/76, HR 88, RR 16, Temp 99 F, SpO2 97% on RA.",
    "Assessment: CHF exacerbation, improving on IV Lasix 40 mg BID.",
    "Plan: continue lisinopril 10 mg daily, f/u in 2 wks with repeat BMP.",
    "Lungs with mild bibasilar crackles; no wheezes. Abd soft, NT/ND.",
    "A1c 7.2 last month; metformin 500 mg twice daily was restarted.",
    "Pt denies chest pain, fever or chills. Ambulating with a walker.",
    "Discussed code status; the patient remains full code at this time.",
    "Wound care per nursing protocol, dressing changed q12h.",
    "Medications reviewed and reconciled; no known drug allergies.",
    "Will recheck labs in the morning and adjust the insulin sliding scale.",
    "Physical therapy to evaluate for safe discharge to home with services.",
    "CXR showed no acute process. EKG: normal sinus rhythm, no ST changes.",
]


# obfuscation (the ``obfuscated`` format): characters no reader sees, look-alike letters
# (U+FEFF is read too, tests/deid/test_deid_obfuscation.py; the generator leaves it out: a gold
# value never holds it, as FakeNameGenerator's stray BOMs are stripped)
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad"]
_HOMOGLYPHS = {"a": ["\u0430", "\u03b1"], "c": ["\u0441"], "e": ["\u0435"],
               "o": ["\u043e", "\u03bf"], "p": ["\u0440"], "x": ["\u0445"], "y": ["\u0443"],
               "i": ["\u0456"], "s": ["\u0455"], "A": ["\u0410", "\u0391"], "B": ["\u0412"],
               "C": ["\u0421"], "E": ["\u0415", "\u0395"], "H": ["\u041d"], "K": ["\u041a"],
               "M": ["\u041c"], "O": ["\u041e", "\u039f"], "P": ["\u0420"], "T": ["\u0422"],
               "X": ["\u0425"]}
# lower-case places (``addresses``): a city in lower case after a residence phrase
_LOWER_PLACES = _CITIES + ["Salt Lake City", "San Jose", "Grand Rapids", "Fort Wayne",
                           "Sioux Falls", "Boise", "Reading", "Mobile"]
_PLACE_CUES = ["Her son lives in", "Originally from", "She was born in", "Daughter moved to",
               "Plans to visit family; husband is from"]
_DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


@cache
def _word_surnames() -> tuple[tuple[str, str, str], ...]:
    """The identities whose surname is one of the 25,000 most frequent English words."""
    import wordfreq

    frequent = set(wordfreq.top_n_list("en", 25_000))
    return tuple(i for i in identities() if i[1].casefold() in frequent)


class AdversarialGenerator:
    """Seeded generator of adversarial :class:`GoldRecord` records (module docstring)."""

    FORMATS = ("caps_header", "last_first", "initials", "lowercase", "hyphen_apostrophe",
               "punctuation", "titles", "table", "ids", "phones", "contact", "dates",
               "addresses", "ages_relatives", "word_names", "obfuscated", "spelled_digits")

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        # the lower-case places of ``addresses`` draw from their own stream: the records of
        # the other formats stay those of the generator before them
        self.places_rng = np.random.default_rng([seed, 1])
        self.ids = identities()

    # ------------------------------------------------------------------ values
    def _pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def _int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi))

    def _name(self) -> tuple[str, str]:
        """(given name, surname): an identity half of the time, else syllables."""
        if self.ids and self.rng.random() < 0.5:
            given, surname, _ = self._pick(self.ids)
            return given.replace("\ufeff", ""), surname.replace("\ufeff", "")
        return made_up_name(self.rng), made_up_name(self.rng)

    def _digits(self, n: int) -> str:
        return "".join(str(int(d)) for d in self.rng.integers(0, 10, n))

    def _phone(self) -> str:
        a, m, line = str(self._int(201, 990)), str(self._int(200, 999)), self._digits(4)
        return self._pick([f"({a}) {m} {line}", f"{a}.{m}.{line}", f"+1-{a}-{m}-{line}",
                           f"{a}-{m}-{line} ext. {self._digits(3)}", f"1 ({a}) {m}-{line}",
                           f"+1 ({a}) {m}-{line}", f"{a}/{m}-{line}", f"{a}{m}{line}"])

    def _date(self) -> str:
        y, mo, d = self._int(1930, 2026), self._int(1, 13), self._int(1, 29)
        mon = _MONTHS[mo - 1]
        return self._pick([f"{d:02d}-{mon[:3]}-{y}", f"{mo}/{d}/{y % 100:02d}",
                           f"{mon} {d}th", f"{d} {mon} {y}", f"{mon[:3]}. {d}, {y}",
                           f"{y}/{mo:02d}/{d:02d}", f"{y}{mo:02d}{d:02d}",
                           f"{self._pick(_WEEKDAYS)}, {mon} {d}", f"{d}-{mon[:3].upper()}-{y}",
                           f"{mo:02d}.{d:02d}.{y}", f"{mon} of {y}"])

    def _mrn(self) -> tuple[str, str]:
        return self._pick([
            ("MRN: ", f"{self._digits(2)}-{self._digits(3)}-{self._digits(2)}"),
            ("Med Rec #", "00" + self._digits(5)), ("acct ", self._digits(8)),
            ("Acct#: ", self._digits(8)), ("MR ", self._digits(7)),
            ("Medical record no. ", f"{self._digits(2)}-{self._digits(3)}-{self._digits(3)}"),
            ("Pt ID: ", "A" + self._digits(7)), ("Encounter #", "E" + self._digits(6)),
            ("Unit No: ", self._digits(6)), ("MRN#", self._digits(8))])

    def _ssn(self) -> tuple[str, str]:
        a, b, c = self._digits(3), self._digits(2), self._digits(4)
        return self._pick([("SSN ", f"{a}-{b}-{c}"), ("SS# ", f"{a}{b}{c}"),
                           ("social security number ", f"{a} {b} {c}"),
                           ("SSN:", f"{a}{b}{c}")])

    def _email(self, first: str, last: str) -> str:
        f = "".join(c for c in first.lower() if c.isascii() and c.isalpha()) or "pt"
        g = "".join(c for c in last.lower() if c.isascii() and c.isalpha()) or "x"
        domain = self._pick(["stmarys-health.org", "mail.example.com", "clinic.example.ca",
                             "valleymed.net", "hospital.example.co.uk"])
        email = self._pick([f"{f}.{g}@{domain}", f"{f[0]}{g}{self._digits(2)}@{domain}",
                            f"{g}_{f}@{domain}"])
        return email.upper() if self.rng.random() < 0.25 else email

    def _age(self) -> str:
        a = self._int(90, 106)
        words = {90: "ninety", 91: "ninety-one", 92: "ninety-two", 93: "ninety-three",
                 95: "ninety-five", 97: "ninety-seven"}
        return self._pick([f"{a} yo", f"{a}-year-old", f"{a} years of age",
                           f"{a} y.o.", f"{words.get(a, 'ninety')} year old",
                           f"{a}yo"])

    def _filler(self, r: GoldTextBuilder, k: int) -> None:
        for i in self.rng.choice(len(_FILLER), size=k, replace=False):
            r.add(" " + _FILLER[int(i)])

    def _hyphenated(self) -> str:
        """A hyphenated or apostrophe name."""
        a, b = self._name()
        c, d = self._name()
        return self._pick([f"{a}-{c}", f"O'{b}", f"D'{d}-{b}", f"Mc{made_up_name(self.rng)}",
                           f"{b}-{d}", f"Mac{made_up_name(self.rng)}"])

    # ----------------------------------------------------------------- formats
    def _caps_header(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        _, dlast = self._name()
        label, mrn = self._mrn()
        r.add("PATIENT: ").add(f"{first.upper()} {last.upper()}", "NAME")
        r.add("\nDOB: ").add(self._date(), "DATE").add(f"\n{label.upper()}").add(mrn, "ID")
        r.add("\nATTENDING: DR. ").add(dlast.upper(), "NAME").add("\nCHIEF COMPLAINT: SOB.")
        self._filler(r, 2)
        r.add(" ").add(last.upper(), "NAME").add(" TO FOLLOW UP IN CLINIC.")

    def _last_first(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        dfirst, dlast = self._name()
        mid = chr(ord("A") + self._int(0, 26))
        r.add("Name: ").add(f"{last.upper()}, {first.upper()} {mid}", "NAME")
        r.add("  DOB: ").add(self._date(), "DATE").add("\nPatient ")
        r.add(f"{last}, {first}", "NAME").add(" was seen in clinic today.")
        self._filler(r, 2)
        r.add(" Referring: ").add(f"{dlast}, {dfirst} {mid}.", "NAME").add(" Cc: ")
        r.add(f"{dlast},{dfirst}", "NAME").add(".")

    def _initials(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        dfirst, dlast = self._name()
        ini = first[0].upper() + last[0].upper()
        r.add("Seen with ").add(f"{dfirst[0]}. {dlast}", "NAME").add(", RN.")
        r.add(" Patient initials: ").add(ini, "NAME").add(".")
        self._filler(r, 2)
        r.add(" Discussed with ").add(f"{first[0]}.{last}", "NAME").add(" and family.")
        r.add("\n-- ").add(dfirst[0].upper() + dlast[0].upper(), "NAME").add(", RN\n")
        r.add(dfirst[0].upper() + dlast[0].upper(), "NAME").add("/mk")

    def _lowercase(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        dfirst, dlast = self._name()
        rel_first, _ = self._name()
        r.add("pt ").add(f"{first.lower()} {last.lower()}", "NAME")
        r.add(" seen today, spoke with her ").add(self._pick(_RELATIVES)).add(" ")
        r.add(rel_first.lower(), "NAME").add(" by phone.")
        self._filler(r, 2)
        r.add(" dr ").add(dlast.lower(), "NAME").add(" aware and agrees with plan. per ")
        r.add(f"{dfirst.lower()} {dlast.lower()}", "NAME").add(", recheck in am.")

    def _hyphen_apostrophe(self, r: GoldTextBuilder) -> None:
        a, b = self._hyphenated(), self._hyphenated()
        first, _ = self._name()
        r.add("Patient ").add(f"{first} {a}", "NAME").add(" presents with cough.")
        self._filler(r, 2)
        r.add(" Ms. ").add(a, "NAME").add("'s sister, ").add(b, "NAME")
        r.add(", is the health care proxy. Seen by Dr. ").add(b.upper(), "NAME").add(".")

    def _punctuation(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        _, other = self._name()
        r.add("Covering (").add(last, "NAME").add(') for "').add(f"{first} {last}", "NAME")
        r.add('"')
        r.add(" in rm").add(str(self._int(2, 40))).add(" ").add(other, "NAME").add(".")
        self._filler(r, 2)
        r.add(" Handoff ").add(last, "NAME").add("/").add(other, "NAME").add("; bed ")
        r.add(f"{self._int(1, 30)}-").add(last, "NAME").add(", labs pending [")
        r.add(f"{first} {last}", "NAME").add("]. Sign-out: ").add(f"{other}2", "NAME")
        r.add(";")

    def _titles(self, r: GoldTextBuilder) -> None:
        names = [self._name() for _ in range(5)]
        r.add("Mrs. ").add(f"{names[0][0]} {names[0][1]}", "NAME").add(" admitted by Dr ")
        r.add(names[1][1], "NAME").add(". Nurse ").add(names[2][0], "NAME")
        r.add(" gave meds.")
        self._filler(r, 2)
        r.add(" Discussed with MR. ").add(names[3][1].upper(), "NAME").add(" and NP ")
        r.add(f"{names[4][0]} {names[4][1]}", "NAME").add("; Ms ").add(names[0][1], "NAME")
        r.add(" agrees. dr. ").add(names[1][1], "NAME").add(" to call.")

    def _table(self, r: GoldTextBuilder) -> None:
        r.add("id,name,dob,phone,mrn\n")
        for i in range(2):
            first, last = self._name()
            r.add(f"{i + 1},").add(f"{last} {first}" if i else f"{first} {last}", "NAME")
            r.add(",").add(self._date().replace(",", ""), "DATE").add(",")
            r.add(self._phone().replace(",", ""), "PHONE").add(",")
            r.add(self._digits(7), "ID").add("\n")
        first, last = self._name()
        r.add("| ").add(f"{last}, {first}", "NAME").add(" | ").add(self._phone(), "PHONE")
        r.add(" | ").add(self._digits(8), "ID").add(" |")
        self._filler(r, 1)

    def _ids(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        r.add("Registration for ").add(f"{first} {last}", "NAME").add(". ")
        for _ in range(3):
            label, value = self._mrn()
            r.add(label).add(value, "ID").add("; ")
        label, value = self._ssn()
        r.add(label).add(value, "SSN").add(".")
        self._filler(r, 2)

    def _phones(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        r.add("Call ").add(f"{first} {last}", "NAME").add(" at ").add(self._phone(), "PHONE")
        r.add(" or cell ").add(self._phone(), "PHONE").add(". Office line ")
        r.add(self._phone(), "PHONE").add(", pager ").add("x" + self._digits(4), "PHONE")
        r.add(".")
        self._filler(r, 2)

    def _contact(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        email = self._email(first, last)
        r.add("Portal message from ").add(f"{first} {last}", "NAME").add(" <")
        r.add(email, "EMAIL").add(">; reply to mailto:").add(self._email(first, last), "EMAIL")
        r.add(". Results at ").add(self._pick([
            f"https://portal.valleymed.net/pt/{self._digits(6)}",
            f"www.{last.lower().encode('ascii', 'ignore').decode() or 'pt'}-family.org",
            f"http://clinic.example.ca/records?id={self._digits(5)}"]), "URL")
        r.add(". Login from ").add(self._pick([
            f"{self._int(11, 223)}.{self._int(0, 255)}.{self._int(0, 255)}.{self._int(1, 254)}",
            f"2001:db8:{self._int(1, 9999):x}::{self._int(1, 9999):x}"]), "IP").add(".")
        self._filler(r, 2)

    def _dates(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        r.add("Admission ").add(self._date(), "DATE").add(" for ")
        r.add(f"{first} {last}", "NAME").add("; discharged ").add(self._date(), "DATE")
        r.add(". DOB ").add(self._date(), "DATE").add(".")
        self._filler(r, 2)
        r.add(" Next appointment ").add(self._date(), "DATE").add(" at 10:30.")

    def _addresses(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        city = self._pick(_CITIES)
        abbr, state = self._pick(_STATES)
        street = made_up_name(self.rng)
        kind = self._pick(_STREET_TYPES)
        r.add("Home address of ").add(f"{first} {last}", "NAME").add(": ")
        r.add(self._pick([f"{self._int(10, 9999)} N. {street} {kind}., Apt {self._int(1, 40)}B",
                          f"{self._int(10, 9999)} {street} {kind}",
                          f"P.O. Box {self._int(10, 9999)}",
                          f"{self._int(10, 999)} {street.lower()} {kind.lower()}"]), "LOCATION")
        r.add(", ").add(city, "LOCATION").add(", ").add(self._pick([abbr, state])).add(" ")
        r.add(self._pick([self._digits(5), f"{self._digits(5)}-{self._digits(4)}"]), "LOCATION")
        r.add(". Moved from ").add(self._pick(_CITIES), "LOCATION").add(f", {state} last year.")
        self._filler(r, 2)
        g = self.places_rng
        cue = _PLACE_CUES[int(g.integers(len(_PLACE_CUES)))]
        place = _LOWER_PLACES[int(g.integers(len(_LOWER_PLACES)))]
        r.add(f" {cue} ").add(place.lower(), "LOCATION").add(".")

    def _ages_relatives(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        rel = [self._name() for _ in range(2)]
        r.add("Pt is a ").add(self._age(), "AGE").add(" woman (")
        r.add(f"{self._int(90, 106)}F", "AGE").add("), accompanied by her ")
        r.add(self._pick(_RELATIVES)).add(" ").add(rel[0][0], "NAME").add(". Her ")
        r.add(self._pick(_RELATIVES)).add(", ").add(f"{rel[1][0]} {rel[1][1]}", "NAME")
        r.add(", lives nearby. Age ").add(str(self._int(90, 106)), "AGE").add(".")
        self._filler(r, 2)
        r.add(" Patient ").add(f"{first} {last}", "NAME").add(" is DNR.")

    def _word_names(self, r: GoldTextBuilder) -> None:
        pool = _word_surnames()
        given, surname, _ = self._pick(pool) if pool else (*self._name(), "")
        other = self._pick(pool)[1] if pool else made_up_name(self.rng)
        r.add("Seen with ").add(f"{given} {surname}", "NAME").add(" today.")
        self._filler(r, 2)
        r.add(" ").add(surname, "NAME").add(" was told to call ").add(other, "NAME")
        r.add(" if worse. Mr. ").add(other, "NAME").add(" agrees.")

    def _obfuscate(self, value: str) -> str:
        """``value`` with obfuscation a reader does not see: zero-width characters or a soft
        hyphen inside, look-alike Cyrillic/Greek letters, fullwidth letters."""
        kind = self._pick(["invisible", "homoglyph", "homoglyph", "fullwidth", "both"])
        if kind == "fullwidth":
            return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)
        out = list(value)
        if kind in ("homoglyph", "both"):
            at = [i for i, c in enumerate(out) if c in _HOMOGLYPHS]
            for i in (self.rng.choice(at, size=min(len(at), self._int(1, 3)), replace=False)
                      if at else []):
                out[int(i)] = self._pick(_HOMOGLYPHS[out[int(i)]])
        if kind in ("invisible", "both") or out == list(value):
            inside = [i for i in range(1, len(out)) if out[i - 1].isalnum() and out[i].isalnum()]
            for i in sorted(self.rng.choice(inside, size=min(len(inside), self._int(1, 3)),
                                            replace=False) if inside else [], reverse=True):
                out.insert(int(i), self._pick(_INVISIBLE))
        return "".join(out)

    def _obfuscate_digits(self, value: str) -> str:
        """Digits a reader reads as digits: fullwidth, Arabic-Indic, "O"/"l" for 0/1, or a
        zero-width character between them."""
        kind = self._pick(["fullwidth", "arabic", "letters", "invisible"])
        if kind == "fullwidth":
            return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in value)
        if kind == "arabic":
            return "".join(chr(0x660 + int(c)) if c.isdigit() else c for c in value)
        if kind == "letters" and ("0" in value or "1" in value):
            return value.replace("0", "O").replace("1", "l")
        out = list(value)
        inside = [i for i in range(1, len(out)) if out[i - 1].isdigit() and out[i].isdigit()]
        for i in sorted(self.rng.choice(inside, size=min(len(inside), 2), replace=False)
                        if inside else [], reverse=True):
            out.insert(int(i), self._pick(_INVISIBLE))
        return "".join(out)

    def _obfuscated(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        _, dlast = self._name()
        label, mrn = self._mrn()
        r.add("Patient ").add(self._obfuscate(f"{first} {last}"), "NAME")
        r.add(" seen today. ").add(label).add(self._obfuscate_digits(mrn), "ID")
        r.add(". Call ").add(self._obfuscate_digits(self._phone()), "PHONE").add(".")
        self._filler(r, 2)
        r.add(" Dr. ").add(self._obfuscate(dlast), "NAME").add(" agrees; e-mail ")
        r.add(self._obfuscate(self._email(first, last)), "EMAIL").add(". ")
        r.add(self._obfuscate(last), "NAME").add(" to follow up.")

    def _spell(self, digits: str, groups: tuple[int, ...]) -> str:
        """Digits as words in groups ("five five five, one two three four"), "oh" for zero
        at times, "double"/"triple" for a repeat at times, comma, dash or space between."""
        zero = self._pick(["zero", "oh", "o"])
        sep, dash = self._pick([(", ", " "), (" ", " "), ("-", "-"), (" - ", " ")])
        parts, pos = [], 0
        for g in groups:
            chunk, words, i = digits[pos:pos + g], [], 0
            while i < len(chunk):
                word = _DIGIT_NAMES[int(chunk[i])] if chunk[i] != "0" else zero
                run = len(chunk) - len(chunk[i:].lstrip(chunk[i]))
                if run >= 2 and self.rng.random() < 0.5:
                    take = 3 if run >= 3 and self.rng.random() < 0.5 else 2
                    words.append(f"{'triple' if take == 3 else 'double'} {word}")
                    i += take
                else:
                    words.append(word)
                    i += 1
            parts.append(dash.join(words))
            pos += g
        return sep.join(parts)

    def _spelled_digits(self, r: GoldTextBuilder) -> None:
        first, last = self._name()
        phone = str(self._int(201, 990)) + str(self._int(200, 999)) + self._digits(4)
        r.add("Call ").add(f"{first} {last}", "NAME").add(" back at ")
        r.add(self._spell(phone, (3, 3, 4)), "PHONE").add(".")
        self._filler(r, 1)
        local = str(self._int(200, 999)) + self._digits(4)
        r.add(" Her daughter's cell is ").add(self._spell(local, (3, 4)), "PHONE").add(".")
        label = self._pick(["Record number ", "MRN ", "Member ID ", "Account "])
        r.add(f" {label}").add(self._spell(self._digits(8), (8,)), "ID").add(".")
        self._filler(r, 1)

    def record(self, fmt: str | None = None) -> GoldRecord:
        fmt = fmt or self._pick(self.FORMATS)
        r = GoldTextBuilder()
        getattr(self, f"_{fmt}")(r)
        return GoldRecord(r.text, r.spans, fmt)

    def records(self, n: int) -> list[GoldRecord]:
        return [self.record(self.FORMATS[i % len(self.FORMATS)]) for i in range(n)]


def generate_adversarial(n: int, seed: int = 0) -> list[GoldRecord]:
    """``n`` adversarial records, the formats in turn (module docstring)."""
    return AdversarialGenerator(seed).records(n)
