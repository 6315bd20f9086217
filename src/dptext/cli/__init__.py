"""The ``dptext`` command: thin argument parsing over the library.

Each command family is one module of this package with ``register(subparsers)``; they are
registered explicitly below (no import by name), and every command's work is done by library
code it calls (``dptext.sanitize``, ``dptext.training.run``, ``dptext.evaluation``, ...).
A command line naming its command first imports and registers only that command's module
(:func:`parser`; issue 36, CLI start-up): the others are read only for ``dptext --help`` and
for a command line that names no known command.
"""

from __future__ import annotations

import argparse
import os
import sys

from dptext.cli.common import Parser, flag_of, mechanism_options
from dptext.errors import DPTextError

#: every command, in ``dptext --help``'s order, with the module of this package registering it
COMMANDS = {
    "sanitize": "sanitize", "demo": "sanitize", "mechanisms": "info", "resources": "info",
    "cache": "info", "calibrate": "lm", "entities": "train", "account": "train",
    "train": "train", "evaluate": "evaluate", "robustness": "robustness", "audit": "audit",
    "audit-training": "audit", "ledger": "ledger", "serve": "service", "keys": "service",
    "check": "check",
}


#: OpenBLAS's idle worker threads busy-wait 2^N TSC ticks before they sleep. Its default,
#: N = 28 (0.1 s at 2.6 GHz), made the worker numpy's import starts spin for the rest of a short
#: command: a quarter of a cached ``sanitize --text``'s CPU on two cores (issue 36). 2^24 ticks
#: (~6 ms) still keeps the threads awake between the products of a search; the thread count is
#: unchanged, and a timeout set in the environment is kept.
BLAS_THREAD_TIMEOUT = "24"


def _command_module(name: str):
    """The module ``dptext.cli.<name>`` (imported here, explicitly: each costs its imports)."""
    if name == "sanitize":
        from dptext.cli import sanitize as module
    elif name == "info":
        from dptext.cli import info as module
    elif name == "lm":
        from dptext.cli import lm as module
    elif name == "train":
        from dptext.cli import train as module
    elif name == "evaluate":
        from dptext.cli import evaluate as module
    elif name == "robustness":
        from dptext.cli import robustness as module
    elif name == "audit":
        from dptext.cli import audit as module
    elif name == "ledger":
        from dptext.cli import ledger as module
    elif name == "service":
        from dptext.cli import service as module
    elif name == "check":
        from dptext.cli import check as module
    else:
        raise KeyError(name)
    return module


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


def parser(argv: list[str] | None = None) -> Parser:
    """The ``dptext`` parser; for ``argv`` whose first item is a command, only that command's
    module is imported and registered (with the commands it registers beside it). Nothing the
    chosen command parses or prints depends on the others: its usage names ``dptext COMMAND``
    only, and errors are one line without the usage. Any other ``argv`` (``--help``,
    ``--version``, nothing, an unknown command) gets every command, as before."""
    p = Parser(prog="dptext", description="Differentially private text.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    first = argv[0] if argv else None
    wanted = ([COMMANDS[first]] if first in COMMANDS
              else dict.fromkeys(COMMANDS.values()))
    for name in wanted:
        _command_module(name).register(sub)
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
    if "OPENBLAS_THREAD_TIMEOUT" not in os.environ and "GOTO_THREAD_TIMEOUT" not in os.environ:
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_THREAD_TIMEOUT  # read when numpy loads
    _one_line_warnings()
    if argv is None:
        argv = sys.argv[1:]
    p = parser(argv)
    args, extra = p.parse_known_args(argv)
    try:
        if extra:
            from dptext.cli.sanitize import TAKES_MECHANISM_OPTIONS

            if args.command not in TAKES_MECHANISM_OPTIONS:
                p.error(f"unrecognized arguments: {' '.join(extra)}")
            args.extra_params = mechanism_options(extra)
        return args.func(args)
    except DPTextError as err:  # an engine's parameters named by their flags
        print(f"dptext: error: {' '.join(err.spelled(flag_of).split())}", file=sys.stderr)
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

