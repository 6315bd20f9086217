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
