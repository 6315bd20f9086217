"""The mechanism registry: names to classes, their declared parameters, and the factory.

A name is registered once: registering a second class under a taken name is an error unless
``force=True`` (after Opacus' accountant registry), so a third-party mechanism cannot silently
replace a built-in one.

The built-in mechanisms are registered by their modules, each imported when one of its names is
first asked for (:data:`BUILTIN`; issue 36: a cached ``sanitize -m custext`` imported all six,
SanText's and the language-model mechanisms' included); :func:`registered` imports them all.
"""

from __future__ import annotations

import inspect
import sys
from typing import TYPE_CHECKING, Any

from dptext.errors import DPTextError

if TYPE_CHECKING:
    from dptext.mechanisms.base import Mechanism

REQUIRED = "<required>"
_REGISTRY: dict[str, type[Mechanism]] = {}
#: every built-in mechanism name -> the module of ``dptext.mechanisms`` that registers it
BUILTIN = {
    "custext": "custext", "custext+": "custext", "dpmlm": "dpmlm", "dpprompt": "dpprompt",
    "gumbel": "truncated_gumbel", "laplace": "laplace", "santext": "santext",
    "santext+": "santext",
}


def _load_builtin(name: str) -> None:
    """Import the module registering the built-in mechanism ``name`` (nothing for another
    name, or a module imported already, or being imported)."""
    module = BUILTIN.get(name)
    if module is not None and f"dptext.mechanisms.{module}" not in sys.modules:
        __import__(f"dptext.mechanisms.{module}")  # (import_module: unseen by -X importtime)


def register(cls: type[Mechanism] | None = None, *, force: bool = False):
    """Class decorator: make ``cls`` available as ``dptext.mechanism(cls.name, ...)``.

    ``@register`` or ``@register(force=True)`` (replace a registered name deliberately).
    """

    def add(klass: type[Mechanism]) -> type[Mechanism]:
        name = getattr(klass, "name", None)
        if not isinstance(name, str) or not name:
            raise DPTextError(f"{klass.__name__} needs a class attribute `name` to be registered")
        _load_builtin(name)  # a built-in name is taken whether or not its module was imported
        taken = _REGISTRY.get(name)
        if taken is not None and taken is not klass and not force:
            raise DPTextError(
                f"mechanism name {name!r} is already registered by {taken.__module__}."
                f"{taken.__qualname__}; pass force=True to replace it"
            )
        _REGISTRY[name] = klass
        return klass

    return add if cls is None else add(cls)


def unregister(name: str) -> None:
    """Remove a registered name (for tests and plugins that registered one)."""
    _REGISTRY.pop(name, None)


def registered() -> dict[str, type[Mechanism]]:
    """Every registered mechanism by name (the built-in ones included: their modules are
    imported here where they were not yet)."""
    for name in BUILTIN:
        _load_builtin(name)
    return dict(sorted(_REGISTRY.items()))


def lookup(name: str) -> type[Mechanism] | None:
    """The mechanism registered as ``name`` (None: no such name), importing the module of a
    built-in one but no other (``registered().get(name)`` imports them all)."""
    _load_builtin(name)
    return _REGISTRY.get(name)


def parameters(cls: type[Mechanism]) -> dict[str, Any]:
    """Keyword parameters of a mechanism (its own and those it passes on) and their defaults;
    a parameter without a default maps to :data:`REQUIRED`."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        for n, p in inspect.signature(klass.__init__).parameters.items():
            if p.kind is inspect.Parameter.KEYWORD_ONLY and n not in out:
                out[n] = p.default if p.default is not inspect.Parameter.empty else REQUIRED
    return out


def mechanism(name: str, **params: Any) -> Mechanism:
    """Build a registered mechanism by name, e.g. ``mechanism("custext", epsilon=2, k=20)``.

    ``document_epsilon=E`` instead of ``epsilon``: every record costs at most E, at the
    per-token epsilon its length allows (:class:`dptext.mechanisms.document.DocumentBudget`).
    """
    cls = lookup(name)
    if cls is None:
        raise DPTextError(f"unknown mechanism {name!r}; available: {', '.join(registered())}")
    if "document_epsilon" in params:
        from dptext.mechanisms.document import DocumentBudget

        params = dict(params)
        budget = params.pop("document_epsilon")
        return DocumentBudget(cls, params, budget, build=mechanism)
    accepted = parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], list(accepted), n=1)
        raise DPTextError(
            f"unknown parameter {unknown[0]!r} for mechanism {name!r}"
            + (f" (did you mean {near[0]!r}?)" if near else "")
            + f"; accepted: {', '.join(accepted)}"
        )
    missing = [n for n, d in accepted.items() if d == REQUIRED and n not in params]
    if missing:
        raise DPTextError(f"mechanism {name!r} needs parameter {missing[0]!r}")
    return cls(**params)
