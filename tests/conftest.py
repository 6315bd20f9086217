"""Shared test fixtures."""

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from dptext.embeddings import EmbeddingSpace


def random_space(words: Sequence[str] | Callable[[], Sequence[str]], *, seed: int, dim: int,
                 name: str, float32: bool = False, geometry: int | None = None,
                 **kwargs) -> EmbeddingSpace:
    """``words`` (or the function that gives them) at standard normal vectors drawn from
    ``np.random.default_rng(seed)``, as float32 or float64, with its kNN geometry of ``geometry``
    neighbours computed when given; ``kwargs`` go to :class:`EmbeddingSpace`."""
    words = list(words() if callable(words) else words)
    vectors = np.random.default_rng(seed).standard_normal((len(words), dim))
    space = EmbeddingSpace(words, vectors.astype(np.float32) if float32 else vectors,
                           name=name, **kwargs)
    if geometry is not None:
        space.geometry(geometry)
    return space


@pytest.fixture(scope="module")
def space(request) -> EmbeddingSpace:
    """The module's random embedding space: :func:`random_space` of the module's ``SPACE``
    (each module keeps its own words, seed and size, so what its tests draw is unchanged)."""
    spec = getattr(request.module, "SPACE", None)
    if spec is None:
        pytest.fail(f"{request.module.__name__} asks for the space fixture but has no SPACE")
    return random_space(**spec)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models on a shared 2-core CPU: one torch thread avoids OpenMP spin-waiting (about 7x
    faster here). Restores the previous setting afterwards. (torch is imported here, not at
    the top: a test run that needs no model does not pay for it.)"""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    """The tiny random Llama of tiny_lms, saved once per session for the modules
    that only load it (never write beside it)."""
    from tiny_lms import _llama

    return _llama(tmp_path_factory.mktemp("lms") / "llama")


@pytest.fixture(scope="module")
def deid(space, tmp_path_factory):
    """De-identification (the spaCy detector, the rules, the residual net) over CusText at
    epsilon 500 with K = 5 on the test space, its tables fitted in a cache of the module's own
    (tests/deid/test_deid_adversarial.py, tests/deid/test_deid_obfuscation.py)."""
    import os

    from dptext import mechanism
    from dptext.targeted import build_deid

    old = os.environ.get("DPTEXT_CACHE")
    os.environ["DPTEXT_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    big = mechanism("custext", epsilon=500, k=5, space=space).fit()  # returns its input
    yield build_deid(big, detector="spacy", languages=None)
    if old is None:
        os.environ.pop("DPTEXT_CACHE", None)
    else:
        os.environ["DPTEXT_CACHE"] = old
