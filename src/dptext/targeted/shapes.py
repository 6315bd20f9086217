"""Realistic surrogates of the input's shape for contact details, IDs, addresses and dates
(``pattern_policy="realistic"``; issue 45: a surrogate that looks like the real thing hides a
missed identifier among the replaced ones).

Each value is replaced whole by a value of the same *shape*, drawn independently of the
input's characters: a phone number keeps its separators, its ``+`` and its number of digits,
and gets fresh digits (a North American number a valid-looking area code and exchange); an
ID, an SSN, a ZIP code, a licence or account number keeps each character's class (digit,
upper or lower letter) and every other character, with fresh ones drawn uniformly in their
class; an e-mail gets a made-up local part in the input's style (``first.last``,
``flast``, digits) at a common public domain; a street address keeps its number of digits and
gets a public street name and the input's kind of street word; a date is a valid date drawn
uniformly from 1950-2030 written in the input's format (:func:`dptext.targeted.dates.random_date`);
URLs and IP addresses come from the reserved documentation ranges. The draw is 0-DP among
values of the same shape: the output's law depends on the shape only (what the report says).
"""

from __future__ import annotations

import re

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.targeted.dates import random_date

DOMAINS = ("gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "aol.com", "icloud.com",
           "comcast.net", "example.com")
STREETS = ("Main", "Oak", "Pine", "Maple", "Cedar", "Elm", "Washington", "Lake", "Hill",
           "Park", "Walnut", "Sunset", "Lincoln", "Jackson", "Church", "Highland", "Mill",
           "River", "Spring", "Forest", "Meadow", "Willow", "Franklin", "Chestnut", "Ridge")
_STREET_WORDS = re.compile(
    r"\b(Street|St|Avenue|Ave|Road|Rd|Drive|Dr|Lane|Ln|Boulevard|Blvd|Court|Ct|Way|Place|Pl|"
    r"Terrace|Circle|Cir|Parkway|Pkwy|Highway|Hwy)\b\.?", re.IGNORECASE)
CATEGORIES = frozenset({
    "PHONE_NUMBER", "EMAIL_ADDRESS", "US_SSN", "ZIP_CODE", "STREET_ADDRESS", "DATE", "URL",
    "IP_ADDRESS", "MEDICAL_RECORD", "ACCOUNT_NUMBER", "HEALTH_PLAN", "LICENSE_NUMBER",
    "VEHICLE_ID", "DEVICE_ID", "ID_NUMBER", "US_PASSPORT", "US_DRIVER_LICENSE", "CREDIT_CARD",
    "IBAN_CODE", "US_BANK_NUMBER"})


def _pick(options, rng: np.random.Generator):
    return options[int(rng.integers(len(options)))]


def same_shape(value: str, rng: np.random.Generator) -> str:
    """Each digit a fresh digit, each letter a fresh letter of its case, the rest kept."""
    out = []
    for c in value:
        if c.isdigit():
            out.append(str(int(rng.integers(10))))
        elif c.isalpha() and c.isascii():
            base = ord("A") if c.isupper() else ord("a")
            out.append(chr(base + int(rng.integers(26))))
        else:
            out.append(c)
    return "".join(out)


def phone(value: str, rng: np.random.Generator) -> str:
    """The input's separators and number of digits, fresh digits; 10 digits (11 with a
    leading 1) get a North American area code and exchange of the valid form [2-9]xx."""
    digits = sum(c.isdigit() for c in value)
    fresh = [int(rng.integers(10)) for _ in range(digits)]
    start = 1 if digits == 11 and value.lstrip("+ ").startswith("1") else 0
    if digits - start == 10:
        if start:
            fresh[0] = 1
        fresh[start] = int(rng.integers(2, 10))
        fresh[start + 3] = int(rng.integers(2, 10))
    it = iter(fresh)
    return "".join(str(next(it)) if c.isdigit() else c for c in value)


def email(value: str, rng: np.random.Generator) -> str:
    """A local part in the input's style (dots, underscores, digits, case) and a common
    public domain."""
    import unicodedata

    from dptext.targeted.surrogates import draw_name_word

    def ascii_word(role: str) -> str:
        word = unicodedata.normalize("NFKD", draw_name_word(role, rng))
        return "".join(c for c in word if c.isascii() and c.isalpha()).lower() or "pat"

    local = value.rpartition("@")[0]
    first, last = ascii_word("first"), ascii_word("last")
    sep = "." if "." in local else "_" if "_" in local else ""
    core = f"{first}{sep}{last}" if sep or len(local) > 8 else f"{first[0]}{last}"
    if any(c.isdigit() for c in local):
        core += str(int(rng.integers(1, 100)))
    if local.isupper():
        core = core.upper()
    return f"{core}@{_pick(DOMAINS, rng).upper() if value.isupper() else _pick(DOMAINS, rng)}"


def street(value: str, rng: np.random.Generator) -> str:
    """The house number's digits, a public street name, the input's street word."""
    number = re.match(r"\s*(\d+)", value)
    word = _STREET_WORDS.search(value)
    n = str(int(rng.integers(1, 10))) + "".join(
        str(int(rng.integers(10))) for _ in range(len(number.group(1)) - 1)) if number else ""
    head = f"{n} " if n else ""
    if value.upper().startswith("P"):  # P.O. Box
        box = re.search(r"\d+", value)
        return re.sub(r"\d+", same_shape(box.group(), rng), value, count=1) if box else value
    return f"{head}{_pick(STREETS, rng)} {word.group() if word else 'Street'}"


def realistic(category: str, value: str, rng: np.random.Generator) -> str | None:
    """A surrogate of ``value``'s shape (module docstring); ``None``: the placeholder."""
    if category == "PHONE_NUMBER":
        return phone(value, rng)
    if category == "EMAIL_ADDRESS" and "@" in value:
        return email(value, rng)
    if category == "STREET_ADDRESS":
        return street(value, rng)
    if category == "DATE":
        return random_date(value, rng)
    if category == "URL":
        return _pick(("https://www.example.com", "www.example.org", "https://example.net/"
                      "page"), rng)
    if category == "IP_ADDRESS":
        return (f"2001:db8::{int(rng.integers(1, 65535)):x}" if ":" in value else
                f"{_pick(('192.0.2', '198.51.100', '203.0.113'), rng)}."
                f"{int(rng.integers(1, 255))}")
    if category in CATEGORIES:
        return same_shape(value, rng)
    return None


def realistic_guarantee(category: str) -> TokenGuarantee:
    return TokenGuarantee(
        GuaranteeKind.INDEPENDENT,
        scope=f"{category} values of the same shape; replaced whole by a realistic value of "
        "that shape (its separators and character classes kept, fresh characters drawn)")
