"""Hub tests build many tiny models: one intra-op thread each avoids oversubscribing shared CPUs."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # Tiny convolutions gain nothing from threads; on a loaded 2-core machine 1 thread runs the hub
    # suite ~7x faster (37 s against 279 s measured). Restored after each test.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
