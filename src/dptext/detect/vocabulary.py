"""The public vocabulary the detectors, the residual net and the leak check share: first names
and surnames of the public lists (:func:`name_list`), clinical vocabulary that is no identifier
(:func:`is_clinical`), the context words of the identifier recognizers (``ID_CONTEXTS``) and the
ordinary words (:func:`common_words`). A leaf of ``detect/``: it imports no other detect module,
so entities, recognizers and residual can all use it without an import circle."""

from __future__ import annotations

import re
from functools import cache

VOCABULARY_SIZE = 100_000

# the context words that make a number an identifier of that kind ("MRN 123456"), per category
ID_CONTEXTS: dict[str, tuple[str, ...]] = {
    "MEDICAL_RECORD": ("mrn", "mr#", "mr #", "medical record", "record number", "record no",
                       "record #", "record", "chart", "chart number", "chart #", "unit number",
                       "unit no", "patient id", "patient number", "hospital number",
                       "encounter", "accession", "specimen"),
    "ACCOUNT_NUMBER": ("account", "acct", "a/c", "billing", "invoice", "claim"),
    "HEALTH_PLAN": ("health plan", "member id", "member", "insurance", "insurer", "policy",
                    "subscriber", "beneficiary", "medicaid", "medicare", "group number"),
    "LICENSE_NUMBER": ("license", "licence", "lic", "dea", "npi", "certificate",
                       "registration"),
    "VEHICLE_ID": ("plate", "license plate", "vin", "vehicle", "registration plate"),
    "DEVICE_ID": ("serial", "s/n", "sn", "device", "implant", "pacemaker", "udi", "lot",
                  "model number"),
    "ID_NUMBER": ("id", "identifier", "ssn", "social security", "passport", "national id",
                  "study code", "study id", "code", "ref", "reference", "ticket", "case number",
                  "case #", "no.", "#"),
}


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
    """The public vocabulary of ordinary words: the ``VOCABULARY_SIZE`` most frequent English words
    (wordfreq) that are not first names or surnames, the stopwords, and the recognizers' context
    words."""
    import wordfreq

    from dptext.text import NAME_STOPWORDS, default_stopwords

    names = name_list()
    vocab = {w for w in wordfreq.top_n_list("en", VOCABULARY_SIZE) if w not in names}
    # the context words of the identifier recognizers ("MRN", "SSN", "acct") are not names
    context = {w for words in ID_CONTEXTS.values() for w in words if w.isalpha()}
    return frozenset(vocab | default_stopwords() | NAME_STOPWORDS | context)
