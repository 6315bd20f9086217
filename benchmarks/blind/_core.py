# ruff: noqa: E501  (hand-written note templates: long lines are the notes' text)
"""Shared pieces of the blind-set generators: the annotated document builder, name pools,
identifier shapes and the clinical look-alike vocabulary.

Written without reading dptext's detect/, deid/ or targeted/ code: only the category list,
the scoring rules and a free hand over styles and origins. Everything is seeded.

Name sources: Faker's locales (MIT) and `names-dataset` 3.3.1 (first and last names of 105
countries; `pip install -c constraints.txt names-dataset`), plus hand-written pools for the
origins those lists lack or spell badly (Vietnamese, Korean and Russian romanisations,
Arabic transliterations, relatives named by ordinary words).
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field

# ----------------------------------------------------------------------------- document builder
TOKEN = re.compile(r"\{(\w+)\}|\[\[(.*?)\]\]")


def P(cat: str, text: str) -> list:
    """A gold PHI segment."""
    return [("P:" + cat, text)]


def K(kind: str, text: str) -> list:
    """A clinical look-alike that must survive."""
    return [("K:" + kind, text)]


def T(text: str) -> list:
    return [("", text)]


class Doc:
    """Builds a note piece by piece; the gold offsets fall out of the pieces."""

    def __init__(self):
        self.parts: list[str] = []
        self.n = 0
        self.phi: list[dict] = []
        self.keep: list[dict] = []

    def add(self, segs) -> Doc:
        if isinstance(segs, str):
            segs = T(segs)
        for tag, text in segs:
            if not text:
                continue
            if tag.startswith("P:"):
                self.phi.append(
                    {"start": self.n, "end": self.n + len(text), "category": tag[2:], "text": text}
                )
            elif tag.startswith("K:"):
                self.keep.append(
                    {"start": self.n, "end": self.n + len(text), "kind": tag[2:], "text": text}
                )
            self.parts.append(text)
            self.n += len(text)
        return self

    def w(self, fmt: str, **kw) -> Doc:
        """Write `fmt`: {slot} takes a segment list (or plain str) from kw, [[HEADER:]] is a
        section header to keep."""
        pos = 0
        for m in TOKEN.finditer(fmt):
            self.add(fmt[pos : m.start()])
            if m.group(1) is not None:
                self.add(kw[m.group(1)])
            else:
                self.add(K("header", m.group(2)))
            pos = m.end()
        self.add(fmt[pos:])
        return self

    def text(self) -> str:
        return "".join(self.parts)


def lower_segs(segs, names=True):
    """Lower-case plain text (and names when asked), leave look-alikes as written."""
    out = []
    for tag, text in segs:
        if tag.startswith("K:") and tag != "K:header":
            out.append((tag, text))
        elif tag.startswith("P:") and not names:
            out.append((tag, text))
        else:
            out.append((tag, text.lower()))
    return out


def strip_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


# ----------------------------------------------------------------------------- names
HAND = {
    "vietnamese": {
        "last": [
            "Nguyen",
            "Tran",
            "Le",
            "Pham",
            "Hoang",
            "Huynh",
            "Vo",
            "Vu",
            "Dang",
            "Bui",
            "Do",
            "Ho",
            "Ngo",
            "Duong",
            "Ly",
            "Truong",
            "Phan",
            "Dinh",
            "Lam",
            "Ta",
            "Quach",
            "Mai",
        ],
        "M": [
            "Thanh",
            "Minh",
            "Tuan",
            "Hung",
            "Dung",
            "Quang",
            "Khoa",
            "Phuc",
            "Long",
            "Bao",
            "Vinh",
            "Hieu",
            "Duc",
            "Nam",
            "Trung",
            "Cuong",
            "Tien",
            "Hai",
            "Son",
            "Toan",
            "Loc",
            "Khanh",
        ],
        "F": [
            "Lan",
            "Huong",
            "Mai",
            "Linh",
            "Trang",
            "Thuy",
            "Ngoc",
            "Hanh",
            "Phuong",
            "Yen",
            "Hoa",
            "Nhung",
            "Thao",
            "Tuyet",
            "Xuan",
            "Diem",
            "Kim",
            "Oanh",
            "Vy",
            "Nga",
            "Hien",
            "Loan",
        ],
        "mid": ["Van", "Thi", "Duc", "Ngoc", "Minh", "Thanh"],
    },
    "korean": {
        "last": [
            "Kim",
            "Lee",
            "Park",
            "Choi",
            "Jung",
            "Kang",
            "Cho",
            "Yoon",
            "Jang",
            "Lim",
            "Han",
            "Oh",
            "Seo",
            "Shin",
            "Kwon",
            "Hwang",
            "Ahn",
            "Song",
            "Yoo",
            "Hong",
            "Jeon",
            "Moon",
        ],
        "M": [
            "Min-jun",
            "Seo-jun",
            "Ji-ho",
            "Hyun-woo",
            "Jae-won",
            "Sung-min",
            "Dong-hyun",
            "Young-ho",
            "Jin-woo",
            "Sang-hoon",
            "Byung-chul",
            "Kyung-soo",
            "Tae-yang",
            "Woo-jin",
            "Jun-seo",
        ],
        "F": [
            "Seo-yeon",
            "Ji-woo",
            "Ha-eun",
            "Min-seo",
            "Soo-ah",
            "Ji-yeon",
            "Eun-ji",
            "Hye-jin",
            "Mi-kyung",
            "Young-hee",
            "Jung-sook",
            "Yoon-ah",
            "Da-eun",
            "Su-bin",
            "Kyung-hee",
        ],
    },
    "russian": {
        "last": [
            "Ivanov",
            "Smirnov",
            "Kuznetsov",
            "Popov",
            "Vasiliev",
            "Petrov",
            "Sokolov",
            "Mikhailov",
            "Novikov",
            "Fedorov",
            "Morozov",
            "Volkov",
            "Alekseev",
            "Lebedev",
            "Semenov",
            "Egorov",
            "Pavlov",
            "Kozlov",
            "Stepanov",
            "Nikolaev",
            "Orlov",
            "Zaitsev",
            "Belov",
            "Gusev",
        ],
        "M": [
            "Aleksandr",
            "Sergei",
            "Dmitri",
            "Andrei",
            "Alexei",
            "Vladimir",
            "Igor",
            "Yevgeny",
            "Oleg",
            "Nikolai",
            "Mikhail",
            "Pavel",
            "Yuri",
            "Viktor",
            "Konstantin",
            "Anatoly",
            "Gennady",
        ],
        "F": [
            "Olga",
            "Tatiana",
            "Natalia",
            "Elena",
            "Irina",
            "Svetlana",
            "Lyudmila",
            "Galina",
            "Yulia",
            "Anastasia",
            "Ekaterina",
            "Marina",
            "Valentina",
            "Oksana",
            "Larisa",
            "Nadezhda",
            "Zoya",
        ],
    },
    "arabic": {
        "last": [
            "Haddad",
            "Khoury",
            "Mansour",
            "Nasser",
            "Saleh",
            "Hamdan",
            "Al-Sayed",
            "Abdelrahman",
            "El-Masri",
            "Qureshi",
            "Farouk",
            "Suleiman",
            "Darwish",
            "Hijazi",
            "Bakr",
            "Al-Amin",
            "Shaheen",
            "Awad",
            "Zayed",
            "Rashid",
            "Jaber",
            "Issa",
            "Odeh",
            "Kassem",
            "Tamimi",
        ],
        "M": [
            "Mohammed",
            "Ahmed",
            "Omar",
            "Khaled",
            "Youssef",
            "Tariq",
            "Hassan",
            "Karim",
            "Samir",
            "Walid",
            "Ibrahim",
            "Mustafa",
            "Faisal",
            "Nabil",
            "Ziad",
            "Hamza",
            "Bilal",
            "Rami",
        ],
        "F": [
            "Fatima",
            "Aisha",
            "Layla",
            "Mariam",
            "Nour",
            "Huda",
            "Rania",
            "Salma",
            "Yasmin",
            "Amal",
            "Hiba",
            "Reem",
            "Dalia",
            "Lina",
            "Samira",
            "Zainab",
            "Rasha",
            "Widad",
        ],
    },
}
# relatives (and a few patients) whose first name is an ordinary English word
WORD_NAMES = {
    "M": [
        "Will",
        "Bill",
        "Mark",
        "Frank",
        "Art",
        "Rich",
        "Ray",
        "Hunter",
        "Chance",
        "King",
        "Sunny",
        "Major",
        "Guy",
        "Pat",
        "Rob",
        "Jack",
        "Cliff",
        "Dean",
        "Drew",
        "Gene",
        "Miles",
        "Wade",
        "Grant",
        "Lance",
        "Rod",
        "Sterling",
        "Sonny",
        "Bishop",
        "Justice",
        "Sunday",
    ],
    "F": [
        "Hope",
        "Joy",
        "Faith",
        "Grace",
        "Rose",
        "May",
        "June",
        "Dawn",
        "Summer",
        "Autumn",
        "Iris",
        "Ivy",
        "Pearl",
        "Ruby",
        "Amber",
        "Honey",
        "Precious",
        "Blessing",
        "Charity",
        "Patience",
        "Mercy",
        "Destiny",
        "Star",
        "Crystal",
        "Holly",
        "Heather",
        "Violet",
        "Goodness",
        "Comfort",
        "Promise",
    ],
}
SHORT_SURNAMES = [
    "Ng",
    "Li",
    "Wu",
    "Ho",
    "Lu",
    "Yu",
    "Ma",
    "Hu",
    "Xu",
    "Le",
    "Do",
    "Vo",
    "Ly",
    "Oh",
    "Im",
    "Ko",
    "An",
    "Bo",
    "Ye",
    "Su",
]

ND_COUNTRIES = {
    "hispanic": ["MX", "CO", "PR", "SV", "GT", "PE"],
    "chinese": ["CN", "TW", "HK", "SG"],
    "indian": ["IN"],
    "nigerian": ["NG"],
    "arabic": ["EG", "SA", "JO", "LB", "IQ"],
    "polish": ["PL"],
    "anglo": ["US", "GB", "CA", "IE"],
    "filipino": ["PH"],
    "ghanaian": ["GH"],
    "ethiopian": ["ET"],
    "korean": ["KR"],
    "iranian": ["IR"],
    "bangladeshi": ["BD"],
    "turkish": ["TR"],
}
FAKER_LOCALES = {
    "hispanic": ["es_MX", "es_CO", "es_ES", "es_AR"],
    "chinese": ["zh_CN", "zh_TW"],
    "indian": ["en_IN", "hi_IN", "ta_IN", "gu_IN"],
    "nigerian": ["yo_NG", "ig_NG", "ha_NG", "en_NG"],
    "polish": ["pl_PL"],
    "anglo": ["en_US", "en_GB", "en_IE", "en_AU"],
    "filipino": ["fil_PH"],
    "vietnamese": ["vi_VN"],
    "russian": ["ru_RU"],
    "korean": ["ko_KR"],
    "arabic": ["ar_SA"],
    "ghanaian": ["tw_GH"],
    "iranian": ["fa_IR"],
    "turkish": ["tr_TR"],
}
SCRIPT_LOCALE = {
    "chinese": "zh_CN",
    "korean": "ko_KR",
    "russian": "ru_RU",
    "arabic": "ar_SA",
    "vietnamese": "vi_VN",
}
BAD = {"Md", "Mj", "Sh", "Gh", "Mohd", "Muhd", "Sk", "Um", "Jr", "Mr", "Mrs", "Dr"}
LATIN = re.compile(r"^[A-Za-z][A-Za-z'\-]+$")


def _latin(name: str) -> str | None:
    name = strip_accents(name).strip()
    if not LATIN.match(name) or name in BAD or len(name) < 2:
        return None
    return name[0].upper() + name[1:]


class NamePools:
    """Per-origin pools of first (by sex) and last names, Latin script; plus native-script
    name generators."""

    def __init__(self, seed: int, use_names_dataset: bool = True, top: int = 250):
        from faker import Faker

        self.pools: dict[str, dict[str, list[str]]] = {}
        nd = None
        if use_names_dataset:
            try:
                from names_dataset import NameDataset

                nd = NameDataset()
            except ImportError:  # pragma: no cover - documented fallback
                nd = None
        origins = sorted(set(ND_COUNTRIES) | set(FAKER_LOCALES) | set(HAND))
        for o in origins:
            pool = {"M": set(), "F": set(), "last": set()}
            for c in ND_COUNTRIES.get(o, []) if nd else []:
                try:
                    first = nd.get_top_names(n=top, country_alpha2=c)[c]
                    last = nd.get_top_names(n=top, country_alpha2=c, use_first_names=False)[c]
                except (KeyError, IndexError):
                    continue
                for sx in "MF":
                    pool[sx].update(x for x in map(_latin, first[sx]) if x)
                pool["last"].update(x for x in map(_latin, last) if x)
            for loc in FAKER_LOCALES.get(o, []):
                f = Faker(loc)
                f.seed_instance(seed)
                for _ in range(120):
                    try:
                        if loc.startswith("zh_"):
                            pool["M"].add(f.first_romanized_name())
                            pool["last"].add(f.last_romanized_name())
                            continue
                        for sx, fn in (("M", f.first_name_male), ("F", f.first_name_female)):
                            x = _latin(fn())
                            if x:
                                pool[sx].add(x)
                        x = _latin(f.last_name())
                        if x:
                            pool["last"].add(x)
                    except AttributeError:
                        break
            h = HAND.get(o)
            if h:
                for key in ("M", "F", "last"):
                    pool[key].update(h[key])
            if o == "chinese":
                pool["F"].update(
                    ["Mei", "Xiu", "Ling", "Hui", "Jing", "Yan", "Fang", "Li", "Xia", "Qing"]
                )
                pool["M"].update(
                    ["Wei", "Jun", "Hao", "Lei", "Qiang", "Jian", "Bo", "Tao", "Yong", "Gang"]
                )
            if not pool["F"]:
                pool["F"] = set(pool["M"])
            if not pool["M"]:
                pool["M"] = set(pool["F"])
            if pool["last"] and pool["M"]:
                self.pools[o] = {k: sorted(v) for k, v in pool.items()}
        self.script_fakers = {}
        for o, loc in SCRIPT_LOCALE.items():
            f = Faker(loc)
            f.seed_instance(seed + 1)
            self.script_fakers[o] = f

    def origins(self):
        return sorted(self.pools)

    def script_name(self, origin: str) -> str | None:
        f = self.script_fakers.get(origin)
        if f is None:
            return None
        if origin == "russian":
            return f.last_name() + " " + f.first_name()
        if origin == "vietnamese":
            return f.last_name() + " " + f.first_name()
        n = f.last_name() + f.first_name()
        return n if origin in ("chinese", "korean") else f.first_name() + " " + f.last_name()


@dataclass
class Person:
    first: str
    last: str
    sex: str
    origin: str
    middle: str = ""
    script: str | None = None
    role: str = "patient"
    cred: str = ""
    extra: dict = field(default_factory=dict)


def make_person(
    rng: random.Random,
    pools: NamePools,
    origin: str,
    sex: str | None = None,
    short_last: bool = False,
    word_first: bool = False,
) -> Person:
    sex = sex or rng.choice("MF")
    p = pools.pools[origin]
    first = rng.choice(WORD_NAMES[sex]) if word_first else rng.choice(p[sex])
    last = rng.choice(SHORT_SURNAMES) if short_last else rng.choice(p["last"])
    if origin == "hispanic" and rng.random() < 0.35:
        last = last + rng.choice([" ", "-"]) + rng.choice(p["last"])
    middle = ""
    if origin == "vietnamese" and rng.random() < 0.5:
        middle = rng.choice(HAND["vietnamese"]["mid"])
    elif rng.random() < 0.2:
        middle = rng.choice(p[sex])
    if rng.random() < 0.08 and origin not in ("korean",):
        first = first + "-" + rng.choice(p[sex])  # First-First
    return Person(first=first, last=last, sex=sex, origin=origin, middle=middle)


# ----------------------------------------------------------------------------- places, orgs, ids
CITIES = [
    ("Fresno", "CA"),
    ("Bakersfield", "CA"),
    ("Modesto", "CA"),
    ("Stockton", "CA"),
    ("Salinas", "CA"),
    ("Oxnard", "CA"),
    ("Pomona", "CA"),
    ("Garden Grove", "CA"),
    ("El Monte", "CA"),
    ("Daly City", "CA"),
    ("Laredo", "TX"),
    ("McAllen", "TX"),
    ("Brownsville", "TX"),
    ("Lubbock", "TX"),
    ("Pasadena", "TX"),
    ("Sugar Land", "TX"),
    ("Round Rock", "TX"),
    ("Irving", "TX"),
    ("Hialeah", "FL"),
    ("Kissimmee", "FL"),
    ("Gainesville", "FL"),
    ("Ocala", "FL"),
    ("Lakeland", "FL"),
    ("Flushing", "NY"),
    ("Yonkers", "NY"),
    ("Utica", "NY"),
    ("Schenectady", "NY"),
    ("Paterson", "NJ"),
    ("Edison", "NJ"),
    ("Passaic", "NJ"),
    ("Lowell", "MA"),
    ("Brockton", "MA"),
    ("Quincy", "MA"),
    ("Worcester", "MA"),
    ("Pawtucket", "RI"),
    ("Dearborn", "MI"),
    ("Hamtramck", "MI"),
    ("Flint", "MI"),
    ("Kalamazoo", "MI"),
    ("Skokie", "IL"),
    ("Cicero", "IL"),
    ("Aurora", "IL"),
    ("Joliet", "IL"),
    ("Gary", "IN"),
    ("Fort Wayne", "IN"),
    ("Akron", "OH"),
    ("Dayton", "OH"),
    ("Toledo", "OH"),
    ("Lorain", "OH"),
    ("Erie", "PA"),
    ("Allentown", "PA"),
    ("Scranton", "PA"),
    ("Hagerstown", "MD"),
    ("Silver Spring", "MD"),
    ("Annandale", "VA"),
    ("Roanoke", "VA"),
    ("Durham", "NC"),
    ("Fayetteville", "NC"),
    ("Macon", "GA"),
    ("Savannah", "GA"),
    ("Norcross", "GA"),
    ("Mobile", "AL"),
    ("Huntsville", "AL"),
    ("Jackson", "MS"),
    ("Shreveport", "LA"),
    ("Tulsa", "OK"),
    ("Lawton", "OK"),
    ("Wichita", "KS"),
    ("Omaha", "NE"),
    ("Sioux Falls", "SD"),
    ("Fargo", "ND"),
    ("Duluth", "MN"),
    ("Rochester", "MN"),
    ("Green Bay", "WI"),
    ("Cedar Rapids", "IA"),
    ("Springfield", "MO"),
    ("Joplin", "MO"),
    ("Pueblo", "CO"),
    ("Greeley", "CO"),
    ("Mesa", "AZ"),
    ("Yuma", "AZ"),
    ("Las Cruces", "NM"),
    ("Provo", "UT"),
    ("Boise", "ID"),
    ("Yakima", "WA"),
    ("Tacoma", "WA"),
    ("Salem", "OR"),
    ("Medford", "OR"),
    ("Reno", "NV"),
    ("Anchorage", "AK"),
    ("Hilo", "HI"),
    ("Burlington", "VT"),
    ("Nashua", "NH"),
    ("Bangor", "ME"),
    ("Waterbury", "CT"),
    ("Dover", "DE"),
    ("Wheeling", "WV"),
    ("Bowling Green", "KY"),
    ("Knoxville", "TN"),
]
STATE_NAMES = {
    "CA": "California",
    "TX": "Texas",
    "FL": "Florida",
    "NY": "New York",
    "NJ": "New Jersey",
    "MA": "Massachusetts",
    "MI": "Michigan",
    "IL": "Illinois",
    "OH": "Ohio",
    "PA": "Pennsylvania",
}
STREET_NAMES = [
    "Maple",
    "Oak",
    "Cedar",
    "Elm",
    "Pine",
    "Walnut",
    "Chestnut",
    "Sycamore",
    "Magnolia",
    "Willow",
    "Jefferson",
    "Madison",
    "Monroe",
    "Lincoln",
    "Franklin",
    "Garfield",
    "Pershing",
    "MacArthur",
    "Bayshore",
    "Riverside",
    "Lakeview",
    "Hillcrest",
    "Sunset",
    "Meadowbrook",
    "Orchard",
    "Prospect",
    "Cottonwood",
    "Mesquite",
    "Palomino",
    "Bluebonnet",
    "Kensington",
    "Beverly",
    "Alvarado",
    "Guadalupe",
    "Mission",
    "Kingsbridge",
    "Tremont",
    "Dorchester",
    "Woodward",
    "Telegraph",
    "Halsted",
    "Ashland",
    "Kedzie",
    "Fulton",
    "Flatbush",
    "Jamaica",
    "Roosevelt",
    "Bellaire",
    "Westheimer",
    "Bissonnet",
    "Buford",
    "Peachtree",
    "Ponce de Leon",
    "Biscayne",
    "Coral Way",
]
STREET_TYPES = [
    "St",
    "Street",
    "Ave",
    "Avenue",
    "Rd",
    "Road",
    "Dr",
    "Drive",
    "Blvd",
    "Ln",
    "Way",
    "Ct",
    "Pl",
    "Terrace",
    "Pkwy",
    "Hwy",
]
SAINTS = [
    "Mary",
    "Joseph",
    "Luke",
    "Vincent",
    "Elizabeth",
    "Francis",
    "Jude",
    "Anthony",
    "Agnes",
    "Catherine",
]
HOSP_PATTERNS = [
    "{city} General Hospital",
    "St. {saint}'s Medical Center",
    "{last} Memorial Hospital",
    "{city} Regional Medical Center",
    "Good Samaritan Hospital of {city}",
    "{city} Community Clinic",
    "{tree} Valley Urgent Care",
    "{last} Family Health Center",
    "Mercy {city} Heart Institute",
    "{city} Dialysis Center",
    "{last}-{last2} Cancer Institute",
    "Northside {tree} Pediatrics",
    "{city} VA Medical Center",
    "Sisters of Charity Hospital {city}",
    "{tree}wood Rehabilitation Hospital",
    "{last} Women's Clinic",
    "Lakeshore Behavioral Health",
    "{city} Free Clinic",
]
EMPLOYERS = [
    "Tyson Foods",
    "the Amazon fulfillment center",
    "Walmart",
    "Home Depot",
    "UPS",
    "FedEx Ground",
    "Lincoln Elementary School",
    "Riverside Unified School District",
    "Kroger",
    "Costco",
    "Target",
    "the county sheriff's office",
    "St. Vincent de Paul food bank",
    "Greyhound",
    "Sunrise Senior Living",
    "Pilgrim's Pride",
    "Smithfield Foods",
    "Dollar General",
    "Jiffy Lube",
    "H-E-B",
]
TREES = [
    "Oak",
    "Cedar",
    "Pine",
    "Willow",
    "Aspen",
    "Birch",
    "Laurel",
    "Cypress",
    "Juniper",
    "Magnolia",
]
EMAIL_DOMAINS = [
    "gmail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "aol.com",
    "icloud.com",
    "comcast.net",
    "att.net",
    "protonmail.com",
    "qq.com",
    "163.com",
    "mail.ru",
    "yandex.ru",
    "naver.com",
]


def digits(rng, n):
    return "".join(rng.choice("0123456789") for _ in range(n))


def phone(rng) -> str:
    a, b, c = str(rng.randint(201, 989)), str(rng.randint(200, 989)), digits(rng, 4)
    f = rng.randrange(8)
    return [
        f"({a}) {b}-{c}",
        f"{a}-{b}-{c}",
        f"{a}.{b}.{c}",
        f"+1 {a} {b} {c}",
        f"{a} {b} {c}",
        f"1-{a}-{b}-{c}",
        f"({a}){b}-{c}",
        f"{a}/{b}-{c}",
    ][f]


def ssn(rng) -> str:
    s = f"{rng.randint(101, 899)}-{rng.randint(10, 99)}-{digits(rng, 4)}"
    return s if rng.random() < 0.8 else s.replace("-", " ")


def mrn(rng) -> str:
    return rng.choice(
        [
            digits(rng, 7),
            digits(rng, 8),
            "00" + digits(rng, 6),
            "E" + digits(rng, 7),
            digits(rng, 3) + "-" + digits(rng, 2) + "-" + digits(rng, 2),
            "MR" + digits(rng, 6),
        ]
    )


def account(rng) -> str:
    return rng.choice(
        [
            digits(rng, 9),
            digits(rng, 10),
            "A" + digits(rng, 8),
            "ENC" + digits(rng, 7),
            digits(rng, 4) + "-" + digits(rng, 5),
        ]
    )


def plan_id(rng) -> str:
    L = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice(
        [
            "".join(rng.choice(L) for _ in range(3)) + digits(rng, 9),
            "W" + digits(rng, 9),
            digits(rng, 9) + "A",
            "1EG4-TE5-MK72".replace("4", rng.choice("23456")),
        ]
    )


def license_no(rng) -> str:
    L = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice(
        [
            rng.choice(L) + digits(rng, 7),
            rng.choice(L) + digits(rng, 3) + "-" + digits(rng, 4),
            digits(rng, 9),
            rng.choice(L) + rng.choice(L) + digits(rng, 7),
        ]
    )


def device_serial(rng) -> str:
    L = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice(
        [
            "".join(rng.choice(L) for _ in range(3)) + digits(rng, 6) + rng.choice(L),
            "SN" + digits(rng, 8),
            digits(rng, 4) + "-" + digits(rng, 4) + "-" + rng.choice(L) + digits(rng, 2),
        ]
    )


def plate(rng) -> str:
    L = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice(
        [
            str(rng.randint(1, 9)) + "".join(rng.choice(L) for _ in range(3)) + digits(rng, 3),
            "".join(rng.choice(L) for _ in range(3)) + "-" + digits(rng, 4),
            "".join(rng.choice(L) for _ in range(3)) + " " + digits(rng, 3),
        ]
    )


def npi(rng) -> str:
    return "1" + digits(rng, 9)


def ip(rng) -> str:
    return rng.choice(
        [
            f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            f"{rng.randint(24, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        ]
    )


# ----------------------------------------------------------------------------- clinical look-alikes
ICD = [
    ("I48.91", "atrial fibrillation"),
    ("E11.9", "type 2 diabetes"),
    ("I10", "hypertension"),
    ("J44.1", "COPD exacerbation"),
    ("N18.3", "CKD stage 3"),
    ("E78.5", "hyperlipidemia"),
    ("J18.9", "pneumonia"),
    ("N39.0", "UTI"),
    ("I50.9", "heart failure"),
    ("F32.9", "depression"),
    ("K21.9", "GERD"),
    ("M54.5", "low back pain"),
    ("E03.9", "hypothyroidism"),
    ("R07.9", "chest pain"),
    ("I25.10", "CAD"),
    ("G47.33", "obstructive sleep apnea"),
    ("F41.1", "generalized anxiety"),
    ("E66.01", "morbid obesity"),
    ("K50.90", "Crohn disease"),
    ("G20", "Parkinson disease"),
    ("I63.9", "stroke"),
    ("R55", "syncope"),
    ("A41.9", "sepsis"),
    ("D64.9", "anemia"),
    ("J45.909", "asthma"),
    ("M17.11", "right knee OA"),
    ("Z79.01", "long-term anticoagulation"),
    ("E87.1", "hyponatremia"),
    ("N17.9", "AKI"),
    ("I26.99", "pulmonary embolism"),
    ("S72.001A", "hip fracture"),
    ("O24.419", "gestational diabetes"),
    ("Z23", "immunization encounter"),
    ("R50.9", "fever"),
    ("L03.115", "cellulitis of right leg"),
    ("G51.0", "facial nerve palsy"),
    ("K57.30", "diverticulosis"),
    ("B20", "HIV disease"),
    ("C34.90", "lung cancer"),
    ("F10.20", "alcohol use disorder"),
]
CPT = [
    "99213",
    "99214",
    "99215",
    "99203",
    "99285",
    "99284",
    "99223",
    "99232",
    "99238",
    "93000",
    "71046",
    "80053",
    "85025",
    "36415",
    "70450",
    "74177",
    "93306",
    "45378",
    "20610",
    "90471",
    "G0439",
    "99497",
    "96372",
    "81002",
    "87086",
    "83036",
    "84443",
    "80061",
    "94640",
    "29125",
]
DRUGS = [
    ("metoprolol", ["25 mg", "50 mg", "12.5 mg"]),
    ("lisinopril", ["10 mg", "20 mg", "5 mg"]),
    ("metformin", ["500 mg", "1000 mg", "850 mg"]),
    ("atorvastatin", ["40 mg", "80 mg", "20 mg"]),
    ("apixaban", ["5 mg", "2.5 mg"]),
    ("furosemide", ["40 mg", "20 mg", "80 mg"]),
    ("insulin glargine", ["20 units", "12 units", "34 units"]),
    ("levothyroxine", ["75 mcg", "50 mcg", "112 mcg"]),
    ("amlodipine", ["5 mg", "10 mg"]),
    ("sertraline", ["50 mg", "100 mg"]),
    ("gabapentin", ["300 mg", "600 mg"]),
    ("prednisone", ["40 mg", "10 mg", "20 mg"]),
    ("warfarin", ["5 mg", "2.5 mg"]),
    ("ceftriaxone", ["1 g", "2 g"]),
    ("vancomycin", ["1250 mg", "1 g"]),
    ("pantoprazole", ["40 mg"]),
    ("albuterol", ["2.5 mg", "90 mcg"]),
    ("ondansetron", ["4 mg", "8 mg"]),
    ("morphine", ["2 mg", "4 mg"]),
    ("acetaminophen", ["650 mg", "1 g", "500 mg"]),
    ("heparin", ["5000 units"]),
    ("aspirin", ["81 mg", "325 mg"]),
    ("losartan", ["50 mg", "25 mg"]),
    ("tamsulosin", ["0.4 mg"]),
    ("carvedilol", ["6.25 mg", "12.5 mg"]),
    ("enoxaparin", ["40 mg", "1 mg/kg"]),
    ("hydrochlorothiazide", ["25 mg", "12.5 mg"]),
    ("clopidogrel", ["75 mg"]),
    ("spironolactone", ["25 mg"]),
    ("amoxicillin", ["500 mg", "875 mg"]),
]
FREQ = ["daily", "BID", "TID", "q8h", "nightly", "PRN", "q6h prn", "once", "qAM", "twice a day"]
LABS = [
    lambda r: f"K {r.choice(['3.2', '3.6', '4.1', '4.4', '5.3', '5.8'])}",
    lambda r: f"Na {r.randint(126, 146)}",
    lambda r: f"Cr {r.choice(['0.8', '1.1', '1.4', '2.3', '3.9'])}",
    lambda r: f"Hgb {r.choice(['7.9', '9.4', '10.4', '12.8', '14.1'])}",
    lambda r: f"WBC {r.choice(['4.2', '11.2', '15.6', '7.8', '2.9'])}",
    lambda r: f"A1c {r.choice(['6.4', '7.2', '8.9', '10.1', '5.7'])}%",
    lambda r: f"INR {r.choice(['1.1', '2.3', '3.4', '1.9'])}",
    lambda r: f"BNP {r.randint(80, 2400)}",
    lambda r: f"TSH {r.choice(['0.3', '1.8', '4.9', '11.2'])}",
    lambda r: f"LDL {r.randint(60, 190)}",
    lambda r: f"glucose {r.randint(68, 420)}",
    lambda r: f"BUN {r.randint(7, 68)}",
    lambda r: f"plt {r.randint(45, 420)}",
    lambda r: f"lactate {r.choice(['1.2', '2.6', '4.1'])}",
    lambda r: f"troponin {r.choice(['<0.01', '0.04', '0.32'])}",
    lambda r: f"Mg {r.choice(['1.6', '2.0', '2.2'])}",
    lambda r: f"eGFR {r.randint(18, 95)}",
    lambda r: f"ALT {r.randint(12, 210)}",
]
VITALS = [
    lambda r: f"BP {r.randint(92, 182)}/{r.randint(52, 104)}",
    lambda r: f"HR {r.randint(48, 132)}",
    lambda r: f"RR {r.randint(12, 28)}",
    lambda r: f"O2 sat {r.randint(86, 100)}%",
    lambda r: f"SpO2 {r.randint(88, 100)}%",
    lambda r: f"T {r.choice(['36.8', '37.2', '38.4', '39.1'])}",
    lambda r: f"Temp {r.choice(['98.6', '99.1', '100.9', '101.4'])} F",
    lambda r: f"Wt {r.randint(48, 131)} kg",
    lambda r: f"pulse {r.randint(55, 118)}",
    lambda r: f"P {r.randint(55, 118)}",
]
EPONYMS = [
    "Crohn's disease",
    "Bell's palsy",
    "Parkinson's",
    "Parkinson's disease",
    "Homans sign",
    "Hashimoto's thyroiditis",
    "Graves' disease",
    "Cushing's syndrome",
    "Addison's disease",
    "Alzheimer's dementia",
    "Barrett's esophagus",
    "Hodgkin lymphoma",
    "Guillain-Barre syndrome",
    "Sjogren's syndrome",
    "Raynaud's phenomenon",
    "Meniere's disease",
    "Murphy's sign",
    "McBurney's point",
    "Babinski sign",
    "Kussmaul respirations",
    "Cheyne-Stokes respirations",
    "Glasgow Coma Scale",
    "Wells score",
    "Foley catheter",
    "Epley maneuver",
    "Valsalva maneuver",
    "Trendelenburg position",
    "Lachman test",
    "Romberg sign",
    "Kernig sign",
    "Virchow node",
    "Osler nodes",
    "Janeway lesions",
    "Paget's disease",
    "Dupuytren contracture",
    "Colles fracture",
    "Baker's cyst",
    "Lyme disease",
    "Huntington's disease",
    "Kawasaki disease",
    "Wernicke encephalopathy",
    "Tourette syndrome",
    "Down syndrome",
    "Marfan syndrome",
    "Still's disease",
    "Hirschsprung disease",
    "Whipple procedure",
    "Nissen fundoplication",
    "Swan-Ganz catheter",
    "Apgar score",
    "Austin Flint murmur",
    "Tinel sign",
    "Phalen test",
    "Brudzinski sign",
    "Chvostek sign",
    "Kaposi sarcoma",
]


def clock(rng) -> str:
    h, m = rng.randint(0, 23), rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50])
    return rng.choice([f"{h:02d}{m:02d}", f"{h:02d}:{m:02d}", f"{h}:{m:02d}"])


def dose(rng) -> list:
    d, ds = rng.choice(DRUGS)
    return K("dose", f"{d} {rng.choice(ds)}") + T(" " + rng.choice(FREQ))


def lab(rng) -> list:
    return K("lab", rng.choice(LABS)(rng))


def vital(rng) -> list:
    return K("vital", rng.choice(VITALS)(rng))


def icd(rng) -> tuple[list, str]:
    code, desc = rng.choice(ICD)
    return K("icd", code), desc


def join(items: list, sep: str = ", ") -> list:
    out = []
    for i, it in enumerate(items):
        if i:
            out += T(sep)
        out += it
    return out
