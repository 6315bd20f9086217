"""The entity options are declared once (dptext.targeted.options, issue 43): the command line's
help, the service's listing and validation, docs/deid.md and the library all read that table,
and an option added to it reaches every one of them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dptext import mechanism
from dptext.errors import DPTextError
from dptext.service import entities as service
from dptext.targeted import TargetedMechanism, build_deid
from dptext.targeted.options import OPTIONS, REQUIRED, Option, doc_table, from_flags, resolve

DOC = Path(__file__).resolve().parents[2] / "docs" / "deid.md"
SPACE = dict(words=["the", "patient", "was", "seen", "w1", "w2", "w3", "w4"], seed=5, dim=4,
             name="options-tiny")  # the space fixture (conftest.py)


def _sanitize_parser() -> argparse.ArgumentParser:
    from dptext.cli.sanitize import register

    root = argparse.ArgumentParser()
    register(root.add_subparsers(dest="command"))
    return root._subparsers._group_actions[0].choices["sanitize"]


def _flags(parser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def test_the_command_line_help_is_the_declaration():
    flags = _flags(_sanitize_parser())
    for o in OPTIONS.values():
        if not o.surface:
            assert o.flag_name not in flags, o.name
            continue
        action = flags[o.flag_name]
        assert action.help.startswith(o.help), o.name
        assert tuple(action.choices or ()) == (o.choices or ()), o.name
        assert action.dest == o.name


def test_the_command_line_defaults_are_the_command_column():
    parser = _sanitize_parser()
    args = parser.parse_args(["--entities", "PERSON"])
    got = from_flags(args, lambda path, flag: ())
    assert got == resolve({"entities": "PERSON"}, "command")
    assert got["residual"] == "protect" and got["word_policy"] == "surrogate"
    assert got["recognizers"] is True and got["languages"] == frozenset({"en"})
    follows = from_flags(parser.parse_args(["--entities", "PERSON", "--name-policy",
                                            "placeholder"]), lambda path, flag: ())
    assert follows["word_policy"] == "placeholder"
    with pytest.raises(DPTextError, match="--residual needs --entities"):
        from_flags(parser.parse_args(["--residual", "report"]), lambda path, flag: ())


def test_the_service_listing_is_the_declaration():
    listed = service.describe()
    assert set(listed) == {n for n, o in OPTIONS.items() if o.surface}
    for name, entry in listed.items():
        o = OPTIONS[name]
        assert entry["help"] == o.help and entry["choices"] == (list(o.choices)
                                                                if o.choices else None)
    command = resolve({"entities": "PERSON"}, "command")
    for name, entry in listed.items():
        if OPTIONS[name].command is not REQUIRED:
            want = command[name]
            assert entry["default"] == (list(want) if isinstance(want, tuple) else want), name
    parsed = service.parse({"entities": "PERSON"})
    assert parsed == {n: list(v) if isinstance(v, tuple) else v for n, v in command.items()
                      if n in listed} | {"entities": ["PERSON"]}


def test_docs_deid_holds_the_table():
    text = DOC.read_text(encoding="utf-8")
    assert "\n".join(doc_table()) in text


def test_the_library_and_build_deid_read_their_columns(space):
    custext = mechanism("custext", epsilon=2, k=3, space=space)
    plain = TargetedMechanism(custext, detector=None)
    assert plain.options == resolve({"detector": None})
    assert (plain.residual, plain.name_policy, plain.word_policy) == ("keep", "mechanism",
                                                                       "mechanism")
    deid = build_deid(custext, detector=None)
    assert deid.options == resolve({"detector": None}, "deid")
    assert (deid.residual, deid.name_policy, deid.word_policy, deid.recognizers) == (
        "protect", "surrogate", "surrogate", True)
    with pytest.raises(DPTextError, match="unknown option 'name_polcy'.*'name_policy'"):
        TargetedMechanism(custext, name_polcy="surrogate")
    with pytest.raises(DPTextError, match="residual must be one of"):
        TargetedMechanism(custext, detector=None, residual="sometimes")


def test_an_option_is_one_line(space, monkeypatch):
    """A new option added to the table (as ``dates`` will be) is a flag, a service parameter
    with its choices checked, and a library option with its default - nothing else added."""
    monkeypatch.setitem(OPTIONS, "dates", Option(
        "dates", "choice", "placeholder", ("placeholder", "year", "shift"),
        "DATE spans: a placeholder, the year kept, or shifted"))
    flags = _flags(_sanitize_parser())
    assert flags["--dates"].choices == ("placeholder", "year", "shift")
    assert service.describe()["dates"]["default"] == "placeholder"
    assert service.parse({"entities": "PERSON", "dates": "year"})["dates"] == "year"
    with pytest.raises(DPTextError, match="entities.dates must be one of"):
        service.parse({"entities": "PERSON", "dates": "month"})
    custext = mechanism("custext", epsilon=2, k=3, space=space)
    assert TargetedMechanism(custext, detector=None).options["dates"] == "placeholder"
    assert TargetedMechanism(custext, detector=None, dates="shift").options["dates"] == "shift"
    assert any(row.startswith("| `dates` | `--dates` |") for row in doc_table())
