# ruff: noqa: E501  (hand-written note templates: long lines are the notes' text)
"""Hand-written note templates of blind sets 1-3: ten styles, each with variants.

Each template writes into a Doc; PHI goes through P(...)/renderers (gold spans), clinical
look-alikes through K(...) (keep spans), section headers through [[...]]."""

from __future__ import annotations

import datetime as dt
import random

from _core import CPT, EPONYMS, Doc, K, P, T, dose, icd, join, lab, vital
from _ctx import address_segs, age_segs, date_segs, keep_time, name_segs


class Note:
    """What one note knows: its patient, date, clinicians, place."""

    def __init__(self, r: random.Random, world, pt):
        self.r, self.w, self.pt = r, world, pt
        self.date = pt.base + dt.timedelta(days=r.randint(0, 400))
        self.adm = self.date - dt.timedelta(days=r.randint(2, 9))
        self.att = r.choice(world.doctors)
        self.nurse = r.choice(world.nurses)
        self.other = r.choice(world.clinicians)
        self.hosp = r.choice(world.hospitals)
        self.hosp2 = r.choice(world.hospitals)
        self.rel = r.choice(pt.relatives)
        self.age = pt.age_at(self.date)

    # shorthands -------------------------------------------------------------------------------
    def pn(self, *styles):
        return name_segs(self.pt.p, "PATIENT_NAME", self.r.choice(styles))

    def cn(self, who, *styles):
        return name_segs(who, "CLINICIAN_NAME", self.r.choice(styles))

    def rn(self, *styles, rel=None):
        return name_segs(rel or self.rel, "RELATIVE_NAME", self.r.choice(styles))

    def d(self, day, *styles):
        return date_segs(self.r, day, self.r.choice(styles) if styles else None)

    def ago(self, lo, hi):
        return self.date - dt.timedelta(days=self.r.randint(lo, hi))

    def age_(self, *styles):
        return age_segs(self.r, self.age, self.r.choice(styles) if styles else None)

    def h(self, which=None):
        return P("HOSPITAL", which or self.hosp)

    def ep(self):
        return K("eponym", self.r.choice(EPONYMS))

    def meds(self, n):
        return join([dose(self.r) for _ in range(n)])

    def labs(self, n):
        return join([lab(self.r) for _ in range(n)])

    def vitals(self, n):
        return join([vital(self.r) for _ in range(n)], self.r.choice([", ", "  ", "; "]))

    def sex_word(self):
        return {"M": "male", "F": "female"}[self.pt.p.sex]

    def he(self):
        return {"M": "he", "F": "she"}[self.pt.p.sex]

    def his(self):
        return {"M": "his", "F": "her"}[self.pt.p.sex]


HPI_LINES = [
    "presented with {n} days of worsening shortness of breath and productive cough",
    "reports intermittent chest pressure radiating to the left arm, worse with exertion",
    "was found on the floor by family, unclear how long down, no head strike reported",
    "complains of burning with urination and flank pain since the weekend",
    "has had poor appetite, nausea and two episodes of non-bloody emesis",
    "notes swelling of both legs and a weight gain of about four kilograms",
    "describes new right-sided facial droop noticed on waking",
    "had a fall at home while getting out of the shower",
    "reports black tarry stools for two days and lightheadedness on standing",
    "has been more confused than usual per family, sleeping most of the day",
]
PLAN_LINES = [
    "Continue current regimen and recheck labs in one week.",
    "Follow up with cardiology as scheduled; return precautions reviewed.",
    "Diet advanced as tolerated; ambulating with walker.",
    "Discussed goals of care; patient wishes to continue full treatment.",
    "Wound care teaching completed, dressing changes daily.",
    "Will titrate diuretic to daily weights; low sodium diet.",
    "Physical therapy recommends home with outpatient therapy.",
    "Glucose checks before meals and at bedtime.",
]
TYPOS = {
    "patient": "pateint",
    "received": "recieved",
    "tomorrow": "tommorow",
    "breath": "breathe",
    "history": "hx",
    "symptoms": "symptons",
    "medication": "medicaiton",
    "with": "wiht",
    "denies": "denys",
    "appointment": "appt",
    "follow": "f/u",
    "because": "b/c",
    "weakness": "weakenss",
}


def typo(segs, r, rate=0.5):
    out = []
    for tag, text in segs:
        if tag == "":
            words = text.split(" ")
            text = " ".join(TYPOS.get(w, w) if r.random() < rate else w for w in words)
        out.append((tag, text))
    return out


# ------------------------------------------------------------------------------------- styles
def discharge(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    doc.w("{hosp}\n[[DISCHARGE SUMMARY]]\n\n", hosp=n.h())
    doc.w(
        "PATIENT: {name}    MRN: {mrn}    DOB: {dob}\n",
        name=n.pn("LF", "lf", "FL_caps"),
        mrn=P("MRN", pt.mrn),
        dob=n.d(pt.dob, "mdy", "mdy_nopad", "dmonyyyy"),
    )
    if pt.p.script and r.random() < 0.7:
        doc.w("Name in native script: {s}\n", s=P("PATIENT_NAME", pt.p.script))
    doc.w(
        "[[ADMISSION DATE:]] {a}    [[DISCHARGE DATE:]] {b}\n",
        a=n.d(n.adm, "mdy", "long"),
        b=n.d(n.date, "mdy", "long"),
    )
    doc.w(
        "ATTENDING: {att}\nPCP: {pcp}\n\n",
        att=n.cn(n.att, "drfl", "flcred", "lfcred"),
        pcp=n.cn(pt.pcp, "drfl", "dr", "flcred"),
    )
    c, desc = icd(r)
    doc.w("[[DISCHARGE DIAGNOSIS:]]\n1. {desc} ({c})\n", desc=desc, c=c)
    c2, desc2 = icd(r)
    doc.w("2. {desc} - {c}\n3. History of {ep}\n\n", desc=desc2, c=c2, ep=n.ep())
    doc.w(
        "[[HISTORY OF PRESENT ILLNESS:]] {name} is a {age} {sex} with history of {ep} who {hpi}. ",
        name=n.pn("fl", "title", "fml"),
        age=n.age_("year-old", "yo"),
        sex=n.sex_word(),
        ep=n.ep(),
        hpi=r.choice(HPI_LINES).format(n=r.randint(2, 9)),
    )
    doc.w(
        "{He} was seen at {h2} on {d} and referred here. ",
        He=n.he().capitalize(),
        h2=n.h(n.hosp2),
        d=n.d(n.ago(5, 20), "md", "month_day", "ordinal", "mdy"),
    )
    doc.w("In the ED {vit}. Labs notable for {labs}.\n\n", vit=n.vitals(3), labs=n.labs(3))
    doc.w(
        "[[HOSPITAL COURSE:]] Started on {m1}. {surname} improved steadily; on {d} {he} was weaned to room air. ",
        m1=n.meds(2),
        surname=T("Mr. " if pt.p.sex == "M" else "Ms. ") + P("PATIENT_NAME", pt.p.last),
        d=n.d(n.ago(0, 3), "md", "ordinal", "month_day", "mon_d"),
        he=n.he(),
    )
    doc.w(
        "Seen by {cons} of nephrology, who advised holding {m}. Repeat {labs}.\n\n",
        cons=n.cn(n.other, "drfl", "dr", "il"),
        m=n.meds(1),
        labs=n.labs(2),
    )
    doc.w("[[DISCHARGE MEDICATIONS:]]\n- {a}\n- {b}\n- {c}\n\n", a=dose(r), b=dose(r), c=dose(r))
    if r.random() < 0.6:
        doc.w(
            "[[DISPOSITION:]] Home with {rel_role} {rel}, who will stay with {him} for two weeks. Contact {rel2} at {ph}.\n",
            rel_role=n.rel.role,
            rel=n.rn("fl", "f"),
            him="him" if pt.p.sex == "M" else "her",
            rel2=n.rn("f", "fl"),
            ph=P("PHONE", n.rel.extra["phone"]),
        )
    else:
        doc.w(
            "[[DISPOSITION:]] Discharged to {snf} at {t}. Transport by {rel_role} ({rel}).\n",
            snf=P(
                "HOSPITAL",
                r.choice(
                    [
                        "Golden Oaks",
                        "Brookdale " + r.choice(["Heights", "Commons"]),
                        "Sunrise of " + pt.addr["city"],
                    ]
                )
                + " Skilled Nursing",
            ),
            t=keep_time(r),
            rel_role=n.rel.role,
            rel=n.rn("fl"),
        )
    doc.w(
        "[[FOLLOW-UP:]] {pcp} in 1 week, {clinic} {ph}.\n\nDictated by: {att}\nD: {d1}  T: {d2} {t}\n",
        pcp=n.cn(pt.pcp, "drfl", "dr"),
        clinic=n.h(r.choice(n.w.hospitals)),
        ph=P("PHONE", phone_of(r)),
        att=n.cn(n.att, "flcred", "lfcred", "il"),
        d1=n.d(n.date, "mdy"),
        d2=n.d(n.date + dt.timedelta(days=1), "mdy"),
        t=keep_time(r),
    )


def phone_of(r):
    from _core import phone

    return phone(r)


def radiology(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    exam = r.choice(
        [
            "CT CHEST WITHOUT CONTRAST",
            "XR CHEST 2 VIEWS",
            "MRI BRAIN W/WO CONTRAST",
            "US RIGHT UPPER QUADRANT",
            "CT ABDOMEN PELVIS W CONTRAST",
            "CTA CHEST PE PROTOCOL",
            "DUPLEX VENOUS LOWER EXTREMITY LEFT",
        ]
    )
    doc.w("{h}  Department of Radiology\n", h=n.h())
    doc.w(
        "Patient: {name}   MRN: {mrn}   Acc#: {acc}\nDOB: {dob} ({age})   Ordering: {ordr}\n",
        name=n.pn("LF", "lf", "LFcomma"),
        mrn=P("MRN", pt.mrn),
        acc=P("ACCOUNT", phone_digits(r)),
        dob=n.d(pt.dob, "mdy", "iso"),
        age=n.age_("yo", "sexcode"),
        ordr=n.cn(n.att, "lfcred", "flcred", "drfl"),
    )
    doc.w(
        "[[EXAM:]] {exam}  CPT {cpt}\n[[DATE OF SERVICE:]] {d} {t}\n\n",
        exam=exam,
        cpt=K("cpt", r.choice(CPT)),
        d=n.d(n.date, "mdy", "dmonyyyy"),
        t=keep_time(r),
    )
    c, desc = icd(r)
    doc.w(
        "[[CLINICAL HISTORY:]] {age} with {desc} ({c}), eval for {ep}.\n",
        age=n.age_("year-old", "yo"),
        desc=desc,
        c=c,
        ep=n.ep(),
    )
    if r.random() < 0.3:
        doc.w(
            "Implanted device: {maker} pacemaker, serial {dev}, MR-conditional.\n",
            maker=r.choice(["Medtronic", "Abbott", "Boston Scientific", "Biotronik"]),
            dev=P("DEVICE", pt.device),
        )
    doc.w(
        "[[COMPARISON:]] {cmp}\n\n",
        cmp=r.choice(
            [
                n.d(n.ago(30, 700), "mdy", "long", "month_year"),
                T("Outside study from ")
                + n.h(n.hosp2)
                + T(" dated ")
                + n.d(n.ago(30, 400), "mdy", "md"),
                T("None."),
            ]
        ),
    )
    doc.w(
        "[[FINDINGS:]] "
        + r.choice(
            [
                "Lungs are clear bilaterally. No pleural effusion or pneumothorax. Heart size is normal. ",
                "There is a 6 mm nodule in the right upper lobe, unchanged. Mild emphysematous changes. ",
                "The gallbladder is distended with a 1.4 cm stone at the neck and positive sonographic {ep}. ",
                "No acute intracranial hemorrhage, mass effect, or midline shift. Chronic small vessel ischemic changes. ",
                "Filling defect within the left femoral and popliteal veins, noncompressible. ",
            ]
        )
        + "{more}\n\n",
        ep=K("eponym", "Murphy's sign"),
        more=r.choice(
            [
                "Osseous structures are unremarkable.",
                "Degenerative changes of the spine.",
                "Lines and tubes in expected position.",
            ]
        ),
    )
    doc.w(
        "[[IMPRESSION:]]\n1. "
        + r.choice(
            [
                "No acute cardiopulmonary process.",
                "Findings concerning for acute cholecystitis.",
                "Acute deep venous thrombosis.",
                "Stable pulmonary nodule; follow-up CT in 12 months.",
            ]
        )
        + "\n"
    )
    doc.w(
        "2. Findings discussed with {who} by telephone at {t} on {d}.\n\n",
        who=n.cn(n.att, "drfl", "dr", "il"),
        t=keep_time(r),
        d=n.d(n.date, "md", "mdy"),
    )
    doc.w(
        "Dictated by: {rad}\nElectronically signed: {d} {t}\n",
        rad=n.cn(n.other, "flcred", "lfcred", "drfl"),
        d=n.d(n.date, "mdy", "iso"),
        t=keep_time(r),
    )


def phone_digits(r):
    from _core import digits

    return r.choice(["RA", "CT", "US", ""]) + digits(r, 8)


def nursing(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    segs = []
    d = Doc()
    d.w(
        "{t} rn note: pt {name} resting in bed, a&ox3. ",
        t=keep_time(r),
        name=n.pn("lower_f", "lower_fl", "lower_f"),
    )
    if pt.p.script and r.random() < 0.6:
        d.w("name band also reads {s}. ", s=P("PATIENT_NAME", pt.p.script))
    d.w("vs {v}. ", v=n.vitals(3))
    d.w(
        "{pn} c/o {c}, gave {m} at {t}. ",
        pn=n.pn("lower_f", "f"),
        c=r.choice(["pain 6/10 to lle", "nausea", "itching at iv site", "sob on exertion"]),
        m=n.meds(1),
        t=keep_time(r),
    )
    d.w(
        "{rel_role} {rel} at bedside, updated on poc. ",
        rel_role=n.rel.role,
        rel=n.rn("f", "lower_f", "fl"),
    )
    d.w("foley draining clear yellow urine. skin intact, turned q2h. {ep} noted in hx. ", ep=n.ep())
    d.w("am labs {labs}. ", labs=n.labs(2))
    d.w(
        "md {md} aware. will cont to monitor. call bell w/in reach.\n",
        md=n.cn(n.att, "l", "dr", "lower_f"),
    )
    if r.random() < 0.5:
        d.w(
            "{t} pt's {role} {rel2} called for update, pt ok'd sharing info. ",
            t=keep_time(r),
            role=n.rel.role,
            rel2=n.rn("f", "lower_f"),
        )
        d.w(
            "plan d/c {d} if tolerating po. ",
            d=n.d(n.date + dt.timedelta(days=1), "md", "ordinal", "month_day"),
        )
    d.w("-- {rn}\n", rn=n.cn(n.nurse, "il", "fl", "lower_fl", "flcred"))
    # nursing notes are lower case: plain text lower, names as written by the template
    for tag, text in _segs_of(d):
        segs.append((tag, text.lower() if tag == "" else text))
    doc.add(segs)


def _segs_of(d: Doc):
    """Re-split a Doc back into segments (tag by span)."""
    text = d.text()
    marks = sorted(
        [(s["start"], s["end"], "P:" + s["category"]) for s in d.phi]
        + [(s["start"], s["end"], "K:" + s["kind"]) for s in d.keep]
    )
    out, pos = [], 0
    for a, b, tag in marks:
        if a > pos:
            out.append(("", text[pos:a]))
        out.append((tag, text[a:b]))
        pos = b
    if pos < len(text):
        out.append(("", text[pos:]))
    return out


def telephone(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    doc.w("TELEPHONE ENCOUNTER  {d} {t}\n", d=n.d(n.date, "mdy", "mdy_short"), t=keep_time(r))
    doc.w(
        "Caller: {rel} ({role})  Call back #: {ph}\nRe: {name}, DOB {dob}\n\n",
        rel=n.rn("fl", "f"),
        role=n.rel.role,
        ph=P("PHONE", n.rel.extra["phone"]),
        name=n.pn("fl", "lf"),
        dob=n.d(pt.dob, "mdy", "mdy_short"),
    )
    if pt.p.script and r.random() < 0.6:
        doc.w(
            "{lang} interpreter used; caller spelled the name as {s}.\n",
            lang={
                "chinese": "Mandarin",
                "korean": "Korean",
                "russian": "Russian",
                "arabic": "Arabic",
                "vietnamese": "Vietnamese",
            }.get(pt.p.origin, "Language"),
            s=P("PATIENT_NAME", pt.p.script),
        )
    v = r.randrange(3)
    if v == 0:
        doc.w(
            "{role} {rel} states pt has had fevers since {d}, max temp 101.8, taking {m}. ",
            role=n.rel.role.capitalize(),
            rel=n.rn("f"),
            d=n.d(n.ago(1, 4), "md", "ordinal", "month_day"),
            m=n.meds(1),
        )
        doc.w(
            "Asked whether to bring {him} in. Advised ED if worse; appt made with {doc} on {d2} at {t}.\n",
            him="him" if pt.p.sex == "M" else "her",
            doc=n.cn(pt.pcp, "dr", "drfl"),
            d2=n.d(n.date + dt.timedelta(days=2), "md", "month_day", "mon_d"),
            t=keep_time(r),
        )
    elif v == 1:
        doc.w(
            "Pt called requesting refill of {m}. Last seen {d}. Last {lab}. Pharmacy: {ph_org} on {st}, fax {fax}.\n",
            m=n.meds(1),
            d=n.d(n.ago(40, 200), "mdy", "md"),
            lab=n.labs(1),
            ph_org=P(
                "ORGANIZATION",
                r.choice(
                    [
                        "Walgreens",
                        "CVS",
                        "Rite Aid",
                        "Duane Reade",
                        "La Farmacia Popular",
                        "Kim's Pharmacy",
                    ]
                ),
            ),
            st=P(
                "STREET",
                n.r.choice(["Main St", "5th Ave", "Broadway", pt.addr["street"].split(" ", 1)[1]]),
            ),
            fax=P("FAX", phone_of(r)),
        )
        doc.w(
            "Refill sent per protocol. Reminded {name} that labs are due.\n",
            name=n.pn("f", "title", "fl"),
        )
    else:
        doc.w(
            'Returned call to {name} at {ph}, no answer, left VM to call clinic. Second attempt {t}: spoke with {role} {rel}, who says pt is "doing better", BP at home {vit}.\n',
            name=n.pn("fl", "f"),
            ph=P("PHONE", pt.cell),
            t=keep_time(r),
            role=n.rel.role,
            rel=n.rn("f", "fl"),
            vit=n.vitals(1),
        )
        doc.w("{Role} {rel} notified of results.\n", Role=n.rel.role.capitalize(), rel=n.rn("f"))
        if r.random() < 0.4:
            doc.w(
                "Pt also sent a message through {u} (logged from {ip}).\n",
                u=P("URL", pt.url),
                ip=P("IP", pt.ip),
            )
    doc.w("\n{who}\n", who=n.cn(n.nurse, "flcred", "il", "fl"))


def referral(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    doc.w(
        "{h}\n{addr}\nTel {ph}  Fax {fax}\n\n{d}\n\n",
        h=n.h(),
        addr=address_segs(
            r,
            {
                "street": f"{r.randint(10, 9000)} {r.choice(['Medical Plaza Dr', 'Hospital Way', 'Health Pkwy'])}",
                "city": pt.addr["city"],
                "state": pt.addr["state"],
                "zip": pt.addr["zip"],
            },
            "two",
        ),
        ph=P("PHONE", phone_of(r)),
        fax=P("FAX", phone_of(r)),
        d=n.d(n.date, "long"),
    )
    doc.w(
        "{dr}\n{h2}\n\nRe: {name}  DOB: {dob}  MRN {mrn}\n\nDear {dr2},\n\n",
        dr=n.cn(n.other, "drfl", "flcred"),
        h2=n.h(n.hosp2),
        name=n.pn("fl", "fml", "fil"),
        dob=n.d(pt.dob, "mdy", "long"),
        mrn=P("MRN", pt.mrn),
        dr2=n.cn(n.other, "dr", "drfl"),
    )
    c, desc = icd(r)
    doc.w(
        "Thank you for seeing {name}, a pleasant {age} {sex} whom I follow for {desc} ({c}) and {ep}. ",
        name=n.pn("title", "fl"),
        age=n.age_("year-old"),
        sex=n.sex_word(),
        desc=desc,
        c=c,
        ep=n.ep(),
    )
    doc.w(
        "{He} moved here from {city2} in {my} and works at {emp}. ",
        He=n.he().capitalize(),
        city2=P(
            "CITY",
            r.choice(
                [
                    "Guadalajara",
                    "Lagos",
                    "Ho Chi Minh City",
                    "Chennai",
                    "Krakow",
                    "Aleppo",
                    "Busan",
                    "Novosibirsk",
                    "Toledo",
                    "Quezon City",
                ]
            ),
        ),
        my=n.d(n.ago(400, 3000), "month_year"),
        emp=P("ORGANIZATION", pt.employer),
    )
    doc.w(
        "Recent labs: {labs}; {vit} in clinic today. Current medications include {meds}.\n\n",
        labs=n.labs(3),
        vit=n.vitals(2),
        meds=n.meds(3),
    )
    doc.w(
        "I would appreciate your opinion regarding {q}. {His} {role}, {rel}, usually accompanies {him} and can be reached at {ph}. {His} e-mail is {em}.\n\n",
        q=r.choice(
            [
                "further workup of the anemia",
                "possible biologic therapy",
                "surgical options",
                "the abnormal echocardiogram",
            ]
        ),
        His=n.his().capitalize(),
        role=n.rel.role,
        rel=n.rn("fl", "f"),
        him="him" if pt.p.sex == "M" else "her",
        ph=P("PHONE", n.rel.extra["phone"]),
        em=P("EMAIL", pt.email),
    )
    doc.w(
        "Sincerely,\n\n{att}\n{h}\nNPI {npi}\n",
        att=n.cn(n.att, "flcred", "drfl"),
        h=n.h(),
        npi=P("LICENSE", n.att.extra["npi"]),
    )


def kvheader(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    name = n.pn("fl", "fml", "lf", "LF")
    doc.w(
        "Patient: {name}   DOB: {dob}   Sex: {sx}   Age: {age}\n",
        name=name,
        dob=n.d(pt.dob, "mdy", "iso", "mdy_nopad"),
        sx=pt.p.sex,
        age=P("AGE", str(n.age)),
    )
    doc.w(
        "MRN: {mrn}   SSN: {ssn}   Acct: {acct}\n",
        mrn=P("MRN", pt.mrn),
        ssn=P("SSN", pt.ssn),
        acct=P("ACCOUNT", pt.acct),
    )
    doc.w(
        "Address: {addr}\nHome: {ph}   Mobile: {cell}\nEmail: {em}\n",
        addr=address_segs(r, pt.addr),
        ph=P("PHONE", pt.phone),
        cell=P("PHONE", pt.cell),
        em=P("EMAIL", pt.email),
    )
    if pt.p.script:
        doc.w("Name (native script): {s}\n", s=P("PATIENT_NAME", pt.p.script))
    doc.w(
        "Emergency contact: {rel} ({role}) {ph}\nPCP: {pcp}   Insurance: {ins}   Member ID: {mid}\n",
        rel=n.rn("fl", "lf"),
        role=n.rel.role,
        ph=P("PHONE", n.rel.extra["phone"]),
        pcp=n.cn(pt.pcp, "flcred", "lfcred"),
        ins=r.choice(["Medicaid", "Medicare", "Blue Cross PPO", "Aetna HMO", "self-pay"]),
        mid=P("HEALTH_PLAN", pt.plan),
    )
    doc.w(
        "Visit date: {d}   Location: {h}   Provider: {att}\n\n",
        d=n.d(n.date, "mdy", "iso"),
        h=n.h(),
        att=n.cn(n.att, "fl", "lf", "flcred"),
    )
    doc.w(
        "[[Chief Complaint:]] "
        + r.choice(["follow up", "cough", "dizziness", "med refill", "rash"])
        + "\n"
    )
    doc.w(
        "[[Vitals:]] {v}\n[[Assessment:]] {desc} {c}; {ep} stable.\n[[Plan:]] {m}. "
        + r.choice(PLAN_LINES)
        + "\n",
        v=n.vitals(4),
        desc=(c := icd(r))[1],
        c=c[0],
        ep=n.ep(),
        m=n.meds(2),
    )
    if r.random() < 0.4:
        doc.w(
            "Driver license {lic} on file; vehicle plate {pl} for parking validation.\n",
            lic=P("LICENSE", pt.license),
            pl=P("VEHICLE", pt.plate),
        )
    if r.random() < 0.4:
        doc.w("Portal: {u}  (last login from {ip})\n", u=P("URL", pt.url), ip=P("IP", pt.ip))


def table(n: Note, doc: Doc):
    r, pt, _w = n.r, n.pt, n.w
    if r.random() < 0.5:
        doc.w(
            "CENSUS  {h}  {d}\n| Name | DOB | MRN | Rm | Attending | Dx |\n|---|---|---|---|---|---|\n",
            h=n.h(),
            d=n.d(n.date, "mdy"),
        )
        c, desc = icd(r)
        doc.w(
            "| {name} | {dob} | {mrn} | {rm} | {att} | {c} {desc} |\n",
            name=n.pn("lf", "LF", "LFcomma"),
            dob=n.d(pt.dob, "mdy", "mdy_nopad"),
            mrn=P("MRN", pt.mrn),
            rm=f"{r.randint(2, 9)}{r.choice('ABCDEW')}-{r.randint(1, 40)}",
            att=n.cn(n.att, "l", "lf", "il"),
            c=c,
            desc=desc,
        )
        doc.w(
            "\nNotes: {f} {lab}; consult {cons} re {ep}. {vit} at {t}.\n",
            f=n.pn("l", "f"),
            lab=n.labs(2),
            cons=n.cn(n.other, "l", "il", "dr"),
            ep=n.ep(),
            vit=n.vitals(2),
            t=keep_time(r),
        )
    else:
        doc.w("last_name,first_name,dob,mrn,phone,zip,provider,visit,code\n")
        doc.w(
            "{l},{f},{dob},{mrn},{ph},{z},{prov},{vd},{c}\n",
            l=P("PATIENT_NAME", pt.p.last),
            f=P("PATIENT_NAME", pt.p.first),
            dob=n.d(pt.dob, "iso", "mdy"),
            mrn=P("MRN", pt.mrn),
            ph=P("PHONE", pt.phone.replace(",", "")),
            z=P("ZIP", pt.addr["zip"]),
            prov=n.cn(n.att, "l", "il"),
            vd=n.d(n.date, "iso", "mdy"),
            c=icd(r)[0],
        )
        doc.w(
            "comment: {who} called {d}; {rel} ({role}) to pick up meds ({m}).\n",
            who=n.pn("f", "lower_f", "fl"),
            d=n.d(n.ago(0, 3), "md", "ordinal"),
            rel=n.rn("f", "fl"),
            role=n.rel.role,
            m=n.meds(1),
        )


def billing(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    doc.w(
        "CLAIM / SUPERBILL\nProvider: {h}  Tax ID on file  NPI {npi}\nRendering: {att}\n",
        h=n.h(),
        npi=P("LICENSE", n.att.extra["npi"]),
        att=n.cn(n.att, "lfcred", "flcred"),
    )
    doc.w(
        "Patient: {name}  Sex {sx}  DOB {dob}\nAcct # {acct}   MRN {mrn}\nGuarantor: {g} ({role})  SSN xxx-xx-{s4}\n",
        name=n.pn("LF", "lf", "LFcomma"),
        sx=pt.p.sex,
        dob=n.d(pt.dob, "mdy", "mdy_nopad"),
        acct=P("ACCOUNT", pt.acct),
        mrn=P("MRN", pt.mrn),
        g=n.rn("lf", "fl"),
        role=n.rel.role,
        s4=P("SSN", pt.ssn[-4:]),
    )
    doc.w(
        "Address: {addr}\nPrimary ins: {ins}  Policy {pol}  Group {grp}\n\n",
        addr=address_segs(r, pt.addr, r.choice(["caps", "one", "lower"])),
        ins=r.choice(["Medicare Part B", "UnitedHealthcare", "Medi-Cal", "Humana Gold", "Cigna"]),
        pol=P("HEALTH_PLAN", pt.plan),
        grp=P("ACCOUNT", phone_digits(r)),
    )
    doc.w("DOS        CPT     DX         UNITS  CHARGE\n")
    for _ in range(r.randint(2, 4)):
        c, _desc = icd(r)
        doc.w(
            "{d}  {cpt}   {c}   {u}      ${amt}\n",
            d=n.d(n.ago(0, 10), "mdy", "mdy_short"),
            cpt=K("cpt", r.choice(CPT)),
            c=c,
            u=str(r.randint(1, 3)),
            amt=f"{r.randint(40, 900)}.00",
        )
    doc.w(
        "\nAuthorization obtained {d} by {who}, ref {ref}. Admit {ad} {t}.\n",
        d=n.d(n.ago(3, 9), "md", "mdy"),
        who=n.cn(n.nurse, "fl", "il"),
        ref=P("ACCOUNT", phone_digits(r)),
        ad=n.d(n.adm, "mdy"),
        t=keep_time(r),
    )


def triage(n: Note, doc: Doc):
    r, pt = n.r, n.pt
    doc.w(
        "ED TRIAGE  Arrival {d} {t}  Mode: {mode}\n",
        d=n.d(n.date, "mdy", "mdy_short"),
        t=keep_time(r),
        mode=r.choice(["walk-in", "EMS", "private vehicle", "police"]),
    )
    doc.w(
        "Triage RN {rn}\nPt: {name}  {age}  MRN {mrn}\n",
        rn=n.cn(n.nurse, "il", "il", "fl", "l"),
        name=n.pn("fl", "LF", "lf"),
        age=n.age_("sexcode", "yo"),
        mrn=P("MRN", pt.mrn),
    )
    doc.w(
        "CC: {cc}. {vit}. Pain {p}/10. ESI {esi}.\n",
        cc=r.choice(["chest pain", "fall", "abd pain", "sob", "syncope", "laceration L hand"]),
        vit=n.vitals(4),
        p=str(r.randint(0, 10)),
        esi=str(r.randint(1, 5)),
    )
    doc.w(
        "Hx {ep}, {desc} ({c}). Meds: {m}. NKDA.\n",
        ep=n.ep(),
        desc=(c := icd(r))[1],
        c=c[0],
        m=n.meds(2),
    )
    doc.w("Accompanied by {role} {rel}. ", role=n.rel.role, rel=n.rn("f", "fl"))
    if r.random() < 0.5:
        doc.w("Pt lives at {addr}. ", addr=address_segs(r, pt.addr, r.choice(["lower", "one"])))
    if r.random() < 0.35:
        doc.w(
            "Pacemaker ({dev}) placed at {h} {d}. ",
            dev=P("DEVICE", pt.device),
            h=n.h(n.hosp2),
            d=n.d(n.ago(200, 2000), "month_year", "mdy"),
        )
    doc.w("Seen by {md} at {t}.\n", md=n.cn(n.att, "dr", "drfl", "il"), t=keep_time(r))


def progress(n: Note, doc: Doc):
    r, _pt = n.r, n.pt
    d = Doc()
    d.w(
        "[[PROGRESS NOTE]] - Hospital day {k}\n{date}\n\n",
        k=str(r.randint(2, 9)),
        date=n.d(n.date, "mdy", "long"),
    )
    d.w(
        "[[S:]] {name} says {he} slept poorly, denies chest pain. {rel_role} {rel} visited yesterday. pt {lname} asks about going home on {dd}.\n",
        name=n.pn("f", "title", "fl"),
        he=n.he(),
        rel_role=n.rel.role.capitalize(),
        rel=n.rn("f"),
        lname=n.pn("lower_f", "l"),
        dd=n.d(n.date + dt.timedelta(days=r.randint(1, 3)), "ordinal", "md", "month_day"),
    )
    d.w(
        "[[O:]] {vit}. Lungs with bibasilar crackles. Trace edema. {ep} negative.\nLabs: {labs}\n",
        vit=n.vitals(4),
        ep=K("eponym", "Homans sign"),
        labs=n.labs(4),
    )
    c, desc = icd(r)
    d.w(
        "[[A/P:]] {age} with {desc} ({c}), improving.\n- continue {m}\n- hold {m2} for {lab}\n- f/u with {cons}, {h}\n",
        age=n.age_("yo", "y/o", "sexcode"),
        desc=desc,
        c=c,
        m=n.meds(1),
        m2=n.meds(1),
        lab=n.labs(1),
        cons=n.cn(n.other, "dr", "drfl"),
        h=n.h(n.hosp2),
    )
    d.w(
        "- PT/OT, dispo when medically stable. Discussed with {rel}.\n\n{res}, resident\nSeen and examined with {att}; agree with above.\n",
        rel=n.rn("f", "fl"),
        res=n.cn(r.choice(n.w.doctors), "flcred", "fl", "il"),
        att=n.cn(n.att, "drfl", "dr"),
    )
    doc.add(typo(_segs_of(d), r, rate=0.6))


STYLES = {
    "discharge": discharge,
    "radiology": radiology,
    "nursing": nursing,
    "telephone": telephone,
    "referral": referral,
    "kvheader": kvheader,
    "table": table,
    "billing": billing,
    "triage": triage,
    "progress": progress,
}
