"""The residual net (Philter's allow-list idea): what no detector claimed but is not an ordinary
word is treated as an identifier of category ``RESIDUAL``.

A token outside every detected span is residual when it is

- a capitalised word (or an all-capitals one) that is not in the public vocabulary of common
  words - the 100,000 most frequent English words of ``wordfreq`` *minus* every first name and
  surname of Faker's per-locale name lists (86 locales, about 30,000 names, MIT licence) -
  so "Ferndale-Ostrowski", "Villegas" and "Brown" are residual, "Patient" and "Denies" are not
  (nor the recognizers' context words: "MRN", "SSN", "Acct");
- any token with a run of three or more digits (record numbers, extensions, codes), except a
  lone year (1900-2099, which Safe Harbor keeps) and a measurement ("500 mg", "98.6");
- a token with ``@``, or a mixed letter-digit shape ("FB59", "VP-559A"), except a number with a
  unit glued on ("5mg", "10mL", "3rd").

Lower-case words are never residual: a lower-case name ("holmes" in a dictation line) is left
to the recognizers. The vocabulary is built once per process (about 1.5 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache

from dptext.detect.categories import RESIDUAL
from dptext.detect.entities import Entity

VOCABULARY_SIZE = 100_000
_TOKEN = re.compile(r"[^\s]+")
_EDGE = re.compile(r"^[^\w@+]+|[^\w@]+$")
_DIGIT_RUN = re.compile(r"\d{3,}")
_YEAR = re.compile(r"(?:19|20)\d\d(?:s|'s)?")
_MEASURE = re.compile(r"\d+(?:[.,]\d+)+")
_UNITS = ("mg|mcg|ug|g|kg|ml|l|dl|cc|cm|mm|km|m|h|hr|hrs|min|mins|sec|s|x|d|wk|wks|mo|yr|yrs|"
          "mmhg|bpm|lb|lbs|oz|iu|u|units?|meq|mmol|st|nd|rd|th|am|pm|f|c|%")
_WITH_UNIT = re.compile(rf"(?i)\d+(?:\.\d+)?(?:{_UNITS})")
UNIT_AFTER = re.compile(rf"(?i)\s*(?:{_UNITS}|percent|mg/dl|mg/kg|ml/h|mmhg|degrees|tabs?|"
                         r"tablets?|pills?|cells|beats|puffs|drops|hours?|days?|weeks?|months?|"
                         r"years?|times|minutes?|seconds?|cc|ml|kcal|calories)\b")


@cache
def name_list() -> frozenset[str]:
    """First names and surnames of every Faker locale, ASCII letters only, case-folded."""
    import importlib
    import pkgutil

    import faker.providers.person as person

    out: set[str] = set()
    for m in pkgutil.iter_modules(person.__path__):
        try:
            provider = importlib.import_module(f"{person.__name__}.{m.name}").Provider
        except Exception:  # noqa: BLE001 - a locale module that does not import is skipped
            continue
        for attr in ("first_names", "first_names_male", "first_names_female",
                     "first_names_nonbinary", "last_names"):
            values = getattr(provider, attr, None)
            if isinstance(values, dict | list | tuple | set | frozenset):
                out.update(v.casefold() for v in values
                           if isinstance(v, str) and v.isascii()
                           and v.replace("-", "").replace("'", "").isalpha())
    return frozenset(out)


# Clinical vocabulary that is no identifier (a general list of standard abbreviations of
# clinical notes - dosing, examination, conditions, tests, procedures, units and wards - and
# the USAN stems that end drug names): the residual net and the leak check take these words as
# ordinary, and in de-identification mode an NER entity made only of them ("PO", "MG", "QD"
# as ORG; "Prednisone" as PERSON) is dropped. Public knowledge, not built from any data set.
CLINICAL_ABBREVIATIONS = frozenset("""
po iv im sc sq sl pr ng gt qd qod bid tid qid qhs qam qpm qh q4h q6h q8h q12h prn ac pc hs stat
mg mcg ug ml meq mmol iu gm kg tab tabs cap caps susp soln inj neb mdi er sr xl xr dr ec od os
heent perrla perrl eomi ncat ctab cta rrr nt nd bs nabs cva cvat rom dtr dtrs wnl nad aox3 a&o
htn dm dm2 iddm niddm cad chf copd ckd esrd mi nstemi stemi cva tia dvt pe gerd uti uri sob
pnd cp ra oa sle ms als hiv hcv hbv tb afib af aflutter svt vt vf rbbb lbbb lvh lvef ef avr mvr
aaa pvd pad bph osa ards aki arf cri hld hl dlp obesity bmi nkda nka adl adls iadl iadls loc
ecg ekg cxr ct cta mri mra us tte tee echo eeg emg pft pfts abg vbg cbc bmp cmp lft lfts inr pt
ptt aptt bun cr gfr egfr tsh t3 t4 ft4 hba1c a1c ldl hdl tg flp psa ua ucx bcx esr crp bnp
trop ck ckmb mibi spect pet dexa kub egd ercp tte cabg pci ptca turp tah bso lap chole appy
orif tka tha icu ccu micu sicu nicu picu ed er or pacu pcp rn np pa md do pt ot slp snf ltac
rehab dnr dni polst hcp poa hpi pmh psh fh sh ros ros a/p s/p c/o r/o h/o f/u w/u d/c dc
b12 d3 k kcl mgso4 nacl d5w ns lr nph ppi ssri snri nsaid nsaids ace arb bb ccb asa apap
hctz ntg mtx hcq ivig tpa lmwh ufh coumadin lasix
""".split())
_DRUG_STEM = re.compile(
    r"(?i)[a-z]{2,}(?:olol|pril|sartan|statin|prazole|oxacin|cillin|mycin|cycline|dipine|"
    r"tidine|azepam|azolam|triptan|gliptin|gliflozin|parin|xaban|gatran|mab|tinib|vudine|"
    r"conazole|terol|sone|olone|chloroquine|semide|thiazide|formin|glitazone|oxetine|"
    r"pramine|triptyline|peridol|apine|idone|setron|lukast|tadine|afil|dronate|caine|"
    r"profen|coxib|fenac|codone|morphone|tropium|azosin|osin|tiazem|amil|arone|ipine)")


def is_clinical(word: str) -> bool:
    """Whether ``word`` is clinical vocabulary (an abbreviation above or a drug-name stem); a
    word that is also a first name or surname of the public lists (:func:`name_list`: "Ed",
    "Tia", "Aki") only when written in capitals ("ED", "TIA")."""
    low = word.casefold().rstrip(".")
    if low in name_list() and not (word.isupper() and low in CLINICAL_ABBREVIATIONS):
        return False
    return low in CLINICAL_ABBREVIATIONS or (len(low) >= 7 and bool(_DRUG_STEM.fullmatch(low)))


@cache
def common_words() -> frozenset[str]:
    """The public vocabulary of ordinary words (module docstring)."""
    import wordfreq

    from dptext.detect.recognizers import ID_CONTEXTS
    from dptext.text import NAME_STOPWORDS, default_stopwords

    names = name_list()
    vocab = {w for w in wordfreq.top_n_list("en", VOCABULARY_SIZE) if w not in names}
    # the context words of the identifier recognizers ("MRN", "SSN", "acct") are not names
    context = {w for words in ID_CONTEXTS.values() for w in words if w.isalpha()}
    return frozenset(vocab | default_stopwords() | NAME_STOPWORDS | context)


@dataclass
class ResidualNet:
    """Finds residual tokens (module docstring) outside the given spans. ``allow``: words that
    are never identifiers (case-folded); ``vocabulary``: the ordinary words (default
    :func:`common_words`)."""

    allow: frozenset[str] = frozenset()
    vocabulary: frozenset[str] | None = None
    _vocab: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # an allowed phrase allows its words
        self.allow = frozenset(w for a in self.allow for w in [a.casefold(),
                                                               *a.casefold().split()])
        self._vocab = self.vocabulary if self.vocabulary is not None else common_words()

    def is_residual(self, token: str, after: str = "") -> bool:
        """Whether one token (edge punctuation already stripped) is residual; ``after``: the
        text that follows it (a unit after a number)."""
        low = token.casefold()
        if not token or low in self.allow:
            return False
        if "@" in token:
            return True
        has_digit = any(c.isdigit() for c in token)
        has_alpha = any(c.isalpha() for c in token)
        if has_digit and has_alpha:
            return not _WITH_UNIT.fullmatch(token)
        if has_digit:
            if not _DIGIT_RUN.search(token):
                return False
            if _YEAR.fullmatch(token) or _MEASURE.fullmatch(token):
                return False
            return not (token.isdigit() and UNIT_AFTER.match(after))
        if not token[0].isupper():
            return False
        for part in re.split(r"[-/']", token):
            low = part.casefold()
            if low in ("s", "") or low in self._vocab or low in self.allow or is_clinical(part):
                continue
            return True
        return False

    def find(self, text: str, spans: Sequence = ()) -> list[Entity]:
        """Residual tokens of ``text`` outside ``spans`` (objects with ``start``/``end``)."""
        covered = sorted((s.start, s.end) for s in spans)
        out, j = [], 0
        for m in _TOKEN.finditer(text):
            raw = m.group()
            lead = len(raw) - len(_EDGE.sub("", raw, count=1)) if raw else 0
            core = _EDGE.sub("", raw)
            if not core:
                continue
            start = m.start() + (raw.find(core) if lead else 0)
            end = start + len(core)
            while j < len(covered) and covered[j][1] <= start:
                j += 1
            if any(a < end and start < b for a, b in covered[j:j + 3]):
                continue
            if self.is_residual(core, text[end:end + 16]):
                out.append(Entity(core.casefold(), RESIDUAL, start, end))
        return out

    def find_many(self, texts: Iterable[str], spans: Iterable[Sequence]) -> list[list[Entity]]:
        return [self.find(t, s) for t, s in zip(texts, spans, strict=True)]
