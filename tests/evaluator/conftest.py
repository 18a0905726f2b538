"""Shared fixtures for evaluator tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models train several times faster on one thread on a busy shared CPU."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
