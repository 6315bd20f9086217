"""A user's regular expression (``--pattern NAME=REGEX``, the service's ``entities.patterns``),
run with a bound on time and memory.

Python's :mod:`re` backtracks: ``(a|a)+b`` on thirty ``a`` and a ``!`` takes minutes, and it
holds the interpreter lock all the while, so every other thread of the process - the service's
``/healthz`` included - stops with it. A user's pattern is therefore

- *read* by :mod:`re`'s own parser (the language stays the one ``--pattern`` always took) and
  refused when it is over :data:`MAX_PATTERN_CHARS` characters or when its compiled program could
  be large: :func:`program_size` multiplies the counts of nested repetitions (``(a{1000}){1000}``
  is a million; the ``regex`` module unrolls counted groups, and that one needs gigabytes just to
  compile), and over :data:`MAX_PROGRAM_SIZE` it is refused before it is compiled;
- *compiled* by the ``regex`` module (version 0 syntax, :mod:`re`'s) and *run* with its
  ``timeout=`` (:data:`TIME_BUDGET_S` per pattern and text) and ``concurrent=True``, which
  releases the interpreter lock while it matches, so other threads keep running; a match over
  the budget is a one-line :class:`PatternTooSlow` (a :class:`~dptext.errors.DPTextError`: a
  400 in the service, an error and a non-zero exit on the command line).

The time bound also bounds the memory a match can take (the backtracking stack grows only as
fast as the matcher runs). The built-in recognizers keep :mod:`re`: their patterns are ours.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache

import regex

from dptext.errors import DPTextError

MAX_PATTERN_CHARS = 1000
MAX_PROGRAM_SIZE = 100_000  # characters matched by the unrolled program, at most
#: seconds one pattern may spend on one text; a linear expression over the service's
#: largest text (20,000 characters) takes about a millisecond
TIME_BUDGET_S = 0.25

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


class PatternTooSlow(DPTextError):
    """A user's pattern ran over its time budget on one text."""


def program_size(parsed) -> int:
    """An upper bound, in matched items, of the program a pattern unrolls to: a repetition
    counts its body times its largest finite count (its smallest, when unbounded), a group or
    branch the sum of its parts."""
    from re._constants import MAXREPEAT

    total = 0
    for op, av in parsed:
        name = str(op)
        if name in _REPEATS:
            lo, hi, body = av
            count = lo if hi == MAXREPEAT else hi
            total += max(1, count) * max(1, program_size(body))
        elif name == "SUBPATTERN":
            total += program_size(av[-1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += program_size(av[1])
        elif name == "BRANCH":
            total += sum(program_size(b) for b in av[1])
        elif name == "GROUPREF_EXISTS":
            total += sum(program_size(b) for b in av[1:] if b is not None)
        elif name == "ATOMIC_GROUP":
            total += program_size(av)
        else:
            total += 1
    return total


class SafePattern:
    """A compiled user pattern with ``finditer`` and ``search`` bounded by ``budget`` seconds
    per call; pickles as its source (worker processes compile their own)."""

    def __init__(self, source: str, name: str, flags: int = 0,
                 budget: float = TIME_BUDGET_S) -> None:
        self.source, self.name, self.flags, self.budget = source, name, flags, budget
        self._re = _compile(source, name, flags)
        self.groupindex = self._re.groupindex

    def __reduce__(self):
        return SafePattern, (self.source, self.name, self.flags, self.budget)

    def _too_slow(self, text: str) -> PatternTooSlow:
        return PatternTooSlow(
            f"pattern {self.name}: over its time limit of {self.budget:g} s on a text of "
            f"{len(text)} characters (nested repetition such as (a+)+ or (a|a)+ backtracks "
            f"exponentially): simplify the expression")

    def finditer(self, text: str) -> list:
        """Every match (as :meth:`re.Pattern.finditer` gives them), all within the budget."""
        deadline = time.monotonic() + self.budget
        out = []
        try:
            for m in self._re.finditer(text, timeout=self.budget, concurrent=True):
                out.append(m)
                if time.monotonic() > deadline:
                    raise self._too_slow(text)
        except TimeoutError:
            raise self._too_slow(text) from None
        return out

    def search(self, text: str, pos: int = 0):
        try:
            return self._re.search(text, pos, timeout=self.budget, concurrent=True)
        except TimeoutError:
            raise self._too_slow(text) from None


@lru_cache(maxsize=256)
def _compile(source: str, name: str, flags: int):
    if len(source) > MAX_PATTERN_CHARS:
        raise DPTextError(f"pattern {name}: {len(source)} characters, over the limit of "
                          f"{MAX_PATTERN_CHARS}")
    from re import _parser

    try:
        parsed = _parser.parse(source, flags)
    except re.error as err:
        raise DPTextError(f"pattern {name}: not a regular expression ({err})") from None
    except RecursionError:
        raise DPTextError(f"pattern {name}: nested too deeply") from None
    size = program_size(parsed)
    if size > MAX_PROGRAM_SIZE:
        raise DPTextError(f"pattern {name}: its repetitions multiply to {size:,} items, over "
                          f"the limit of {MAX_PROGRAM_SIZE:,} (nested counts such as "
                          f"(a{{1000}}){{1000}}): simplify the expression")
    try:
        return regex.compile(source, flags | regex.VERSION0)
    except regex.error as err:
        raise DPTextError(f"pattern {name}: not a regular expression ({err})") from None
    except (RecursionError, MemoryError, OverflowError):
        raise DPTextError(f"pattern {name}: too large to compile") from None


def compile_user(source: str, name: str, flags: int = 0) -> SafePattern:
    """The user's pattern ``source`` of recognizer ``name``, bounded; a one-line DPTextError
    when it is refused."""
    return SafePattern(source, name, flags)
