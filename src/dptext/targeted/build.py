"""The factories the command line and the integrations call: :func:`build_targeted` (a
mechanism name or instance wrapped by :class:`~dptext.targeted.mechanism.TargetedMechanism`)
and :func:`build_deid` (de-identification with every safety on, docs/deid.md)."""

from __future__ import annotations

from typing import Any

from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.targeted.mechanism import TargetedMechanism
from dptext.targeted.options import OPTIONS, resolve


def build_targeted(mechanism: str | Mechanism, **params: Any) -> TargetedMechanism:
    """The factory the CLI and the integrations call: ``mechanism`` is a registered name (built
    with the parameters that are not entity options, e.g. ``epsilon=2``) or a mechanism
    instance; the entity options (:data:`~dptext.targeted.options.OPTIONS`) go to
    :class:`TargetedMechanism`, ``entities`` a list or a comma-separated string
    (``"PERSON,GPE,EMAIL,PHONE"``)."""
    options = {k: v for k, v in params.items() if k in OPTIONS}
    params = {k: v for k, v in params.items() if k not in OPTIONS}
    if isinstance(mechanism, str):
        from dptext.mechanisms import mechanism as build

        mechanism = build(mechanism, **params)
    elif params:
        raise DPTextError(f"parameters {sorted(params)} given with a mechanism instance")
    return TargetedMechanism(mechanism, **options)


def build_deid(mechanism: str | Mechanism, **options: Any) -> TargetedMechanism:
    """De-identification (docs/deid.md): :func:`build_targeted` with every safety on - the
    Safe-Harbor categories (``PHI``) found by both engines and the rule recognizers, the
    residual net protecting what they miss, names, places and organisations replaced whole by
    public surrogates (never verbatim: ``word_policy="surrogate"``), records in
    languages the detectors do not support withheld: the ``deid`` column of
    :data:`~dptext.targeted.options.OPTIONS`. Any option (and the mechanism's own parameters)
    may be given to change one of them."""
    chosen = resolve({k: v for k, v in options.items() if k in OPTIONS}, "deid",
                     what="build_deid")
    params = {k: v for k, v in options.items() if k not in OPTIONS}
    return build_targeted(mechanism, **chosen, **params)
