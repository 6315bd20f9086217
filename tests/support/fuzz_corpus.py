"""A fuzz corpus for dptext's inputs (used by tests/core/test_reliability_fuzz.py and
benchmarks/fuzz_campaign.py): hostile texts, the three file formats written around them, and
bad-input files each of which must give a one-line error.

Text families (issue 12's campaign): random code points of every plane, emoji with ZWJ and
skin tones, zalgo, RTL with bidi controls, CJK, control characters and NUL, letter-like
symbols (circled, squared, regional indicators, tags), Indic with combining marks, very long
words, long lines, CR/CRLF inside records, BOMs, lone surrogates (JSONL escapes), and ordinary
vocabulary words mixed in so that every mechanism has something to privatize.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

VOCAB = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog", "don't",
         "cafe", "north", "house", "green"]

_EMOJI = ["\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f44d\U0001f3fd", "\u2764\ufe0f",
          "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
          "\U0001f1eb\U0001f1f7", "1\ufe0f\u20e3"]
_BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2069", "\u200f", "\u200e", "\u061c"]
_LETTERLIKE = ["\u24b6\u24db\u24d8\u24d2\u24d4", "\U0001f130\U0001f131", "\U0001f170\U0001f171",
               "\u32d0\u32d1", "\u2122", "\u2116", "\u3392", "\u249c\u249d", "\U0001d400\U0001d401",
               "\uff21\uff42"]
_INDIC = ["\u0930\u092e\u0947\u0936", "\u0915\u0941\u092e\u093e\u0930", "\u0b95\u0bc1",
          "\u0e01\u0e34\u0e19"]
_CONTROL = [chr(c) for c in range(0, 32) if c not in (10, 13)] + ["\x7f", "\x85", "\u2028",
                                                                  "\u2029", "\ufeff", "\x00"]


def _random_code_point(rng: np.random.Generator) -> str:
    while True:
        plane = rng.choice([0, 0, 0, 1, 2, 14, 15])
        cp = int(plane) * 0x10000 + int(rng.integers(0, 0x10000))
        if not 0xD800 <= cp < 0xE000 and cp not in (10, 13):
            return chr(cp)


def _zalgo(word: str, rng: np.random.Generator) -> str:
    marks = [chr(int(c)) for c in rng.integers(0x300, 0x370, size=len(word) * 4)]
    return "".join(ch + "".join(marks[i * 4 : i * 4 + int(rng.integers(0, 5))])
                   for i, ch in enumerate(word))


def fuzz_text(rng: np.random.Generator, *, long_words: bool = True) -> str:
    """One hostile record (no line feed or carriage return: those are tested per format)."""
    kind = int(rng.integers(0, 11))
    words = list(rng.choice(VOCAB, size=int(rng.integers(1, 8))))
    if kind == 0:
        return "".join(_random_code_point(rng) for _ in range(int(rng.integers(1, 60))))
    if kind == 1:
        return " ".join(w + str(rng.choice(_EMOJI)) for w in words)
    if kind == 2:
        return " ".join(_zalgo(w, rng) for w in words)
    if kind == 3:
        return str(rng.choice(_BIDI)).join(["\u05e9\u05dc\u05d5\u05dd", *words,
                                           "\u0645\u0631\u062d\u0628\u0627"])
    if kind == 4:
        return "\u4e2d\u6587" + " ".join(words) + "\u3002\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8"
    if kind == 5:
        return "".join(w + str(rng.choice(_CONTROL)) for w in words)
    if kind == 6:
        return " ".join(str(rng.choice(_LETTERLIKE)) + " " + w for w in words)
    if kind == 7:
        return " ".join(str(rng.choice(_INDIC)) for _ in words) + " " + " ".join(words)
    if kind == 8:
        top = 200_000 if long_words and rng.random() < 0.1 else 2_000
        return "x" * int(rng.integers(100, top)) + " " + " ".join(words)
    if kind == 9:
        return "  ".join(words).upper() + "!?... (\"quoted\") -- 3.14 'tis"
    return " ".join(words)


def has_letter_property(c: str) -> bool:
    """A letter or mark of any script, Alphabetic, or NFKC-folding to a letter (variation
    selectors excepted): what must never be released verbatim."""
    import unicodedata

    import regex

    if "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef":
        return False
    if unicodedata.category(c)[0] in "LM" or regex.fullmatch(r"[\p{L}\p{M}\p{Alphabetic}]", c):
        return True
    return any(unicodedata.category(x)[0] == "L" for x in unicodedata.normalize("NFKC", c))


# ------------------------------------------------------------------------- corpus files
def write_corpus(root: Path, texts: list[str], rng: np.random.Generator) -> dict[str, Path]:
    """The texts as a .txt (one per line), a .jsonl (with other fields, surrogate escapes and
    line separators) and a .csv (quoted, with CR/LF inside fields) file; and a CR-only CSV."""
    root.mkdir(parents=True, exist_ok=True)
    paths = {"txt": root / "fuzz.txt", "jsonl": root / "fuzz.jsonl", "csv": root / "fuzz.csv",
             "csv-cr": root / "fuzz-cr.csv"}
    with open(paths["txt"], "w", encoding="utf-8", newline="") as f:
        f.write("\ufeff" if rng.random() < 0.5 else "")
        for i, t in enumerate(texts):
            f.write(t + ("\r\n" if i % 3 == 0 else "\n"))
    with open(paths["jsonl"], "w", encoding="utf-8", newline="") as f:
        for i, t in enumerate(texts):
            record = {"id": i, "text": t, "meta": {"tags": ["a\u2028b", None, True, 1.5e-300]}}
            line = json.dumps(record, ensure_ascii=bool(i % 2))
            if i % 5 == 0:  # a lone surrogate escape in another field
                line = line[:-1] + ', "raw": "\\udc80\\ud800"}'
            f.write(line + "\n")
    for name, terminator in (("csv", "\r\n"), ("csv-cr", "\r")):
        with open(paths[name], "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator=terminator)
            w.writerow(["id", "text", "note"])
            for i, t in enumerate(texts):
                note = "line\rbreak\r\nand \"quotes\"" if i % 4 == 0 else ""
                w.writerow([i, t, note])
    return paths


def count_records(path: Path, fmt: str) -> int:
    from dptext.io import read_csv, read_json_objects, read_lines

    if fmt == "txt":
        return sum(1 for _ in read_lines(path))
    if fmt == "jsonl":
        return sum(1 for _ in read_json_objects(path))
    return sum(1 for _ in read_csv(path)[1])


# ------------------------------------------------------------------------- bad inputs
BadCase = tuple[str, str, list[str], str]  # name, file name, extra CLI args, needle


def write_bad_inputs(root: Path) -> list[BadCase]:
    """Files that must each fail with a one-line error (and no output left behind)."""
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes | str] = {
        "unterminated.csv": 'id,text\n1,alice\n2,"bob met\n3,paris\n',
        "dup_header.csv": "text,text\nalice,bob\n",
        "ragged_short.csv": "id,text,x\n1,alice,z\n2,bob\n",
        "ragged_long.csv": "id,text\n1,alice\n2,bob,surplus\n",
        "bad_quote.csv": 'id,text\n1,"alice"bob\n',
        "no_column.csv": "id,body\n1,alice\n",
        "empty.csv": "",
        "latin1.csv": b"id,text\n1,caf\xe9\n",
        "latin1.txt": b"alice\ncaf\xe9\n",
        "dup_key.jsonl": '{"text": "a", "text": "b"}\n',
        "nan.jsonl": '{"text": "a", "x": NaN}\n',
        "inf.jsonl": '{"text": "a", "x": 1e400}\n',
        "deep.jsonl": '{"text": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "not_object.jsonl": '["text"]\n',
        "not_json.jsonl": '{"text": "a"}\n{oops\n',
        "no_field.jsonl": '{"body": "a"}\n',
        "non_string.jsonl": '{"text": 5}\n',
        "huge_int.jsonl": '{"text": "a", "x": ' + "9" * 5000 + "}\n",
        "bom_dup.jsonl": '\ufeff{"text": "a"}\n{"text": "b", "text": "c"}\n',
    }
    for name, data in files.items():
        (root / name).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    (root / "a_dir").mkdir(exist_ok=True)
    needles = {
        "unterminated.csv": "quote is never closed", "dup_header.csv": "repeats the column",
        "ragged_short.csv": "fewer fields", "ragged_long.csv": "more fields",
        "bad_quote.csv": "row 1", "no_column.csv": "no column", "empty.csv": "empty CSV",
        "latin1.csv": "UTF-8", "latin1.txt": "UTF-8", "dup_key.jsonl": "repeats the key",
        "nan.jsonl": "not JSON", "inf.jsonl": "range of a double",
        "deep.jsonl": "nested too deeply", "not_object.jsonl": "not a JSON object",
        "not_json.jsonl": "line 2", "no_field.jsonl": "no field", "non_string.jsonl":
        "not a string", "huge_int.jsonl": "cannot be read", "bom_dup.jsonl": "line 2",
    }
    cases: list[BadCase] = [(n, n, [], needles[n]) for n in files]
    cases += [("missing_file", "nope.txt", [], "no such file"),
              ("input_dir", "a_dir", [], "directory"),
              ("bad_format", "latin1.txt", ["--format", "xml"], "format"),
              ("secure_and_seed", "no_field.jsonl", ["--secure-rng", "--seed", "1"], "--seed")]
    return cases


def mechanism_factories(space) -> dict[str, Callable]:
    """Every word mechanism on ``space`` (gumbel at 1.5x its least admissible epsilon)."""
    import dptext
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    gumbel_eps = 1.5 * minimum_epsilon(**geo, rule="paper")
    out = {}
    for name in ("custext", "custext+", "santext", "santext+", "laplace", "gumbel"):
        params = {"epsilon": gumbel_eps if name == "gumbel" else 2.0}
        if name.startswith("custext"):
            params["k"] = 5 if len(space) < 1000 else 20
        out[name] = (lambda n=name, p=params: dptext.mechanism(n, space=space, **p))
    return out
