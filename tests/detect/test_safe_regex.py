"""A user's pattern runs bounded in time and memory (issue 47 N1): ``(a|a)+b`` on thirty
``a`` and a ``!`` backtracks for minutes under :mod:`re`, holding the interpreter lock."""

from __future__ import annotations

import pickle
import re
import threading
import time

import pytest

from dptext.detect.safe_regex import (
    MAX_PROGRAM_SIZE,
    PatternTooSlow,
    SafePattern,
    compile_user,
    program_size,
)
from dptext.errors import DPTextError

HOSTILE, VICTIM = "(a|a)+b", "a" * 30 + "!"


def test_a_backtracking_pattern_is_stopped_at_its_budget_and_other_threads_run():
    pattern = SafePattern(HOSTILE, "X", budget=0.2)
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            t = time.perf_counter()
            time.sleep(0.005)
            ticks.append(time.perf_counter() - t)

    ticker = threading.Thread(target=tick)
    ticker.start()
    start = time.perf_counter()
    try:
        with pytest.raises(PatternTooSlow) as err:
            pattern.finditer(VICTIM)
    finally:
        done.set()
        ticker.join()
    took = time.perf_counter() - start
    assert took < 5.0  # the budget (0.2 s) and the module's checking interval, on a busy box
    assert "\n" not in str(err.value) and "pattern X" in str(err.value)
    # the lock was released while it matched: the other thread ran all along, never held up
    # for the whole match (under re: no tick at all until the match ends)
    assert len(ticks) >= 10 and max(ticks) < took / 2
    with pytest.raises(PatternTooSlow):
        pattern.search(VICTIM)


@pytest.mark.parametrize("source", ["((a{1000}){1000}){1000}", "(a{1000}){1000}",
                                    "(?:(?:ab){400}c){400}", "x" * 1001])
def test_a_pattern_that_would_unroll_huge_is_refused_before_it_is_compiled(source):
    # the regex module unrolls counted groups: ((a{1000}){1000}){1000} took gigabytes
    start = time.perf_counter()
    with pytest.raises(DPTextError) as err:
        compile_user(source, "BIG")
    assert time.perf_counter() - start < 1.0 and "\n" not in str(err.value)


def test_program_size_multiplies_nested_counts():
    from re import _parser

    size = lambda s: program_size(_parser.parse(s))  # noqa: E731
    assert size("abc") == 3
    assert size("(ab){10}") == 20 and size("(?:a{10}){10}") == 100
    assert size("a{2,50}") == 50 and size("a{3,}") == 3 and size("(a|bc)*") == 3
    assert size("(a{100}){1000}") == MAX_PROGRAM_SIZE  # the largest allowed
    compile_user("(a{100}){1000}", "EDGE")


@pytest.mark.parametrize("source", [r"\b\d{3}-\d{4}\b", r"(?i)mrn[:# ]*(?P<v>\d+)",
                                    r"(?<=ID )\w+", r"[A-Z]{2,3}(?![\w.])", r"(ab|a)c?"])
def test_ordinary_patterns_match_as_re_does(source):
    text = "MRN: 4471 call 555-0142, ID x9, mrn#12 and AB abc ab. ac"
    ours = [(m.span(), m.group()) for m in compile_user(source, "P").finditer(text)]
    assert ours == [(m.span(), m.group()) for m in re.finditer(source, text)]


def test_a_pattern_pickles_for_worker_processes():
    p = pickle.loads(pickle.dumps(compile_user(r"\d+", "N")))
    assert [m.group() for m in p.finditer("a 12 b 3")] == ["12", "3"]
    with pytest.raises(DPTextError, match="not a regular expression"):
        compile_user("(", "BAD")


def test_the_pattern_recognizer_of_a_user_is_bounded():
    # --pattern and the service's entities.patterns go through parse_pattern
    import subprocess
    import sys

    from dptext.detect.recognizers import parse_pattern

    assert [e.key for e in parse_pattern(r"MRN=\d{6}").find("id 123456 x")] == ["123456"]
    with pytest.raises(DPTextError, match="over the limit"):
        parse_pattern("X=((a{1000}){1000}){1000}")
    code = ("from dptext.detect.recognizers import parse_pattern\n"
            "try:\n"
            f"    parse_pattern('X={HOSTILE}').find('{VICTIM}')\n"
            "except Exception as err:\n"
            "    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.startswith("PatternTooSlow pattern X: over its time limit"), out.stderr
