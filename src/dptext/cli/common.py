"""What several commands share: the parser class, progress and stage messages, mechanism
options (``--epsilon``, ``--param``, ``--space``, ``--name value``), and value parsing."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from dptext.errors import DPTextError

DEFAULT_MECHANISM = "custext"


class DefaultsFormatter(argparse.HelpFormatter):
    """Shows each option's default in ``--help`` where it has one (not for unset options)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or default in (None, False, argparse.SUPPRESS)
                or action.option_strings == [] and action.nargs in ("?", "*")):
            return text
        if isinstance(default, list | tuple):
            shown = ",".join(map(str, default)).replace("%", "%%")
            return f"{text} (default: {shown})"
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``dptext: error: ...``), every default shown in
    ``--help``, and no abbreviations (``--p`` must never silently mean ``--param``)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"dptext: error: {' '.join(message.split())}\n")


#: the library's parameters whose flag is not ``--name-with-dashes`` (:func:`flag_of`)
FLAG_OF = {"fields": "--field", "input": "--input", "output": "--output"}


def flag_of(parameter: str) -> str:
    """The command line's flag of a library parameter an engine error names
    (:class:`dptext.errors.ParameterError`): ``user_field`` -> ``--user-field``."""
    return FLAG_OF.get(parameter) or "--" + parameter.replace("_", "-")


def add_command(subparsers, name: str, **kwargs) -> Parser:
    """A subcommand parser with the package's conventions (see :class:`Parser`)."""
    return subparsers.add_parser(name, **kwargs)


def progress_wanted(args) -> bool:
    """Progress bars only for a person watching: not with --no-progress, not into a pipe."""
    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


class Stage:
    """A long step announced on stderr when no progress bar can be shown (no terminal):
    ``dptext: fitting SanText tables for eps=2: about 2 min, cached afterwards`` and, at the
    end, how long it took. Silent with ``quiet``."""

    def __init__(self, what: str, *, estimate: str | None = None, quiet: bool = False) -> None:
        self.what, self.estimate, self.quiet = what, estimate, quiet

    def __enter__(self) -> Stage:
        self.start = time.monotonic()
        if not self.quiet:
            hint = f": {self.estimate}" if self.estimate else ""
            print(f"dptext: {self.what}{hint}", file=sys.stderr, flush=True)
        return self

    def __exit__(self, kind, value, tb) -> None:
        if not self.quiet and kind is None:
            took = time.monotonic() - self.start
            print(f"dptext: done in {took:.1f} s", file=sys.stderr, flush=True)


def parse_value(text: str):
    """A parameter value given as text: int, float, bool, or the string itself."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_as(cast, text: str, message: str):
    """``cast(text)`` for an argparse type, or argparse's error ``message`` when ``text`` is not
    a value of that kind (every numeric option type of the CLI starts with it)."""
    try:
        return cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(message) from None


def epsilon_type(text: str) -> float:
    """argparse type for an epsilon: a finite number > 0."""
    value = parse_as(float, text, f"epsilon must be a number, got {text!r}")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"epsilon must be finite and > 0, got {text!r}")
    return value


def positive_type(text: str) -> float:
    """argparse type for a number that must be finite and > 0 (a noise multiplier, a rate)."""
    value = parse_as(float, text, f"expected a number > 0, got {text!r}")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def rate_type(text: str) -> float:
    """argparse type for a probability in [0, 1]."""
    q = parse_as(float, text, f"expected a rate in [0, 1], got {text!r}")
    if not 0.0 <= q <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1], got {text!r}")
    return q


def int_type(minimum: int):
    """argparse type for an integer >= ``minimum``."""

    def parse(text: str) -> int:
        value = parse_as(int, text, f"expected an integer, got {text!r}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    return parse


def comma_list(text: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]`` (empty items refused)."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"empty item in the list {text!r}")
    return items


class ExtendList(argparse.Action):
    """A repeatable option whose values may also be comma-separated: ``-f a -f b,c`` gives
    ``[a, b, c]``. A value given twice is an error (it could not be honoured twice)."""

    def __call__(self, parser, namespace, values, option_string=None):
        current = getattr(namespace, self.dest, None)
        current = [] if current is None or current is self.default else list(current)
        for item in comma_list(values):
            if item in current:
                raise argparse.ArgumentError(self, f"{item!r} given twice")
            current.append(item)
        setattr(namespace, self.dest, current)


def load_space(path_text: str, *, progress: bool = True):
    """``--space``: a named space (``minilm-50k``, ``glove-6b-50d``: built once, cached), a
    saved ``.npz`` space or a vectors file (word2vec/GloVe text, ...)."""
    from dptext.embeddings import EmbeddingSpace
    from dptext.resources import SPACE_NAMES, named_space

    if path_text in SPACE_NAMES:
        return named_space(path_text, progress=progress)
    path = Path(path_text)
    if not path.is_file():
        raise DPTextError(f"--space: no such file or space name: {path} (named spaces: "
                          f"{', '.join(SPACE_NAMES)})")
    return EmbeddingSpace.load(path) if path.suffix == ".npz" else EmbeddingSpace.from_file(path)


def add_mechanism_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", "-m", default=DEFAULT_MECHANISM, help="see `dptext mechanisms`")
    p.add_argument("--epsilon", "-e", type=epsilon_type,
                   help="privacy parameter (default: the mechanism's own default, printed by "
                        "`dptext mechanisms`; stderr says so after the run)")
    p.add_argument("--document-epsilon", type=epsilon_type, metavar="E",
                   help="instead of --epsilon: every record costs at most E; the per-token "
                        "epsilon is E divided by the tokens that record privatizes (its "
                        "shape), and the report gives its min/median/max "
                        "(docs/choosing-epsilon.md)")
    p.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                   help="other mechanism parameter, e.g. -p k=20 (repeatable)")
    p.add_argument("--space", help="embedding space: minilm-50k (default), glove-6b-50d, a "
                   "saved .npz or a vectors file")
    p.add_argument("--seed", type=int,
                   help="for experiments only: reproducible (hence predictable) randomness")
    p.add_argument("--secure-rng", action="store_true",
                   help="draw from ChaCha20 keyed by the OS (cryptographically secure) instead "
                        "of PCG64 (docs/reliability.md)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def rng_choice(args):
    """What ``--seed`` and ``--secure-rng`` ask for, as an ``rng=`` argument."""
    if getattr(args, "secure_rng", False):
        if args.seed is not None:
            raise DPTextError("--secure-rng draws from OS entropy; it cannot be combined with "
                              "--seed")
        return "secure"
    return args.seed


def mechanism_params(args) -> dict:
    """The mechanism's keyword parameters from ``--param``, ``--name value`` and ``--epsilon``;
    a parameter given twice (two ways, or twice one way) is an error."""
    params: dict = {}

    def put(key: str, value, how: str) -> None:
        if key in params:
            raise DPTextError(f"parameter {key!r} given twice ({how}); give it once")
        params[key] = value

    for key, value in getattr(args, "extra_params", {}).items():
        put(key, value, f"--{key.replace('_', '-')}")
    for item in args.param or []:
        if "=" not in item:
            raise DPTextError(f"--param needs NAME=VALUE, got {item!r}")
        key, val = item.split("=", 1)
        put(key.strip().replace("-", "_"), parse_value(val.strip()), "--param")
    if args.epsilon is not None:
        put("epsilon", args.epsilon, "--epsilon")
    if getattr(args, "document_epsilon", None) is not None:
        if "epsilon" in params:
            raise DPTextError("give --epsilon (per token) or --document-epsilon (per record), "
                              "not both")
        put("document_epsilon", args.document_epsilon, "--document-epsilon")
    if getattr(args, "space", None):
        put("space", load_space(args.space), "--space")
    return params


def unfitted_mechanism(args, params: dict):
    """The mechanism ``args.mechanism`` with ``params``, not yet fitted; notes in
    ``args.epsilon_note`` when it runs at a defaulted epsilon."""
    from dptext.mechanisms.registry import lookup, mechanism, parameters

    cls = lookup(args.mechanism)
    if cls is not None:  # a typo gets the option it was probably meant to be
        accepted = list(parameters(cls))
        for name in params:
            if name not in accepted and name != "document_epsilon":
                import difflib

                near = difflib.get_close_matches(name, accepted, n=1)
                hint = f"did you mean --{near[0].replace('_', '-')}? " if near else ""
                raise DPTextError(f"unknown parameter {name!r} for mechanism "
                                  f"{args.mechanism!r}; {hint}accepted: {', '.join(accepted)}")
    m = mechanism(args.mechanism, **params)
    if "epsilon" not in params and "document_epsilon" not in params:
        default = parameters(lookup(args.mechanism)).get("epsilon")
        if isinstance(default, int | float):
            args.epsilon_note = (f"dptext: no --epsilon given: {args.mechanism} ran at its "
                                 f"default epsilon {default:g}")
    return m


def build_mechanism(args, *, fit: bool = True):
    """The mechanism the options describe, fitted (with a progress bar or a stage line)."""
    m = unfitted_mechanism(args, mechanism_params(args))
    if fit:
        fit_mechanism(args, m)
    return m


def fit_mechanism(args, m) -> None:
    """Fit ``m`` with a progress bar, or one stage line on stderr when no terminal shows one."""
    m.check_admissible()  # a refused epsilon is refused before any fit is announced
    bar = progress_wanted(args)
    note = m.preparation_note()
    with Stage(note or "", quiet=note is None or bar or getattr(args, "no_progress", False)):
        m.fit(progress=bar)


def mechanism_options(extra: list[str]) -> dict:
    """``--name VALUE``, ``--flag`` and ``--no-flag`` after the known options become mechanism
    parameters (``--p-add 0.1`` -> ``p_add=0.1``); the registry rejects unknown names, and a
    name given twice is an error."""
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
        if key in params:
            raise DPTextError(f"parameter --{key.replace('_', '-')} given twice; give it once")
        params[key] = parse_value(value)
        i += 1
    return params
