"""Pattern PII replaced whole: a type placeholder (0-DP) or a surrogate drawn by the exponential
mechanism over a public, type-consistent surrogate set.

Placeholder: ``[PHONE_NUMBER]`` whatever the number - the output is independent of the value
(0-DP among the values of the type; it reveals that a value of that type was detected there).

Surrogate (McSherry & Talwar 2007, doi:10.1109/FOCS.2007.66; Dwork & Roth 2014, Thm 3.10): a
fixed set S of made-up values of the type (reserved domains ``example.com``, fictional
555-01xx and Ofcom drama numbers, documentation IP ranges, published test card numbers, ...),
never built from the data. Each type has a few *format features* f_1..f_F (for a phone number:
leading ``+``, number of digits, the separators). The utility of surrogate s for value x is the
share of features they have in common, u(x, s) = (1/F) sum_i [f_i(x) = f_i(s)], in [0, 1], so
its sensitivity over any two values x, x' is at most 1. The draw is

    P(s | x) = exp(epsilon u(x, s) / 2) / sum_{s'} exp(epsilon u(x, s') / 2),

epsilon-DP between ANY two values of the type (the ratio of the numerators is at most
exp(epsilon/2), and so is the ratio of the normalisers). A span is one draw, whatever its
length: the value is never replaced digit by digit. The surrogate keeps the value's format
with a probability that grows with epsilon; at small epsilon it is a near-uniform draw.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.detect.normalize import fold_text
from dptext.errors import DPTextError
from dptext.targeted.place_surrogates import (  # noqa: F401 - their public home until now
    WORD_SURROGATES,
    surrogate_word,
    word_surrogate_guarantee,
)

_DIGIT_RUNS = re.compile(r"\d+")


@dataclass(frozen=True)
class SurrogateSet:
    """Made-up values of one type and the format features the utility compares."""

    category: str
    values: tuple[str, ...]
    features: Callable[[str], tuple]
    _table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = np.empty((len(self.values), len(self.features(self.values[0]))), dtype=object)
        for i, v in enumerate(self.values):
            table[i] = self.features(v)
        object.__setattr__(self, "_table", table)

    def utility(self, value: str) -> np.ndarray:
        """u(value, s) for every surrogate s: the share of format features in common."""
        mine = np.empty(self._table.shape[1], dtype=object)
        mine[:] = self.features(value)
        return (self._table == mine).mean(axis=1)

    def distribution(self, value: str, epsilon: float) -> np.ndarray:
        """The exact output distribution for ``value`` (module docstring)."""
        logits = epsilon * self.utility(value) / 2.0
        weights = np.exp(logits - logits.max())
        return weights / weights.sum()

    def draw(self, value: str, epsilon: float, rng: np.random.Generator) -> str:
        return self.values[int(rng.choice(len(self.values), p=self.distribution(value, epsilon)))]

    def guarantee(self, epsilon: float) -> TokenGuarantee:
        return TokenGuarantee(
            GuaranteeKind.PURE, epsilon,
            scope=f"any two {self.category} values; replaced whole by a surrogate, one "
            f"exponential-mechanism draw over {len(self.values)} made-up values (utility: "
            "shared format features, sensitivity 1)",
            bounded_range=True)  # exp(eps * u / 2), u in [0, 1]: eps-bounded-range


def placeholder_guarantee(category: str, placeholder: str) -> TokenGuarantee:
    return TokenGuarantee(
        GuaranteeKind.INDEPENDENT,
        scope=f"{category} values; replaced whole by {placeholder!r}")


# ------------------------------------------------------------------ features
def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def _separators(value: str) -> str:
    return "".join(sorted({c for c in value if not c.isalnum()}))


def _email(value: str) -> tuple:
    local, _, domain = value.rpartition("@")
    tld = domain.rsplit(".", 1)[-1].lower()
    return (tld if tld in ("com", "org", "net") else "other",
            any(c.isdigit() for c in local), any(c in "._-+" for c in local))


def _phone(value: str) -> tuple:
    return (value.lstrip().startswith("+"), len(_digits(value)), _separators(value.strip()))


def _card(value: str) -> tuple:
    d = _digits(value)
    return (d[:1], len(d), " " in value, "-" in value)


def _iban(value: str) -> tuple:
    return (value.strip()[:2].upper(), " " in value.strip())


def _ip(value: str) -> tuple:
    return ("v6" if ":" in value else "v4",)


def _url(value: str) -> tuple:
    low = value.lower()
    scheme = "https" if low.startswith("https:") else "http" if low.startswith("http:") else ""
    rest = low.split("://", 1)[-1]
    return (scheme, rest.startswith("www."), "/" in rest.rstrip("/"))


def _separated(value: str) -> tuple:
    return ("-" in value, " " in value.strip())


def _id(value: str) -> tuple:
    return (any(c.isalpha() for c in value), len(value.strip()) >= 9)


_MONTHS = ("january february march april may june july august september october november "
           "december jan feb mar apr jun jul aug sep sept oct nov dec").split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()


def _date(value: str) -> tuple:
    low = value.lower()
    words = re.findall(r"[a-z]+", low)
    if re.fullmatch(r"\s*\d{4}-\d{1,2}-\d{1,2}\s*", low):
        kind = "iso"
    elif re.search(r"\d{1,4}[/.]\d{1,2}[/.]\d{1,4}", low):
        kind = "numeric"
    elif any(w in _MONTHS for w in words):
        kind = "month-day" if re.search(r"\b\d{1,2}(st|nd|rd|th)?\b", low) else "month"
    elif any(w in _WEEKDAYS for w in words):
        kind = "weekday"
    elif re.search(r"\d", low):
        kind = "year"
    else:
        kind = "words"
    return (kind,)


def _time(value: str) -> tuple:
    low = value.lower()
    if re.search(r"\d", low):
        return ("clock12" if re.search(r"\b[ap]\.?m\b|\d[ap]m", low) else "clock24",)
    return ("words",)


def _number(value: str) -> tuple:
    d = _digits(value)
    return (bool(d), min(len(d), 4), any(c in value for c in "$€£¥"))


# ------------------------------------------------------------------- values
def _phones() -> tuple[str, ...]:
    out = []
    for area, line in (("201", "0123"), ("312", "0147"), ("415", "0162"), ("617", "0189")):
        out += [f"({area}) 555-{line}", f"{area}-555-{line}", f"{area}.555.{line}",
                f"{area} 555 {line}", f"{area}555{line}", f"+1 {area} 555 {line}",
                f"+1-{area}-555-{line}", f"+1 ({area}) 555-{line}", f"555-{line}"]
    for line in ("0123", "0456", "0789"):  # Ofcom numbers reserved for drama
        out += [f"+44 20 7946 {line}", f"020 7946 {line}"]
    return tuple(out)


def _cards() -> tuple[str, ...]:
    numbers = ("4111111111111111", "4242424242424242", "4012888888881881", "5555555555554444",
               "5105105105105100", "378282246310005", "371449635398431", "6011111111111117",
               "6011000990139424", "3530111333300000", "30569309025904")
    out = []
    for n in numbers:
        groups = [n[i:i + 4] for i in range(0, len(n), 4)]
        out += [n, " ".join(groups), "-".join(groups)]
    return tuple(out)


def _ibans() -> tuple[str, ...]:
    compact = ("GB82WEST12345698765432", "DE89370400440532013000", "FR1420041010050500013M02606",
               "NL91ABNA0417164300", "ES9121000418450200051332", "BE68539007547034",
               "CH9300762011623852957", "IT60X0542811101000000123456")
    return compact + tuple(" ".join(c[i:i + 4] for i in range(0, len(c), 4)) for c in compact)


_SETS = (
    SurrogateSet("EMAIL_ADDRESS", tuple(
        f"{local}@{domain}"
        for local in ("alex", "sam.lee", "jo_smith", "kim42", "r.taylor7", "morgan-b", "chris",
                      "pat.kay", "lee99", "drew_m3")
        for domain in ("example.com", "example.org", "example.net", "mail.example")), _email),
    SurrogateSet("PHONE_NUMBER", _phones(), _phone),
    SurrogateSet("CREDIT_CARD", _cards(), _card),
    SurrogateSet("IBAN_CODE", _ibans(), _iban),
    SurrogateSet("IP_ADDRESS", ("192.0.2.1", "192.0.2.44", "198.51.100.7", "198.51.100.23",
                                "203.0.113.5", "203.0.113.200", "2001:db8::1",
                                "2001:db8:85a3::8a2e:370:7334", "2001:db8:0:1::17"), _ip),
    SurrogateSet("URL", tuple(
        f"{scheme}{www}{domain}{path}"
        for scheme in ("https://", "http://", "")
        for www in ("www.", "")
        for domain in ("example.com", "example.org")
        for path in ("", "/about", "/page?id=1")), _url),
    SurrogateSet("US_SSN", tuple(
        f"{a}{s}{b}{s}{c}" for a, b, c in (("000", "12", "3456"), ("666", "01", "2345"),
                                           ("000", "98", "7654"), ("666", "45", "6789"))
        for s in ("-", " ", "")), _separated),
    SurrogateSet("US_PASSPORT", ("A00000001", "B00000002", "C00000003", "000000001",
                                 "000000002", "X0000004", "00000005"), _id),
    SurrogateSet("US_DRIVER_LICENSE", ("D0000001", "S000-0000-0001", "A00000000001",
                                       "00000001", "000000000002", "X0000003"), _id),
    SurrogateSet("DATE", ("2001-01-01", "1999-12-31", "2010-06-15", "01/02/2003", "12/31/1999",
                          "15.06.2010", "January 1, 2001", "12 March 1999", "June 15th",
                          "March 2004", "September", "2001", "the 1990s", "Monday", "Friday",
                          "yesterday", "last week", "two days ago", "next year"), _date),
    SurrogateSet("TIME", ("9:00", "14:30", "18:45", "9am", "3:30 pm", "11 a.m.", "noon",
                          "midnight", "this morning", "tonight", "an hour"), _time),
    SurrogateSet("CARDINAL", ("two", "three", "several", "dozens", "7", "12", "40", "250",
                              "1,000", "36,000", "1.5 million"), _number),
    SurrogateSet("ORDINAL", ("first", "second", "third", "tenth", "1st", "2nd", "3rd", "21st",
                             "100th"), _number),
    SurrogateSet("MONEY", ("$5", "$40", "$1,200", "$3.50", "$25,000", "€20", "£300",
                           "ten dollars", "a million dollars", "50 cents"), _number),
    SurrogateSet("PERCENT", ("5%", "12%", "40%", "99%", "12.5%", "3 percent", "half",
                             "a third"), _number),
    SurrogateSet("QUANTITY", ("5 km", "3 pounds", "10 miles", "2 litres", "150 kg",
                              "1,000 feet", "two tons", "a mile"), _number),
)
SURROGATE_SETS: dict[str, SurrogateSet] = {s.category: s for s in _SETS}


# ------------------------------------------------------------------- names
# Population-matched name lists (issue 45): the first names and surnames ranked in one
# country by names-dataset (Apache-2.0; 491 million Facebook profiles of 105 countries),
# weighted by Zipf's law on the rank, shipped as a compact derived file
# (``data/name_frequencies.json.gz``, built by ``tools/build_name_frequencies.py``, provenance
# inside). A surrogate word is drawn from that law whatever the input: a drawn word equal to
# a word of the input happens at its natural rate ("John" for "John" as often as for
# "Quixwright"), so the draw is 0-DP among names of the same shape.
NAME_POPULATIONS = ("US", "GB", "CA", "IE", "IN", "ZA")


@cache
def _name_file() -> dict:
    import gzip
    import json
    from importlib.resources import files

    return json.loads(gzip.decompress(
        files("dptext").joinpath("data/name_frequencies.json.gz").read_bytes()))


@cache
def name_law(role: str, population: str = "US") -> tuple[tuple[str, ...], np.ndarray]:
    """The names of ``role`` (``"first"``/``"last"``) ranked in ``population`` and their
    probabilities: Zipf on the rank (normalised); for ``"US"`` the head re-weighted by the
    US Census / SSA frequencies that Faker's en_US lists carry (690 first names, 1,000
    surnames; MIT), keeping the head's total mass under Zipf (Facebook's ranks put "Jose" and
    "Maria" first, at 10% under Zipf: the Census puts them near 0.5%)."""
    if population not in NAME_POPULATIONS:
        raise DPTextError(f"unknown name population {population!r}; choose from "
                          f"{', '.join(NAME_POPULATIONS)}")
    rows = _name_file()[role][population]
    names = tuple(n for n, _ in rows)
    weights = 1.0 / np.array([r for _, r in rows], dtype=float)
    weights /= weights.sum()
    if population == "US":
        from faker.providers.person.en_US import Provider

        census = {**Provider.first_names_female, **Provider.first_names_male} \
            if role == "first" else dict(Provider.last_names)
        head = np.array([n in census for n in names])
        freq = np.array([census.get(n, 0.0) for n in names], dtype=float)
        weights = np.where(head, freq / freq.sum() * weights[head].sum(), weights)
    return names, weights / weights.sum()


def name_source(population: str = "US") -> str:
    first, _ = name_law("first", population)
    last, _ = name_law("last", population)
    head = " (the head by US Census/SSA frequencies)" if population == "US" else ""
    return (f"{len(first):,} first names and {len(last):,} surnames ranked in {population} by "
            f"{_name_file()['source'].split(':')[0]}, drawn by Zipf's law on the rank{head}")


@cache
def _cumulative(role: str, population: str) -> np.ndarray:
    return np.cumsum(name_law(role, population)[1])


def draw_name_word(role: str, rng: np.random.Generator, population: str = "US") -> str:
    """One word of the law of ``role`` (``"first"``, ``"last"``)."""
    names, _ = name_law(role, population)
    cdf = _cumulative(role, population)
    return names[min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")),
                     len(names) - 1)]


class NameDraws:
    """One surrogate per (role, word): the same real word gets the same surrogate word
    wherever it stands in the scope of this object - a shared surname stays shared ("Mr.
    Brown (Hannah Brown)" -> "Mr. Diaz (Ruth Diaz)"). ``rng``: the generator of a document's
    draws; ``keyed``: ``word name -> generator`` (a keyed HMAC of the person and the word,
    :func:`dptext.targeted.dates.keyed_generator`), so the same person's word gets the same
    surrogate in every record, column and release with one key. Each word's draw is a fresh
    draw from the law whatever the word: what the output shows beyond that is which words were
    equal (the linkage docs/deid.md names)."""

    def __init__(self, rng: np.random.Generator | None = None, *,
                 keyed: Callable[[str], np.random.Generator] | None = None,
                 population: str = "US") -> None:
        if (rng is None) == (keyed is None):
            raise DPTextError("NameDraws needs a generator or a keyed draw, not both")
        self.rng, self.keyed, self.population = rng, keyed, population
        self.memo: dict[tuple[str, str], str] = {}

    def word(self, role: str, word: str) -> str:
        key = (role, fold_text(word).casefold())
        if key not in self.memo:
            g = self.keyed(f"name:{role}:{key[1]}") if self.keyed else self.rng
            if role == "initial-first" or role == "initial-last":
                new = draw_name_word(role.split("-")[1], g, self.population)[0]
            else:
                new = draw_name_word(role, g, self.population)
            self.memo[key] = new
        return self.memo[key]


def name_surrogate_guarantee(population: str = "US") -> TokenGuarantee:
    return TokenGuarantee(
        GuaranteeKind.INDEPENDENT,
        scope=f"PERSON values of the same shape; each word replaced by one drawn from "
        f"{name_source(population)}, independently of the input (the same word of a record or "
        "person gets the same surrogate: which words were equal is released); a leading "
        "title, salutation or relation word (\"Dear Dr.\", \"Daughter\") is kept")


_TITLES = ("Dr|Mr|Mrs|Ms|Miss|Mx|Prof|Professor|Doctor|Nurse|Sister|Rev|Fr|Sr|Mme|Mlle|Herr|"
           "Frau")
# relation words kept before a name ("Daughter Kevin Young" -> "Daughter <surrogate>")
_RELATIONS = ("Daughter|Son|Wife|Husband|Mother|Father|Mom|Mum|Dad|Brother|Sister|Aunt|Uncle|"
              "Grandmother|Grandfather|Grandma|Grandpa|Granddaughter|Grandson|Niece|Nephew|"
              "Cousin|Partner|Spouse|Fianc[eé]e?|Friend|Neighbou?r|Caregiver|Guardian|"
              "Stepmother|Stepfather|Stepson|Stepdaughter|Patient|Pt")
_TITLE_PREFIX = re.compile(
    rf"(?:(?:Dear|Attn|Attention)[.:]?\s+)?(?:(?:{_RELATIONS})'?s?:?\s+)?"
    rf"(?:(?:{_TITLES})\.?\s+)?", re.IGNORECASE)


def split_title(value: str) -> tuple[str, str]:
    """``("Dear Dr. ", "Smith")`` of ``"Dear Dr. Smith"``: the salutation, relation and title
    words before a name (:mod:`dptext.detect.recognizers` finds them as one name span; spaCy
    takes "Daughter" into "Daughter Kevin Young") and the name; the prefix is ``""`` when
    there is none or nothing would be left of the name."""
    prefix = _TITLE_PREFIX.match(value).group()
    if not value[len(prefix):].strip():
        return "", value
    return prefix, value[len(prefix):]


_CREDENTIAL_SUFFIX = re.compile(
    r"(?:,[ \t]*(?:M\.?D|D\.?O|R\.?N|N\.?P|P\.?A(?:-C)?|Ph\.?D|DDS|DMD|MBBS|MPH|FAC[PS]|LPN|"
    r"CNM|APRN|PharmD)\.?)+[ \t]*$")
# "JS", "JMS" (three capitals without a vowel: "LEE" is a surname), "J.S."
_INITIALS = re.compile(r"(?:[A-Z]{2}|[B-DF-HJ-NP-TV-Z]{3}|(?:[A-Z]\.){1,2}[A-Z])\.?")


def name_words(text: str, spans, categories) -> frozenset[str]:
    """The words (case-folded) of the spans of ``categories`` in ``text`` (their views)."""
    return frozenset(w.casefold() for s in spans if s.category in categories
                     for w in re.findall(r"[^\W\d_]+", fold_text(text[s.start:s.end])))


def _cased(new: str, old: str) -> str:
    letters = [c for c in old if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return new.upper()
    if letters and all(c.islower() for c in letters):
        return new.lower()
    return new


def surrogate_name(value: str, rng: np.random.Generator | None = None,
                   taken: frozenset[str] = frozenset(), *, draws: NameDraws | None = None,
                   population: str = "US") -> str:
    """A made-up name of the same shape as ``value``: one word per word (a first name first,
    surnames after, a surname alone after a title; an initial stays an initial, CAPITALS and
    lower case stay, ``Last, First`` keeps its order, a hyphenated surname two surnames), a
    leading title, salutation or relation word and trailing credentials kept. Each word is
    drawn from the population's law (:func:`name_law`) whatever the input's letters - an
    initial too, as the first letter of a drawn name; ``draws`` (:class:`NameDraws`) gives the
    same real word the same surrogate across calls (a record, a person). ``taken`` is ignored:
    no rule may depend on the input (issue 45; it was the other names of the record)."""
    del taken
    draws = draws or NameDraws(rng if rng is not None else np.random.default_rng(),
                               population=population)
    prefix, name = split_title(fold_text(value))
    prefix = value[:len(prefix)] if fold_text(value[:len(prefix)]) == prefix else prefix
    credential = _CREDENTIAL_SUFFIX.search(name)  # "Ann Lee, MD, PhD": the credentials stay
    suffix = credential.group() if credential and credential.start() else ""
    name = name[:len(name) - len(suffix)]
    words = re.findall(r"[^\s,]+", name)
    comma = "," in name
    titled = bool(re.search(rf"\b(?:{_TITLES})\b", prefix, re.IGNORECASE))
    out = []
    for i, w in enumerate(words):  # a word alone: a surname after a title ("Dr. Smith"),
        # a first name after a relation word ("wife mary")
        surname = (i > 0) != comma or (len(words) == 1 and (w.isupper() or titled))
        role = "last" if surname else "first"
        if len(w.rstrip(".")) == 1 or bool(_INITIALS.fullmatch(w)):  # "J.", "JS", "J.S."
            letters = [c for c in w if c.isalpha()]
            new, k = [], 0
            for c in w:
                if c.isalpha():  # first letter of a first name, then of surnames
                    first_letter = k == 0 if len(letters) > 1 else role == "first"
                    r = "initial-first" if first_letter else "initial-last"
                    new.append(draws.word(r, f"{c}{k}"))
                    k += 1
                else:
                    new.append(c)
            out.append("".join(new))
            continue
        parts = w.split("-")
        out.append("-".join(_cased(draws.word(role, p), p) if p else p for p in parts))
    if comma and len(out) > 1:
        return f"{prefix}{out[0]}, {' '.join(out[1:])}{suffix}"
    return prefix + " ".join(out) + suffix


# ------------------------------------------------- places and organisations
# Replaced whole in de-identification mode (word_policy="surrogate") by a value of the same
# kind (:mod:`dptext.targeted.places`: a hospital by a hospital, a clinic by a clinic, a city
# by a city drawn by population, a state by a state, a country by a country), drawn
# independently of the input's words: 0-DP among values of the same kind.
