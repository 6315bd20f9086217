"""rng="secure" (issue 12, "Randomness and floating point"): ChaCha20 keyed from the OS, the
RFC 8439 keystream exactly, usable by every mechanism and by DP noise, and --secure-rng."""

from __future__ import annotations

import numpy as np
import pytest
from rng_spy import recording_generator
from scipy import stats

import dptext
from dptext import DPTextError
from dptext.rng import as_generator, gaussian_noise, is_secure, secure_generator


def _key_bytes(gen: np.random.Generator) -> bytes:
    words = gen.bit_generator.state["state"]["keysetup"]
    return np.asarray(words, dtype="<u4").tobytes()


def test_secure_generator_is_the_chacha20_keystream():
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    gen = secure_generator()
    key = _key_bytes(gen)
    raw = gen.bit_generator.random_raw(1024)  # 128 ChaCha20 blocks
    stream = Cipher(algorithms.ChaCha20(key, b"\x00" * 16), mode=None).encryptor()
    expected = np.frombuffer(stream.update(b"\x00" * 8 * 1024), dtype="<u8")
    np.testing.assert_array_equal(raw, expected)
    assert gen.bit_generator.state["state"]["rounds"] == 20


def test_secure_generators_are_fresh_and_recognised():
    a, b = as_generator("secure"), as_generator("secure")
    assert is_secure(a) and is_secure(b) and _key_bytes(a) != _key_bytes(b)
    assert not is_secure(as_generator(None)) and not is_secure(as_generator(3))
    with pytest.raises(DPTextError, match="'secure'"):
        as_generator("chacha")
    # doubles on the 2^-53 grid, as the exact sampler assumes
    u = a.random(10_000)
    assert np.array_equal(u * 2.0**53, np.floor(u * 2.0**53)) and (u < 1).all()


SPACE = dict(words=[f"w{i}" for i in range(40)], seed=5, dim=6, float32=True,
             name="s40")  # the space fixture (conftest.py)


@pytest.mark.parametrize("name", ["custext", "custext+", "santext", "santext+", "laplace"])
def test_every_word_mechanism_draws_from_the_secure_generator(space, name):
    params = {"k": 6} if name.startswith("custext") else {}
    m = dptext.mechanism(name, space=space, epsilon=3.0, **params).fit(cache=False)
    results = m.privatize_batch(["w1 w2 w3", "w4"], rng="secure")
    assert [r.report.tokens_total for r in results] == [3, 1]
    calls = []
    spy = recording_generator(secure_generator().bit_generator, calls,
                              ("random", "standard_normal"))
    m.privatize("w1 w2 w3", rng=spy)
    assert calls  # the mechanism's randomness comes from the generator it is given


def test_custext_law_under_the_secure_generator(space):
    m = dptext.mechanism("custext", space=space, epsilon=3.0, k=8).fit(cache=False)
    words, probs = m.distribution("w3")
    rows = np.full(100_000, space.lookup("w3"))
    out = m.sample_rows(rows, rng="secure")
    counts = np.array([(out == space.lookup(w)).sum() for w in words])
    assert counts.sum() == len(rows)
    assert stats.chisquare(counts, probs * len(rows)).pvalue > 1e-4


def test_gaussian_noise_from_numpy_or_torch_generators():
    import torch

    for gen in (secure_generator(), torch.Generator().manual_seed(1)):
        x = gaussian_noise((200_000,), 2.0, gen, dtype=torch.float64)
        assert x.dtype == torch.float64 and x.shape == (200_000,)
        n = len(x)
        assert abs(float(x.mean())) < 5 * 2.0 / n**0.5
        assert abs(float(x.std()) - 2.0) < 5 * 2.0 / (2 * n) ** 0.5


def test_secure_rng_flag(tmp_path, space, monkeypatch, capsys):
    from dptext.cli import main

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space.save(tmp_path / "s.npz")
    base = ["sanitize", "--space", str(tmp_path / "s.npz"), "--no-progress", "-t", "w1 w2"]
    assert main([*base, "--secure-rng"]) == 0
    assert len(capsys.readouterr().out.split()) == 2
    assert main([*base, "--secure-rng", "--seed", "3"]) == 2
    assert "cannot be combined with --seed" in capsys.readouterr().err
