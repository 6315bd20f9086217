"""The factories the command line and the integrations call: :func:`build_targeted` (a
mechanism name or instance wrapped by :class:`~dptext.targeted.mechanism.TargetedMechanism`)
and :func:`build_deid` (de-identification with every safety on, docs/deid.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dptext.detect.entities import EntityDetector
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.targeted.mechanism import TargetedMechanism


def build_targeted(mechanism: str | Mechanism, *, entities: Iterable[str] | str | None = None,
                   detector: str | EntityDetector | None = "spacy",
                   pattern_policy: str = "placeholder", surrogate_epsilon: float = 1.0,
                   consistent: str = "none", placeholder: str = "[{category}]",
                   word_policy: str = "mechanism", recognizers: bool = False,
                   patterns: Iterable[Any] = (), deny_list: Iterable[str] = (),
                   allow_list: Iterable[str] = (), residual: str = "keep",
                   name_policy: str = "mechanism", check: bool = False,
                   languages: Iterable[str] | None = None, other_languages: str = "withhold",
                   **params: Any) -> TargetedMechanism:
    """The factory the CLI and the integrations call: ``mechanism`` is a registered name (built
    with ``params``, e.g. ``epsilon=2``) or a mechanism instance; ``entities`` a list or a
    comma-separated string (``"PERSON,GPE,EMAIL,PHONE"``)."""
    if isinstance(mechanism, str):
        from dptext.mechanisms import mechanism as build

        mechanism = build(mechanism, **params)
    elif params:
        raise DPTextError(f"parameters {sorted(params)} given with a mechanism instance")
    return TargetedMechanism(mechanism, entities=entities, detector=detector,
                             pattern_policy=pattern_policy, surrogate_epsilon=surrogate_epsilon,
                             consistent=consistent, placeholder=placeholder,
                             word_policy=word_policy, recognizers=recognizers,
                             patterns=patterns, deny_list=deny_list, allow_list=allow_list,
                             residual=residual, name_policy=name_policy, check=check,
                             languages=languages, other_languages=other_languages)


DEID_DEFAULTS: dict[str, Any] = {
    "entities": "PHI", "detector": "both", "recognizers": True, "residual": "protect",
    "name_policy": "surrogate", "word_policy": "surrogate", "languages": ("en",),
    "other_languages": "withhold",
}


def build_deid(mechanism: str | Mechanism, **options: Any) -> TargetedMechanism:
    """De-identification (docs/deid.md): :func:`build_targeted` with every safety on - the
    Safe-Harbor categories (``PHI``) found by both engines and the rule recognizers, the
    residual net protecting what they miss, names, places and organisations replaced whole by
    public surrogates (never verbatim: ``word_policy="surrogate"``), records in
    languages the detectors do not support withheld. Any option of :class:`TargetedMechanism`
    (and the mechanism's own parameters) may be given to change one of them."""
    return build_targeted(mechanism, **{**DEID_DEFAULTS, **options})
