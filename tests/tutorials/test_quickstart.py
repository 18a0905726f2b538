"""tutorials/quickstart.py runs end to end in fast mode on real data."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nasx.datasets import DataNotFoundError, cifar10, fashion_mnist

ROOT = Path(__file__).resolve().parents[2]


def _have_data() -> bool:
    for load in (lambda: fashion_mnist("test"), lambda: cifar10("test")):
        try:
            load()
            return True
        except DataNotFoundError:
            pass
    return False


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.skipif(
    not _have_data(),
    reason="neither Fashion-MNIST (apt-get install dataset-fashion-mnist) nor ../shared/data/cifar10 found",
)
def test_quickstart_fast_mode():
    env = {**os.environ, "NASX_FAST": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tutorials" / "quickstart.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "architectures" in result.stdout and "test accuracy" in result.stdout
    assert "exported with torch.export" in result.stdout
    # the training drawn, to a file it names (matplotlib: a dev dependency)
    figure = re.search(r"figure of the training .*: (\S+\.png)$", result.stdout, re.M)
    assert figure and Path(figure[1]).stat().st_size > 10_000
