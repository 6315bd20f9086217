"""Made-up clinical notes with their gold identifier spans (a generator for benchmarks and
tests; nothing here is a real person).

Five formats - a progress note, a discharge summary header, a telephone encounter, a referral
letter, an emergency triage line in capitals - about 60 words each, with patient and doctor
names (full, surname alone, ``LAST, FIRST``, ``Dr. Last``, ``First Last, MD``), phone numbers
in six formats (``(NNN) NNN-NNNN``, ``NNN-NNN-NNNN``, ``NNN.NNN.NNNN``, ``+1 NNN NNN NNNN``,
E.164 ``+1NNNNNNNNNN``, ``NNN NNN NNNN``), record numbers after "MRN", "Record number",
"MR#", "Acct #", dates in three formats, ages ("32-year-old", "67 y/o", "aged 45"), e-mail
addresses, streets, cities and ZIP codes.

Names come from presidio-evaluator's 3,000 FakeNameGenerator identities (many nationalities,
accents included) when that package is installed, else and in any case half of the time from
a syllable generator (names in no list) - never from Faker, whose name lists the residual net
uses, so the measurement does not test the net on its own list. Gold categories: NAME, PHONE,
ID, DATE, AGE, EMAIL, LOCATION.
"""

from __future__ import annotations

import csv
import importlib.util
from functools import cache
from pathlib import Path

import numpy as np

from dptext.deid.gold import GoldRecord, GoldSpan

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "j", "k", "kl", "l", "m", "n", "p",
           "qu", "r", "s", "st", "t", "tr", "v", "w", "z", "th", "sh", "ch"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ou", "ei", "ia"]
_CODAS = ["", "n", "r", "l", "s", "th", "nd", "rt", "x", "m", "ck", "ll"]
_CITIES = ["Fresno", "Visalia", "Tulare", "Bakersfield", "Modesto", "Stockton", "Merced",
           "Salinas", "Redding", "Chico", "Eureka", "Hanford", "Lodi", "Porterville"]
_STREETS = ["Old Kettle", "Maple", "Cedar Hollow", "Juniper", "Willow Creek", "Harbor",
            "Sandpiper", "Granite", "Orchard", "Lantern"]
_STREET_TYPES = ["Rd", "Street", "Ave", "Lane", "Drive", "Blvd", "Ct"]
_STATES = ["CA", "NV", "OR", "AZ", "WA", "TX", "NY", "MA"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_FILLER = [
    "Blood pressure was stable and the lungs were clear to auscultation.",
    "She reports mild fatigue but no chest pain or shortness of breath.",
    "Continue metformin twice daily and recheck the hemoglobin in three months.",
    "The wound is healing well without signs of infection.",
    "He was counselled on diet, exercise and smoking cessation.",
    "Labs showed a normal white count and a slightly elevated creatinine.",
    "Follow up in the clinic in two weeks or sooner if symptoms worsen.",
    "The patient tolerated the procedure well and was discharged home in stable condition.",
    "Pain is controlled with acetaminophen as needed.",
    "No known drug allergies; the medication list was reviewed and reconciled.",
]


def made_up_name(rng: np.random.Generator) -> str:
    parts = []
    for _ in range(int(rng.integers(2, 4))):
        parts.append(_ONSETS[int(rng.integers(len(_ONSETS)))]
                     + _VOWELS[int(rng.integers(len(_VOWELS)))]
                     + _CODAS[int(rng.integers(len(_CODAS)))])
    return "".join(parts).capitalize()


@cache
def identities() -> tuple[tuple[str, str, str], ...]:
    """(given name, surname, city) of presidio-evaluator's FakeNameGenerator file, if any."""
    spec = importlib.util.find_spec("presidio_evaluator")
    if spec is None or not spec.submodule_search_locations:
        return ()
    path = (Path(spec.submodule_search_locations[0]) / "data_generator" / "raw_data"
            / "FakeNameGenerator.com_3000.csv")
    if not path.is_file():
        return ()
    with open(path, encoding="utf-8-sig", newline="") as f:
        return tuple((r["GivenName"], r["Surname"], r["City"]) for r in csv.DictReader(f)
                     if r["GivenName"] and r["Surname"])


class GoldTextBuilder:
    """A text under construction: its pieces and the gold spans of the slots (the generated
    notes here and the adversarial records of :mod:`dptext.deid.adversarial`)."""

    def __init__(self) -> None:
        self.text = ""
        self.spans: list[GoldSpan] = []

    def add(self, piece: str, category: str | None = None) -> GoldTextBuilder:
        if category:
            self.spans.append(GoldSpan(len(self.text), len(self.text) + len(piece), category))
        self.text += piece
        return self


class NoteGenerator:
    """Seeded generator of :class:`GoldRecord` notes (module docstring)."""

    FORMATS = ("progress", "discharge", "phone", "referral", "triage")

    def __init__(self, seed: int = 0, names: str = "mixed") -> None:
        self.rng = np.random.default_rng(seed)
        self.names = names
        self.ids = identities() if names in ("mixed", "fakename") else ()

    def _pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def _person(self) -> tuple[str, str]:
        if self.ids and (self.names == "fakename" or self.rng.random() < 0.5):
            given, surname, _ = self._pick(self.ids)
            return given, surname
        return made_up_name(self.rng), made_up_name(self.rng)

    def _digits(self, n: int) -> str:
        return "".join(str(int(d)) for d in self.rng.integers(0, 10, n))

    def _phone(self) -> str:
        area = str(int(self.rng.integers(201, 990)))
        mid = str(int(self.rng.integers(200, 999)))
        line = self._digits(4)
        return self._pick([f"({area}) {mid}-{line}", f"{area}-{mid}-{line}",
                           f"{area}.{mid}.{line}", f"+1 {area} {mid} {line}",
                           f"+1{area}{mid}{line}", f"{area} {mid} {line}"])

    def _date(self) -> str:
        y, m, d = int(self.rng.integers(2015, 2026)), int(self.rng.integers(1, 13)), \
            int(self.rng.integers(1, 29))
        return self._pick([f"{m:02d}/{d:02d}/{y}", f"{_MONTHS[m - 1]} {d}, {y}",
                           f"{y}-{m:02d}-{d:02d}"])

    def _age(self) -> str:
        a = int(self.rng.integers(18, 99))
        return self._pick([f"{a}-year-old", f"{a} y/o", f"{a} year old"])

    def _record(self, note: GoldTextBuilder) -> None:
        label, digits = self._pick([("MRN ", 7), ("Record number ", 7), ("MR# ", 8),
                                    ("Acct # ", 10), ("medical record number ", 7)])
        note.add(label).add(self._digits(digits), "ID")

    def _filler(self, note: GoldTextBuilder, k: int) -> None:
        for i in self.rng.choice(len(_FILLER), size=k, replace=False):
            note.add(" " + _FILLER[int(i)])

    def note(self, fmt: str | None = None) -> GoldRecord:
        fmt = fmt or self._pick(self.FORMATS)
        first, last = self._person()
        dfirst, dlast = self._person()
        n = GoldTextBuilder()
        if fmt == "progress":
            n.add("Progress note. ").add(f"{first} {last}", "NAME").add(" is a ")
            n.add(self._age(), "AGE").add(" seen on ").add(self._date(), "DATE")
            n.add(" for follow-up of hypertension. ")
            self._record(n)
            n.add(".")
            self._filler(n, 2)
            n.add(" Dr. ").add(dlast, "NAME").add(" reviewed the results with ")
            n.add("Mr. ").add(last, "NAME")
            n.add(", who can be reached at ").add(self._phone(), "PHONE").add(".")
        elif fmt == "discharge":
            n.add("DISCHARGE SUMMARY\nPatient: ").add(f"{last.upper()}, {first}", "NAME")
            n.add("   ")
            self._record(n)
            n.add("\nAdmitted: ").add(self._date(), "DATE").add("   Discharged: ")
            n.add(self._date(), "DATE").add("\nAttending: ").add(f"{dfirst} {dlast}", "NAME")
            n.add(", MD\nThe patient is a ").add(self._age(), "AGE")
            n.add(" admitted with pneumonia.")
            self._filler(n, 2)
            n.add(" Call ").add(self._phone(), "PHONE").add(" with questions.")
        elif fmt == "phone":
            n.add("Telephone encounter ").add(self._date(), "DATE").add(". Mrs. ")
            n.add(last, "NAME").add(" called from ").add(self._phone(), "PHONE")
            n.add(" about her refill. Her daughter ").add(made_up_name(self.rng), "NAME")
            n.add(" can be reached at ").add(self._phone(), "PHONE").add(" or ")
            email = f"{first.lower()}.{last.lower()}{self._digits(2)}@" + \
                self._pick(["mailbox.example", "corvid.example", "zephyrmail.example"])
            n.add(email.encode("ascii", "ignore").decode() or "x@y.example", "EMAIL")
            n.add(". ")
            self._record(n)
            n.add(".")
            self._filler(n, 2)
        elif fmt == "referral":
            city = self._pick(_CITIES)
            n.add("Dear Dr. ").add(dlast, "NAME").add(",\nThank you for seeing ")
            n.add(f"{first} {last}", "NAME").add(", a ").add(self._age(), "AGE")
            n.add(" from ").add(city, "LOCATION").add(" (")
            n.add(f"{int(self.rng.integers(10, 9999))} {self._pick(_STREETS)} "
                  f"{self._pick(_STREET_TYPES)}", "LOCATION").add(", ")
            n.add(city, "LOCATION").add(f", {self._pick(_STATES)} ")
            n.add(self._digits(5), "LOCATION").add("), first seen on ")
            n.add(self._date(), "DATE").add(".")
            self._filler(n, 2)
            n.add("\nSincerely,\n").add(f"{dfirst} {dlast}", "NAME").add(", MD")
        else:  # triage
            n.add("ED TRIAGE ").add(self._date(), "DATE").add(": ")
            n.add(str(int(self.rng.integers(18, 90))) + " y/o", "AGE").add(" M, ")
            n.add(f"{last.upper()} {first.upper()}", "NAME").add(", ")
            self._record(n)
            n.add(", c/o chest pain x2 days, no fever. Contact wife at ")
            n.add(self._phone(), "PHONE").add(".")
            self._filler(n, 2)
        return GoldRecord(n.text, n.spans, fmt)

    def notes(self, n: int) -> list[GoldRecord]:
        return [self.note(self.FORMATS[i % len(self.FORMATS)]) for i in range(n)]


def generate_notes(n: int, seed: int = 0, names: str = "mixed") -> list[GoldRecord]:
    """``n`` notes, the formats in turn (module docstring)."""
    return NoteGenerator(seed, names).notes(n)
