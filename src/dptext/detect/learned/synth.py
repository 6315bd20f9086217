"""A seeded generator of synthetic clinical notes with character-offset labels, the learned
detector's training data (docs/learned_detector.md). Identities come from Faker's locales and,
when given, from the first and last names of names-dataset's countries; the styles are
written here (:func:`STYLES`): discharge summaries with ALL-CAPS headers, lower-case nursing
notes, key-value headers, table and CSV lines, telephone encounters, referral letters, ED
triage, radiology reports, billing forms and progress notes, with typos, lower and upper case,
and clinical look-alikes that are not identifiers (:mod:`.vocab`)."""

from __future__ import annotations

import numpy as np

from dptext.detect.learned import vocab as V

LATIN_LOCALES = ("en_US", "en_GB", "en_AU", "en_CA", "en_IE", "en_IN", "en_NG", "en_PH",
                 "en_NZ", "en_KE", "en_PK", "es_MX", "es_ES", "es_CO", "es_AR", "pt_BR",
                 "pt_PT", "fr_FR", "fr_CA", "de_DE", "de_AT", "it_IT", "nl_NL", "pl_PL",
                 "cs_CZ", "sk_SK", "hu_HU", "ro_RO", "hr_HR", "sl_SI", "sv_SE", "no_NO",
                 "da_DK", "fi_FI", "et_EE", "lt_LT", "lv_LV", "tr_TR", "vi_VN", "id_ID",
                 "fil_PH", "tl_PH", "yo_NG", "ig_NG", "ha_NG", "tw_GH", "sw", "zu_ZA",
                 "ga_IE", "is_IS", "mt_MT", "sq_AL", "az_AZ", "uz_UZ", "es_CL", "es_VE",
                 "fr_BE", "de_CH", "it_CH", "nl_BE", "en_TH", "en_BD")
OTHER_SCRIPT = ("zh_CN", "zh_TW", "ja_JP", "ko_KR", "ru_RU", "ar_SA", "hi_IN", "el_GR",
                "he_IL", "th_TH", "uk_UA", "fa_IR", "bn_BD")
ADDRESS_LOCALES = ("en_US", "en_US", "en_US", "en_GB", "en_CA", "en_AU", "en_IE", "en_NZ")


class Pools:
    """Names, places and organisations drawn once (seeded) from Faker and names-dataset."""

    def __init__(self, seed: int = 0, per_locale: int = 120,
                 extra_first: list[str] = (), extra_last: list[str] = (),
                 faker_names: bool = True) -> None:
        from faker import Faker

        first, last, other = set(), set(), set()
        for i, loc in enumerate(LATIN_LOCALES + OTHER_SCRIPT if faker_names else ()):
            fk = Faker(loc)
            fk.seed_instance(seed * 1000 + i)
            for _ in range(per_locale if loc in LATIN_LOCALES else per_locale // 4):
                f, la = fk.first_name(), fk.last_name()
                if loc in LATIN_LOCALES:
                    first.add(f)
                    last.add(la)
                else:
                    other.add(la + f if loc[:2] in ("zh", "ja", "ko") else f"{f} {la}")
        first |= {n for n in extra_first if n.isprintable() and 1 < len(n) < 20}
        last |= {n for n in extra_last if n.isprintable() and 1 < len(n) < 24}
        self.first = sorted(first)
        self.last = sorted(last)
        self.other_script = sorted(other)
        cities, streets, zips, companies = set(), set(), set(), set()
        for i, loc in enumerate(ADDRESS_LOCALES + LATIN_LOCALES[:20]):
            fk = Faker(loc)
            fk.seed_instance(seed * 1000 + 500 + i)
            for _ in range(per_locale // 2):
                cities.add(fk.city())
                companies.add(fk.company())
                if loc in ADDRESS_LOCALES:
                    streets.add(fk.street_address())
                    zips.add(fk.postcode())
        self.cities = sorted(cities)
        self.streets = sorted(streets)
        self.zips = sorted(z for z in zips if any(c.isdigit() for c in z))
        self.companies = sorted(companies)
        self.domains = sorted({"gmail.com", "yahoo.com", "hotmail.com", "outlook.com",
                               "aol.com", "icloud.com", "mail.com", "proton.me", "comcast.net",
                               "hospital.org", "clinic.net", "health.org", "med.edu"})


class Note:
    """A text under construction and its labels (start, end, category)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n = 0
        self.labels: list[tuple[int, int, str]] = []

    def add(self, piece: str, category: str | None = None) -> Note:
        if category and piece:
            self.labels.append((self.n, self.n + len(piece), category))
        self.parts.append(piece)
        self.n += len(piece)
        return self

    def text(self) -> str:
        return "".join(self.parts)


class Generator:
    """``note()`` -> (text, labels). Seeded by ``seed``; ``pools`` from :class:`Pools`."""

    def __init__(self, pools: Pools, seed: int = 0) -> None:
        self.p = pools
        self.rng = np.random.default_rng(seed)
        self.seen: list[str] = []

    # -- draws -------------------------------------------------------------------------
    def r(self) -> float:
        return float(self.rng.random())

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def digits(self, n: int) -> str:
        return "".join(str(int(d)) for d in self.rng.integers(0, 10, n))

    def first(self) -> str:
        x = self.r()
        if x < 0.06:
            return self.pick(V.WORD_NAMES)
        if x < 0.09:
            return f"{self.pick(self.p.first)}-{self.pick(self.p.first).lower()}"
        return self.pick(self.p.first)

    def date_time(self, note: Note) -> Note:
        """A date (labelled) and, often, a clock time after it (not labelled)."""
        note.add(self.date(), "DATE")
        if self.r() < 0.5:
            note.add(self.pick((" ", " at ", " @ ", "  ")) + self.clock())
        return note

    def last(self) -> str:
        x = self.r()
        if x < 0.05:
            return self.pick(V.WORD_SURNAMES)
        if x < 0.09:
            return self.pick(V.SHORT_SURNAMES)
        name = self.pick(self.p.last)
        if self.r() < 0.05:
            name = f"{name}-{self.pick(self.p.last)}"
        return name

    def case(self, s: str, lower: float = 0.0, upper: float = 0.0) -> str:
        x = self.r()
        return s.lower() if x < lower else s.upper() if x < lower + upper else s

    def typo(self, s: str) -> str:
        if len(s) < 5 or self.r() > 0.5:
            return s
        i = int(self.rng.integers(1, len(s) - 1))
        op = self.r()
        if op < 0.33:
            return s[:i] + s[i + 1:]
        if op < 0.66:
            return s[:i] + s[i + 1] + s[i] + s[i + 2:]
        return s[:i] + s[i] + s[i:]

    def kin(self, note: Note, lower: float = 0.2) -> Note:
        """A kinship word and a relative's name (often one that is an ordinary word)."""
        kin = self.pick(V.KIN)
        if self.r() < 0.3:
            kin = kin.capitalize()
        note.add(self.case(kin, 0.0, 0.05) + self.pick((" ", " ", ", ", ": ")))
        if self.r() < 0.3:
            return note.add(self.case(self.pick(V.WORD_NAMES), lower, 0.05), "PERSON")
        return self.person(note, self.pick(("f", "f", "fl")), lower=lower)

    def again(self, note: Note) -> Note:
        """A surname met earlier in this note, on its own ("Ng reports ...")."""
        surname = self.seen[-1] if self.seen else self.last()
        note.add(self.pick(("Mr. ", "Ms. ", "Mrs. ", "", "", "Dr. ")))
        return note.add(surname, "PERSON")

    def person(self, note: Note, style: str | None = None, lower: float = 0.0) -> Note:
        """A name in one of many shapes; titles and degrees outside the span."""
        if self.r() < 0.02 and self.p.other_script:
            return note.add(self.pick(self.p.other_script), "PERSON")
        f, la = self.first(), self.last()
        self.seen.append(la)
        style = style or self.pick(("fl", "fl", "fl", "lf", "f", "l", "iL", "fml", "fil"))
        if style == "fl":
            s = f"{f} {la}"
        elif style == "lf":
            s = f"{la}, {f}"
        elif style == "f":
            s = f
        elif style == "l":
            s = la
        elif style == "iL":
            s = f"{f[0]}. {la}" if self.r() < 0.7 else f"{f[0]} {la}"
        elif style == "fml":
            s = f"{f} {self.first()} {la}"
        else:
            s = f"{f} {self.pick('ABCDEFGHJKLMNPRSTW')}. {la}"
        if self.r() < 0.12:
            s = self.typo(s)
        return note.add(self.case(s, lower, 0.08), "PERSON")

    def doctor(self, note: Note) -> Note:
        x = self.r()
        if x < 0.4:
            note.add(self.pick(("Dr. ", "Dr ", "dr. ", "DR. ", "Doctor ")))
            return self.person(note, self.pick(("l", "l", "fl", "iL")))
        self.person(note, self.pick(("fl", "iL", "fml", "lf")))
        return note.add(self.pick((", MD", " MD", ", DO", ", NP", " RN", ", PA-C", "")))

    def date(self) -> str:
        y = int(self.rng.integers(1925, 2027))
        m, d = int(self.rng.integers(1, 13)), int(self.rng.integers(1, 29))
        mon = V.MONTHS[m - 1]
        fmt = int(self.rng.integers(20))
        return [f"{m:02d}/{d:02d}/{y}", f"{m}/{d}/{y}", f"{m}/{d}/{y % 100:02d}",
                f"{y}-{m:02d}-{d:02d}", f"{mon} {d}, {y}", f"{d} {mon[:3]} {y}",
                f"{mon[:3]} {d}", f"{m}/{d}", f"{mon} {d}", f"{d}-{mon[:3]}-{y}",
                f"{m:02d}-{d:02d}-{y}", f"{d}.{m}.{y}", f"{mon} {y}", f"{mon[:3]}. {d}",
                f"{d}/{m}/{y}", f"the {d}{self._th(d)}", f"{mon} {d}{self._th(d)}",
                f"{y}/{m:02d}/{d:02d}", f"{mon.upper()[:3]} {d} {y}", f"{y}"][fmt]

    @staticmethod
    def _th(d: int) -> str:
        return "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")

    def age(self) -> str:
        a = int(self.rng.integers(1, 104))
        return self.pick((f"{a}-year-old", f"{a} y/o", f"{a}yo", f"{a} yo", f"{a} year old",
                          f"{a} years old", f"{a}-yr-old", f"{a}y", f"{a} y.o.", f"{a}-y/o",
                          f"{a} yr old", f"{a}-year-old", f"{a} y/o"))

    def age_bare(self, note) -> None:
        """An age as a bare number after its cue ("Age: 47", "aged 47", "47M")."""
        a = str(int(self.rng.integers(1, 104)))
        x = self.r()
        if x < 0.4:
            note.add(self.pick(("Age: ", "AGE: ", "age ", "Age ", "aged ")))
            note.add(a, "AGE")
        elif x < 0.7:
            note.add(a, "AGE").add(self.pick(("M", "F", " M", " F", "yo M", "yo F")))
        else:
            note.add("(").add(a, "AGE").add(self.pick((")", " y)", "yo)")))

    def phone(self) -> str:
        a, b, c = self.digits(3), self.digits(3), self.digits(4)
        return self.pick((f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"{a}.{b}.{c}", f"+1 {a} {b} {c}",
                          f"{a} {b} {c}", f"{b}-{c}", f"1-{a}-{b}-{c}", f"+44 20 {b}{c[0]} {c}",
                          f"({a}){b}-{c}", f"{a}-{b}-{c} x{self.digits(3)}", f"+1-{a}-{b}-{c}",
                          f"{a}{b}{c}"))

    def email(self, f: str | None = None, la: str | None = None) -> str:
        f = (f or self.first()).lower().replace(" ", "").replace("'", "")
        la = (la or self.last()).lower().replace(" ", "").replace("'", "")
        user = self.pick((f"{f}.{la}", f"{f[0]}{la}", f"{f}{self.digits(2)}", f"{la}_{f}",
                          f"{f}{la}{self.digits(3)}", f"{f}-{la}", f"{f[0]}.{la}{self.digits(1)}",
                          f"{la}{self.digits(4)}"))
        if self.r() < 0.6:
            dom = self.pick(self.p.domains)
        else:
            host = self.pick(self.p.last).lower().replace(" ", "")
            dom = f"{host}.{self.pick(('com', 'net', 'org', 'co.uk', 'edu', 'io'))}"
        return f"{user}@{dom}"

    def url(self) -> str:
        host = self.pick(self.p.last).lower().replace(" ", "").replace("'", "")
        user = self.last().lower().replace(" ", "")
        return self.pick((f"https://www.{host}health.org/patients/{self.digits(6)}",
                          f"www.{host}.com", f"http://{host}clinic.net/portal",
                          f"https://mychart.{host}.org/login",
                          f"{host}.net/u/{user}{self.digits(4)}",
                          f"https://{host}.org/p?id={self.digits(7)}", f"{host}care.com/{user}",
                          f"http://www.{host}.co.uk/"))

    def ip(self) -> str:
        return ".".join(str(int(x)) for x in self.rng.integers(1, 255, 4))

    def ident(self) -> str:
        L = "ABCDEFGHJKLMNPRSTUVWXYZ"
        return self.pick((self.digits(7), self.digits(8), f"{self.digits(3)}-{self.digits(2)}-"
                          f"{self.digits(4)}", f"MR{self.digits(6)}", self.digits(10),
                          f"{self.pick(L)}{self.digits(8)}", f"{self.digits(2)}-{self.digits(6)}",
                          self.digits(6), f"{self.pick(L)}{self.pick(L)}{self.digits(7)}",
                          f"{self.pick(L)}{self.pick(L)}{self.pick(L)}{self.digits(9)}",
                          f"{self.digits(9)}{self.pick(L)}", f"{self.pick(L)}{self.digits(3)}-"
                          f"{self.digits(3)}-{self.digits(3)}", f"{self.digits(4)}-{self.digits(4)}"
                          f"-{self.digits(4)}", f"{self.pick(L)}{self.pick(L)}{self.digits(2)}-"
                          f"{self.digits(4)}-{self.pick(L)}{self.pick(L)}",
                          "".join(self.pick(L + "0123456789") for _ in range(17)),
                          f"{self.digits(1)}{self.pick(L)}{self.pick(L)}{self.pick(L)}"
                          f"{self.digits(3)}", f"{self.pick(L)}{self.digits(7)}",
                          f"{self.pick(L)}{self.pick(L)}{self.pick(L)}-{self.digits(4)}",
                          f"xxx-xx-{self.digits(4)}", f"***-**-{self.digits(4)}",
                          f"{self.digits(1)}{self.pick(L)}{self.pick(L)}{self.digits(1)}-"
                          f"{self.pick(L)}{self.pick(L)}{self.digits(1)}-{self.pick(L)}"
                          f"{self.pick(L)}{self.digits(2)}", f"SN{self.digits(8)}",
                          f"{self.pick(L)}{self.pick(L)}{self.pick(L)}{self.digits(6)}"
                          f"{self.pick(L)}", f"{self.digits(4)}-{self.digits(4)}-"
                          f"{self.pick(L)}{self.digits(2)}", f"{self.pick(L)}{self.pick(L)}"
                          f"{self.digits(8)}", f"{self.pick(L)}{self.pick(L)}{self.pick(L)}"
                          f"{self.digits(9)}", f"{self.digits(4)}-{self.digits(5)}"))

    def id_line(self, note) -> None:
        """A labelled identifier of one of many kinds."""
        note.add(self.pick(("MRN: ", "Acct: ", "Account #: ", "Member ID: ", "Policy: ",
                            "Health plan ID: ", "Driver license ", "DL# ", "License plate ",
                            "Vehicle VIN ", "Device serial ", "Pacemaker SN ", "Serial no. ",
                            "NPI ", "DEA# ", "Claim # ", "Encounter # ", "Subscriber ID ",
                            "Insurance ID: ", "Lic. ", "plate ", "SSN ", "Medicaid # ",
                            "Policy ", "Group ", "ref ", "vehicle plate ", "serial ",
                            "Pacemaker (", "NPI ", "Tax ID ", "Auth # ", "CLIA ")))
        if note.parts[-1] == "NPI " or (note.parts[-1] == "Tax ID " and self.r() < 0.5):
            note.add(self.digits(10 if note.parts[-1] == "NPI " else 9), "ID_NUMBER")
            return
        if note.parts[-1] == "Pacemaker (":
            note.add(self.ident(), "ID_NUMBER").add(") placed")
            return
        note.add(self.ident(), "ID_NUMBER")

    def org(self) -> str:
        if self.r() < 0.12:
            return self.pick(self.p.companies)
        return self.pick(V.HOSPITAL_SHAPES).format(
            city=self.pick(self.p.cities), first=self.first(), last=self.last(),
            last2=self.last())

    def address(self, note: Note, lower: float = 0.0, oneline: bool = True) -> Note:
        street = self.pick(self.p.streets)
        if self.r() < 0.15:
            street = f"{int(self.rng.integers(1, 20000))} {self.pick(V.FACILITY_STREETS)}"
        elif self.r() < 0.15:
            street = f"{int(self.rng.integers(1, 9999))} " + self.pick(
                ("n ", "s ", "e ", "w ", "N ", "S ", "E ", "W ", "")) + \
                self.pick(self.p.last).lower() + " " + self.pick(
                    ("rd", "dr", "st", "ave", "blvd", "hwy", "ln", "way", "ct", "pkwy"))
        if self.r() < 0.3:
            street += self.pick((" Apt 4B", " Unit 12", f" #{self.digits(3)}", " Suite 200"))
        up = 0.25 if self.r() < 0.3 else 0.0
        lower = max(lower, 0.12)
        note.add(self.case(street, lower, 0.1 + up), "STREET_ADDRESS")
        note.add(", " if oneline else "\n")
        note.add(self.case(self.pick(self.p.cities), lower, 0.1 + up), "GPE")
        note.add(self.pick((", ", " ")))
        note.add(self.pick(V.STATES), "GPE")
        note.add(" ")
        z = self.pick(self.p.zips) if self.r() < 0.4 else self.digits(5)
        if self.r() < 0.2:
            z = f"{self.digits(5)}-{self.digits(4)}"
        return note.add(z, "ZIP_CODE")

    # -- fillers (negatives) ---------------------------------------------------------------
    def vitals(self, k: int = 4, sep: str | None = None) -> str:
        ri = self.rng.integers
        vals = {"a": ri(90, 190), "b": ri(45, 110), "c": ri(40, 150), "r": ri(8, 40),
                "t": f"{ri(35, 41)}.{ri(0, 10)}", "f": f"{ri(95, 105)}.{ri(0, 10)}",
                "o": ri(80, 101), "w": ri(3, 160), "bmi": f"{ri(15, 50)}.{ri(0, 10)}",
                "h": ri(50, 200), "g": ri(3, 16), "p": ri(0, 11), "gl": ri(40, 400),
                "na": ri(120, 150), "k": f"{ri(2, 7)}.{ri(0, 10)}", "plt": ri(20, 600),
                "hb": f"{ri(5, 18)}.{ri(0, 10)}", "wbc": f"{ri(1, 30)}.{ri(0, 10)}",
                "a1c": f"{ri(4, 14)}.{ri(0, 10)}", "mg": f"{ri(1, 4)}.{ri(0, 10)}",
                "ldl": ri(40, 250), "tsh": f"{ri(0, 12)}.{ri(0, 10)}", "bnp": ri(10, 3000),
                "cr": f"{ri(0, 9)}.{ri(0, 10)}", "inr": f"{ri(1, 5)}.{ri(0, 10)}"}
        sep = sep or self.pick((", ", "  ", "; ", " ", ", "))
        items = [self.pick(V.VITALS if self.r() < 0.6 else V.LAB_LINE).format(**vals)
                 for _ in range(k)]
        return sep.join(items)

    def clock(self) -> str:
        h, m = int(self.rng.integers(0, 24)), self.pick(("00", "15", "30", "45", "05", "50"))
        return self.pick((f"{h:02d}{m}", f"{h:02d}:{m}", f"{h:02d}{m}", f"{(h % 12) + 1}:{m} pm"))

    def codes_row(self) -> str:
        """A billing line: service date (labelled by the caller), CPT, ICD, units, charge."""
        return f"  {self.pick(V.CPT)}   {self.pick(V.ICD)}   {self.rng.integers(1, 5)}" \
               f"      ${self.rng.integers(20, 900)}.00"

    def clinical(self) -> str:
        x = int(self.rng.integers(16))
        if x >= 12:
            y = self.r()
            if y < 0.35:
                return self.pick(("vs ", "Vitals: ", "VS: ", "In the ED ", "O: ", "")) + \
                    self.vitals(int(self.rng.integers(2, 6)))
            if y < 0.55:
                return self.pick(("Recent labs: ", "Labs: ", "Notes: ", "")) + \
                    self.vitals(int(self.rng.integers(2, 5)))
            if y < 0.75:
                return f"{self.pick(('Assessment: ', 'Dx: ', 'A/P: ', ''))}" \
                       f"{self.pick(V.EPONYMS)} {self.pick(V.ICD)}; " \
                       f"{self.pick(('Hx ', 'h/o ', ''))}{self.pick(V.EPONYMS)} stable"
            return self.pick(("Chief Complaint: ", "CC: ")) + self.pick(
                ("dizziness", "cough", "fall", "chest pain", "sob", "abd pain")) + \
                "  Allergies: " + self.pick(("NKDA", "PCN", "sulfa", "none")) + \
                f"  Code status: {self.pick(('Full', 'DNR', 'DNR/DNI'))}"
        if x == 0:
            return f"{self.pick(V.DRUGS)} {int(self.rng.integers(1, 100)) * 5} " \
                   f"{self.pick(V.UNITS)} {self.pick(V.FREQS)}"
        if x == 1:
            return ", ".join(f"{self.pick(V.LABS)} {self.rng.integers(1, 150)}."
                             f"{self.rng.integers(0, 10)}" for _ in range(4))
        if x == 2:
            return f"BP {self.rng.integers(90, 180)}/{self.rng.integers(50, 110)}, HR " \
                   f"{self.rng.integers(50, 130)}, RR {self.rng.integers(12, 30)}, T " \
                   f"{self.rng.integers(96, 103)}.{self.rng.integers(0, 10)}, O2 sat " \
                   f"{self.rng.integers(85, 100)}% on RA"
        if x == 3:
            return f"Dx: {self.pick(V.EPONYMS)} ({self.pick(V.ICD)})"
        if x == 4:
            return f"meds given at {self.rng.integers(0, 24):02d}00 and " \
                   f"{self.rng.integers(0, 24):02d}:{self.pick(('00', '15', '30', '45'))}"
        if x == 5:
            return f"history of {self.pick(V.EPONYMS)}, follow-up for {self.pick(V.EPONYMS)}"
        if x == 6:
            return self.pick((f"CPT {self.pick(V.CPT)}, ICD-10 {self.pick(V.ICD)}, "
                              f"{self.pick(V.ICD)}", f"Procedure {self.pick(V.CPT)} x1",
                              f"{self.pick(V.CPT)} - office visit", f"codes {self.pick(V.CPT)}, "
                              f"{self.pick(V.CPT)}; dx {self.pick(V.ICD)}"))
        if x == 10:
            t = f"{self.rng.integers(0, 24):02d}{self.pick(('00', '15', '30', '45'))}"
            return self.pick((f"seen at {t}", f"@ {t[:2]}:{t[2:]}", "shift 0700-1900",
                              f"vitals q4h, last at {t}", f"{t} meds given",
                              f"returned at {t[:2]}:{t[2:]} pm", f"NPO after {t}"))
        if x == 7:
            return self.pick(V.NURSING)
        if x == 8:
            return f"GCS 15, pain {self.rng.integers(0, 11)}/10, strength 5/5, " \
                   f"wt {self.rng.integers(40, 140)} kg"
        return self.pick(V.CLINICAL)

    def sentences(self, note: Note, k: int, lower: bool = False) -> Note:
        for _ in range(k):
            s = self.clinical()
            note.add((s.lower() if lower else s) + self.pick((" ", ". ", "\n", "; ")))
        return note

    # -- one note --------------------------------------------------------------------------
    def note(self) -> tuple[str, list[tuple[int, int, str]]]:
        from dptext.detect.learned.synth_styles import STYLES

        n = Note()
        self.seen = []
        for _ in range(1 + int(self.rng.integers(2))):
            self.pick(STYLES)(self, n)
            n.add("\n\n")
        return n.text(), n.labels

    def notes(self, count: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
        return [self.note() for _ in range(count)]
