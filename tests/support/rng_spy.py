"""A NumPy generator that records which of its methods were called (tests of where a
mechanism's randomness comes from)."""

from __future__ import annotations

import numpy as np


def recording_generator(bits, calls: list, methods: tuple[str, ...]) -> np.random.Generator:
    """A Generator over ``bits`` (e.g. a secure generator's bit generator, so that
    :func:`dptext.rng.is_secure` still holds) that appends a method's name to ``calls``
    each time one of ``methods`` is called."""

    def recorded(name: str):
        def method(self, *args, **kwargs):
            calls.append(name)
            return getattr(np.random.Generator, name)(self, *args, **kwargs)
        return method

    return type("Spy", (np.random.Generator,), {m: recorded(m) for m in methods})(bits)
