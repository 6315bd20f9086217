"""Name evidence that generalizes (issue 44 item 3): names after the words clinical notes
announce them with, in key-value headers, in table cells and CSV lines, a relative's name that
is an ordinary word, names in another script; and the short dates of notes ("on 2/1", "the
6th"). Each is one class here and one line of the table
(:data:`dptext.detect.recognizers.builtin.RECOGNIZERS`).

Name evidence is weighed, never one list alone: a capitalised word (or one of the 105
countries' name lists, :mod:`dptext.detect.namelists`, outside the frequent English words)
right after an announcer; a relative's name in capitals whatever the word ("granddaughter
Will"); a header's value made of name-shaped words; a table column most of whose cells are
listed names. Clinical vocabulary (:func:`dptext.detect.vocabulary.is_clinical`) is never a
name here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dptext.detect.entities import Entity
from dptext.detect.recognizers.atoms import _LO, _UP
from dptext.detect.recognizers.base import Recognizer

# a name word: capitalised or capitals, hyphens and apostrophes inside ("Nguyen", "O'Neil",
# "Ferndale-Ostrowski", "OKAFOR"), or an initial with its period ("M.")
_CAP = rf"[{_UP}][{_LO}{_UP}'’-]*[{_LO}{_UP}]|[{_UP}]\.?"
_WORD_RUN = rf"(?:{_CAP})(?:[ \t]+(?:{_CAP})){{0,3}}"
_LOWER_WORD = rf"[{_LO}][{_LO}'-]+"

# words that announce a name after them, any case ("Triage RN", "Dictated by:", "pt's
# daughter", "per", "Attending:")
_ANNOUNCERS = (
    "triage rn", "charge rn", "charge nurse", "primary rn", "rn", "lpn", "np", "pa-c",
    "cna", "crna", "np-c", "aprn", "attending", "attending physician", "resident",
    "intern", "fellow", "surgeon", "anesthesiologist", "physician", "provider", "pcp",
    "referring", "referring physician", "referring provider", "consultant", "consulting",
    "dictated by", "transcribed by", "signed by", "electronically signed by", "reviewed by",
    "entered by", "seen by", "seen with", "examined by", "evaluated by", "cosigned by",
    "co-signed by", "verified by", "authored by", "written by", "prepared by", "read by",
    "interpreted by", "ordered by", "performed by", "spoke with", "spoke to", "talked to",
    "talked with", "discussed with", "per", "cc", "pt", "pt's", "patient", "patient's", "name",
    "patient name", "pt name", "guarantor", "subscriber", "insured", "emergency contact",
    "next of kin", "nok", "contact", "informant", "interpreter", "chaperone", "scribe",
    "nurse", "therapist", "pharmacist", "social worker", "case manager",
    "dr", "dr.", "doctor", "mr", "mrs", "ms", "miss", "mx",
)
_RELATIVES = (
    "wife", "husband", "spouse", "partner", "son", "daughter", "mother", "father", "mom", "dad",
    "sister", "brother", "niece", "nephew", "aunt", "uncle", "cousin", "grandson",
    "granddaughter", "grandmother", "grandfather", "grandma", "grandpa", "stepson",
    "stepdaughter", "stepmother", "stepfather", "fiance", "fiancee", "fiancé", "fiancée",
    "boyfriend", "girlfriend", "friend", "neighbor", "neighbour", "caregiver", "guardian",
    "roommate", "son-in-law", "daughter-in-law", "mother-in-law", "father-in-law", "sibling",
    "child", "grandchild", "godson", "goddaughter", "companion", "hcp", "poa", "proxy",
)
# not a name after an announcer: function words and the words that follow a relative
_NOT_NAMES = frozenset("""
i a an the and or but is was are were be been has had have will would can could may might
at in on to of for with by from as if then that this these those who whom which what when
where how not no yes he she they we you it his her their our your its him them us me my mr
mrs ms dr called calls notified aware present here there states stated says said reports
reported is at bedside updated informed agrees agreed requests requested wants declined
phone via today tonight yesterday tomorrow also again already still all both each none
unknown none n/a na unk deceased alive lives living home out in-house over see note per
""".split())
# never a relative's name: the words that follow a relative in a sentence
_FUNCTION = frozenset("""
i a an the and or but is was are were be been has had have at in on to of for with by from as
if then that this who which he she they we you it his her their our your its him them us me my
called calls notified aware present states stated says said reports reported updated informed
agrees agreed requests requested wants declined via also deceased alive lives living not no
""".split())
_LEAD = re.compile(r"[ \t]*(?:'s|’s)?[ \t]*(?:[:#,-][ \t]*)?")


def _alternation(words) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"[ \t]+")
                    for w in sorted(set(words), key=len, reverse=True))


_ANNOUNCED = re.compile(rf"(?i)(?<![\w'-])(?:{_alternation(_ANNOUNCERS)})(?![\w])")
_RELATIVE = re.compile(rf"(?i)(?<![\w'-])(?:{_alternation(_RELATIVES)})s?(?![\w-])")
_CAP_RUN = re.compile(_WORD_RUN)
_LOWER_RUN = re.compile(rf"{_LOWER_WORD}(?:[ \t]+{_LOWER_WORD}){{0,2}}")


def _name_word(word: str, *, strong: bool) -> bool:
    """A capitalised word of a name (not a function word, not clinical vocabulary or a
    section header word in capitals); ``strong``: after a relative, an ordinary word in
    capitals is a name too ("Will")."""
    from dptext.detect.vocabulary import TITLE_WORDS, frequent_words, is_clinical

    core = word.strip(".'’-")
    low = core.casefold()
    if not core or low in TITLE_WORDS or is_clinical(core) or \
            low in (_FUNCTION if strong else _NOT_NAMES):
        return False
    if len(core) == 1:  # an initial
        return word.endswith(".") or strong
    if core.isupper() and len(core) <= 4 and low in frequent_words():
        return False  # "NO", "PAIN"
    if strong:  # a relative's name in capitals, whatever the word ("Will", "Hope")
        return not core.isupper() or len(core) > 4
    from dptext.detect.namelists import everyday_words, listed

    # after an announcer: a word outside the frequent words (names of the public lists are
    # not among them: "Will", "Smith"), or a listed name that is no everyday word ("Xu")
    return low not in frequent_words() or (listed(low) and low not in everyday_words())


def _lower_name(word: str) -> bool:
    """A lower-case word of the 105 countries' name lists outside the frequent English words
    ("pt lan", "per chidi")."""
    from dptext.detect.namelists import rare_listed
    from dptext.detect.vocabulary import is_clinical

    return word.casefold() in rare_listed() and not is_clinical(word)


def _take_run(text: str, start: int, *, strong: bool) -> tuple[int, int] | None:
    """The name run of one to four words starting at ``start`` (capitalised, or listed names
    in lower case), stopping at the first word that is not a name."""
    m = _CAP_RUN.match(text, start)
    if m is not None:
        end = None
        for w in re.finditer(r"\S+", m.group()):
            if not _name_word(w.group(), strong=strong or end is not None):
                break
            end = start + w.end()
        if end is not None and any(c.isalpha() for c in text[start:end]):
            # a lone initial is no name without its surname
            if len(text[start:end].rstrip(".")) <= 1 and not strong:
                return None
            return start, end
        return None
    m = _LOWER_RUN.match(text, start)
    if m is None:
        return None
    end = None
    for w in re.finditer(r"\S+", m.group()):
        if not _lower_name(w.group()):
            break
        end = start + w.end()
    return (start, end) if end is not None else None


@dataclass
class AnnouncedNameRecognizer(Recognizer):
    """A name right after a word that announces one, in any case: a role ("Triage RN M.
    Okonkwo", "NP Tran", "Attending: Xu"), authorship ("Dictated by: Amadou Diallo"), "pt",
    "pt's daughter", "per", "spoke with", a relative ("granddaughter Will", "Wife Will
    notified": a relative's name in capitals is a name whatever the word). One to four words:
    capitalised name words (not function words, clinical vocabulary or titles) or, in lower
    case, names of the 105 countries' lists outside the frequent English words."""

    def find(self, text: str) -> list[Entity]:
        out = []
        for rx, strong in ((_ANNOUNCED, False), (_RELATIVE, True)):
            for c in rx.finditer(text):
                lead = _LEAD.match(text, c.end())
                at = lead.end()
                if at == c.end() and at < len(text) and not text[at].isspace() and \
                        text[at] not in ":#,":
                    continue
                # "pt's daughter Will": the relative's own match takes it
                got = _take_run(text, at, strong=strong)
                if got is not None:
                    out.append(self._entity(text, *got))
        return out


# ------------------------------------------------------------------ key-value headers
_KEYS = ("patient", "patient name", "pt name", "name", "pt", "guarantor", "subscriber",
         "insured", "member", "member name", "emergency contact", "next of kin", "nok",
         "contact", "mother", "father", "spouse", "parent", "guardian", "attending",
         "attending physician", "physician", "provider", "pcp", "primary care", "referring",
         "referring physician", "referred by", "ordering physician", "ordering provider",
         "surgeon", "resident", "nurse", "rn", "np", "signed", "signature", "dictated by",
         "transcribed by", "author", "cc", "to", "from", "re", "consultant", "radiologist",
         "reading physician", "interpreting physician", "technologist", "tech", "pharmacist",
         "caregiver", "responsible party", "policy holder", "policyholder", "informant")
_KEY = re.compile(rf"(?im)(?:^|(?<=[ \t|;,]))(?:{_alternation(_KEYS)})[ \t]*[:=][ \t]*")
_VALUE = re.compile(r"[^\n|;\t]*?(?=[ \t]{2,}|[|;\t\n]|$|[ \t]+[A-Za-z][\w /]{0,24}:)")
_LAST_FIRST = re.compile(rf"[{_UP}][{_LO}{_UP}'’-]+,[ \t]*(?:{_CAP})(?:[ \t]+(?:{_CAP})){{0,2}}")


def _value_is_name(value: str) -> bool:
    """1-4 name-shaped words (capitalised or capitals, "LAST, First"), none of them clinical
    vocabulary or a function word, at least one outside the frequent English words or a
    listed name."""
    from dptext.detect.namelists import rare_listed
    from dptext.detect.vocabulary import TITLE_WORDS, frequent_words, is_clinical

    words = [w.strip(".,'’") for w in value.split()]
    words = [w for w in words if w and w.casefold() not in TITLE_WORDS]
    if not 1 <= len(words) <= 4:
        return False
    if not all(w[0].isupper() and w.replace("-", "").replace("'", "").isalpha()
               for w in words):
        return False
    if any(w.casefold() in _NOT_NAMES or is_clinical(w) for w in words if len(w) > 1):
        return False
    return any(len(w) > 1 and (w.casefold() not in frequent_words()
                               or w.casefold() in rare_listed()) for w in words)


@dataclass
class KeyValueNameRecognizer(Recognizer):
    """The value of a name key in a header block or a form ("Patient: First-First Last
    DOB: ...", "Guarantor: LAST, First | Phone ...", "PCP: Dr. Ada Obi"): up to two spaces, a
    tab, "|", ";", the line's end or the next "Key:", when it is one to four name-shaped
    words (:func:`_value_is_name`)."""

    def find(self, text: str) -> list[Entity]:
        out = []
        for k in _KEY.finditer(text):
            v = _VALUE.match(text, k.end())
            if v is None:
                continue
            value = v.group().rstrip(" \t.,")
            if value and _value_is_name(value):
                out.append(self._entity(text, v.start(), v.start() + len(value)))
        return out


# ------------------------------------------------------------------ tables and CSV lines
_CELL_WORD = re.compile(rf"[{_UP}][{_LO}{_UP}'’-]+")


def _cells(line: str, sep: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for part in line.split(sep):
        out.append((pos, pos + len(part)))
        pos += len(part) + 1
    return out


def _cell_listed(cell: str) -> bool:
    from dptext.detect.namelists import rare_listed

    return any(w.casefold() in rare_listed() for w in _CELL_WORD.findall(cell))


@dataclass
class TableNameRecognizer(Recognizer):
    """Names in the cells of table rows ("| Tran, Minh | 45 | ...") and CSV lines
    ("1,Okafor,Chidi,555-0142"): lines with the same separator ("|", a tab or ",") make a
    table; a column most of whose non-empty cells hold a listed name (of the 105 countries'
    lists, outside the frequent English words) is a column of names, and each of its cells
    made of name-shaped words (:func:`_value_is_name`) is a name;
    in any table, a cell of name-shaped words with a listed name is a name too."""

    def find(self, text: str) -> list[Entity]:
        out: list[Entity] = []
        lines, pos = [], 0
        for line in text.split("\n"):
            lines.append((pos, line))
            pos += len(line) + 1
        for sep in ("|", "\t", ","):
            rows = [(at, line) for at, line in lines if line.count(sep) >= 2]
            if len(rows) < 1 or (sep == "," and len(rows) < 2):
                continue
            columns: dict[int, list[tuple[int, int, str]]] = {}
            for at, line in rows:
                for i, (a, b) in enumerate(_cells(line, sep)):
                    cell = line[a:b]
                    core = cell.strip(" \"'")
                    if core:
                        s = at + a + cell.find(core)
                        columns.setdefault(i, []).append((s, s + len(core), core))
            for cells in columns.values():
                named = [c for c in cells if _cell_listed(c[2]) and _value_is_name(c[2])]
                column = len(named) >= 2 and 2 * len(named) >= len(cells)
                for s, e, core in cells:
                    if (column and _value_is_name(core)) or (s, e, core) in named:
                        out.append(self._entity(text, s, e))
        return out


# ------------------------------------------------------------------ other scripts
_OTHER_SCRIPT = re.compile(
    r"[\u4e00-\u9fff\u3400-\u4dbf\u3040-\u30ff\uac00-\ud7af\u1100-\u11ff]+"  # CJK, kana, Hangul
    r"|[\u0400-\u04ff]{2,}(?:[ \t]+[\u0400-\u04ff]{2,}){0,3}"  # Cyrillic words
    r"|[\u0600-\u06ff\u0750-\u077f]{2,}(?:[ \t]+[\u0600-\u06ff\u0750-\u077f]{2,}){0,3}"  # Arabic
    r"|[\u0590-\u05ff]{2,}(?:[ \t]+[\u0590-\u05ff]{2,}){0,3}"  # Hebrew
    r"|[\u0900-\u097f]{2,}(?:[ \t]+[\u0900-\u097f]{2,}){0,3}"  # Devanagari
    r"|[\u0e00-\u0e7f]{2,}")  # Thai


@dataclass
class OtherScriptRecognizer(Recognizer):
    """A run of CJK, kana, Hangul, Cyrillic, Arabic, Hebrew, Devanagari or Thai letters inside
    a text written mostly in Latin letters: in an English note, such a run is a name or a
    place written in its own script ("王伟", "Иванов")."""

    def find(self, text: str) -> list[Entity]:
        runs = list(_OTHER_SCRIPT.finditer(text))
        if not runs:
            return []
        other = sum(m.end() - m.start() for m in runs)
        latin = sum(c.isascii() and c.isalpha() for c in text)
        if other >= latin:  # a text in that script: the language gate's, not a name
            return []
        return [self._entity(text, m.start(), m.end()) for m in runs]


# ------------------------------------------------------------------ short dates
_SHORT_DATE = re.compile(
    r"(?i)\b(?:on|since|from|until|till|thru|through|by|before|after|dated|dos|seen|"
    r"admitted|discharged|started|stopped|last|next|to|and)[ \t]+(?P<v>"
    r"(?:[1-9]|1[0-2])/(?:[1-9]|[12]\d|3[01])(?![\w/]|\.\d|[ \t]*(?:tabs?|tablets?|caps?|mg|ml|"
    r"units?|strength|dose|ns|nss|normal|of)))")
_ORDINAL_DATE = re.compile(
    r"(?i)\b(?:(?:on|since|by|until|from|before|after|through|thru)[ \t]+)?the[ \t]+"
    r"(?:[1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b(?![ \t]+(?:rib|ribs|nerve|cranial|floor|grade|"
    r"percentile|decade|week|day|time|dose|cycle|digit|toe|finger|intercostal|ics|vertebra|"
    r"street|st|avenue|ave|lumbar|cervical|thoracic|metatarsal|metacarpal|trimester|hour|"
    r"visit|session|month|year|century|round|attempt|place|generation|edition|ward|"
    r"percent|episode|admission|line|layer|centile|of[ \t]+\w+[ \t]+(?:rib|nerve|digit)))")


@dataclass
class ShortDateRecognizer(Recognizer):
    """Dates notes write short: a month/day after a word that dates it ("on 2/1", "since
    12/3", "seen 4/15"; never "1/2 tab"), and a day of the month as an ordinary number ("on the
    6th", "the 21st"; not "the 5th rib", "the 6th cranial nerve")."""

    def find(self, text: str) -> list[Entity]:
        out = [self._entity(text, *m.span("v")) for m in _SHORT_DATE.finditer(text)]
        for m in _ORDINAL_DATE.finditer(text):
            day = re.search(r"(?i)the[ \t]+\d", m.group())
            out.append(self._entity(text, m.start() + day.start(), m.end()))
        return out
