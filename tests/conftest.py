"""Shared test fixtures."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models on a shared 2-core CPU: one torch thread avoids OpenMP spin-waiting (about 7x
    faster here). Restores the previous setting afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    """The tiny random Llama of test_lm_mechanisms, saved once per session for the modules
    that only load it (never write beside it)."""
    from test_lm_mechanisms import _llama

    return _llama(tmp_path_factory.mktemp("lms") / "llama")
