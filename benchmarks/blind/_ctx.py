# ruff: noqa: E501  (hand-written note templates: long lines are the notes' text)
"""Per-patient and per-note context for the blind generators: people, dates, identifiers,
and the renderers that turn them into annotated segments (names in many shapes, dates in
many formats, addresses)."""

from __future__ import annotations

import datetime as dt
import random

from _core import (
    CITIES,
    EMAIL_DOMAINS,
    EMPLOYERS,
    HOSP_PATTERNS,
    SAINTS,
    STATE_NAMES,
    STREET_NAMES,
    STREET_TYPES,
    TREES,
    K,
    NamePools,
    P,
    Person,
    T,
    account,
    device_serial,
    digits,
    ip,
    license_no,
    make_person,
    mrn,
    npi,
    phone,
    plan_id,
    plate,
    ssn,
    strip_accents,
)

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
RELATIONS = {
    "M": ["husband", "son", "brother", "father", "grandson", "nephew", "son-in-law", "partner"],
    "F": [
        "wife",
        "daughter",
        "sister",
        "mother",
        "granddaughter",
        "niece",
        "daughter-in-law",
        "partner",
    ],
}


def ordinal(n: int) -> str:
    return f"{n}{'th' if 11 <= n % 100 <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def date_segs(rng: random.Random, d: dt.date, style: str | None = None) -> list:
    """A DATE span in one of many shapes (the words around it stay plain)."""
    style = style or rng.choice(
        [
            "mdy",
            "mdy",
            "mdy_short",
            "iso",
            "long",
            "dmy",
            "md",
            "month_day",
            "ordinal",
            "month_year",
            "dmonyyyy",
            "mon_d",
            "mdy_dash",
        ]
    )
    m, day, y = d.month, d.day, d.year
    if style == "ordinal":
        return T("the ") + P("DATE", ordinal(day))
    s = {
        "mdy": f"{m:02d}/{day:02d}/{y}",
        "mdy_short": f"{m}/{day}/{str(y)[2:]}",
        "iso": d.isoformat(),
        "long": f"{MONTHS[m - 1]} {day}, {y}",
        "dmy": f"{day} {MONTHS[m - 1][:3]} {y}",
        "md": f"{m}/{day}",
        "month_day": f"{MONTHS[m - 1]} {day}",
        "month_year": f"{MONTHS[m - 1]} {y}",
        "dmonyyyy": f"{day:02d}-{MONTHS[m - 1][:3].upper()}-{y}",
        "mon_d": f"{MONTHS[m - 1][:3]} {ordinal(day)}",
        "mdy_dash": f"{m}-{day}-{y}",
        "mdy_nopad": f"{m}/{day}/{y}",
    }[style]
    return P("DATE", s)


def name_segs(p: Person, cat: str, style: str) -> list:
    """A person's name in one shape; each name part is its own gold span."""
    f, l, mid = p.first, p.last, p.middle  # noqa: E741
    if style == "fl":
        return P(cat, f) + T(" ") + P(cat, l)
    if style == "fml":
        return (
            (P(cat, f) + T(" ") + P(cat, mid) + T(" ") + P(cat, l))
            if mid
            else P(cat, f) + T(" ") + P(cat, l)
        )
    if style == "fil":
        return (
            (P(cat, f) + T(" ") + P(cat, mid[0] + ".") + T(" ") + P(cat, l))
            if mid
            else P(cat, f) + T(" ") + P(cat, l)
        )
    if style == "lf":
        return P(cat, l) + T(", ") + P(cat, f)
    if style == "LF":
        return P(cat, l.upper()) + T(", ") + P(cat, f.upper())
    if style == "LFcomma":  # LAST,FIRST as in exports
        return P(cat, l.upper()) + T(",") + P(cat, f.upper())
    if style == "FL_caps":
        return P(cat, f.upper()) + T(" ") + P(cat, l.upper())
    if style == "l":
        return P(cat, l)
    if style == "f":
        return P(cat, f)
    if style == "il":
        return P(cat, f[0] + ".") + T(" ") + P(cat, l)
    if style == "li":
        return P(cat, l) + T(" ") + P(cat, f[0])
    if style == "title":
        return T("Mr. " if p.sex == "M" else rng_title(p)) + P(cat, l)
    if style == "lower_f":
        return P(cat, f.lower())
    if style == "lower_fl":
        return P(cat, f.lower()) + T(" ") + P(cat, l.lower())
    if style == "dr":
        return T("Dr. ") + P(cat, l)
    if style == "drfl":
        return T("Dr. ") + P(cat, f) + T(" ") + P(cat, l)
    if style == "flcred":
        return P(cat, f) + T(" ") + P(cat, l) + T(", " + (p.cred or "MD"))
    if style == "lfcred":
        return P(cat, l) + T(", ") + P(cat, f) + T(" " + (p.cred or "MD"))
    if style == "script":
        return P(cat, p.script) if p.script else P(cat, f) + T(" ") + P(cat, l)
    raise ValueError(style)


def rng_title(p: Person) -> str:
    return "Mrs. " if sum(map(ord, p.first)) % 2 else "Ms. "


class World:
    """Everything one set draws from: name pools, clinicians, hospitals."""

    def __init__(self, seed: int, origin_weights: dict[str, float], pools: NamePools):
        self.rng = random.Random(seed)
        self.pools = pools
        self.ow = {o: w for o, w in origin_weights.items() if o in pools.pools}
        r = self.rng
        self.clinicians = []
        creds = [
            "MD",
            "MD",
            "DO",
            "NP",
            "PA-C",
            "MD, PhD",
            "RN",
            "RN",
            "RN, BSN",
            "LPN",
            "MSW",
            "PharmD",
        ]
        for i in range(40):
            o = self.origin()
            c = make_person(r, pools, o, short_last=r.random() < 0.08)
            c.role = "clinician"
            c.cred = creds[i % len(creds)]
            c.extra["npi"] = npi(r)
            self.clinicians.append(c)
        self.doctors = [
            c for c in self.clinicians if c.cred in ("MD", "DO", "MD, PhD", "NP", "PA-C")
        ]
        self.nurses = [c for c in self.clinicians if c.cred.startswith(("RN", "LPN"))]
        self.hospitals = []
        for _ in range(14):
            city, st = r.choice(CITIES)
            lp = r.choice(pools.pools["anglo"]["last"])
            lp2 = r.choice(pools.pools[self.origin()]["last"])
            name = r.choice(HOSP_PATTERNS).format(
                city=city, saint=r.choice(SAINTS), last=lp, last2=lp2, tree=r.choice(TREES)
            )
            self.hospitals.append(name)

    def origin(self) -> str:
        os_, ws = zip(*sorted(self.ow.items()), strict=False)
        return self.rng.choices(os_, ws)[0]


def address(rng: random.Random) -> dict:
    city, st = rng.choice(CITIES)
    num = str(rng.randint(3, 19999))
    street = f"{num} {rng.choice(['N ', 'S ', 'E ', 'W ', '', '', '', ''])}{rng.choice(STREET_NAMES)} {rng.choice(STREET_TYPES)}"
    unit = rng.choice(
        [
            "",
            "",
            "",
            f" Apt {rng.randint(1, 40)}{rng.choice(['', 'B', 'C'])}",
            f" Unit {rng.randint(100, 999)}",
            f" #{rng.randint(2, 30)}",
        ]
    )
    return {
        "street": street + unit,
        "city": city,
        "state": st,
        "zip": f"{rng.randint(10000, 99950):05d}",
    }


def address_segs(rng, a: dict, style: str | None = None) -> list:
    style = style or rng.choice(["one", "one", "two", "lower", "caps", "state_name"])
    city = a["city"]
    state = a["state"]
    zp = a["zip"] + (f"-{digits(rng, 4)}" if rng.random() < 0.15 else "")
    street = a["street"]
    if style == "lower":
        street, city = street.lower(), city.lower()
    if style == "caps":
        street, city = street.upper(), city.upper()
    if style == "state_name":
        state = STATE_NAMES.get(state, state)
    sep = "\n" if style == "two" else ", "
    return (
        P("STREET", street)
        + T(sep)
        + P("CITY", city)
        + T(", " if style != "lower" else " ")
        + P("STATE", state)
        + T(" ")
        + P("ZIP", zp)
    )


class Patient:
    def __init__(self, world: World, pid: str, rng: random.Random):
        self.pid = pid
        o = world.origin()
        pools = world.pools
        self.p = make_person(
            rng, pools, o, short_last=rng.random() < 0.12, word_first=rng.random() < 0.04
        )
        if rng.random() < 0.25:
            self.p.script = pools.script_name(o)
        self.old = rng.random() < 0.18
        age = (
            rng.randint(90, 104)
            if self.old
            else (rng.randint(1, 17) if rng.random() < 0.08 else rng.randint(19, 89))
        )
        self.base = dt.date(rng.randint(2018, 2025), rng.randint(1, 12), rng.randint(1, 28))
        self.dob = dt.date(self.base.year - age, rng.randint(1, 12), rng.randint(1, 28))
        self.mrn = mrn(rng)
        self.ssn = ssn(rng)
        self.acct = account(rng)
        self.plan = plan_id(rng)
        self.phone = phone(rng)
        self.cell = phone(rng)
        user = (
            strip_accents(self.p.first.lower().replace("-", ""))
            + rng.choice([".", "_", ""])
            + strip_accents(self.p.last.lower().replace(" ", "").replace("-", ""))
            + rng.choice(["", str(rng.randint(1, 99))])
        )
        self.email = user + "@" + rng.choice(EMAIL_DOMAINS)
        self.addr = address(rng)
        self.employer = rng.choice(EMPLOYERS)
        self.license = license_no(rng)
        self.device = device_serial(rng)
        self.plate = plate(rng)
        self.ip = ip(rng)
        self.url = (
            rng.choice(["https://mychart.", "http://portal.", "www.", "https://"])
            + rng.choice(
                ["healthconnect", "carelink", "patientgateway", "myhealth", "followmyhealth"]
            )
            + rng.choice([".org", ".com", ".net"])
            + f"/u/{strip_accents(self.p.last.lower().replace(' ', ''))}{rng.randint(10, 9999)}"
        )
        self.relatives = []
        for _ in range(rng.randint(1, 3)):
            sx = rng.choice("MF")
            ro = o if rng.random() < 0.8 else world.origin()
            rel = make_person(rng, pools, ro, sex=sx, word_first=rng.random() < 0.3)
            if rng.random() < 0.7:
                rel.last = self.p.last
            rel.role = rng.choice(RELATIONS[sx])
            rel.extra["phone"] = phone(rng)
            self.relatives.append(rel)
        self.pcp = rng.choice(world.doctors)

    def age_at(self, d: dt.date) -> int:
        return d.year - self.dob.year - ((d.month, d.day) < (self.dob.month, self.dob.day))


def age_segs(rng, age: int, style: str | None = None) -> list:
    style = style or rng.choice(["yo", "year-old", "y/o", "age", "sexcode", "years"])
    a = str(age)
    if style == "yo":
        return P("AGE", a) + T(" yo")
    if style == "year-old":
        return P("AGE", a) + T("-year-old")
    if style == "y/o":
        return P("AGE", a) + T(" y/o")
    if style == "age":
        return T("age ") + P("AGE", a)
    if style == "sexcode":
        return P("AGE", a) + T(rng.choice(["M", "F", "yoM", "yoF"]))
    return P("AGE", a) + T(" years old")


def idsegs(cat: str, value: str) -> list:
    return P(cat, value)


def keep_time(rng) -> list:
    from _core import clock

    return K("time", clock(rng))


__all__ = [
    "World",
    "Patient",
    "date_segs",
    "name_segs",
    "address_segs",
    "age_segs",
    "ordinal",
    "MONTHS",
    "keep_time",
    "idsegs",
]
