"""``dptext check``: the leak check of a release against its original (docs/deid.md)."""

from __future__ import annotations

import codecs
import json
import math
import re
from pathlib import Path

from dptext.cli.common import ExtendList, add_command, int_type
from dptext.errors import DPTextError


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_file(path: str, limit: int) -> None:
    """A one-line DPTextError unless ``path`` is UTF-8 text whose lines are at most ``limit``
    bytes (issue 47 N5: a binary file, a lone surrogate or a 50 MB line gave a traceback and
    exit status 1, the status that means "leaks found"). Read in chunks: nothing is held."""
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"{path}: no such file")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset, line, line_start = 0, 1, 0
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            nul = chunk.find(b"\0")
            if nul >= 0:
                raise DPTextError(f"{path}: not a text file (a NUL byte at byte {offset + nul})"
                                  f": give the records as JSONL, CSV or text")
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                raise DPTextError(f"{path}: not UTF-8 text (byte {offset + err.start}: "
                                  f"{err.reason})") from None
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                stop = offset + (end if end >= 0 else len(chunk))
                if stop - line_start > limit:
                    raise DPTextError(f"{path}: line {line} is over {limit} bytes, the limit "
                                      f"of one record (--max-record-bytes)")
                if end < 0:
                    break
                line, line_start, start = line + 1, offset + end + 1, end + 1
            offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise DPTextError(f"{path}: not UTF-8 text (it ends inside a character)") from None


def _no_surrogates(path: str, records) -> None:
    for i, (_, texts) in enumerate(records, start=1):
        for text in texts:
            if (m := _SURROGATE.search(text)) is not None:
                raise DPTextError(f"{path}: record {i} holds a lone surrogate "
                                  f"(U+{ord(m.group()):04X}), which is not text")


def _unique_ids(path: str, records, id_field: str) -> None:
    seen: dict[str, int] = {}
    for i, (rid, _) in enumerate(records, start=1):
        if rid in seen:
            raise DPTextError(f"{path}: --id-field {id_field!r} is not unique ({rid!r} is on "
                              f"records {seen[rid]} and {i}): records would be paired with "
                              f"the wrong ones; name a field that identifies each record")
        seen[rid] = i


def _left_out(path: str | None, given: bool, records: int) -> set[int]:
    """The 0-based original records a rejects file lists (withheld or rejected by sanitize:
    absent from the release on purpose); an empty set without a file."""
    if path is None or (not given and not Path(path).is_file()):
        return set()
    if not Path(path).is_file():
        raise DPTextError(f"--rejects {path}: no such file")
    out, sources = set(), set()
    with open(path, encoding="utf-8", errors="strict") as f:
        try:
            for number, text in enumerate(f, start=1):
                if not text.strip():
                    continue
                try:
                    entry = json.loads(text)
                    ordinal = entry["record"]
                except (ValueError, KeyError, TypeError):
                    raise DPTextError(f"{path}: line {number} is not a rejects entry "
                                      f"(a JSON object with its \"record\")") from None
                if isinstance(ordinal, bool) or not isinstance(ordinal, int) or \
                        not 1 <= ordinal <= records:
                    raise DPTextError(f"{path}: line {number} names record {ordinal!r}, "
                                      f"not one of the {records} original records")
                sources.add(entry.get("source"))
                out.add(ordinal - 1)
        except UnicodeDecodeError:
            raise DPTextError(f"{path}: not UTF-8 text") from None
    if len(sources) > 1:
        raise DPTextError(f"{path}: lists records of several inputs; check one file at a time")
    return out


def _pairs(args, original, released, left_out: set[int]):
    """(index, original texts, released texts or None): by --id-field, else by position
    with the records of the rejects file taken out."""
    from dptext.deid.check import pair_records

    if args.id_field:
        _unique_ids(args.original, original, args.id_field)
        _unique_ids(args.released, released, args.id_field)
        return list(pair_records(original, released, args.id_field))
    kept = [i for i in range(len(original)) if i not in left_out]
    if len(kept) != len(released):
        listed = f", {len(left_out)} of them listed in {args.rejects_path}" if left_out else ""
        raise DPTextError(f"{len(original)} original records{listed}, {len(released)} "
                          f"released: give --id-field to match them by a field both files "
                          f"carry, or --rejects naming the records left out")
    by_index = dict(zip(kept, (texts for _, texts in released), strict=True))
    return [(i, texts, by_index.get(i)) for i, (_, texts) in enumerate(original)]


def cmd_check(args) -> int:
    from dptext.deid.check import (
        check_records,
        format_result,
        read_records,
        result_json,
    )
    from dptext.detect.categories import resolve_categories
    from dptext.detect.entities import EntityDetector
    from dptext.detect.recognizers import (
        DenyListRecognizer,
        builtin_recognizers,
        parse_pattern,
        read_word_list,
    )
    from dptext.detect.residual import ResidualNet

    user = [parse_pattern(p) for p in args.pattern]
    deny = read_word_list(args.deny_list, "--deny-list") if args.deny_list else ()
    allow = frozenset(read_word_list(args.allow_list, "--allow-list")) if args.allow_list \
        else frozenset()
    if deny:
        user.append(DenyListRecognizer("deny-list", "DENY_LIST", entries=deny))
    categories = resolve_categories([c for c in args.entities.split(",") if c.strip()]) \
        | frozenset(r.category for r in user)
    gold = None
    if args.gold is not None:
        from dptext.deid.gold import read_gold

        gold = read_gold(args.gold)
        if len(args.field) != 1:
            raise DPTextError("--gold scores one field: give one --field")
    for path in (args.original, args.released):
        _text_file(path, args.max_record_bytes)
    original = read_records(args.original, args.field, args.id_field)
    released = read_records(args.released, args.field, args.id_field)
    _no_surrogates(args.original, original)
    _no_surrogates(args.released, released)
    args.rejects_path = args.rejects or f"{args.released}.rejects.jsonl"
    left_out = _left_out(args.rejects_path, args.rejects is not None, len(original))
    pairs = _pairs(args, original, released, left_out)  # before the detectors load
    if gold is not None:
        if len(gold) != len(original):
            raise DPTextError(f"--gold has {len(gold)} records but --original {len(original)}")
        for i, (g, (_, texts)) in enumerate(zip(gold, original, strict=True)):
            if g.text != texts[0]:
                raise DPTextError(f"record {i}: the --gold text is not the --original text")
    detector = EntityDetector(categories, args.detector, builtin_recognizers() + tuple(user),
                              allow)
    residual = None if args.no_residual else ResidualNet(allow)
    result = check_records(iter(pairs), detector, residual)
    if args.json:
        print(result_json(result))
    else:
        print(format_result(result, args.max_leaks))
    if gold is not None:
        from dptext.deid.gold import score

        compared = [(i, r) for i, _, r in pairs if r is not None]
        s = score([gold[i] for i, _ in compared], result.detected,
                  [r[0] for _, r in compared])
        print(f"gold ({args.gold}): token recall of the check's detection, share of gold "
              "tokens released verbatim, per gold category")
        for row in s.rows():
            extra = (f"  precision {_fmt(row['precision'])}  readability "
                     f"{_fmt(row['readability'])}") if row["category"] == "ALL" else ""
            print(f"  {row['category']:<16} {row['gold_tokens']:>6} tokens  recall "
                  f"{_fmt(row['recall'])}  verbatim {_fmt(row['verbatim'])}{extra}")
        print("  precision per detected category:")
        for row in s.precision_rows():
            print(f"    {row['category']:<16} {row['detected_tokens']:>6} tokens  precision "
                  f"{_fmt(row['precision'])}")
    return 0 if result.leaks <= args.max_leaks else 1


def register(subparsers) -> None:
    c = add_command(subparsers, "check",
                    help="leak check: find identifiers of the original that survive in the "
                         "release (exit 1 above --max-leaks)")
    c.add_argument("--original", required=True, help="the original records (JSONL, CSV or "
                   "text, one record a line)")
    c.add_argument("--released", required=True, help="the released records, same format")
    c.add_argument("--field", "-f", action=ExtendList, default=["text"],
                   help="JSONL field / CSV column to compare (repeat for several)")
    c.add_argument("--id-field", help="match records by this field (a release without its "
                   "withheld records); default: by position")
    c.add_argument("--rejects", metavar="FILE",
                   help="the records sanitize left out (withheld or rejected): compared as "
                        "absent, not paired by position (default RELEASED.rejects.jsonl when "
                        "it exists)")
    c.add_argument("--max-record-bytes", type=int_type(1), default=4 << 20,
                   help="the longest line read, in bytes (as sanitize)")
    c.add_argument("--gold", help="gold identifier spans (JSONL of character spans or of "
                   "values, an i2b2 XML file or directory): prints token recall, precision, "
                   "the share released verbatim and readability per category")
    c.add_argument("--max-leaks", type=int_type(0), default=0,
                   help="surviving identifiers allowed before the exit status is 1")
    c.add_argument("--entities", default="PHI",
                   help="categories to look for (groups: PHI, PII, IDS, CONTACT, ALL)")
    c.add_argument("--detector", choices=("spacy", "presidio", "both"), default="both",
                   help="entity engines (the rule recognizers always run)")
    c.add_argument("--pattern", action="append", default=[], metavar="NAME=REGEX",
                   help="your own recognizer, as in sanitize (repeatable)")
    c.add_argument("--deny-list", metavar="FILE", help="names that must never appear")
    c.add_argument("--allow-list", metavar="FILE", help="words that are never identifiers")
    c.add_argument("--no-residual", action="store_true",
                   help="do not look up the residual net's tokens (unknown capitalised words, "
                        "codes, 3+ digit runs)")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=cmd_check)
