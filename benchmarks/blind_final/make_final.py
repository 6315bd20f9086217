# ruff: noqa: E501  (hand-written note templates: long lines are the notes' text)
"""Blind set 4 ("final"): the unseen set that gives issue 44's final figure.

Other helpers must not read this folder. Written without reading dptext's detect/, deid/ or
targeted/ code, with styles, name shapes, origins, identifier shapes and look-alikes that sets
1-3 do not use: operative and pathology reports, home-health visits, patient-portal messages,
HL7-like pipe segments, psychiatry intakes with a social history, fax cover sheets, medication
reconciliation with prescribers, SBAR hand-offs, hospice/death notes, and a short
code-switched phrase or two. It reuses only the annotated-document builder and the base name
pools of benchmarks/blind/_core.py.

    .venv/bin/python benchmarks/blind_final/make_final.py    # writes set4.jsonl (seeded)

Same record format and categories as sets 1-3; the scorer is benchmarks/bench_deid_blind.py.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind"))

from _core import (  # noqa: E402
    Doc,
    K,
    NamePools,
    P,
    Person,
    T,
    digits,
    make_person,
    strip_accents,
)

SEED = 4404
N = 220
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]

# ------------------------------------------------------------------ new origins and name shapes
EXTRA = {
    "somali": {"M": ["Abdirahman", "Mohamed", "Abdullahi", "Hassan", "Yusuf", "Abdikarim", "Liban", "Mahad", "Omar", "Farah"],
               "F": ["Hodan", "Fadumo", "Asha", "Ubah", "Sahra", "Hibo", "Ayan", "Ifrah", "Nimco", "Deeqa"],
               "last": ["Warsame", "Farah", "Jama", "Hirsi", "Abdi", "Osman", "Egal", "Dualeh", "Guleid", "Samatar"]},
    "hmong": {"M": ["Tou", "Pao", "Chue", "Neng", "Kou", "Fue", "Vang", "Xeng", "Lue", "Shoua"],
              "F": ["Mai", "Pa", "Kia", "Yer", "Nou", "Bao", "Chia", "Zoua", "Youa", "Mao"],
              "last": ["Vang", "Xiong", "Thao", "Yang", "Lor", "Moua", "Her", "Lee", "Vue", "Chang"]},
    "haitian": {"M": ["Jean-Baptiste", "Wilner", "Fritznel", "Jocelyn", "Rosemond", "Dieudonne", "Wisly", "Frantz", "Lesly", "Guerline"],
                "F": ["Marie-Carmel", "Guerline", "Nadege", "Roseline", "Widlene", "Mirlande", "Yolette", "Fabienne", "Edeline", "Magalie"],
                "last": ["Pierre-Louis", "Joseph", "Jean-Charles", "Desrosiers", "Toussaint", "Dorvil", "Saint-Fleur", "Charles", "Exantus", "Belizaire"]},
    "japanese": {"M": ["Haruto", "Kenji", "Takeshi", "Hiroshi", "Daisuke", "Yuki", "Shota", "Ryo", "Kazuo", "Tetsuya"],
                 "F": ["Yui", "Haruka", "Aiko", "Emiko", "Sakura", "Keiko", "Naomi", "Mizuki", "Fumiko", "Yoko"],
                 "last": ["Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito", "Yamamoto", "Nakamura", "Kobayashi", "Ono"]},
    "ethiopian2": {"M": ["Tesfaye", "Abebe", "Getachew", "Dawit", "Yonas", "Bereket", "Haile", "Mulugeta", "Solomon", "Kebede"],
                   "F": ["Tigist", "Meseret", "Almaz", "Hiwot", "Selam", "Bethlehem", "Genet", "Aster", "Rahel", "Mahlet"],
                   "last": ["Tesfaye", "Bekele", "Girma", "Haile", "Alemu", "Tadesse", "Woldemariam", "Gebremedhin", "Desta", "Ayele"]},
    "greek": {"M": ["Georgios", "Dimitrios", "Konstantinos", "Ioannis", "Nikolaos", "Panagiotis", "Christos", "Spyros", "Vasilis", "Athanasios"],
              "F": ["Eleni", "Maria", "Aikaterini", "Vasiliki", "Sofia", "Despina", "Paraskevi", "Chrysoula", "Evangelia", "Fotini"],
              "last": ["Papadopoulos", "Georgiou", "Nikolaidis", "Karagiannis", "Vlachos", "Oikonomou", "Christodoulou", "Antoniou", "Makris", "Pappas"]},
    "irish_apostrophe": {"M": ["Seamus", "Padraig", "Cormac", "Declan", "Eoin", "Ciaran", "Fergal", "Oisin", "Ronan", "Niall"],
                         "F": ["Siobhan", "Aoife", "Niamh", "Grainne", "Saoirse", "Caoimhe", "Roisin", "Orla", "Eimear", "Sinead"],
                         "last": ["O'Connor", "O'Sullivan", "D'Arcy", "McGillicuddy", "O'Shaughnessy", "Mac Giolla", "O'Brien", "Ni Bhriain", "D'Souza", "DeLuca"]},
    "dutch_particle": {"M": ["Joost", "Maarten", "Pieter", "Sander", "Wouter", "Bram"], "F": ["Anouk", "Femke", "Ingrid", "Marloes", "Sanne", "Lotte"],
                       "last": ["van der Berg", "de Vries", "van Dijk", "ter Horst", "van den Broek", "de Jong"]},
    "malay_patronymic": {"M": ["Ahmad", "Hafiz", "Azlan", "Faizal", "Rizal", "Syafiq"], "F": ["Nurul", "Siti", "Aisyah", "Farah", "Hidayah", "Zulaikha"],
                         "last": ["bin Abdullah", "bin Ismail", "binti Hassan", "binti Yusof", "bin Osman", "binti Rahman"]},
}
BASE_MIX = {"anglo": 2, "hispanic": 2, "chinese": 1, "vietnamese": 1, "indian": 1, "nigerian": 1, "arabic": 1,
            "polish": 1, "korean": 1, "russian": 1, "filipino": 1, "somali": 1, "hmong": 1, "haitian": 1,
            "japanese": 1, "ethiopian2": 1, "greek": 1, "irish_apostrophe": 1, "dutch_particle": 1,
            "malay_patronymic": 1}
NICK = {"Robert": "Bobby", "William": "Billy", "Elizabeth": "Betty", "Margaret": "Peggy", "Richard": "Dick",
        "James": "Jimmy", "Katherine": "Kate", "Patricia": "Trish", "Charles": "Chuck", "Susan": "Sue"}
WORDNAMES_NEW = {"M": ["Hunter", "Forrest", "River", "Stone", "Ace", "Sage", "Brick", "Shepherd", "Mason", "Cash"],
                 "F": ["Faith", "Harmony", "Serenity", "Trinity", "Liberty", "Haven", "Meadow", "Sky", "Willow", "Clementine"]}


SCRIPT4 = {"greek": "el_GR", "japanese": "ja_JP", "korean": "ko_KR", "chinese": "zh_TW", "russian": "uk_UA",
           "arabic": "fa_IR", "indian": "hi_IN", "anglo": "he_IL", "filipino": "th_TH"}
_SCRIPT_FAKERS: dict = {}


def script_name(r, origin):
    """A name in another script (Greek, kanji, hangul, hanzi, Cyrillic, Persian, Devanagari,
    Hebrew, Thai) for the patient's native-script field; None for some origins."""
    loc = SCRIPT4.get(origin)
    if loc is None:
        return None
    if loc not in _SCRIPT_FAKERS:
        from faker import Faker

        f = Faker(loc)
        f.seed_instance(SEED + len(_SCRIPT_FAKERS))
        _SCRIPT_FAKERS[loc] = f
    f = _SCRIPT_FAKERS[loc]
    sep = "" if loc in ("ja_JP", "ko_KR", "zh_TW") and r.random() < 0.7 else " "
    return f.last_name() + sep + f.first_name()


def build_pools():
    pools = NamePools(seed=44)
    for o, d in EXTRA.items():
        pools.pools[o] = {k: sorted(set(v)) for k, v in d.items()}
    return pools


def person(r, pools, origin, sex=None, word=False):
    p = make_person(r, pools, origin, sex=sex, short_last=r.random() < 0.06)
    if word:
        p.first = r.choice(WORDNAMES_NEW[p.sex])
    if origin == "ethiopian2":  # given name + father's name, no family surname
        p.last = r.choice(EXTRA["ethiopian2"]["M"])
    if r.random() < 0.07:
        p.extra["suffix"] = r.choice(["Jr.", "Sr.", "III", "II"])
    if p.first in NICK and r.random() < 0.7:
        p.extra["nick"] = NICK[p.first]
    return p


def nm(p: Person, cat: str, style: str) -> list:
    f, last, mid = p.first, p.last, p.middle
    if style == "hl7":
        return P(cat, last.upper()) + T("^") + P(cat, f.upper()) + (T("^") + P(cat, mid[:1].upper()) if mid else T("^"))
    if style == "FIRST_M_LAST":
        return P(cat, f.upper()) + T(" ") + (P(cat, mid[0].upper()) + T(" ") if mid else []) + P(cat, last.upper())
    if style == "nick":
        if "nick" in p.extra:
            return P(cat, f) + T(' "') + P(cat, p.extra["nick"]) + T('" ') + P(cat, last)
        return P(cat, f) + T(" ") + P(cat, last)
    if style == "suffix":
        return P(cat, f) + T(" ") + P(cat, last) + (T(" " + p.extra["suffix"]) if "suffix" in p.extra else [])
    if style == "initials_last":
        return P(cat, f[0] + "." + (mid[0] + "." if mid else "")) + T(" ") + P(cat, last)
    if style == "sig":  # e-mail style signature, first name only, lower case sometimes
        return P(cat, f if p.sex == "M" else f.lower())
    if style == "lastfirst_nocomma":
        return P(cat, last) + T(" ") + P(cat, f)
    if style == "fl":
        return P(cat, f) + T(" ") + P(cat, last)
    if style == "f":
        return P(cat, f)
    if style == "l":
        return P(cat, last)
    if style == "lower_l":
        return P(cat, last.lower())
    if style == "dr_l":
        return T("dr ") + P(cat, last.lower())
    if style == "titled":
        return T({"M": "Mr ", "F": "Mrs "}[p.sex]) + P(cat, last)
    if style == "flc":
        return P(cat, f) + T(" ") + P(cat, last) + T(", " + (p.cred or "MD"))
    raise ValueError(style)


# ------------------------------------------------------------------ new identifier shapes
def date4(r, d: dt.date, style=None) -> list:
    style = style or r.choice(["dotted", "of", "mon_dash", "weekday", "yyyymmdd", "dd/mm", "short_month", "hl7"])
    if style == "of":
        return P("DATE", f"{d.day}{'th' if 11 <= d.day <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d.day % 10, 'th')} of {MONTHS[d.month - 1]}")
    if style == "weekday":
        return P("DATE", d.strftime("%A") + f" {d.month}/{d.day}")
    return P("DATE", {"dotted": f"{d.month}.{d.day}.{d.year}", "mon_dash": f"{MONTHS[d.month - 1][:3]}-{d.day:02d}-{str(d.year)[2:]}",
                      "yyyymmdd": d.strftime("%Y%m%d"), "dd/mm": f"{d.day:02d}/{d.month:02d}/{d.year}",
                      "short_month": f"{MONTHS[d.month - 1][:3]}. {d.day}", "hl7": d.strftime("%Y%m%d") + f"{r.randint(0, 23):02d}{r.randint(0, 59):02d}",
                      "slash": f"{d.month:02d}/{d.day:02d}/{d.year}"}[style])


def phone4(r) -> str:
    a, b, c = r.randint(201, 989), r.randint(200, 989), digits(r, 4)
    return r.choice([f"{a}-{b}-{c} x{r.randint(100, 9999)}", f"{b}-{c}", f"+234 803 {digits(r, 3)} {digits(r, 4)}",
                     f"+52 55 {digits(r, 4)} {digits(r, 4)}", f"({a}) {b} {c}", f"{a}{b}{c}", f"+1-{a}-{b}-{c}",
                     f"+44 7700 {digits(r, 6)}"])


def street4(r) -> str:
    return r.choice([f"PO Box {r.randint(10, 9999)}", f"Rural Route {r.randint(1, 9)} Box {r.randint(1, 99)}",
                     f"{r.randint(1, 999)}{r.choice(['', 'B', '1/2'])} {r.choice(['Cherokee', 'Alamo', 'Shady Grove', 'Quail Run', 'Old Mill', 'Kinney', 'Bethel Church', 'Dr. M.L.K. Jr'])} {r.choice(['Trail', 'Circle', 'Loop', 'Hollow', 'Pike', 'Blvd'])}",
                     f"{r.randint(1, 80)} {r.choice(['Calle Luna', 'Avenida Central', 'rue Saint-Denis'])}"])


CITIES4 = [("Lewiston", "ME"), ("Hmong Village", "MN"), ("St. Paul", "MN"), ("Little Haiti", "FL"), ("Homestead", "FL"),
           ("Dearborn Heights", "MI"), ("Cedar Riverside", "MN"), ("Garden City", "KS"), ("Storm Lake", "IA"), ("Wausau", "WI"),
           ("Marysville", "CA"), ("Fort Lee", "NJ"), ("Astoria", "NY"), ("Sunset Park", "NY"), ("Lowell", "MA"), ("Amarillo", "TX"),
           ("Clarkston", "GA"), ("Chamblee", "GA"), ("Falls Church", "VA"), ("Bowling Green", "KY"), ("Greeley", "CO"),
           ("Hamtramck", "MI"), ("Merced", "CA"), ("Yuba City", "CA"), ("Kent", "WA"), ("Federal Way", "WA")]
FACILITIES4 = ["Twin Rivers Surgical Associates", "Hennepin Healthcare", "Jackson North Medical Center", "Maine Medical Center",
               "Our Lady of the Lake Hospital", "Shriners Children's", "Dartmouth-Hitchcock", "Pine Ridge Home Health",
               "Angel Care Hospice", "Caritas Pathology Laboratory", "Northwest Eye Surgeons", "Bright Smiles Dental",
               "Hope Family Pharmacy", "Mount Sinai Queens", "Harbor-UCLA Medical Center", "Banner Desert Medical Center",
               "Parkland Memorial Hospital", "Grady Memorial Hospital", "Lutheran Social Services", "New Horizons Counseling"]

ICD4 = [("I21.4", "NSTEMI"), ("J96.01", "acute hypoxic respiratory failure"), ("K85.90", "acute pancreatitis"),
        ("M10.9", "gout"), ("N20.0", "kidney stone"), ("G40.909", "epilepsy"), ("F20.9", "schizophrenia"),
        ("C50.911", "breast cancer, right"), ("Z51.11", "chemotherapy encounter"), ("T40.2X1A", "opioid poisoning"),
        ("R41.82", "altered mental status"), ("K80.20", "cholelithiasis"), ("K35.80", "acute appendicitis"),
        ("H25.9", "age-related cataract"), ("K02.9", "dental caries"), ("F33.1", "major depressive disorder, recurrent")]
CPT4 = ["27447", "47562", "44970", "88305", "88307", "66984", "43239", "31500", "99291", "99341", "99347", "D0150", "D2391", "90834", "90791", "97110"]
EPO4 = ["Wolff-Parkinson-White", "Brugada pattern", "Mallory-Weiss tear", "Charcot foot", "Heberden nodes", "Bouchard nodes",
        "Ludwig angina", "Zenker diverticulum", "Lisfranc injury", "Hill-Sachs lesion", "Bankart lesion", "Erb's palsy",
        "Horner syndrome", "Broca's aphasia", "Todd's paralysis", "Fournier gangrene", "Pott's disease", "Takayasu arteritis",
        "Von Willebrand disease", "Gilbert syndrome", "Budd-Chiari syndrome", "Mobitz type II", "Wenckebach", "Calot's triangle",
        "Hartmann pouch", "Gleason score", "Bishop score", "Tanner stage", "Ranson criteria", "Child-Pugh class B"]
DRUG4 = [("oxycodone", "5 mg"), ("hydromorphone", "0.5 mg"), ("cefazolin", "2 g"), ("propofol", "50 mg"), ("fentanyl", "50 mcg"),
         ("tamoxifen", "20 mg"), ("olanzapine", "10 mg"), ("lithium", "300 mg"), ("buprenorphine-naloxone", "8-2 mg"),
         ("allopurinol", "100 mg"), ("levetiracetam", "500 mg"), ("latanoprost", "0.005%"), ("naloxone", "4 mg"),
         ("semaglutide", "0.5 mg"), ("empagliflozin", "10 mg"), ("haloperidol", "2 mg"), ("lorazepam", "1 mg")]
LAB4 = [lambda r: f"Hct {r.randint(22, 48)}", lambda r: f"pH {r.choice(['7.21', '7.31', '7.44'])}", lambda r: f"pCO2 {r.randint(28, 68)}",
        lambda r: f"CRP {r.randint(1, 240)}", lambda r: f"ESR {r.randint(5, 110)}", lambda r: f"ferritin {r.randint(6, 900)}",
        lambda r: f"PSA {r.choice(['0.8', '4.6', '12.1'])}", lambda r: f"albumin {r.choice(['2.1', '2.9', '3.8'])}",
        lambda r: f"lipase {r.randint(30, 3200)}", lambda r: f"uric acid {r.choice(['6.1', '9.8'])}", lambda r: f"bili {r.choice(['0.6', '2.4', '5.9'])}",
        lambda r: f"Li level {r.choice(['0.4', '0.9', '1.6'])}"]
VIT4 = [lambda r: f"MAP {r.randint(55, 110)}", lambda r: f"GCS {r.randint(3, 15)}", lambda r: f"BMI {r.randint(16, 48)}.{r.randint(0, 9)}",
        lambda r: f"BP {r.randint(88, 190)}/{r.randint(48, 110)}", lambda r: f"HR {r.randint(40, 150)}", lambda r: f"SpO2 {r.randint(84, 100)}% RA",
        lambda r: f"RR {r.randint(8, 34)}", lambda r: f"IOP {r.randint(10, 32)} mmHg"]


def clock4(r) -> list:
    h, m = r.randint(0, 23), r.randint(0, 59)
    return K("time", r.choice([f"{h:02d}{m:02d}", f"{h:02d}:{m:02d}", f"{h:02d}{m:02d}h", f"{(h % 12) or 12}:{m:02d} {'AM' if h < 12 else 'PM'}"]))


class Ctx:
    def __init__(self, r, pools, doctors, nurses):
        self.r = r
        o = r.choices(list(BASE_MIX), list(BASE_MIX.values()))[0]
        self.p = person(r, pools, o, word=r.random() < 0.04)
        self.old = r.random() < 0.2
        self.script = script_name(r, o) if r.random() < 0.5 else None
        self.date = dt.date(r.randint(2019, 2026), r.randint(1, 12), r.randint(1, 28))
        age = r.randint(90, 106) if self.old else r.randint(18, 89)
        self.dob = dt.date(self.date.year - age, r.randint(1, 12), r.randint(1, 28))
        self.age = age - ((self.date.month, self.date.day) < (self.dob.month, self.dob.day))
        self.mrn = r.choice([digits(r, 9), "H" + digits(r, 6), digits(r, 2) + "-" + digits(r, 6)])
        self.acct = r.choice(["V" + digits(r, 9), digits(r, 12)])
        self.phone = phone4(r)
        self.city, self.state = r.choice(CITIES4)
        self.street = street4(r)
        self.zip = f"{r.randint(10000, 99950):05d}"
        user = strip_accents(self.p.first.lower().replace("-", "").replace("'", "")) + str(r.randint(1, 1999))
        self.email = user + "@" + r.choice(["gmail.com", "ymail.com", "live.com", "mail.com", "hotmail.co.uk"])
        self.rel = person(r, pools, o if r.random() < 0.8 else "anglo", word=r.random() < 0.35)
        if r.random() < 0.6:
            self.rel.last = self.p.last
        self.rel.role = r.choice({"M": ["son", "husband", "grandson", "cousin", "stepson", "boyfriend", "uncle", "nephew"],
                                  "F": ["daughter", "wife", "niece", "granddaughter", "cousin", "girlfriend", "aunt", "stepdaughter"]}[self.rel.sex])
        self.doctors = doctors
        self.doc = r.choice(doctors)
        self.doc2 = r.choice(doctors)
        self.nurse = r.choice(nurses)
        self.fac = r.choice(FACILITIES4)
        self.fac2 = r.choice(FACILITIES4)

    def when(self, lo, hi):
        return self.date - dt.timedelta(days=self.r.randint(lo, hi))

    def drug(self):
        d, s = self.r.choice(DRUG4)
        return K("dose", f"{d} {s}")

    def lab(self):
        return K("lab", self.r.choice(LAB4)(self.r))

    def vit(self):
        return K("vital", self.r.choice(VIT4)(self.r))

    def code(self):
        c, desc = self.r.choice(ICD4)
        return K("icd", c), desc

    def epo(self):
        return K("eponym", self.r.choice(EPO4))

    def pn(self, *s):
        return nm(self.p, "PATIENT_NAME", self.r.choice(s))

    def cn(self, who, *s):
        return nm(who, "CLINICIAN_NAME", self.r.choice(s))

    def rn(self, *s):
        return nm(self.rel, "RELATIVE_NAME", self.r.choice(s))

    def d(self, day, *s):
        return date4(self.r, day, self.r.choice(s) if s else None)

    def pronoun(self):
        return {"M": "he", "F": "she"}[self.p.sex]


# ------------------------------------------------------------------ new styles
def operative(c: Ctx, d: Doc):
    r = c.r
    code, desc = c.code()
    d.w("{fac} - OPERATIVE REPORT\n\n[[PATIENT NAME:]] {name}\n[[DATE OF OPERATION:]] {dt}\n[[SURGEON:]] {s}\n[[ASSISTANT:]] {a}\n[[ANESTHESIA:]] General endotracheal, {anes}\n\n",
        fac=P("HOSPITAL", r.choice(["Twin Rivers Surgical Associates", "Hennepin Healthcare", "Maine Medical Center", "Harbor-UCLA Medical Center", "Grady Memorial Hospital"])),
        name=c.pn("FIRST_M_LAST", "suffix"), dt=c.d(c.date, "slash", "dotted"),
        s=c.cn(c.doc, "flc"), a=c.cn(c.doc2, "flc", "initials_last"), anes=c.cn(c.nurse, "flc"))
    d.w("[[PREOPERATIVE DIAGNOSIS:]] {desc} ({code})\n[[PROCEDURE:]] Laparoscopic procedure, CPT {cpt}\n", desc=desc, code=code, cpt=K("cpt", r.choice(CPT4)))
    d.w("[[INDICATIONS:]] This {age}-year-old {sx} has {epo} and recurrent pain. Consent was signed on {cd} with {rel_role} {rel} present as interpreter.\n\n",
        age=P("AGE", str(c.age)), sx={"M": "man", "F": "woman"}[c.p.sex], epo=c.epo(), cd=c.d(c.when(1, 14), "of", "short_month", "weekday"), rel_role=c.rel.role, rel=c.rn("f", "fl"))
    d.w("[[DESCRIPTION:]] Time out performed at {t}. {ab} given. The {epo} was identified and the cystic duct clipped. Incision at {t2}, closure at {t3}.\n",
        t=clock4(r), ab=c.drug(), epo=K("eponym", "Calot's triangle"), t2=clock4(r), t3=clock4(r))
    d.w("[[ESTIMATED BLOOD LOSS:]] 25 mL. Intraop {v}, {v2}.\n[[SPECIMENS:]] Gallbladder to pathology ({lab}).\n\nDr. {surg} was present for the entire case. Family ({rel}) updated in the waiting room at {t}, phone {ph}.\n",
        v=c.vit(), v2=c.vit(), lab=P("HOSPITAL", "Caritas Pathology Laboratory"), surg=c.cn(c.doc, "l"), rel=c.rn("fl", "titled"), t=clock4(r), ph=P("PHONE", phone4(r)))


def pathology(c: Ctx, d: Doc):
    r = c.r
    acc = f"S{str(c.date.year)[2:]}-{r.randint(1000, 99999)}"
    d.w("SURGICAL PATHOLOGY REPORT    Accession: {acc}\nPatient: {name}   Hosp No: {mrn}   DOB {dob}   Age {age}\nSubmitting physician: {doc}   Received {rec} {t}\n\n",
        acc=P("ACCOUNT", acc), name=c.pn("lastfirst_nocomma", "FIRST_M_LAST"), mrn=P("MRN", c.mrn), dob=c.d(c.dob, "dd/mm", "slash"),
        age=P("AGE", str(c.age)), doc=c.cn(c.doc, "flc", "initials_last"), rec=c.d(c.date, "mon_dash", "dotted"), t=clock4(r))
    d.w("[[GROSS DESCRIPTION:]] Received in formalin labeled with the patient's name \"{n2}\" and \"right breast mass\" is a 2.1 x 1.8 cm portion of fibrofatty tissue.\n",
        n2=c.pn("FIRST_M_LAST", "l"))
    d.w("[[MICROSCOPIC:]] Invasive ductal carcinoma, {g}. Margins negative. {lab}.\n[[DIAGNOSIS:]] {desc} ({code}). CPT {cpt}.\n",
        g=K("eponym", "Nottingham grade 2") if r.random() < 0.5 else K("eponym", "Gleason score") + T(" 3+4=7"), lab=c.lab(), desc=(x := c.code())[1], code=x[0], cpt=K("cpt", r.choice(["88305", "88307", "88342"])))
    d.w("Case reviewed with {dr} on {dt}. Electronically signed {sg} {dt2}.\n", dr=c.cn(c.doc2, "fl", "initials_last"), dt=c.d(c.when(0, 2), "weekday", "of"),
        sg=c.cn(c.doc2, "flc"), dt2=c.d(c.date, "slash"))


def home_health(c: Ctx, d: Doc):
    r = c.r
    d.w("{fac} -- skilled nursing visit {dt}\nvisit start {t} end {t2}\n", fac=P("HOSPITAL", "Pine Ridge Home Health"), dt=c.d(c.date, "weekday", "mon_dash"), t=clock4(r), t2=clock4(r))
    d.w("home: {st}, {city} {stt} {z}. gate code {gc}. blue house past the {church}, dog in yard.\n",
        st=P("STREET", c.street.lower() if r.random() < 0.5 else c.street), city=P("CITY", c.city.lower() if r.random() < 0.5 else c.city),
        stt=P("STATE", c.state), z=P("ZIP", c.zip), gc=P("ACCOUNT", "#" + digits(r, 4)), church=P("ORGANIZATION", r.choice(["Iglesia Pentecostal Monte Sion", "Hmong Alliance Church", "St. Nicholas Greek Orthodox Church", "Masjid Al-Noor"])))
    d.w("pt {name} seated in recliner, {rel_role} {rel} is primary caregiver. {rel2} reports pt ate well. {v}, {v2}. wound to L heel 2x3 cm, {epo} noted.\n",
        name=c.pn("f", "fl", "lower_l"), rel_role=c.rel.role, rel=c.rn("f", "fl"), rel2=c.rn("f"), v=c.vit(), v2=c.vit(), epo=K("eponym", "Charcot foot"))
    if c.script and r.random() < 0.7:
        d.w("name on mailbox/door in {lang}: {s}. ", lang=r.choice(["native script", "the family's language"]), s=P("PATIENT_NAME", c.script))
    d.w("meds reviewed: {m1}, {m2}. pill box filled for week of {dt}. next visit {dt2}. called {dr} office at {ph} re wound culture.\n",
        m1=c.drug(), m2=c.drug(), dt=c.d(c.date, "short_month", "of"), dt2=c.d(c.date + dt.timedelta(days=7), "weekday", "dotted"),
        dr=c.cn(c.doc, "dr_l", "l"), ph=P("PHONE", phone4(r)))
    d.w("{rn}\n", rn=c.cn(c.nurse, "flc"))


def portal(c: Ctx, d: Doc):
    r = c.r
    d.w("From: {n} <{em}>\nTo: {fac} Patient Messages\nSent: {dt} {t}\nSubject: question about my {q}\n\n",
        n=c.pn("fl", "nick"), em=P("EMAIL", c.email), fac=P("HOSPITAL", c.fac), dt=c.d(c.date, "weekday", "slash"), t=clock4(r),
        q=r.choice(["new medicine", "test results", "appointment"]))
    if c.script and r.random() < 0.6:
        d.w("(sender's name as entered on the device: {s})\n\n", s=P("PATIENT_NAME", c.script))
    d.w("Hi Dr {dr},\n\nSince you started me on {m} I feel dizzy in the mornings. My {rel_role} {rel} checked my pressure and it was {v}. Should I keep taking it? My lab from {ld} said {lab}.\n",
        dr=c.cn(c.doc, "l", "f"), m=c.drug(), rel_role=c.rel.role, rel=c.rn("f"), v=K("vital", f"BP {r.randint(90, 170)}/{r.randint(50, 100)}"),
        ld=c.d(c.when(3, 40), "short_month", "of"), lab=c.lab())
    d.w("You can call me at {ph} after {t}. Thank you,\n{sig}\n\n--- reply ---\n{nurse} wrote: Hello {f}, Dr. {dr} reviewed. Please hold the {m} and we will call you {when}. Sent from {ip}.\n",
        ph=P("PHONE", c.phone), t=clock4(r), sig=c.pn("sig", "f"), nurse=c.cn(c.nurse, "flc"), f=c.pn("f"), dr=c.cn(c.doc, "l"), m=c.drug(),
        when=c.d(c.date + dt.timedelta(days=1), "weekday", "of"), ip=P("IP", f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"))


def hl7(c: Ctx, d: Doc):
    r = c.r
    d.w("MSH|^~\\&|EPIC|{fac}|LAB||{ts}||ADT^A01|{ctl}|P|2.5\n", fac=P("HOSPITAL", c.fac), ts=c.d(c.date, "hl7"), ctl=P("ACCOUNT", digits(r, 10)))
    d.w("PID|1||{mrn}^^^MRN||{name}||{dob}|{sx}|||{st}^^{city}^{stt}^{z}||{ph}|||||{acct}|{ssn}\n",
        mrn=P("MRN", c.mrn), name=c.pn("hl7"), dob=P("DATE", c.dob.strftime("%Y%m%d")), sx=c.p.sex, st=P("STREET", c.street.upper()),
        city=P("CITY", c.city.upper()), stt=P("STATE", c.state), z=P("ZIP", c.zip), ph=P("PHONE", c.phone), acct=P("ACCOUNT", c.acct),
        ssn=P("SSN", f"{r.randint(101, 899)}{digits(r, 2)}{digits(r, 4)}"))
    if c.script:
        d.w("PD1|||{s}^^^^^^A\n", s=P("PATIENT_NAME", c.script))
    d.w("NK1|1|{rel}|{role}|{ph}\nPV1|1|I|4W^412^B|||||{doc}|||MED\nDG1|1|I10|{code}|{desc}\nOBX|1|NM|K||{lab}||||||F\n",
        rel=nm(c.rel, "RELATIVE_NAME", "hl7"), role=c.rel.role.upper(), ph=P("PHONE", phone4(r)),
        doc=P("LICENSE", digits(r, 10)) + T("^") + nm(c.doc, "CLINICIAN_NAME", "hl7"), code=(x := c.code())[0], desc=x[1], lab=c.lab())
    d.w("NTE|1||pt {n} arrived {t}, {v}\n", n=c.pn("lower_l", "f"), t=clock4(r), v=c.vit())


def psych(c: Ctx, d: Doc):
    r = c.r
    d.w("PSYCHIATRIC INTAKE  {dt}  {fac}\n[[IDENTIFYING DATA:]] {name}, {age} y.o. {sx}, referred by {dr}.\n",
        dt=c.d(c.date, "dotted", "slash"), fac=P("HOSPITAL", "New Horizons Counseling"), name=c.pn("nick", "fl", "suffix"), age=P("AGE", str(c.age)),
        sx={"M": "man", "F": "woman"}[c.p.sex], dr=c.cn(c.doc, "flc"))
    if c.script:
        d.w("Name as written on passport: {s}. Prefers to be addressed by first name.\n", s=P("PATIENT_NAME", c.script))
    d.w("[[SOCIAL HISTORY:]] Born in {bc}, came to the US in {yr} as a refugee and settled in {city}. Lives with {rel_role} {rel} in a rented apartment at {st}. Works nights at {emp}. Drives a {car} (plate {pl}). Attends {church}.\n",
        bc=P("CITY", r.choice(["Mogadishu", "Port-au-Prince", "Addis Ababa", "Vientiane", "Thessaloniki", "Osaka", "Cork", "Kuala Lumpur", "Hargeisa"])),
        yr=P("DATE", f"{MONTHS[r.randint(0, 11)]} {c.date.year - r.randint(3, 30)}") if r.random() < 0.4 else T(str(c.date.year - r.randint(3, 30))), city=P("CITY", c.city), rel_role=c.rel.role,
        rel=c.rn("fl", "f"), st=P("STREET", c.street), emp=P("ORGANIZATION", r.choice(["JBS meat packing", "Cargill", "Delta Airlines catering", "Marriott downtown", "the Hy-Vee on 5th"])),
        car=r.choice(["gray Camry", "2009 Odyssey", "work truck"]), pl=P("VEHICLE", f"{r.choice(['MN', 'ME', 'GA'])} {digits(r, 3)}-{r.choice(['ABC', 'KTR', 'ZYX'])}"),
        church=P("ORGANIZATION", r.choice(["Abubakar As-Saddique Islamic Center", "Eglise Baptiste Emmanuel", "St. Sava Church"])))
    d.w("[[MSE:]] Calm, {ep}-like tremor absent. Mood \"tired\". Denies SI. {m}. {Role} {rel2} can be reached at {ph}.\n[[ASSESSMENT:]] {desc} ({code}).\n{sig} {t}\n",
        ep=K("eponym", "Parkinson"), m=c.drug(), Role=c.rel.role.capitalize(), rel2=c.rn("f", "fl"), ph=P("PHONE", phone4(r)), desc=(x := c.code())[1], code=x[0], sig=c.cn(c.doc, "flc"), t=clock4(r))


def fax_cover(c: Ctx, d: Doc):
    r = c.r
    d.w("FAX COVER SHEET\nTO: {to}    FAX: {f1}\nFROM: {fr}, {fac}    FAX: {f2}  PHONE: {ph}\nDATE: {dt}   PAGES: {pg}\nRE: {name} (DOB {dob})\n\n",
        to=c.cn(c.doc2, "flc", "titled"), f1=P("FAX", phone4(r)), fr=c.cn(c.nurse, "fl"), fac=P("HOSPITAL", c.fac), f2=P("FAX", phone4(r)), ph=P("PHONE", phone4(r)),
        dt=c.d(c.date, "slash", "dotted"), pg=str(r.randint(2, 14)), name=c.pn("FIRST_M_LAST", "fl"), dob=c.d(c.dob, "slash", "dd/mm"))
    d.w("Attached: records for prior authorization of {m} ({code} {desc}). Please return the signed form to {em}.\n",
        m=c.drug(), code=(x := c.code())[0], desc=x[1], em=P("EMAIL", f"{strip_accents(c.nurse.first.lower().replace(chr(39), ''))}.{strip_accents(c.nurse.last.lower().replace(' ', '').replace(chr(39), ''))}@{r.choice(['hennepinhealthcare.org', 'twinrivers-surg.com'])}"))
    d.w("CONFIDENTIALITY NOTICE: this facsimile contains protected health information. If received in error call {ph}.\n", ph=P("PHONE", phone4(r)))


def medrec(c: Ctx, d: Doc):
    r = c.r
    d.w("MEDICATION RECONCILIATION  {name}  MRN {mrn}  {dt}\nPharmacy: {ph_org}, {ph}\n\n", name=c.pn("lastfirst_nocomma", "FIRST_M_LAST"), mrn=P("MRN", c.mrn),
        dt=c.d(c.date, "mon_dash", "slash"), ph_org=P("ORGANIZATION", "Hope Family Pharmacy"), ph=P("PHONE", phone4(r)))
    for _ in range(r.randint(3, 5)):
        pr = r.choice(c.doctors)
        d.w("* {m} {fq} -- prescriber {pr} (DEA {dea}) -- last fill {lf}\n", m=c.drug(), fq=r.choice(["qd", "bid", "q12h", "qhs", "weekly"]),
            pr=nm(pr, "CLINICIAN_NAME", r.choice(["initials_last", "lastfirst_nocomma", "l"])), dea=P("LICENSE", r.choice("ABFM") + pr.last[0].upper() + digits(r, 7)),
            lf=c.d(c.when(1, 90), "short_month", "slash"))
    d.w("\nAllergies: sulfa (rash). {rel_role} {rel} manages meds; pt {n} verbalized understanding at {t}. {lab}; {v}.\n",
        rel_role=c.rel.role.capitalize(), rel=c.rn("f", "fl"), n=c.pn("lower_l", "f"), t=clock4(r), lab=c.lab(), v=c.vit())


def sbar(c: Ctx, d: Doc):
    r = c.r
    d.w("SBAR handoff {t} -> night shift\n[[SITUATION:]] rm 412b, {name}, {age}yo, s/p {proc} today, now {v}.\n",
        t=clock4(r), name=c.pn("lower_l", "fl", "f"), age=P("AGE", str(c.age)), proc=r.choice(["lap chole", "TKA", "ERCP", "hip ORIF"]), v=c.vit())
    d.w("[[BACKGROUND:]] hx {ep}, {desc} {code}. home meds {m}. full code per {rel_role} {rel} (hcp), who asked to be called at {ph} for any change.\n",
        ep=c.epo(), desc=(x := c.code())[1], code=x[0], m=c.drug(), rel_role=c.rel.role, rel=c.rn("f", "fl"), ph=P("PHONE", phone4(r)))
    d.w("[[ASSESSMENT:]] {lab}, {lab2}. {v} on 2L. pain controlled with {m}.\n[[RECOMMENDATION:]] recheck labs at {t}, page {dr} (pager {pg}) if MAP < 65. per {rel} pt was seen at {fac} last {when}.\n-- {rn}\n",
        lab=c.lab(), lab2=c.lab(), v=c.vit(), m=c.drug(), t=clock4(r), dr=c.cn(c.doc, "dr_l", "fl"), pg=P("PHONE", digits(r, 4)), rel=c.rn("f"),
        fac=P("HOSPITAL", c.fac2), when=c.d(c.when(20, 300), "of") if r.random() < 0.5 else P("DATE", MONTHS[c.when(20, 300).month - 1]), rn=c.cn(c.nurse, "f", "fl"))


def hospice(c: Ctx, d: Doc):
    r = c.r
    d.w("{fac}  Death note\nPatient {name}, {age} y/o, MRN {mrn}.\nTime of death {t} on {dt}, pronounced by {rn} and confirmed by {dr}.\n",
        fac=P("HOSPITAL", "Angel Care Hospice"), name=c.pn("suffix", "FIRST_M_LAST", "fl"), age=P("AGE", str(c.age)), mrn=P("MRN", c.mrn), t=clock4(r),
        dt=c.d(c.date, "of", "slash", "weekday"), rn=c.cn(c.nurse, "flc", "fl"), dr=c.cn(c.doc, "flc"))
    d.w("No heart sounds or respirations for one minute; pupils fixed. Family present: {rel_role} {rel} and {rel2}. Chaplain {ch} at bedside.\n",
        rel_role=c.rel.role, rel=c.rn("f", "fl"), rel2=nm(person(r, POOLS, "anglo", word=True), "RELATIVE_NAME", "f"), ch=c.cn(r.choice(c.doctors), "fl"))
    d.w("Last {m} given at {t}. Funeral home: {fh}, {ph}. Medical examiner not notified (expected death, {desc} {code}). Body released {t2}.\n",
        m=c.drug(), t=clock4(r), fh=P("ORGANIZATION", r.choice(["Sunset Funeral Home", "Nguyen Brothers Mortuary", "Okafor & Sons Funeral Services", "Greek Orthodox Memorial Chapel"])),
        ph=P("PHONE", phone4(r)), desc=(x := c.code())[1], code=x[0], t2=clock4(r))


def eye_dental(c: Ctx, d: Doc):
    r = c.r
    if r.random() < 0.5:
        d.w("{fac}\n{name}  {dob}  {age}yo\nVA 20/40 OD, 20/25 OS. {v}. Dx {desc} ({code}) OD. Plan CPT {cpt} with {dr} on {dt} at {t}. Driver: {rel} ({rel_role}).\n",
            fac=P("HOSPITAL", "Northwest Eye Surgeons"), name=c.pn("FIRST_M_LAST", "lastfirst_nocomma"), dob=c.d(c.dob, "slash", "dotted"), age=P("AGE", str(c.age)),
            v=K("vital", f"IOP {r.randint(10, 30)} mmHg"), desc="age-related cataract", code=K("icd", "H25.9"), cpt=K("cpt", "66984"), dr=c.cn(c.doc, "flc"),
            dt=c.d(c.date + dt.timedelta(days=14), "weekday", "of"), t=clock4(r), rel=c.rn("fl", "f"), rel_role=c.rel.role)
        d.w("Drops: {m} qhs OU. Pt prefers Spanish: \"no veo bien de lejos\". Contact {ph}.\n", m=K("dose", "latanoprost 0.005%"), ph=P("PHONE", c.phone))
    else:
        d.w("{fac}  dental visit {dt}\nPt {name} ({age}) - periodic exam {cpt}. Caries #14, {code} {desc}. Restoration {cpt2} scheduled w/ {dr}. Guardian: {rel}. Insurance ID {ins}.\n",
            fac=P("HOSPITAL", "Bright Smiles Dental"), dt=c.d(c.date, "mon_dash", "slash"), name=c.pn("fl", "nick"), age=P("AGE", str(c.age)), cpt=K("cpt", "D0150"),
            code=K("icd", "K02.9"), desc="dental caries", cpt2=K("cpt", "D2391"), dr=c.cn(c.doc, "flc", "titled"), rel=c.rn("fl"),
            ins=P("HEALTH_PLAN", r.choice(["DDX", "MCD", "UHC"]) + digits(r, 8)))


STYLES4 = {"operative": operative, "pathology": pathology, "home_health": home_health, "portal": portal, "hl7": hl7,
           "psych": psych, "fax_cover": fax_cover, "medrec": medrec, "sbar": sbar, "hospice": hospice, "eye_dental": eye_dental}
POOLS = None


def main():
    global POOLS
    r = random.Random(SEED)
    POOLS = build_pools()
    creds = ["MD", "DO", "NP", "PA-C", "CRNA", "RN", "RN", "LPN", "MD", "DDS", "OD", "LCSW"]
    staff = []
    for i in range(40):
        o = r.choices(list(BASE_MIX), list(BASE_MIX.values()))[0]
        p = person(r, POOLS, o)
        p.cred = creds[i % len(creds)]
        staff.append(p)
    doctors = [p for p in staff if p.cred in ("MD", "DO", "NP", "PA-C", "DDS", "OD")]
    nurses = [p for p in staff if p.cred in ("RN", "LPN", "CRNA", "LCSW")]
    records, k = [], 0
    names = list(STYLES4)
    while len(records) < N:
        k += 1
        base = Ctx(r, POOLS, doctors, nurses)
        for _ in range(min(r.choice([1, 2, 3, 4]), N - len(records))):
            c = Ctx(r, POOLS, doctors, nurses)
            # the same person across notes: keep the patient's identity, new visit details
            for attr in ("p", "script", "old", "dob", "mrn", "acct", "phone", "city", "state", "street", "zip", "email", "rel"):
                setattr(c, attr, getattr(base, attr))
            c.date = base.date + dt.timedelta(days=r.randint(0, 200))
            c.age = c.date.year - c.dob.year - ((c.date.month, c.date.day) < (c.dob.month, c.dob.day))
            style = r.choice(names)
            doc = Doc()
            STYLES4[style](c, doc)
            text = doc.text()
            att = next((x for x in (c.doc, c.doc2, c.nurse) if x.last in text), c.doc)
            rec = {"id": f"set4-{len(records):04d}", "patient_id": f"set4-p{k:03d}", "style": style, "origin": c.p.origin,
                   "note": text, "doctor": r.choice([f"{att.first} {att.last}", f"{att.last}, {att.first} {att.cred}"]),
                   "phi": doc.phi, "keep": doc.keep}
            for s in rec["phi"] + rec["keep"]:
                assert text[s["start"]:s["end"]] == s["text"], (rec["id"], s)
            records.append(rec)
    with open(HERE / "set4.jsonl", "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    summ = {"records": len(records), "patients": len({x["patient_id"] for x in records}),
            "styles": dict(collections.Counter(x["style"] for x in records)),
            "origins": dict(collections.Counter(x["origin"] for x in records)),
            "phi": dict(collections.Counter(s["category"] for x in records for s in x["phi"])),
            "keep": dict(collections.Counter(s["kind"] for x in records for s in x["keep"]))}
    (HERE / "SUMMARY.txt").write_text("set4 " + json.dumps(summ) + "\n")
    print(json.dumps(summ))


if __name__ == "__main__":
    main()
