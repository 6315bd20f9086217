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
def _name_lists() -> tuple[frozenset[str], frozenset[str]]:
    """(first names, surnames) of every Faker locale in Latin letters, accents kept ("Luís";
    not folded to ASCII: "Åge" would make "age" a name), case-folded."""
    import importlib
    import pkgutil

    import faker.providers.person as person

    first: set[str] = set()
    last: set[str] = set()
    for m in pkgutil.iter_modules(person.__path__):
        try:
            provider = importlib.import_module(f"{person.__name__}.{m.name}").Provider
        except Exception:  # noqa: BLE001 - a locale module that does not import is skipped
            continue
        for attr, out in (("first_names", first), ("first_names_male", first),
                          ("first_names_female", first), ("first_names_nonbinary", first),
                          ("last_names", last)):
            values = getattr(provider, attr, None)
            if isinstance(values, dict | list | tuple | set | frozenset):
                for v in values:
                    if isinstance(v, str) and _LATIN.fullmatch(v):
                        out.add(v.casefold())
    return frozenset(first), frozenset(last)


_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+(?:[-'][A-Za-z\u00c0-\u024f]+)*")


def name_list() -> frozenset[str]:
    """First names and surnames of every Faker locale in Latin letters, case-folded."""
    first, last = _name_lists()
    return _all_names(first, last)


@cache
def _all_names(first: frozenset[str], last: frozenset[str]) -> frozenset[str]:
    return first | last


def first_names() -> frozenset[str]:
    return _name_lists()[0]


def surnames() -> frozenset[str]:
    return _name_lists()[1]


# titles and salutations before a name: public words, never an identifier alone
TITLES = ("Dr", "Mr", "Mrs", "Ms", "Miss", "Mx", "Prof", "Professor", "Doctor", "Nurse",
          "Sister", "Rev", "Fr", "Sr", "Mme", "Mlle", "Herr", "Frau")
SALUTATIONS = ("Dear", "Attn", "Attention")
TITLE_WORDS = frozenset(t.casefold() for t in TITLES + SALUTATIONS)

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
abd ext neuro psych gu gi ent st qrs qt qtc pr temp spo2 tmax
ecg ekg cxr ct cta mri mra us tte tee echo eeg emg pft pfts abg vbg cbc bmp cmp lft lfts inr pt
ptt aptt bun cr gfr egfr tsh t3 t4 ft4 hba1c a1c ldl hdl tg flp psa ua ucx bcx esr crp bnp
trop ck ckmb mibi spect pet dexa kub egd ercp tte cabg pci ptca turp tah bso lap chole appy
orif tka tha icu ccu micu sicu nicu picu ed er or pacu pcp rn np pa md do pt ot slp snf ltac
rehab dnr dni polst hcp poa hpi pmh psh fh sh ros ros a/p s/p c/o r/o h/o f/u w/u d/c dc
patient pt name dob mrn attending physician complaint diagnosis history assessment plan
discharge admission summary note record medications allergies vitals impression exam labs
signed dictated
b12 d3 k kcl mgso4 nacl d5w ns lr nph ppi ssri snri nsaid nsaids ace arb bb ccb asa apap
hctz ntg mtx hcq ivig tpa lmwh ufh coumadin lasix
hx dx tx rx sx fx bx px cpt hcpcs icd icd-10 icd10 drg los
esi ems bsn lpn cna ppo hmo ssn foley npi w/wo
""".split())
# common drug names, generic and brand (public knowledge: the most prescribed medicines) that
# neither the abbreviations above nor the stems below cover
DRUG_NAMES = frozenset("""
allopurinol baclofen budesonide bumetanide buspirone carvedilol cefazolin ceftriaxone
cephalexin cetirizine cyclobenzaprine docusate donepezil entresto eliquis escitalopram
glipizide glyburide hydralazine hydroxyzine glargine lispro aspart detemir degludec isosorbide
ketorolac labetalol lamotrigine levetiracetam levothyroxine meloxicam metoclopramide
nitrofurantoin tazobactam pregabalin senna sennosides sucralfate trazodone valacyclovir
venlafaxine xarelto keppra plavix zofran protonix synthroid januvia jardiance farxiga ozempic
trulicity lantus humalog novolog toprol lopressor coreg norvasc zestril cozaar flomax
neurontin cymbalta ventolin proair symbicort advair spiriva singulair prilosec pepcid
augmentin keflex cipro levaquin bactrim flagyl zithromax rocephin ancef zosyn vanco dilaudid
ultram robaxin flexeril mobic celebrex decadron medrol solumedrol haldol zyprexa risperdal
depakote lamictal dilantin tegretol aricept namenda sinemet carbidopa levodopa acetaminophen
albuterol amiodarone amlodipine amoxicillin apixaban atenolol atorvastatin azithromycin
clopidogrel digoxin diltiazem enoxaparin furosemide gabapentin heparin hydrochlorothiazide
hydrocodone ibuprofen insulin ipratropium lisinopril lorazepam losartan metformin
methylprednisolone metoprolol morphine naloxone nitroglycerin omeprazole ondansetron
oxycodone pantoprazole prednisone quetiapine rivaroxaban sertraline simvastatin
spironolactone tamsulosin tramadol vancomycin warfarin zolpidem tylenol motrin advil norco
percocet narcan toradol benadryl ativan xanax ambien seroquel zoloft lexapro prozac
wellbutrin lipitor crestor zocor pravachol glucophage coumadin lasix bumex aldactone
potassium magnesium calcium kayexalate miralax colace dulcolax bisacodyl polyethylene
glycol lactulose rifaximin mesalamine infliximab adalimumab humira remicade stelara
entyvio methotrexate hydroxychloroquine plaquenil prednisolone fludrocortisone
medtronic biotronik abbott boston-scientific unitedhealthcare aetna cigna humana anthem bcbs
tricare medicare medicaid kaiser superbill pharmd tel esi rm
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
    return low in CLINICAL_ABBREVIATIONS or low in DRUG_NAMES or (
        len(low) >= 7 and bool(_DRUG_STEM.fullmatch(low)))


# vital signs: an NER entity of these and numbers only ("HR 88, RR 16") is a reading, not a
# name or a place (alone, "RR" may be a place: Round Rock)
VITALS = frozenset("bp hr rr temp t tmax spo2 o2 sat sats ra rrr pulse wt ht bmi".split())

# the shapes of medical terms (prefixes and suffixes of clinical Greek and Latin): a lower-case
# word of these shapes that the public word list lacks ("bibasilar", "hepatosplenomegaly") is
# taken for vocabulary, not a name (a name of that shape in lower case is missed: the price of
# keeping clinical text readable)
_MEDICAL_WORD = re.compile(
    r"(?i)(?:(?:brady|cardio|cholecyst|cysto|dys|entero|gastro|hema|hemo|hepato|hyper|hypo|"
    r"infra|intra|laparo|leuko|myo|naso|nephro|neuro|osteo|peri|pseudo|pyelo|retro|supra|"
    r"tachy|uro)[a-z]{3,}|"
    r"[a-z]{3,}(?:itis|emia|aemia|ectomy|otomy|ostomy|ology|osis|oses|megaly|pathy|plasty|"
    r"scopy|scopic|algia|uria|penia|cytosis|genic|plegia|paresis|rrhea|rrhage|sclerosis|"
    r"stasis|trophy|lysis|gram|graphy|oma|omas|ular|ilar|lateral|tion|ment|ness))")


def is_medical_word(word: str) -> bool:
    """Whether a lower-case word has the shape of a medical (or derived English) term."""
    return bool(_MEDICAL_WORD.fullmatch(word)) or is_clinical(word)


@cache
def known_words() -> frozenset[str]:
    """Every word of wordfreq's English list (names included; about 320,000), case-folded:
    a lower-case word outside it is unknown to public English text."""
    import wordfreq

    return frozenset(wordfreq.get_frequency_dict("en", wordlist="large"))


FREQUENT_SIZE = 25_000


@cache
def frequent_words() -> frozenset[str]:
    """The ``FREQUENT_SIZE`` most frequent English words that are not names, with the
    stopwords: what a rare word, or a name that is also a word ("Takumi", "Fleischer"), is
    not."""
    import wordfreq

    from dptext.text import NAME_STOPWORDS, default_stopwords

    names = name_list()
    context = {w for words in ID_CONTEXTS.values() for w in words if w.isalpha()}
    return frozenset({w for w in wordfreq.top_n_list("en", FREQUENT_SIZE) if w not in names}
                     | default_stopwords() | NAME_STOPWORDS | context)


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
