"""The ``dptext`` command: thin argument parsing over the library."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import sys
from pathlib import Path

from dptext.errors import DPTextError

DEFAULT_MECHANISM = "custext"
# Subcommands contributed by other parts of the package: each module defines
# ``add_commands(subparsers)`` and imports its heavy dependencies inside the command functions.
COMMAND_MODULES = ("dptext.cli_lm", "dptext.cli_train", "dptext.cli_evaluate",
                   "dptext.cli_robustness")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``dptext: error: ...``), like every other failure."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"dptext: error: {' '.join(message.split())}\n")


def _progress(args) -> bool:
    """Progress bars only for a person watching: not with --no-progress, not into a pipe."""
    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


def _value(text: str):
    """A ``--param`` value: int, float, bool, or the string itself."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _build(args) -> object:
    from dptext.mechanisms.base import mechanism

    params = dict(getattr(args, "extra_params", {}))
    for item in args.param or []:
        if "=" not in item:
            raise DPTextError(f"--param needs NAME=VALUE, got {item!r}")
        key, val = item.split("=", 1)
        params[key.strip().replace("-", "_")] = _value(val.strip())
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    if args.space:
        from dptext.embeddings import EmbeddingSpace

        path = Path(args.space)
        params["space"] = (
            EmbeddingSpace.load(path) if path.suffix == ".npz" else EmbeddingSpace.from_file(path)
        )
    m = mechanism(args.mechanism, **params)
    m.fit(progress=_progress(args))
    return m


def _epsilon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epsilon must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"epsilon must be finite and > 0, got {text!r}")
    return value


def _add_mechanism_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", "-m", default=DEFAULT_MECHANISM, help="see `dptext mechanisms`")
    p.add_argument("--epsilon", "-e", type=_epsilon, help="privacy parameter")
    p.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="other mechanism parameter, e.g. -p k=20 (repeatable)")
    p.add_argument("--space", help="embedding space: a saved .npz or a vectors file")
    p.add_argument("--seed", type=int,
                   help="for experiments only: reproducible (hence predictable) randomness")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def cmd_sanitize(args) -> int:
    from dptext.io import atomic_write
    from dptext.sanitize import sanitize

    if (args.input is None) == (args.text is None):
        raise DPTextError("give exactly one of --input FILE or --text TEXT")
    if args.input is not None and args.output is None:
        raise DPTextError("--input needs --output")
    m = _build(args)
    if args.text is not None:
        result = m.privatize(args.text, rng=args.seed)
        print(result.text)
        report = result.report
    else:
        report = sanitize(m, args.input, args.output, field=args.field, fmt=args.format,
                          rng=args.seed, progress=_progress(args))
        report_path = args.report or f"{args.output}.report.json"
        with atomic_write(report_path, encoding="utf-8") as f:
            json.dump(report.to_dict(), f, indent=2)
            f.write("\n")
        print(f"wrote {args.output} and {report_path}", file=sys.stderr)
    print(report, file=sys.stderr)
    return 0


def cmd_demo(args) -> int:
    from importlib.resources import files

    text = files("dptext").joinpath("data/sample.txt").read_text(encoding="utf-8")
    args.epsilon = args.epsilon or 2.0
    m = _build(args)
    result = m.privatize(text, rng=args.seed)
    print("Original:\n" + text)
    print(f"Sanitized ({args.mechanism}, epsilon={args.epsilon:g}):\n" + result.text)
    print(result.report)
    return 0


def cmd_mechanisms(args) -> int:
    from dptext.mechanisms.base import parameters, registered

    for name, cls in registered().items():
        print(f"{name:10s} {cls.summary}")
        print(f"{'':10s} guarantee: {cls.guarantee_summary}")
        params = ", ".join(f"{k}={v!r}" for k, v in parameters(cls).items())
        print(f"{'':10s} parameters: {params}")
    return 0


def cmd_resources(args) -> int:
    from dptext.resources import default_space, list_resources

    for r in list_resources():
        status = "ready" if r.ready else "missing"
        print(f"{r.name:22s} {status:8s} {r.what}\n{'':31s} {r.location}")
    if not args.list:
        space = default_space(progress=_progress(args))
        print(f"{space}: Delta_min={space.delta_min:.4g}, Delta_max={space.delta_max:.4g}, "
              f"{len(space.aliases)} merged variants")
    return 0


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dptext", description="Differentially private text.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("sanitize", help="privatize a text or a file")
    _add_mechanism_args(s)
    s.add_argument("--input", "-i", help="JSONL, CSV, or text (one record per line)")
    s.add_argument("--output", "-o", help="output file (written atomically)")
    s.add_argument("--text", "-t", help="privatize this text and print it")
    s.add_argument("--field", "-f", default="text", help="JSONL field / CSV column (text)")
    s.add_argument("--format", choices=("jsonl", "csv", "txt"), help="default: from the suffix")
    s.add_argument("--report", help="privacy report path (default OUTPUT.report.json)")
    s.set_defaults(func=cmd_sanitize)

    d = sub.add_parser("demo", help="sanitize the bundled sample text")
    _add_mechanism_args(d)
    d.set_defaults(func=cmd_demo)

    m = sub.add_parser("mechanisms", help="list mechanisms, parameters and guarantees")
    m.set_defaults(func=cmd_mechanisms)

    r = sub.add_parser("resources",
                       help="list the offline defaults and build what is missing")
    r.add_argument("--list", action="store_true", help="only list; build nothing")
    r.add_argument("--no-progress", action="store_true")
    r.set_defaults(func=cmd_resources)

    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).add_commands(sub)
    return p


def mechanism_options(extra: list[str]) -> dict:
    """``--name VALUE``, ``--flag`` and ``--no-flag`` after the known options become mechanism
    parameters (``--p-add 0.1`` -> ``p_add=0.1``); the registry rejects unknown names."""
    params, i = {}, 0
    while i < len(extra):
        item = extra[i]
        if not item.startswith("--") or len(item) < 3:
            raise DPTextError(f"unexpected argument {item!r}")
        key, _, value = item[2:].partition("=")
        key = key.replace("-", "_")
        if value == "" and "=" not in item:
            if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
                value = extra[i + 1]
                i += 1
            elif key.startswith("no_"):
                key, value = key[3:], "false"
            else:
                value = "true"
        params[key] = _value(value)
        i += 1
    return params


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args, extra = p.parse_known_args(argv)
    try:
        if extra:
            if args.command not in ("sanitize", "demo"):
                p.error(f"unrecognized arguments: {' '.join(extra)}")
            args.extra_params = mechanism_options(extra)
        return args.func(args)
    except DPTextError as err:
        print(f"dptext: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. disk full, permission denied: one line, no traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"dptext: error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("dptext: interrupted; no partial output was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
