"""Entity mode in the service: the ``entities`` object of ``/v1/privatize`` and ``/v1/jobs``.

``{"entities": "PHI" or ["PERSON", "GPE"], "detector": "spacy", ...}`` turns a whole-text
mechanism into entity-targeted sanitization (:func:`dptext.targeted.build_targeted`) with the
command line's defaults (``dptext sanitize --entities``): the rule recognizers on, the residual
net protecting what the detectors miss, names replaced by public surrogates, texts in languages
the detectors do not read withheld. :data:`PARAMETERS` is what ``GET /v1/mechanisms`` lists;
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

#: name -> (default, choices or None, one line of help); the defaults are the command line's
PARAMETERS: dict[str, tuple[Any, tuple | None, str]] = {
    "entities": (None, None, "the categories to replace (required): names or groups, e.g. "
                             "\"PHI\" or [\"PERSON\", \"GPE\", \"EMAIL\"]"),
    "detector": ("spacy", ("spacy", "presidio", "both"),
                 "entity detector (contact details need presidio)"),
    "pattern_policy": ("placeholder", ("placeholder", "surrogate"),
                       "e-mails, phones, IDs: a type placeholder (0-DP) or a surrogate drawn "
                       "by the exponential mechanism (surrogate_epsilon per span)"),
    "surrogate_epsilon": (1.0, None, "epsilon of one surrogate draw"),
    "name_policy": ("surrogate", ("surrogate", "placeholder", "mechanism"),
                    "PERSON spans: a public name drawn independently of the input (0-DP), a "
                    "placeholder, or privatized word by word by the mechanism"),
    "word_policy": ("surrogate", ("surrogate", "placeholder", "mechanism"),
                    "places and organisations (GPE, LOC, FAC, ORG): a public surrogate sharing "
                    "no word with the input (default; placeholder when name_policy is "
                    "placeholder), a placeholder, or privatized word by word by the mechanism "
                    "(which returns some unchanged: the report counts them)"),
    "residual": ("protect", ("protect", "report", "keep"),
                 "tokens outside every detected span that are not ordinary words: replaced "
                 "whole, only counted, or not looked at"),
    "patterns": ([], None, "your own recognizers: [\"NAME=REGEX\", "
                           "\"NAME@context,words=REGEX\"]; matches are replaced whole"),
    "deny_list": ([], None, "names and words that must never appear: replaced whole"),
    "allow_list": ([], None, "words that are never identifiers"),
    "consistent": ("none", ("none", "document", "unit"),
                   "the same entity gets the same replacement within a text (document) or "
                   "across a person's records (unit: file jobs with a unit_field only)"),
    "check": (False, None, "run the leak check on each text before release and withhold a "
                           "text in which an identifier survived"),
    "other_languages": ("withhold", ("withhold", "whole"),
                        "a text in a language the detectors do not read: withheld, or "
                        "sanitized whole by the mechanism"),
}


def describe() -> dict:
    """The entity parameters as ``GET /v1/mechanisms`` lists them."""
    from dptext.detect.categories import CATEGORY_GROUPS

    out = {name: {"default": default, "choices": list(choices) if choices else None,
                  "help": text}
           for name, (default, choices, text) in PARAMETERS.items()}
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
    unknown = sorted(set(value) - set(PARAMETERS))
    if unknown:
        raise DPTextError(f"unknown entity parameter {unknown[0]!r}; known: "
                          f"{', '.join(PARAMETERS)}")
    if value.get("consistent") == "unit" and not job:
        raise DPTextError("entities.consistent 'unit' is for file jobs (POST /v1/jobs with a "
                          "unit_field): /v1/privatize would have to remember draws between "
                          "requests; use 'document' or 'none'")
    if value.get("consistent") == "unit" and not unit_field:
        raise DPTextError("entities.consistent 'unit' needs a unit_field naming each record's "
                          "person (without one every record is its own person: use "
                          "'document')")
    out: dict[str, Any] = {}
    for name, (default, choices, _) in PARAMETERS.items():
        v = value.get(name, default)
        if v is None and name != "entities":
            v = default
        if name == "entities":
            cats = _strings(name, v) if v is not None else []
            if not cats:
                raise DPTextError("entities.entities must name the categories to replace, "
                                  "e.g. \"PHI\" or [\"PERSON\", \"GPE\"]")
            from dptext.detect.categories import resolve_categories

            resolve_categories(cats)  # an unknown category is a one-line error here
            v = cats
        elif name == "word_policy" and value.get(name) is None:  # the command line's default
            v = "placeholder" if out["name_policy"] == "placeholder" else "surrogate"
        elif choices is not None:
            if v not in choices:
                raise DPTextError(f"entities.{name} must be one of {', '.join(choices)}, "
                                  f"got {v!r}")
        elif name in ("patterns", "deny_list", "allow_list"):
            v = _strings(name, v)
        elif name == "check":
            if not isinstance(v, bool):
                raise DPTextError("entities.check must be true or false")
        elif name == "surrogate_epsilon":
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e6:
                raise DPTextError("entities.surrogate_epsilon must be a positive number")
            v = float(v)
        out[name] = v
    if out["patterns"]:
        from dptext.detect.recognizers import parse_pattern

        for p in out["patterns"]:
            parse_pattern(p)  # a bad pattern is a one-line error before any work
    return out


def build(mechanism, options: dict):
    """The entity-targeted mechanism around ``mechanism`` (an unfitted instance)."""
    from dptext.targeted import build_targeted

    return build_targeted(
        mechanism, entities=options["entities"], detector=options["detector"],
        pattern_policy=options["pattern_policy"], surrogate_epsilon=options["surrogate_epsilon"],
        consistent=options["consistent"], recognizers=True, patterns=options["patterns"],
        deny_list=options["deny_list"], allow_list=options["allow_list"],
        residual=options["residual"], name_policy=options["name_policy"],
        word_policy=options["word_policy"],
        check=options["check"], languages=("en",), other_languages=options["other_languages"])


def misplaced(params: dict) -> str | None:
    """The first entity parameter given among a mechanism's parameters (a common mistake)."""
    return next((k for k in params if k in PARAMETERS), None)
