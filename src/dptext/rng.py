"""Where randomness comes from: OS entropy by default, a cryptographically secure generator on
request (``rng="secure"``), a seed for experiments only (docs/reliability.md, "Randomness").

* ``None`` (default): numpy's PCG64 seeded with 128 bits of OS entropy. Statistically excellent
  and unpredictable to anyone who never sees its raw output; but PCG64 is not a cryptographic
  generator - its state can be recovered from enough consecutive raw outputs.
* ``"secure"``: ChaCha20 (20 rounds; randomgen's ``ChaCha``, checked against the RFC 8439
  keystream of the ``cryptography`` package in the tests) keyed with 256 bits from
  :mod:`secrets`. Nothing about future (or past) draws can be learned from any number of
  outputs short of breaking ChaCha20.
* an int: a seeded PCG64 - reproducible, hence predictable to anyone who knows the seed.
"""

from __future__ import annotations

import secrets

import numpy as np

from dptext.errors import DPTextError

SECURE = "secure"
RngLike = np.random.Generator | int | str | None


def secure_generator() -> np.random.Generator:
    """A numpy Generator over ChaCha20 with a fresh 256-bit key from the OS (``secrets``)."""
    try:
        from randomgen import ChaCha
    except ImportError:  # pragma: no cover - a core dependency
        raise DPTextError("rng='secure' needs the randomgen package: pip install randomgen"
                          ) from None
    key = int.from_bytes(secrets.token_bytes(32), "little")
    return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))


def is_secure(gen: np.random.Generator) -> bool:
    """Whether ``gen`` draws from a ChaCha20 bit generator (what ``rng="secure"`` gives)."""
    bits = gen.bit_generator
    return type(bits).__name__ == "ChaCha" and bits.state["state"]["rounds"] >= 20


def as_generator(rng: RngLike) -> np.random.Generator:
    """``None``: fresh OS entropy (the default). ``"secure"``: ChaCha20 keyed from the OS. An
    int seeds a generator - for experiments only: a seeded run is reproducible, hence
    predictable to anyone who knows the seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, str):
        if rng == SECURE:
            return secure_generator()
        raise DPTextError(f"rng must be a numpy Generator, an int seed, None or 'secure', "
                          f"got {rng!r}")
    if rng is None or (isinstance(rng, int) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise DPTextError(
        f"rng must be a numpy Generator, an int seed, None or 'secure', got {type(rng).__name__}"
    )


def gaussian_noise(shape, std: float, generator, *, dtype=None):
    """N(0, std^2) noise as a torch tensor, drawn from ``generator``: a ``torch.Generator``
    (torch's CPU generator is MT19937: fast, not cryptographic) or a numpy Generator (e.g.
    :func:`secure_generator`; float64 normals from numpy's ziggurat over its bits, converted).
    For DP training noise (docs/reliability.md, "Randomness")."""
    import torch

    if isinstance(generator, np.random.Generator):
        noise = torch.from_numpy(generator.standard_normal(tuple(shape)))
        return (noise * std).to(dtype or torch.get_default_dtype())
    return torch.randn(tuple(shape), generator=generator, dtype=dtype) * std
