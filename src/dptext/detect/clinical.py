"""Clinical content that looks like an identifier and is none: the spans de-identification keeps.

A note's diagnosis codes ("I48.91"), procedure codes ("CPT 99213"), doses ("40 mg",
"1/2 tab"), lab values ("K 3.9", "Hgb 11.2"), vital signs ("BP 128/76", "O2 sat 97%"), clock
times ("0800", "14:30", "2 pm"), section headers ("ADMISSION DATE:") and disease eponyms
("Crohn's disease", "Bell's palsy", "Homans sign", "Parkinson's") are the content a reader
needs, and each has the shape of something the detectors look for: a number, a date, a
capitalised surname. :func:`clinical_spans` finds them, by rules over public vocabularies:

- ICD-10-CM codes: the shape ``A00``-``Z99`` with an optional dot and up to four characters,
  kept when it is a code of the classification (``dptext/data/icd10cm_codes.txt.gz``, the
  98,225 codes of simple-icd-10-cm 1.5.0, MIT; the classification is CMS/NCHS's, public domain;
  ``tools/build_icd10cm_codes.py``), the dot optional in the text ("I4891");
- CPT and HCPCS codes: five characters (``99213``, ``0001F``, ``J1100``) after "CPT", "HCPCS",
  "procedure code" or in a run of them after one ("CPT 99213, 93000"), or before a diagnosis
  code on a billing line ("99285   O24.419"); and money ("$580.00");
- doses: a number with a dose or volume unit ("40 mg", "0.5mg/kg", "2 units", "1/2 tab", "10 mL");
- lab values and vital signs: a lab or vital abbreviation of :data:`LABS` or :data:`VITALS`
  with its value ("Na 138", "Cr: 1.2", "BP 128/76", "HR 88", "SpO2 97%", "T 37.2"), and the
  vital words themselves ("O2 sat");
- clock times: ``HH:MM`` (with "am"/"pm" or not), "2 pm", and four digits ``0000``-``2359``
  after a time word ("at 0800", "@1430", "0800 and 1430", "from 0800 to 1200") or before "h",
  "hrs", "hours";
- section headers: one to four words before a colon at the start of a line or of a field (after
  two spaces, a tab, "|" or ";"), each an ordinary English word or a clinical abbreviation
  ("ADMISSION DATE:", "Chief Complaint:"; never "OKAFOR:");
- disease eponyms of a curated list (:data:`EPONYMS`) before a clinical noun ("Crohn's
  disease", "Bell's palsy", "Homans sign", "Babinski reflex") or a finding ("Babinski
  negative"), and the possessive alone for diseases named so ("Parkinson's", "Alzheimer's"),
  except before a relative or a person word ("Parkinson's daughter") or after a title.

What de-identification does with them (:func:`dptext.detect.entities.EntityDetector`,
:class:`dptext.detect.residual.ResidualNet`): an NER entity or a residual token that lies inside
one of these spans is dropped (an NER date that is only clock times, "0800 and 1430", too), and
a generic identifier rule (``ID_NUMBER``) whose value is a code is dropped. A rule finding of
another kind, the user's deny list and patterns, and the other mentions of a name detected
elsewhere in the record (propagation) are never dropped: "Mr. Parkinson" is a name, and so is
"Parkinson's" in a record where he was named (recall first).
"""

from __future__ import annotations

import gzip
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

# ------------------------------------------------------------------ vocabularies
LABS = (
    "na", "k", "cl", "co2", "hco3", "bun", "cr", "creat", "creatinine", "glu", "glucose", "bg",
    "fsbg", "fingerstick", "ca", "mg", "phos", "alb", "albumin", "tp", "ast", "alt", "alp",
    "alk phos", "tbili", "t bili", "t. bili", "dbili", "bili", "ggt", "ldh", "lipase", "amylase",
    "wbc", "rbc", "hgb", "hb", "hct", "plt", "plts", "mcv", "rdw", "anc", "inr", "pt", "ptt",
    "aptt", "fibrinogen", "d-dimer", "ddimer", "trop", "troponin", "tni", "tnt", "ck", "ck-mb",
    "ckmb", "bnp", "nt-probnp", "probnp", "lactate", "lac", "ph", "pco2", "po2", "pao2", "paco2",
    "sao2", "be", "tsh", "ft4", "t4", "t3", "a1c", "hba1c", "hgba1c", "ldl", "hdl", "tg", "chol",
    "crp", "esr", "procalcitonin", "pct", "egfr", "gfr", "uric acid", "ammonia", "nh3", "iron",
    "ferritin", "tibc", "b12", "folate", "vit d", "psa", "cea", "afp", "ca-125", "hcg", "bhcg",
    "osm", "sg", "ua", "ketones", "anion gap", "ag", "ionized ca", "ica", "mag", "magnesium",
    "potassium", "sodium", "chloride", "bicarb", "hemoglobin", "hematocrit", "platelets",
)
VITALS = (
    "bp", "sbp", "dbp", "map", "hr", "pulse", "p", "rr", "resp", "t", "temp", "tmax", "tm",
    "spo2", "sao2", "o2 sat", "o2sat", "o2 sats", "sat", "sats", "pox", "pulse ox", "wt",
    "weight", "ht", "height", "bmi", "fio2", "peep", "gcs", "pain", "etco2",
)
_UNITS = (r"mg/kg/day|mg/kg/hr|mg/kg|mcg/kg/min|mcg/kg|units/kg|units/hr|mg/hr|mg/day|"
          r"mL/hr|ml/hr|mL/h|ml/h|mg/dL|mg/dl|g/dL|g/dl|mmol/L|mmol/l|mEq/L|meq/l|ng/mL|ng/ml|"
          r"pg/mL|pg/ml|IU/L|U/L|mcg|µg|ug|mg|mEq|meq|mmol|g|kg|mL|ml|L|cc|units?|IU|iu|u|"
          r"tabs?|tablets?|caps?|capsules?|puffs?|drops?|gtts?|sprays?|patch(?:es)?|"
          r"vials?|amps?|sachets?|%")
_DOSE = rf"(?<![\w.])(?:\d+(?:\.\d+)?|\.\d+|\d+/\d+)(?:-\d+(?:\.\d+)?)?[ \t]?(?:{_UNITS})(?![\w])"
# a reading: up to four digits (a record number after "pt" is none), a ratio, a unit
_NUMBER = (r"[<>]?=?[ \t]?\d{1,4}(?:\.\d+)?(?:/\d{1,3}(?:\.\d+)?)?"
           r"(?:[ \t]?(?:%|mmHg|bpm|C|F|°[CF]?|kg|lb|lbs|cm|in))?")

#: disease eponyms: the names of physicians and patients a disease, sign or test keeps
EPONYMS = (
    "Addison", "Alzheimer", "Apgar", "Apley", "Asperger", "Austin Flint", "Babinski", "Baker",
    "Barrett", "Osler", "Janeway", "Roth", "Levine", "Kehr", "Grey-Turner", "Virchow's",
    "Beck", "Behcet", "Behçet", "Bell", "Bence Jones", "Billroth", "Boerhaave", "Bouchard",
    "Braden", "Brudzinski", "Brugada", "Buerger", "Burkitt", "Chagas", "Cheyne-Stokes",
    "Child-Pugh", "Chvostek", "Colles", "Conn", "Crigler-Najjar", "Crohn", "Cullen",
    "Cushing", "de Quervain", "Dix-Hallpike", "Doppler", "Down", "Dressler", "Dubin-Johnson",
    "Dupuytren", "Ehlers-Danlos", "Eisenmenger", "Epley", "Epstein-Barr", "Ewing", "Fallot",
    "Finkelstein", "Foley", "Fowler", "Gilbert", "Glasgow", "Gleason", "Goodpasture", "Gram",
    "Graves", "Grey Turner", "Guillain-Barre", "Guillain-Barré", "Hartmann", "Hashimoto",
    "Heberden", "Heimlich", "Henoch-Schonlein", "Henoch-Schönlein", "Hirschsprung", "Hodgkin",
    "Hoffmann", "Holter", "Homan", "Homans", "Horner", "Huntington", "Jackson-Pratt",
    "Kaposi", "Kawasaki", "Kernig", "Killip", "Klinefelter", "Korsakoff", "Kussmaul",
    "Lachman", "Lasegue", "Legionnaires", "Lyme", "Lhermitte", "Lou Gehrig", "Ludwig",
    "Mallampati", "Mallory-Weiss", "Marfan", "McBurney", "McMurray", "Meckel", "Meniere",
    "Ménière", "Mobitz", "Morse", "Murphy", "Nissen", "Osgood-Schlatter", "Paget", "Pap",
    "Parkinson", "Patrick", "Pfannenstiel", "Phalen", "Prinzmetal", "Ranson", "Raynaud",
    "Reiter", "Reye", "Rinne", "Romberg", "Rovsing", "Roux-en-Y", "Schatzki", "Sjogren",
    "Sjögren", "Snellen", "Spurling", "Stevens-Johnson", "Still", "Swan-Ganz", "Takayasu",
    "Takotsubo", "Tanner", "Tinel", "Tourette", "Trendelenburg", "Trousseau", "Turner",
    "Valsalva", "Virchow", "Von Willebrand", "von Willebrand", "Weber", "Wegener", "Wells",
    "Wenckebach", "Wernicke", "Whipple", "Wilms", "Wilson", "Wolff-Parkinson-White", "Zenker",
    "Zollinger-Ellison",
)
#: eponyms that name a disease alone in the possessive ("Parkinson's", "Alzheimer's")
DISEASE_POSSESSIVES = (
    "Addison", "Alzheimer", "Asperger", "Crohn", "Cushing", "Graves", "Hashimoto", "Hodgkin",
    "Huntington", "Meniere", "Ménière", "Paget", "Parkinson", "Raynaud", "Sjogren", "Sjögren",
    "Tourette", "Wilson", "Kaposi", "Barrett",
)
_EPONYM_NOUNS = (
    "disease", "diseases", "syndrome", "palsy", "sign", "signs", "test", "tests", "maneuver",
    "manoeuvre", "phenomenon", "reflex", "triad", "tumor", "tumour", "lymphoma", "sarcoma",
    "fracture", "cyst", "contracture", "score", "scale", "stain", "position", "catheter",
    "monitor", "node", "ring", "tear", "diverticulum", "esophagus", "oesophagus", "ulcer",
    "angina", "respirations", "breathing", "procedure", "operation", "incision", "criteria",
    "classification", "type", "block", "fundoplication", "smear", "disorder", "encephalopathy",
    "psychosis", "thyroiditis", "chorea", "dementia", "anemia", "anaemia", "arteritis",
    "aneurysm", "hernia", "virus", "bodies", "body", "repair", "pouch", "point", "nodes",
    "nodules", "tenosynovitis", "thyroid", "ophthalmopathy", "gangrene", "neuralgia",
    "ileus", "exam", "examination", "coma scale", "drain", "bypass", "anastomosis",
    "lesions", "lesion", "spots", "murmur", "fall scale", "fall risk", "maneuvers",
)
_FINDINGS = ("negative", "positive", "neg", "pos", "equivocal", "present", "absent",
             "upgoing", "downgoing", "intact", "bilaterally", "normal", "abnormal", "+", "-")
_PERSON_AFTER = ("wife", "husband", "daughter", "son", "mother", "father", "family", "sister",
                 "brother", "children", "kids", "partner", "spouse", "house", "home", "office",
                 "phone", "number", "address", "account", "insurance", "daughter-in-law",
                 "son-in-law", "niece", "nephew", "caregiver", "friend")
_TITLE_BEFORE = re.compile(r"(?i)(?:\b(?:dr|mr|mrs|ms|miss|mx|prof|professor|doctor|nurse|"
                           r"patient|pt|dear|attn)\.?[ \t]+)$")


def _alts(words) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"[ \t]+")
                    for w in sorted(set(words), key=len, reverse=True))


_EPONYM_RE = re.compile(
    rf"(?<![\w'-])(?:{_alts(EPONYMS)})(?:'s|’s|s'|s)?[ \t]+"
    rf"(?i:(?:{_alts(_EPONYM_NOUNS)})(?![\w])|(?:{_alts(_FINDINGS[:-2])})(?![\w])|[+-](?![\w]))")
_POSSESSIVE_RE = re.compile(
    rf"(?<![\w'-])(?:{_alts(DISEASE_POSSESSIVES)})(?:'s|’s|s'|')(?![\w])"
    rf"(?![ \t]+(?i:{_alts(_PERSON_AFTER)})\b)")
_ICD = re.compile(r"(?<![\w.-])(?P<c>[A-TV-Z]\d[0-9A-Z])(?:(?P<dot>\.)?(?P<s>[0-9A-Z]{1,4}))?"
                  r"(?![\w-]|\.\w)")
_CPT_CONTEXT = re.compile(r"(?i)\b(?:cpt|hcpcs|procedure code|proc code|px code)s?\b")
_CPT = re.compile(r"(?<![\w-])(?:\d{4}[0-9FTU]|[A-V]\d{4})(?:-\d{2}|-[A-Z]{2})?(?![\w])")
_CPT_RUN = re.compile(r"[ \t]*(?:[:#,;/&]|and|-)?[ \t]*")
_DOSE_RE = re.compile(_DOSE)
# a procedure code on a billing line: five characters before a diagnosis code ("99285
# O24.419"), and money ("$580.00": no identifier)
_CPT_BEFORE_ICD = re.compile(r"(?<![\w-])(?:\d{4}[0-9FTU]|[A-V]\d{4})(?:-\w{2})?(?=[ \t|,;]+"
                             r"[A-TV-Z]\d[0-9A-Z](?:\.[0-9A-Z]{1,4})?(?![\w.-]))")
_MONEY = re.compile(r"\$[ \t]?\d[\d,]*(?:\.\d\d)?")
_MEASURE_RE = re.compile(
    rf"(?i)(?<![\w/])(?P<w>{_alts(LABS + VITALS)})(?![\w/])[ \t]*(?:[:=]|of|is|was)?[ \t]*"
    rf"(?P<v>{_NUMBER})(?![\w/])")
_VITAL_WORDS = re.compile(r"(?i)(?<![\w])(?:o2[ \t]?sats?|spo2|sao2|pulse[ \t]ox|bp|hr|rr)"
                          r"(?![\w])")
_PERCENT_ON = re.compile(r"(?i)(?<![\w.])\d{2,3}(?:\.\d)?[ \t]?%[ \t]+(?:on[ \t]+)?(?:ra|room air|"
                         r"\d+[ \t]?l(?:pm)?(?:[ \t]?nc)?|nc|bipap|cpap)\b")
_BP_ALONE = re.compile(r"(?<![\w/.-])(?:[6-9]\d|1\d\d|2[0-4]\d)/(?:[3-9]\d|1[0-4]\d)(?![\w/])"
                       r"(?=[ \t]*(?:mmhg|mm[ \t]hg)?)")
_CLOCK = re.compile(
    r"(?i)(?<![\w:/.-])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?"
    r"(?:[ \t]?(?:am|pm|a\.m\.|p\.m\.|h|hrs))?(?![\w:/])|"
    r"(?<![\w:/.-])(?:1[0-2]|0?[1-9])[ \t]?(?:am|pm|a\.m\.|p\.m\.)(?![\w])")
# four digits of a 24-hour clock; after a dash only in a range ("0800-1600", not "555-1430")
_MILITARY = re.compile(r"(?<![\w:/.,])(?:(?<!-)|(?<=(?<!\d)\d{4}-))(?:[01]\d|2[0-3])[0-5]\d"
                       r"(?![\w:/]|-(?!\d{4}(?!\d))|\.\d)")
_TIME_BEFORE = re.compile(r"(?i)(?:\b(?:at|@|by|until|till|til|from|to|between|and|around|"
                          r"approx|approximately|since|before|after|starting|start|time|"
                          r"hrs|scheduled|given|due|q)|@|~|-|"
                          r"\d{1,4}[/-]\d{1,2}[/-]\d{2,4})[ \t]*:?[ \t]*$")  # "1/21/21 0400"
_TIME_AFTER = re.compile(r"(?i)[ \t]*(?:h|hr|hrs|hours|hours'|military|-[ \t]*(?:[01]\d|2[0-3])"
                         r"[0-5]\d|(?:and|to)[ \t]+(?:[01]\d|2[0-3])[0-5]\d)\b")
_HEADER = re.compile(r"(?m)(?:^|(?<=[ \t]{2})|(?<=[|\t;]))[ \t]*"
                     r"(?P<h>[A-Za-z][A-Za-z/&'-]*(?:[ \t][A-Za-z/&'-]+){0,3}):")


@dataclass(frozen=True, slots=True)
class ClinicalSpan:
    """A span of clinical content: ``[start, end)`` and its kind (``icd``, ``cpt``, ``dose``,
    ``lab``, ``vital``, ``time``, ``header``, ``eponym``, ``money``)."""

    start: int
    end: int
    kind: str


@cache
def icd10cm_codes() -> frozenset[str]:
    """The ICD-10-CM codes (module docstring), with their dot, upper case."""
    data = files("dptext").joinpath("data/icd10cm_codes.txt.gz").read_bytes()
    return frozenset(line for line in gzip.decompress(data).decode().splitlines()
                     if line and not line.startswith("#"))


def _icd(m: re.Match) -> bool:
    code = m.group("c") + ("." + m.group("s") if m.group("s") else "")
    return code in icd10cm_codes()


def _header_words(words: str) -> bool:
    """Ordinary words or clinical abbreviations, no relative or title before another word
    ("Daughter Will:" is a relative's name, "Dr Hope:" a doctor's)."""
    from dptext.detect.vocabulary import TITLE_WORDS, frequent_words, is_clinical

    parts = [p for p in re.split(r"[ \t/&'-]+", words) if p]
    if any(p.casefold() in _ANNOUNCERS for p in parts[:-1]):
        return False
    return bool(parts) and all(p.casefold() in frequent_words() or is_clinical(p)
                               or p.casefold() in _HEADER_WORDS for p in parts) \
        and parts[-1].casefold() not in TITLE_WORDS


def clinical_spans(text: str) -> list[ClinicalSpan]:
    """The clinical look-alikes of ``text`` (module docstring), sorted by start."""
    out: list[ClinicalSpan] = []
    add = out.append
    for m in _ICD.finditer(text):
        if _icd(m):
            add(ClinicalSpan(m.start(), m.end(), "icd"))
    for c in _CPT_CONTEXT.finditer(text):
        pos = c.end()
        while True:
            gap = _CPT_RUN.match(text, pos)
            m = _CPT.match(text, gap.end()) if gap else None
            if m is None or m.start() - pos > 24:
                break
            add(ClinicalSpan(m.start(), m.end(), "cpt"))
            pos = m.end()
    for m in _CPT_BEFORE_ICD.finditer(text):
        add(ClinicalSpan(m.start(), m.end(), "cpt"))
    for m in _MONEY.finditer(text):
        add(ClinicalSpan(m.start(), m.end(), "money"))
    for m in _DOSE_RE.finditer(text):
        add(ClinicalSpan(m.start(), m.end(), "dose"))
    for m in _MEASURE_RE.finditer(text):
        word = " ".join(m.group("w").casefold().split())
        add(ClinicalSpan(m.start(), m.end(), "vital" if word in _VITAL_SET else "lab"))
    for rx, kind in ((_VITAL_WORDS, "vital"), (_PERCENT_ON, "vital"), (_BP_ALONE, "vital"),
                     (_CLOCK, "time")):
        for m in rx.finditer(text):
            add(ClinicalSpan(m.start(), m.end(), kind))
    for m in _MILITARY.finditer(text):
        if _TIME_BEFORE.search(text[max(0, m.start() - 16):m.start()]) or \
                _TIME_AFTER.match(text, m.end()):
            add(ClinicalSpan(m.start(), m.end(), "time"))
    for m in _HEADER.finditer(text):
        if _header_words(m.group("h")):
            add(ClinicalSpan(m.start("h"), m.end("h"), "header"))
    for m in _EPONYM_RE.finditer(text):
        if not _TITLE_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            add(ClinicalSpan(m.start(), m.end(), "eponym"))
    for m in _POSSESSIVE_RE.finditer(text):
        if not _TITLE_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            add(ClinicalSpan(m.start(), m.end(), "eponym"))
    out.sort(key=lambda s: (s.start, -s.end))
    return out


_VITAL_SET = frozenset(VITALS)
# header words that some public name list also holds ("Date", "Sex")
_HEADER_WORDS = frozenset("date dates time name sex gender age dob mrn unit room bed service "
                          "diagnosis diagnoses procedure findings impression plan allergies "
                          "code codes reason status type source result results ssn phone fax "
                          "email address city state zip county".split())
_ANNOUNCERS = frozenset(
    "wife husband spouse partner son daughter mother father mom dad sister brother niece nephew "
    "aunt uncle cousin grandson granddaughter grandmother grandfather friend neighbor caregiver "
    "guardian dr mr mrs ms miss mx prof doctor nurse rn np pa md attending resident pt patient "
    "per by".split())


class Coverage:
    """Which characters of a text clinical spans cover (a byte per character), to ask whether a
    span lies inside them in O(length of the span)."""

    def __init__(self, text: str, spans: list[ClinicalSpan] | None = None) -> None:
        self.spans = clinical_spans(text) if spans is None else spans
        self.mask = bytearray(len(text))
        for s in self.spans:
            self.mask[s.start:s.end] = b"\x01" * (s.end - s.start)
        self._starts = [s.start for s in self.spans]

    def inside(self, start: int, end: int) -> bool:
        """Whether every character of ``[start, end)`` is clinical content."""
        return end > start and self.mask.find(0, start, end) < 0

    def kind_at(self, start: int, end: int) -> str | None:
        """The kind of a clinical span that holds ``[start, end)`` whole, or None."""
        i = bisect_right(self._starts, start)
        for s in reversed(self.spans[max(0, i - 8):i]):
            if s.start <= start and end <= s.end:
                return s.kind
        return None

    def only_clinical(self, text: str, start: int, end: int) -> bool:
        """Whether the words of ``text[start:end]`` outside clinical spans are only
        connectors or clinical abbreviations ("0800 and 1430", "at 14:30", "Hx Parkinson's")."""
        from dptext.detect.vocabulary import is_clinical

        if end <= start or self.mask.find(1, start, end) < 0:
            return False
        rest = "".join(c if not self.mask[i] else " " for i, c in
                       enumerate(text[start:end], start))
        return all(w.casefold() in _CONNECTORS or is_clinical(w) for w in _ALNUM.findall(rest))

    def trim(self, text: str, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` less the words at its edges that are clinical content ("DOB" of
        an NER name "Nguyen Thi Lan   DOB" that ran into the next header)."""
        words = [(m.start() + start, m.end() + start)
                 for m in _EDGE_WORD.finditer(text[start:end])]
        while words and self.inside(*words[-1]):
            words.pop()
        while words and self.inside(*words[0]):
            words.pop(0)
        if not words:
            return start, start
        return max(start, words[0][0]), min(end, words[-1][1])


_ALNUM = re.compile(r"[^\W_]+")
_EDGE_WORD = re.compile(r"\S+")
_CONNECTORS = frozenset("and or to at from between until till by on of the a an h hrs hr am pm "
                        "then x approx about around".split())
