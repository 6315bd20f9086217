"""The entity options, declared once: :data:`OPTIONS`, one frozen :class:`Option` a line.

Every reader takes them from here - the library (:class:`~dptext.targeted.TargetedMechanism`
checks its keyword arguments against the table and fills in the ``default`` column), the
de-identification factory (:func:`~dptext.targeted.build_deid`: the ``deid`` column), the
command line's ``sanitize --entities`` flags (:func:`add_flags`, :func:`from_flags`: the
``command`` column), the service's validation of a request's ``entities`` object and the
listing of ``GET /v1/mechanisms`` (:mod:`dptext.service.entities`), and the table of
docs/deid.md (:func:`doc_table`; tests/targeted/test_entity_options.py keeps the four in agreement).

A new option is one line: its name, its kind (:data:`KINDS`: how a value is checked, read from
the command line and written in the docs), its library default, its choices and one line of
help; ``deid`` where de-identification differs from the library, ``command`` where the command
line and the service differ from ``build_deid``, ``surface=False`` for an option of the library
alone. The treatment that reads it (:mod:`dptext.targeted.treatments`) finds it as
``options[name]`` on the mechanism.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dptext.errors import DPTextError
from dptext.validation import check_bool, check_choice, check_epsilon, check_words

SAME = "<same>"  # a column that repeats the one before it
REQUIRED = "<required>"  # the command line's mode switch: no default there

#: a default that depends on the options chosen before it (``word_policy`` follows
#: ``name_policy``): called with the options resolved so far
Follow = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Kind:
    """How an option's value is checked (``check(value, name) -> value``), what the command
    line's flag takes (``flag``: argparse keywords), and how the docs write its values."""

    check: Callable[[Any, str], Any]
    flag: Mapping[str, Any] = field(default_factory=dict)


def _choice(value: Any, name: str, choices: tuple[str, ...] = ()) -> Any:
    return check_choice(value, name, choices)


def _words(value: Any, name: str) -> tuple[str, ...]:
    return tuple(check_words(value, name))


def _languages(value: Any, name: str) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(x.lower() for x in check_words([value] if isinstance(value, str)
                                                    else value, name))


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise DPTextError(f"{name} must be a text, got {value!r}")
    return value


def _weeks(value: Any, name: str) -> str:
    """``"MIN:MAX"`` whole weeks, 0 <= MIN <= MAX <= 520, MAX > 0 (kept as written)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", value) if isinstance(value, str) else None
    if m is None or not (int(m.group(1)) <= int(m.group(2)) <= 520) or int(m.group(2)) == 0:
        raise DPTextError(f"{name} must be MIN:MAX whole weeks, 0 <= MIN <= MAX <= 520 and "
                          f"MAX > 0, got {value!r}")
    return f"{int(m.group(1))}:{int(m.group(2))}"


def _key(value: Any, name: str) -> bytes | None:
    if value is not None and not (isinstance(value, bytes) and len(value) >= 16):
        raise DPTextError(f"{name} must be a secret of 16 bytes or more")
    return value


def _as_is(value: Any, name: str) -> Any:
    return value  # checked where it is used (categories, detectors, recognizers)


#: kind name -> how it is checked and read from the command line (module docstring)
KINDS: dict[str, Kind] = {
    "choice": Kind(_choice),
    "number": Kind(lambda v, n: check_epsilon(v, n), {"type": "positive", "metavar": "EPS"}),
    "bool": Kind(check_bool, {"action": "store_true"}),
    "words": Kind(_words, {"metavar": "FILE"}),
    "patterns": Kind(_as_is, {"action": "append", "metavar": "NAME=REGEX"}),
    "categories": Kind(_as_is, {"metavar": "TYPES"}),
    "detector": Kind(_as_is),
    "text": Kind(_text),
    "languages": Kind(_languages),
    "key": Kind(_key),
    "weeks": Kind(_weeks, {"metavar": "MIN:MAX"}),
}


@dataclass(frozen=True)
class Option:
    """One entity option (module docstring): ``default`` is the library's, ``deid``
    de-identification's (``build_deid``), ``command`` the command line's and the service's
    (``SAME``: the column before it). ``flag``: the command line's flag where it is not
    ``--name-with-dashes``."""

    name: str
    kind: str
    default: Any
    choices: tuple[str, ...] | None
    help: str
    deid: Any = SAME
    command: Any = SAME
    surface: bool = True  # on the command line and in the service
    flag: str | None = None

    def check(self, value: Any, label: str | None = None) -> Any:
        """``value`` checked (a one-line error naming ``label``, the option's name by
        default)."""
        if self.kind == "choice":
            return _choice(value, label or self.name, self.choices or ())
        return KINDS[self.kind].check(value, label or self.name)

    @property
    def deid_default(self) -> Any:
        return self.default if self.deid == SAME else self.deid

    @property
    def command_default(self) -> Any:
        return self.deid_default if self.command == SAME else self.command

    @property
    def flag_name(self) -> str:
        return "--" + (self.flag or self.name.replace("_", "-"))


def _word_policy(chosen: Mapping[str, Any]) -> str:
    return "placeholder" if chosen.get("name_policy") == "placeholder" else "surrogate"


_O = Option
#: every entity option, in the order of TargetedMechanism's keyword arguments (module docstring)
OPTIONS: dict[str, Option] = {o.name: o for o in (
    _O("entities", "categories", None, None, "the categories to replace: names or groups, e.g. "
       "PHI (HIPAA Safe Harbor's identifiers), PII, IDS, CONTACT, ALL or PERSON,GPE,EMAIL",
       deid="PHI", command=REQUIRED),
    _O("detector", "detector", "spacy", ("spacy", "presidio", "both", "spacy+learned",
                                         "presidio+learned", "both+learned"),
       "entity detector (contact details need presidio or the rule recognizers; +learned: "
       "the learned detector beside it)", deid="both",
       command="spacy"),
    _O("pattern_policy", "choice", "placeholder", ("placeholder", "surrogate", "realistic"),
       "e-mails, phones, IDs, addresses, dates: a type placeholder (0-DP), a surrogate drawn "
       "by the exponential mechanism (surrogate_epsilon per span), or a realistic value of "
       "the input's shape drawn independently of its characters (0-DP among values of that "
       "shape)"),
    _O("surrogate_epsilon", "number", 1.0, None, "epsilon of one surrogate draw"),
    _O("consistent", "choice", "none", ("none", "document", "unit"),
       "the same entity gets the same replacement within a text (document) or across a "
       "person's records (unit: one draw per entity per person, charged once; needs a unit "
       "field)"),
    _O("placeholder", "text", "[{category}]", None,
       "the replacement text of a placeholder, {category} filled in", surface=False),
    _O("word_policy", "choice", "mechanism", ("surrogate", "placeholder", "mechanism"),
       "places and organisations (GPE, LOC, FAC, ORG): a public surrogate of the same kind "
       "drawn independently of the input (placeholder when name_policy is placeholder), a "
       "placeholder, or privatized word by word by the mechanism (which returns some "
       "unchanged: the report counts them)",
       deid=_word_policy),
    _O("recognizers", "bool", False, None, "the built-in rule recognizers (phones, IDs, "
       "dates, ages, addresses, ...)", deid=True, surface=False),
    _O("patterns", "patterns", (), None, "your own recognizers, NAME=REGEX or "
       "NAME@context,words=REGEX (a match counts after a context word); replaced whole as "
       "category NAME", flag="pattern"),
    _O("deny_list", "words", (), None, "names and words that must never appear (a file: one "
       "per line; each word of a several-word entry is found alone too): replaced whole"),
    _O("allow_list", "words", (), None, "words that are never identifiers (a file: one per "
       "line)"),
    _O("residual", "choice", "keep", ("protect", "report", "keep"),
       "tokens outside every detected span that are not ordinary words: replaced whole "
       "(protect), only counted (report), or not looked at (keep)", deid="protect"),
    _O("name_policy", "choice", "mechanism", ("surrogate", "placeholder", "mechanism"),
       "PERSON spans: a public name drawn independently of the input (0-DP), a placeholder, "
       "or privatized word by word by the mechanism (which returns some names unchanged: the "
       "report counts them)", deid="surrogate"),
    _O("check", "bool", False, None, "run the leak check on each text before release and "
       "withhold (the category named, never the value) a text in which an identifier "
       "survived"),
    _O("languages", "languages", None, None, "the languages the detectors read; a text in "
       "another is handled by other_languages (None: not detected)", deid=("en",),
       surface=False),
    _O("dates", "choice", "placeholder", ("placeholder", "year", "shift"),
       "DATE spans: a placeholder, the year only (Safe Harbor keeps it), or shifted by one "
       "secret offset per person in whole weeks, each date in its own format (not Safe "
       "Harbor: docs/deid.md)"),
    _O("ages", "choice", "placeholder", ("placeholder", "keep"),
       "AGE spans: a placeholder, or kept as written up to 89 and \"90+\" from 90 (Safe "
       "Harbor's rule)"),
    _O("date_shift_weeks", "weeks", "1:52", None, "the range of a date shift in whole weeks, "
       "MIN:MAX (forward or back)"),
    _O("unit_key", "key", None, None, "the secret of per-person date offsets and name draws "
       "(the pseudonym key; the command line passes it)", surface=False),
    _O("other_languages", "choice", "withhold", ("withhold", "whole"),
       "a text in a language the detectors do not read: withheld, or sanitized whole by the "
       "mechanism - never passed through"),
)}


def _default(option: Option, column: str, chosen: Mapping[str, Any] | None) -> Any:
    """The option's default in ``column``; one that follows other options is computed from
    ``chosen`` (``None``: returned uncomputed)."""
    value = {"default": option.default, "deid": option.deid_default,
             "command": option.command_default}[column]
    return value(chosen) if callable(value) and chosen is not None else value


def resolve(given: Mapping[str, Any], column: str = "default", *,
            what: str = "TargetedMechanism") -> dict[str, Any]:
    """Every option: ``given`` checked (an unknown name is a one-line error naming the nearest
    option), the others from the table's ``column`` (``default``, ``deid``, ``command``)."""
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], list(OPTIONS), n=1)
        raise DPTextError(f"unknown option {unknown[0]!r} of {what}"
                          + (f" (did you mean {near[0]!r}?)" if near else "")
                          + f"; options: {', '.join(OPTIONS)}")
    out: dict[str, Any] = {}
    follow = []
    for name, option in OPTIONS.items():
        if name not in given and callable(_default(option, column, None)):
            follow.append(name)  # filled in once the others are known
        else:
            out[name] = option.check(given[name] if name in given else
                                     _default(option, column, out))
    for name in follow:
        out[name] = OPTIONS[name].check(_default(OPTIONS[name], column, out))
    return {name: out[name] for name in OPTIONS}


def surfaced() -> dict[str, Option]:
    """The options the command line and the service offer."""
    return {n: o for n, o in OPTIONS.items() if o.surface}


# ------------------------------------------------------------ the command line
def add_flags(group, once, positive) -> None:
    """One flag per surfaced option (``once``: the single-valued argparse action; ``positive``:
    the type of a positive number). Every flag defaults to None ("not given"): the command's
    defaults are filled in by :func:`from_flags`, so a flag given without ``--entities`` is
    seen."""
    for o in surfaced().values():
        kw: dict[str, Any] = dict(KINDS[o.kind].flag)
        if kw.get("type") == "positive":
            kw["type"] = positive
        kw.setdefault("action", once)
        if o.choices:
            kw["choices"] = o.choices
        default = o.command_default
        note = "" if default in (None, REQUIRED, False, ()) or callable(default) else \
            f" (default: {default})"
        group.add_argument(o.flag_name, dest=o.name, help=o.help + note, **kw)


def from_flags(args, read_words: Callable[[str, str], tuple[str, ...]]) -> dict[str, Any]:
    """The options the flags give (``read_words(path, flag)``: a word-list file), the command
    column filling in the rest; a flag given without ``--entities`` is a one-line error."""
    given = {}
    for name, o in surfaced().items():
        value = getattr(args, name)
        if value in (None, False, []):
            continue
        given[name] = read_words(value, o.flag_name) if o.kind == "words" else value
    if args.entities is None:
        if given:
            raise DPTextError(f"{OPTIONS[next(iter(given))].flag_name} needs --entities")
        return {}
    return resolve(given, "command", what="sanitize --entities")


# ------------------------------------------------------------ the docs
def doc_table() -> list[str]:
    """The rows of docs/deid.md's table of the entity options."""
    def show(v: Any) -> str:
        if v is REQUIRED:
            return "(the mode switch)"
        if callable(v):
            return "placeholder with name_policy placeholder, else surrogate"
        if isinstance(v, tuple):
            return ", ".join(map(str, v)) if v else "none"
        return str(v)

    rows = ["| option | command line | library default | `build_deid` | command line and "
            "service | choices |", "| --- | --- | --- | --- | --- | --- |"]
    for o in OPTIONS.values():
        rows.append(f"| `{o.name}` | {f'`{o.flag_name}`' if o.surface else '-'} | "
                    f"{show(o.default)} | {show(o.deid_default)} | "
                    f"{show(o.command_default) if o.surface else '-'} | "
                    f"{', '.join(f'`{c}`' for c in o.choices) if o.choices else o.kind} |")
    return rows


if __name__ == "__main__":  # python -m dptext.targeted.options: the table of docs/deid.md
    print("\n".join(doc_table()))
