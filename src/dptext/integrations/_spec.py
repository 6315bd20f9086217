"""A mechanism named by its parameters, so worker processes rebuild it instead of unpickling it.

A :class:`MechanismSpec` is a few strings and numbers. :meth:`MechanismSpec.build` constructs
the mechanism once per process and fits it - for a word mechanism that loads the fitted tables
from the disk cache (``~/.cache/dptext/fitted``) written by the first fit, for an LM mechanism
the model from its local directory - so a pickled spec (the spaCy component, a datasets map
function) stays a few hundred bytes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism

_BUILT: dict[str, Mechanism] = {}


def _canonical(value: Any, where: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        raise DPTextError(
            f"{where} must be plain values (text, numbers, lists; an embedding space as a path) "
            "so that worker processes can rebuild the mechanism") from None


@dataclass(frozen=True)
class MechanismSpec:
    """``name`` and ``params`` of a registered mechanism; ``targeted``: the options of
    :func:`dptext.targeted.build_targeted` (``None``: the whole text is privatized)."""

    name: str
    params_json: str = "{}"
    targeted_json: str = "null"

    @classmethod
    def create(cls, name: str, params: dict | None = None,
               targeted: dict | None = None) -> MechanismSpec:
        params = dict(params or {})
        if isinstance(params.get("space"), os.PathLike):
            params["space"] = os.fspath(params["space"])
        spec = cls(name, _canonical(params, "mechanism parameters"),
                   _canonical(targeted, "entity-targeting options"))
        spec.build()  # validate now, fit once in this process (and write the disk cache)
        return spec

    @property
    def params(self) -> dict:
        return json.loads(self.params_json)

    @property
    def targeted(self) -> dict | None:
        return json.loads(self.targeted_json)

    def build(self) -> Mechanism:
        """The fitted mechanism, built once per process."""
        from dptext.resources import cache_dir

        key = f"{self.name}|{self.params_json}|{self.targeted_json}|{cache_dir()}"
        if key not in _BUILT:
            from dptext.mechanisms import mechanism

            params = self.params
            if isinstance(params.get("space"), str):
                from dptext.embeddings import EmbeddingSpace

                params["space"] = EmbeddingSpace.load(params["space"])
            built: Mechanism = mechanism(self.name, **params)
            if self.targeted is not None:
                from dptext.targeted import TargetedMechanism

                built = TargetedMechanism(built, **self.targeted)
            built.fit()
            _BUILT[key] = built
        return _BUILT[key]


def targeting(entities: Any, options: dict) -> dict | None:
    """The targeting options of an integration call (``None`` when ``entities`` is ``None``)."""
    if entities is None:
        unexpected = [k for k, v in options.items() if v is not None]
        if unexpected:
            raise DPTextError(f"{', '.join(unexpected)} only apply with entities=[...]")
        return None
    if isinstance(entities, str):
        entities = [e for e in entities.split(",") if e.strip()]
    return {"entities": list(entities), **{k: v for k, v in options.items() if v is not None}}


def resolve(mechanism: str | Mechanism, params: dict, targeted: dict | None, *,
            portable: bool) -> tuple[MechanismSpec | None, Mechanism]:
    """(spec, mechanism) for a name, or (None, the instance) for an instance. ``portable``:
    the caller ships the mechanism to worker processes, which an instance cannot be without
    pickling its tables."""
    if isinstance(mechanism, str):
        spec = MechanismSpec.create(mechanism, params, targeted)
        return spec, spec.build()
    if not isinstance(mechanism, Mechanism):
        raise DPTextError(f"mechanism must be a name or a dptext Mechanism, got {mechanism!r}")
    if params:
        raise DPTextError(f"parameters {sorted(params)} given with a mechanism instance")
    if portable:
        raise DPTextError("several processes need the mechanism by name (mechanism='custext', "
                          "epsilon=2, ...): each worker rebuilds it from the disk cache")
    if targeted is not None:
        from dptext.targeted import TargetedMechanism

        mechanism = TargetedMechanism(mechanism, **targeted)
    mechanism.fit()
    return None, mechanism
