"""The custom one-shot tutorial (a Mutator in a plain PyTorch loop) runs in fast mode."""

import os
import runpy
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "custom_oneshot.py"


def test_custom_oneshot_tutorial_fast_mode(monkeypatch, capsys):
    from nasx.datasets import find_data_dir

    data = find_data_dir()
    if data is None or not (data / "cifar10").exists():
        pytest.skip("CIFAR-10 not found (set NASX_DATA_DIR or provide ../shared/data/cifar10)")
    monkeypatch.setattr(sys, "argv", [str(TUTORIAL)])
    monkeypatch.setitem(os.environ, "NASX_FAST", "1")
    namespace = runpy.run_path(str(TUTORIAL), run_name="__main__")
    out = capsys.readouterr().out
    assert "exported arch:" in out and "found model accuracy:" in out and "a random path:" in out
    arch = namespace["arch"]
    assert set(arch) == {"layer1", "layer2", "skip"}
    # export keeps the strongest candidate of each choice (DARTS's rule)
    weights = namespace["mutator"].sample_final()["layer1"]
    assert arch["layer1"] == namespace["mutator"].mutables[0].candidates[int(weights.argmax())]
