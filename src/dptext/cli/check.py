"""``dptext check``: the leak check of a release against its original (docs/deid.md)."""

from __future__ import annotations

import math

from dptext.cli.common import ExtendList, add_command, int_type
from dptext.errors import DPTextError


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


def cmd_check(args) -> int:
    from dptext.deid.check import (
        check_records,
        format_result,
        pair_records,
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
    original = read_records(args.original, args.field, args.id_field)
    released = read_records(args.released, args.field, args.id_field)
    if gold is not None:
        if len(gold) != len(original):
            raise DPTextError(f"--gold has {len(gold)} records but --original {len(original)}")
        for i, (g, (_, texts)) in enumerate(zip(gold, original, strict=True)):
            if g.text != texts[0]:
                raise DPTextError(f"record {i}: the --gold text is not the --original text")
    detector = EntityDetector(categories, args.detector, builtin_recognizers() + tuple(user),
                              allow)
    residual = None if args.no_residual else ResidualNet(allow)
    pairs = list(pair_records(original, released, args.id_field))
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
