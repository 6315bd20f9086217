"""Entity mode in the service: the ``entities`` object of ``/v1/privatize`` and ``/v1/jobs``.

``{"entities": "PHI" or ["PERSON", "GPE"], "detector": "spacy", ...}`` turns a whole-text
mechanism into entity-targeted sanitization (:func:`dptext.targeted.build_targeted`) with the
command line's defaults (``dptext sanitize --entities``): the rule recognizers on, the residual
net protecting what the detectors miss, names replaced by public surrogates, texts in languages
the detectors do not read withheld. :data:`PARAMETERS` (the options of
:mod:`dptext.targeted.options` the service offers) is what ``GET /v1/mechanisms`` lists;
:func:`parse` checks a request's object, one line per problem, before any work.

``consistent: "unit"`` (one draw per entity per person, charged once) is accepted for a file job
that names its ``unit_field``: the corpus engine draws each person's entities from generators
keyed by the job's own draw key (:mod:`dptext.corpus.draws`), so the shared, fitted mechanism
remembers nothing across jobs or owners. ``/v1/privatize`` and a job without a unit field
refuse it: there the mechanism would have to remember draws between requests.
"""

from __future__ import annotations

from typing import Any

from dptext.errors import DPTextError
from dptext.targeted.options import OPTIONS, REQUIRED, resolve, surfaced


def _listed_default(name: str):
    default = OPTIONS[name].command_default
    if default is REQUIRED:
        return None
    if callable(default):  # follows another option: as it falls with the others' defaults
        return default({n: _listed_default(n) for n in OPTIONS if n != name})
    return list(default) if isinstance(default, tuple) else default


def parameters() -> dict[str, tuple[Any, tuple | None, str]]:
    """name -> (default, choices or None, one line of help): the options of
    :data:`dptext.targeted.options.OPTIONS` the service offers, at the command line's
    defaults (read from the table at each call)."""
    return {name: (_listed_default(name), o.choices, o.help) for name, o in surfaced().items()}


#: :func:`parameters` at import
PARAMETERS = parameters()


def describe() -> dict:
    """The entity parameters as ``GET /v1/mechanisms`` lists them."""
    from dptext.detect.categories import CATEGORY_GROUPS

    out = {name: {"default": default, "choices": list(choices) if choices else None,
                  "help": text}
           for name, (default, choices, text) in parameters().items()}
    out["entities"]["groups"] = {k: list(v) for k, v in CATEGORY_GROUPS.items()}
    return out


def _strings(name: str, value) -> list[str]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()] if name == "entities" else [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DPTextError(f"entities.{name} must be a list of strings")
    return [v.strip() for v in value] if name == "entities" else list(value)


def parse(value: Any, *, unit_field: str | None = None, job: bool = False) -> dict | None:
    """The checked entity options of a request (None: whole-text mode); a one-line
    DPTextError naming the problem otherwise. ``job``: the request is a file job, whose
    ``unit_field`` (None: none given) allows ``consistent: "unit"``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DPTextError("entities must be a JSON object, e.g. {\"entities\": \"PHI\"}")
    known = parameters()
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise DPTextError(f"unknown entity parameter {unknown[0]!r}; known: "
                          f"{', '.join(known)}")
    if value.get("consistent") == "unit" and not job:
        raise DPTextError("entities.consistent 'unit' is for file jobs (POST /v1/jobs with a "
                          "unit_field): /v1/privatize would have to remember draws between "
                          "requests; use 'document' or 'none'")
    if value.get("consistent") == "unit" and not unit_field:
        raise DPTextError("entities.consistent 'unit' needs a unit_field naming each record's "
                          "person (without one every record is its own person: use "
                          "'document')")
    out: dict[str, Any] = {}
    for name, o in surfaced().items():
        v = value.get(name)
        if name == "entities":
            cats = _strings(name, v) if v is not None else []
            if not cats:
                raise DPTextError("entities.entities must name the categories to replace, "
                                  "e.g. \"PHI\" or [\"PERSON\", \"GPE\"]")
            from dptext.detect.categories import resolve_categories

            resolve_categories(cats)  # an unknown category is a one-line error here
            out[name] = cats
        elif v is None:
            continue  # the command line's default (resolve below)
        elif o.choices is not None:
            if v not in o.choices:
                raise DPTextError(f"entities.{name} must be one of {', '.join(o.choices)}, "
                                  f"got {v!r}")
            out[name] = v
        elif o.kind in ("patterns", "words"):
            out[name] = _strings(name, v)
        elif o.kind == "number":
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e6:
                raise DPTextError(f"entities.{name} must be a positive number")
            out[name] = float(v)
        else:
            out[name] = o.check(v, f"entities.{name}")
    # the command line's defaults for the rest; JSON values (the pool's key, a job's record)
    out = {n: list(v) if isinstance(v, tuple) else v for n, v in
           resolve(out, "command", what="the service's entities").items() if n in known}
    if out["patterns"]:
        from dptext.detect.recognizers import parse_pattern

        for p in out["patterns"]:
            parse_pattern(p)  # a bad pattern is a one-line error before any work
    return out


def build(mechanism, options: dict):
    """The entity-targeted mechanism around ``mechanism`` (an unfitted instance): the options
    :func:`parse` resolved (the command line's column of the table)."""
    from dptext.targeted import build_targeted

    return build_targeted(mechanism, **resolve(options, "command"))


def misplaced(params: dict) -> str | None:
    """The first entity parameter given among a mechanism's parameters (a common mistake)."""
    return next((k for k in params if k in surfaced()), None)
