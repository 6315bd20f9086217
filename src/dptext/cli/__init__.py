"""The ``dptext`` command: thin argument parsing over the library.

Each command family is one module of this package with ``register(subparsers)``; they are
registered explicitly below (no import by name), and every command's work is done by library
code it calls (``dptext.sanitize``, ``dptext.training.run``, ``dptext.evaluation``, ...).
"""

from __future__ import annotations

import argparse
import sys

from dptext.cli import audit, check, evaluate, info, ledger, lm, robustness, service, train
from dptext.cli import sanitize as sanitize_cmd
from dptext.cli.common import Parser, mechanism_options
from dptext.errors import DPTextError

COMMANDS = (sanitize_cmd, info, lm, train, evaluate, robustness, audit, ledger, service,
            check)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dptext")
    except PackageNotFoundError:  # running from a source tree
        from dptext import __version__

        return __version__


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata
    costs a noticeable share of a command's start-up; issue 36)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(f"dptext {_version()}\n", sys.stdout)
        parser.exit()


def parser() -> Parser:
    p = Parser(prog="dptext", description="Differentially private text.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMANDS:
        module.register(sub)
    return p


def _one_line_warnings() -> None:
    """dptext's own warnings (cache rebuilds, a slow int8 path, ...) as one line on stderr,
    without Python's file:line and source echo; other libraries' warnings as Python shows them."""
    import warnings

    shown = warnings.showwarning
    if getattr(shown, "dptext", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.startswith("dptext"):
            print(f"dptext: warning: {' '.join(str(message).split())}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    show.dptext = True
    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    _one_line_warnings()
    p = parser()
    args, extra = p.parse_known_args(argv)
    try:
        if extra:
            if args.command not in sanitize_cmd.TAKES_MECHANISM_OPTIONS:
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
    except KeyboardInterrupt as err:
        from dptext.cache import BuildTerminated

        if isinstance(err, BuildTerminated):
            print("dptext: terminated while building a cache entry; its temporary files are "
                  "removed and the next run builds it", file=sys.stderr)
            return 143
        print("dptext: interrupted; no partial output was written", file=sys.stderr)
        return 130

