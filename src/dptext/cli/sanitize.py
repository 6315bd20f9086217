"""``dptext sanitize`` and ``dptext demo``: privatize a text, a file, or the bundled sample."""

from __future__ import annotations

import json
import sys

from dptext.cli.common import (
    add_command,
    add_mechanism_args,
    build_mechanism,
    progress_wanted,
    rng_choice,
)
from dptext.errors import DPTextError

# Commands that take mechanism parameters as ``--name value`` after the known options.
TAKES_MECHANISM_OPTIONS = ("sanitize", "demo")


def cmd_sanitize(args) -> int:
    from dptext.io import atomic_write
    from dptext.sanitize import sanitize

    if (args.input is None) == (args.text is None):
        raise DPTextError("give exactly one of --input FILE or --text TEXT")
    if args.input is not None and args.output is None:
        raise DPTextError("--input needs --output")
    if args.input is not None:
        from dptext.io import open_input

        open_input(args.input).close()  # a missing or unreadable input fails before any work
    rng = rng_choice(args)
    m = build_mechanism(args)
    if args.text is not None:
        result = m.privatize(args.text, rng=rng)
        print(result.text)
        report = result.report
    else:
        report = sanitize(m, args.input, args.output, field=args.field, fmt=args.format,
                          rng=rng, progress=progress_wanted(args))
        report_path = args.report or f"{args.output}.report.json"
        with atomic_write(report_path, encoding="utf-8") as f:
            json.dump(report.to_dict(), f, indent=2)
            f.write("\n")
        print(f"wrote {args.output} and {report_path}", file=sys.stderr)
    print(report, file=sys.stderr)
    if getattr(args, "epsilon_note", None):
        print(args.epsilon_note, file=sys.stderr)
    return 0


def cmd_demo(args) -> int:
    from importlib.resources import files

    text = files("dptext").joinpath("data/sample.txt").read_text(encoding="utf-8")
    args.epsilon = args.epsilon or 2.0
    rng = rng_choice(args)
    m = build_mechanism(args)
    result = m.privatize(text, rng=rng)
    print("Original:\n" + text)
    print(f"Sanitized ({args.mechanism}, epsilon={args.epsilon:g}):\n" + result.text)
    print(result.report)
    return 0


def register(subparsers) -> None:
    s = add_command(subparsers, "sanitize", help="privatize a text or a file")
    add_mechanism_args(s)
    s.add_argument("--input", "-i", help="JSONL, CSV, or text (one record per line)")
    s.add_argument("--output", "-o", help="output file (written atomically)")
    s.add_argument("--text", "-t", help="privatize this text and print it (visible in `ps` and "
                                        "shell history: prefer --input -)")
    s.add_argument("--field", "-f", default="text", help="JSONL field / CSV column")
    s.add_argument("--format", choices=("jsonl", "csv", "txt"), help="default: from the suffix")
    s.add_argument("--report", help="privacy report path (default OUTPUT.report.json)")
    s.set_defaults(func=cmd_sanitize)

    d = add_command(subparsers, "demo", help="sanitize the bundled sample text")
    add_mechanism_args(d)
    d.set_defaults(func=cmd_demo)
