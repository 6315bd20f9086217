"""Checks every module that validates uses (the ground floor: imports nothing of dptext but
:mod:`dptext.errors`). Each check returns the normalized value or raises a one-line
:class:`~dptext.errors.DPTextError` that names the parameter and the value it got."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dptext.errors import DPTextError


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """A finite number > 0."""
    return check_positive(epsilon, name)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool):
        raise DPTextError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DPTextError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise DPTextError(f"{name} must be finite and {bound}, got {value!r}")
    return number


def check_int(value: Any, name: str, *, minimum: int, maximum: int | None = None) -> int:
    """An integer (an integral float or numeric string is accepted) in [minimum, maximum]."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise DPTextError(f"{name} must be an integer, got {value!r}") from None
        if not math.isfinite(as_float) or not as_float.is_integer():
            raise DPTextError(f"{name} must be an integer, got {value!r}")
        value = int(as_float)
    if value < minimum:
        raise DPTextError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise DPTextError(f"{name} must be <= {maximum}, got {value}")
    return int(value)


def check_probability(value: Any, name: str) -> float:
    """A number in [0, 1]."""
    if isinstance(value, bool):
        raise DPTextError(f"{name} must be a number in [0, 1], got {value!r}")
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise DPTextError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= p <= 1.0:
        raise DPTextError(f"{name} must be in [0, 1], got {value!r}")
    return p


def check_delta(value: Any, name: str = "delta") -> float:
    """A number in (0, 1)."""
    p = check_probability(value, name)
    if not 0.0 < p < 1.0:
        raise DPTextError(f"{name} must be in (0, 1), got {value!r}")
    return p


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if value not in choices:
        raise DPTextError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """A real boolean (``"yes"`` or ``2`` is refused rather than read as true)."""
    if isinstance(value, bool):
        return value
    raise DPTextError(f"{name} must be true or false, got {value!r}")


def check_words(value: Any, name: str) -> list[str]:
    """An iterable of strings (a single string is refused: it would be read letter by letter)."""
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise DPTextError(f"{name} must be a list of words, got {value!r}")
    words = list(value)
    bad = next((w for w in words if not isinstance(w, str)), None)
    if bad is not None:
        raise DPTextError(f"{name} must contain only strings, got {bad!r}")
    return words


def available_memory() -> int | None:
    """Bytes of memory available now (``None`` where the system does not say)."""
    import os

    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        free = None
    room = _address_space_left()
    if room is None:
        return free
    return room if free is None else min(free, room)


def _address_space_left() -> int | None:
    """Bytes this process may still map under its address-space limit (``ulimit -v``,
    ``RLIMIT_AS``); ``None`` when there is no limit or the system does not say."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return max(0, limit - int(line.split()[1]) * 1024)
    except (ImportError, OSError, ValueError, IndexError):
        return None
    return None


def check_memory(needed: float, what: str, *, share: float = 0.8) -> None:
    """Refuse, before allocating, a step estimated to need more than ``share`` of the memory
    available now (one line naming the step, the estimate and what is available)."""
    free = available_memory()
    if free is not None and needed > share * free:
        raise DPTextError(f"{what} would need about {needed / 2**30:.1f} GiB of memory; "
                          f"{free / 2**30:.1f} GiB is available")
