"""Dates and ages for research (issue 45): ``dates="placeholder"|"year"|"shift"``,
``ages="placeholder"|"keep"``.

``shift``: every date of one person moves by the same number of days, derived by a keyed HMAC
of the person's id (the ``--user-field`` unit) with the pseudonym key (the key of ``--hash``
columns, :func:`dptext.corpus.columns.pseudonym_key`): HMAC-SHA256(key, "dptext-date-shift" ||
unit) picks a whole number of weeks in ``[min_weeks, max_weeks]`` and a direction, so the same
person shifts alike in every record, column and release made with one key, nobody without the
key can undo it, and a weekday stays the same weekday. Each date is written back in its own
format (ISO, numeric in either order, compact ``20190304``, month names full or short, in any
case, ordinals, "04-Mar-1950", "the third of July", a weekday before a date); a partial date
moves as its known parts allow: "3/4" (month and day) by the offset on a leap year, "March
2021" and "March" as their 15th day moves, a lone year as its 1 July moves. Intervals between
two full dates of one person are exact; between partial dates, within the offset's rounding.
This is not Safe Harbor: the year moves, and one known real date of a person reveals their
offset and so every other date (docs/deid.md says what it protects against).

``year``: a date becomes its year (Safe Harbor keeps the year), a date without one its
placeholder. ``ages="keep"``: an age up to 89 stays as written, 90 and over becomes "90+"
(Safe Harbor's rule).
"""

from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError

DATE_POLICIES = ("placeholder", "year", "shift")
AGE_POLICIES = ("placeholder", "keep")
_MONTHS = [m.lower() for m in calendar.month_name[1:]]
_ABBR = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_DAYS = [d.lower() for d in calendar.day_name]
_ORDWORDS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
             "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
             "nineteenth twentieth").split()
_ORDINAL = {w: i + 1 for i, w in enumerate(_ORDWORDS)} | {"thirtieth": 30} | {
    f"{t}-{w}": base + i + 1 for t, base in (("twenty", 20), ("thirty", 30))
    for i, w in enumerate(_ORDWORDS[:9]) if base + i + 1 <= 31}
_DAY_ABBR = frozenset("mon tue tues wed thu thur thurs fri sat sun".split())
_TOKEN = re.compile(r"[A-Za-z]+(?:-[a-z]+)?\.?|\d+(?:st|nd|rd|th)?|'\d{2}")


def keyed_digest(key: bytes, unit: str, purpose: str) -> bytes:
    return hmac.new(key, f"dptext-{purpose}\0{unit}".encode("utf-8", "surrogatepass"),
                    hashlib.sha256).digest()


def keyed_generator(key: bytes, unit: str) -> Callable[[str], np.random.Generator]:
    """``name -> generator`` seeded by HMAC-SHA256(key, unit || name): one person's draws
    (names, places, IDs: :class:`dptext.targeted.surrogates.NameDraws`) the same in every
    record and release made with ``key``, independent across persons and names."""
    base = keyed_digest(key, unit, "draws")

    def gen(name: str) -> np.random.Generator:
        d = hmac.new(base, name.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        return np.random.Generator(np.random.PCG64(np.frombuffer(d, dtype="<u4").tolist()))
    return gen


def check_weeks(min_weeks: int, max_weeks: int) -> tuple[int, int]:
    if not (isinstance(min_weeks, int) and isinstance(max_weeks, int)
            and 0 <= min_weeks <= max_weeks <= 520) or max_weeks == 0:
        raise DPTextError(f"the date shift range must be whole weeks 0 <= MIN <= MAX <= 520, "
                          f"MAX > 0; got {min_weeks}:{max_weeks}")
    return min_weeks, max_weeks


def date_offset(key: bytes, unit: str, min_weeks: int = 1, max_weeks: int = 52) -> int:
    """The person's shift in days (module docstring): +-7 * w, w uniform in [min, max]
    (up to a bias below 2^-200 from the modulo)."""
    check_weeks(min_weeks, max_weeks)
    h = int.from_bytes(keyed_digest(key, unit, "date-shift"), "big")
    weeks = min_weeks + (h >> 1) % (max_weeks - min_weeks + 1)
    return 7 * weeks * (1 if h & 1 else -1)


def random_offset(rng: np.random.Generator, min_weeks: int = 1, max_weeks: int = 52) -> int:
    """A record's own shift when no unit ties its dates to a person's."""
    check_weeks(min_weeks, max_weeks)
    return 7 * int(rng.integers(min_weeks, max_weeks + 1)) * (1 if rng.random() < 0.5 else -1)


@dataclass
class _Parsed:
    year: int | None
    month: int | None
    day: int | None
    render: Callable[[dt.date], str]


def _numeric(value: str) -> _Parsed | None:
    v = value.strip()
    m = re.fullmatch(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})", v)
    if m:  # ISO and 2019/03/04
        wm, wd, sep = len(m.group(3)), len(m.group(4)), m.group(2)
        return _Parsed(int(m.group(1)), int(m.group(3)), int(m.group(4)),
                       lambda d: f"{d.year:04d}{sep}{d.month:0{wm}d}{sep}{d.day:0{wd}d}")
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})", v)
    if m:
        return _Parsed(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                       lambda d: f"{d.year:04d}{d.month:02d}{d.day:02d}")
    m = re.fullmatch(r"(\d{1,2})([-/.])(\d{1,2})\2(\d{4}|\d{2})", v)
    if m:
        a, b, sep, y = m.group(1), m.group(3), m.group(2), m.group(4)
        day_first = sep == "." or int(a) > 12
        wa, wb, wy = len(a), len(b), len(y)
        year = int(y) if wy == 4 else (2000 + int(y) if int(y) <= 30 else 1900 + int(y))
        month, day = (int(b), int(a)) if day_first else (int(a), int(b))

        def render(d: dt.date) -> str:
            first, second = (d.day, d.month) if day_first else (d.month, d.day)
            yy = f"{d.year:04d}" if wy == 4 else f"{d.year % 100:02d}"
            return f"{first:0{wa}d}{sep}{second:0{wb}d}{sep}{yy}"
        return _Parsed(year, month, day, render)
    m = re.fullmatch(r"(\d{1,2})/(\d{4})", v)
    if m:
        wm = len(m.group(1))
        return _Parsed(int(m.group(2)), int(m.group(1)), None,
                       lambda d: f"{d.month:0{wm}d}/{d.year:04d}")
    m = re.fullmatch(r"(\d{1,2})([/-])(\d{1,2})", v)
    if m and m.group(2) == "/":  # "3/4": month and day
        wa, wb = len(m.group(1)), len(m.group(3))
        return _Parsed(None, int(m.group(1)), int(m.group(3)),
                       lambda d: f"{d.month:0{wa}d}/{d.day:0{wb}d}")
    return None


def _cased(word: str, like: str) -> str:
    core = like.rstrip(".")
    if core.isupper() and len(core) > 1:
        return word.upper()
    return word.lower() if core.islower() else word.capitalize()


def _suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _words(value: str) -> _Parsed | None:
    """Dates with a month name (module docstring): each token classified, the text rebuilt
    around the tokens with the new values in the old token's style."""
    pieces: list = []
    pos, year, month, day = 0, None, None, None
    for m in _TOKEN.finditer(value):
        pieces.append(value[pos:m.start()])
        tok, low = m.group(), m.group().lower().rstrip(".")
        pos = m.end()
        if low in _MONTHS or low in _ABBR:
            if month is not None:
                return None
            month = _MONTHS.index(low) + 1 if low in _MONTHS else _ABBR[low]
            full, k = low in _MONTHS, len(low)

            def mon(d, tok=tok, full=full, k=k):
                name = calendar.month_name[d.month]
                short = name[:4] if k == 4 and d.month == 9 else name[:3]
                return _cased(name if full else short, tok) + ("." if tok.endswith(".") else "")
            pieces.append(mon)
        elif low in _DAYS or low in _DAY_ABBR:
            full = low in _DAYS
            pieces.append(lambda d, tok=tok, full=full: _cased(
                calendar.day_name[d.weekday()] if full else calendar.day_abbr[d.weekday()],
                tok) + ("." if tok.endswith(".") else ""))
        elif low in _ORDINAL and day is None:
            day = _ORDINAL[low]

            def ordinal(d, tok=tok):
                names = {v: k for k, v in _ORDINAL.items()}
                return _cased(names.get(d.day, f"{d.day}{_suffix(d.day)}"), tok)
            pieces.append(ordinal)
        elif re.fullmatch(r"\d{4}|'\d{2}", tok) and year is None:
            short = tok.startswith("'")
            year = 2000 + int(tok[1:]) if short and int(tok[1:]) <= 30 else \
                1900 + int(tok[1:]) if short else int(tok)
            pieces.append(lambda d, short=short: f"'{d.year % 100:02d}" if short
                          else f"{d.year:04d}")
        elif re.fullmatch(r"\d{1,2}(st|nd|rd|th)?", tok) and day is None \
                and 1 <= int(re.match(r"\d+", tok).group()) <= 31:
            day = int(re.match(r"\d+", tok).group())
            width, suf = len(re.match(r"\d+", tok).group()), tok[len(str(day)):] != "" and \
                not tok.isdigit()
            pieces.append(lambda d, w=width, suf=suf: f"{d.day:0{w}d}"
                          + (_suffix(d.day) if suf else ""))
        elif low in ("of", "the", "on", "in"):
            pieces.append(tok)
        else:
            return None
    pieces.append(value[pos:])
    if month is None:
        return None

    def render(d: dt.date) -> str:
        return "".join(p if isinstance(p, str) else p(d) for p in pieces)
    return _Parsed(year, month, day, render)


def parse_date(value: str) -> _Parsed | None:
    """The date of ``value`` and how to write another date in its format; ``None`` when its
    format is not one of those the recognizers find (module docstring)."""
    return _numeric(value) or _words(value)


def _anchor(p: _Parsed) -> dt.date | None:
    try:
        if p.year is not None and p.month is not None:
            return dt.date(p.year, p.month, p.day if p.day is not None else 15)
        if p.month is not None:  # no year: a leap year, so that 29 February is a date
            return dt.date(2000, p.month, p.day if p.day is not None else 15)
    except ValueError:
        return None
    return None


def shift_date(value: str, days: int) -> str | None:
    """``value`` moved by ``days``, written in its own format (``None``: not a date we
    read; the caller writes the placeholder)."""
    v = value.strip()
    if re.fullmatch(r"(1[89]|20)\d\d", v):  # a lone year: as its 1 July moves
        return str((dt.date(int(v), 7, 1) + dt.timedelta(days=days)).year)
    p = parse_date(value)
    anchor = p and _anchor(p)
    if not anchor:
        return None
    return p.render(anchor + dt.timedelta(days=days))


def year_of(value: str) -> str | None:
    """The year of a date (``year`` policy); ``None`` when it has none."""
    v = value.strip()
    if re.fullmatch(r"(1[89]|20)\d\d", v):
        return v
    p = parse_date(value)
    return None if p is None or p.year is None else f"{p.year:04d}"


def random_date(value: str, rng: np.random.Generator) -> str | None:
    """A valid date drawn uniformly from 1950-2030, independently of ``value``, written in
    ``value``'s format (a date surrogate)."""
    p = parse_date(value)
    if p is None or _anchor(p) is None:
        return None
    start = dt.date(1950, 1, 1).toordinal()
    return p.render(dt.date.fromordinal(start + int(rng.integers(
        dt.date(2030, 12, 31).toordinal() - start + 1))))


_AGE_NUMBER = re.compile(r"\d+")


def keep_age(value: str) -> str:
    """An age up to 89 as written; every number of 90 or more in it becomes "90+"."""
    return _AGE_NUMBER.sub(lambda m: m.group() if int(m.group()) < 90 else "90+", value)
