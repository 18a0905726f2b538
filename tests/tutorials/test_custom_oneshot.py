"""The custom one-shot tutorial (a Mutator in a plain PyTorch loop) runs in fast mode: in the
default suite on generated stand-in data (as on a fresh clone, without ../shared), and on real
CIFAR-10 in the slow tier."""

import os
import re
import runpy
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "custom_oneshot.py"


def _run_fast_mode(monkeypatch, capsys) -> None:
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
    # the weights recorded at the start and after each architecture step, drawn to a file it names
    assert len(namespace["history"]) == 1 + 2  # fast mode: 128 training images in batches of 64
    figure = re.search(r"figure of the architecture weights .*: (\S+\.png)$", out, re.M)
    assert figure and Path(figure[1]).stat().st_size > 10_000


def test_custom_oneshot_tutorial_fast_mode_on_a_fresh_clone(
    fresh_clone_cifar10, monkeypatch, capsys
):
    _run_fast_mode(monkeypatch, capsys)


@pytest.mark.slow
def test_custom_oneshot_tutorial_fast_mode_on_real_cifar10(monkeypatch, capsys):
    from nasx.datasets import find_data_dir

    data = find_data_dir()
    if data is None or not (data / "cifar10").exists():
        pytest.skip("CIFAR-10 not found (set NASX_DATA_DIR or provide ../shared/data/cifar10)")
    _run_fast_mode(monkeypatch, capsys)
