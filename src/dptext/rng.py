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

import numpy as np

from dptext.errors import DPTextError

SECURE = "secure"
RngLike = np.random.Generator | int | str | None


def _chacha():
    try:
        from randomgen import ChaCha
    except ImportError:  # pragma: no cover - a core dependency
        raise DPTextError("rng='secure' needs the randomgen package: pip install randomgen"
                          ) from None
    return ChaCha


def secure_generator(seed: int | np.random.SeedSequence | None = None) -> np.random.Generator:
    """A numpy Generator over ChaCha20 with a fresh 256-bit key from the OS (``secrets``).

    ``seed`` (experiments only): the key is 256 bits of ``SeedSequence(seed)`` instead, so the
    stream is reproducible - and predictable to anyone who knows the seed."""
    if seed is None:
        import secrets  # here: hmac, base64 and random for one call (issue 36, start-up)

        key = int.from_bytes(secrets.token_bytes(32), "little")
    else:
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        key = int.from_bytes(ss.generate_state(8, dtype=np.uint32).astype("<u4").tobytes(),
                             "little")
    return chacha_generator(key)


def chacha_generator(key: int | np.ndarray) -> np.random.Generator:
    """A Generator over ChaCha20 (20 rounds, counter 0) keyed with ``key``: a 256-bit integer,
    or four 64-bit words (little-endian, as :func:`secure_children` draws them)."""
    if isinstance(key, np.ndarray):
        key = int.from_bytes(key.astype("<u8").tobytes(), "little")
    return np.random.Generator(_chacha()(key=int(key), counter=0, rounds=20))


def generator_state(gen: np.random.Generator) -> dict:
    """The state of ``gen`` as plain Python values (dicts, lists, ints, strs), so that
    ``torch.load(..., weights_only=True)`` and JSON can hold it; :func:`restore_generator`
    rebuilds the generator. Whoever holds it can predict every later draw: keep it private."""
    return _plain(gen.bit_generator.state)


def restore_generator(state: dict) -> np.random.Generator:
    """The generator whose :func:`generator_state` is ``state`` (PCG64 or ChaCha20)."""
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name == "PCG64":
        bits = np.random.PCG64()
    elif isinstance(name, str) and name.rsplit(".", 1)[-1] == "ChaCha":
        bits = _chacha()()
    else:
        raise DPTextError(f"not a saved PCG64 or ChaCha generator state: {name!r}")
    bits.state = _arrays(state)
    return np.random.Generator(bits)


def _plain(value):
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _arrays(value):
    if isinstance(value, dict):
        if set(value) == {"__ndarray__", "dtype"}:
            return np.asarray(value["__ndarray__"], dtype=np.dtype(value["dtype"]))
        return {k: _arrays(v) for k, v in value.items()}
    return value


def is_secure(gen: np.random.Generator) -> bool:
    """Whether ``gen`` draws from a ChaCha20 bit generator (what ``rng="secure"`` gives)."""
    bits = gen.bit_generator
    return type(bits).__name__ == "ChaCha" and bits.state["state"]["rounds"] >= 20


def secure_children(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` ChaCha20 generators (20 rounds), each keyed with 256 bits that the secure
    generator ``rng`` draws, in one call, in order: a key from its keystream is as
    unpredictable as the keystream. For work split over threads that must not share one
    generator (and, seeded, must not depend on the threads)."""
    if not is_secure(rng):
        raise DPTextError("secure_children needs a secure (ChaCha20) generator")
    keys = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    return [chacha_generator(k) for k in keys]


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
    if generator is not None and not isinstance(generator, torch.Generator):
        raise DPTextError(f"noise generator must be a numpy or torch Generator, got "
                          f"{type(generator).__name__}")
    return torch.randn(tuple(shape), generator=generator, dtype=dtype) * std
