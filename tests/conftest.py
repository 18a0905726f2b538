"""Shared test setup: one CPU thread (CI has 2 cores) and the location of the shared data."""

import os
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """``$NASX_DATA_DIR`` or ``../shared/data`` beside the repository; skip when absent."""
    path = Path(os.environ.get("NASX_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(
            f"shared data not found at {path} (set NASX_DATA_DIR to the folder of ../shared/data)"
        )
    return path


@pytest.fixture(autouse=True)
def _cuda_random_generator_stays_usable():
    """On a GPU machine, fail the test that leaves the device's random generator unusable (a
    CUDA graph capture that broke without cleanup makes every later random op raise): otherwise
    the next test to draw a random number on the GPU fails for a reason that is not its own."""
    yield
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.randn(1, device="cuda")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``), keep each test file on one worker, in order, as a
    serial run has it (module-scoped fixtures are built once); the Ray test files share one
    worker too, because they share one session-wide local Ray cluster. Without xdist (``-p
    no:xdist``, or a debugger's run) there is nothing to group."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        name = item.path.name
        group = "ray" if name.startswith("test_ray") else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))
