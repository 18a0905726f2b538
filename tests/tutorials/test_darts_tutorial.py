"""The DARTS tutorial runs end to end in fast mode: in the default suite on generated stand-in
data (as on a fresh clone, without ../shared), and on real CIFAR-10 in the slow tier."""

import os
import runpy
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "darts.py"


def _run_fast_mode(monkeypatch, capsys) -> str:
    monkeypatch.setattr(sys, "argv", [str(TUTORIAL)])
    monkeypatch.setitem(os.environ, "NASX_FAST", "1")  # the one switch all tutorials read
    runpy.run_path(str(TUTORIAL), run_name="__main__")
    out = capsys.readouterr().out
    assert "exported arch:" in out and "retrained accuracy:" in out
    assert "FAST smoke run" in out
    assert "cells drawn to" in out
    assert "pre-searched DARTS-V2" in out  # evaluated, or a clear note that no weights are here
    return out


# Without graphviz the tutorial draws its cells with matplotlib and warns so: a fresh clone may
# lack graphviz (CI installs it), and the fallback is the tutorial's documented behaviour.
GRAPHVIZ_FALLBACK = "ignore:graphviz's 'dot' program is not installed:UserWarning"


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.filterwarnings(GRAPHVIZ_FALLBACK)
def test_darts_tutorial_fast_mode_on_a_fresh_clone(fresh_clone_cifar10, monkeypatch, capsys):
    _run_fast_mode(monkeypatch, capsys)


@pytest.mark.slow
@pytest.mark.filterwarnings(GRAPHVIZ_FALLBACK)
def test_darts_tutorial_fast_mode_on_real_cifar10(monkeypatch, capsys):
    from nasx.datasets import find_data_dir

    data = find_data_dir()
    if data is None or not (data / "cifar10").exists():
        pytest.skip("CIFAR-10 not found (set NASX_DATA_DIR or provide ../shared/data/cifar10)")
    _run_fast_mode(monkeypatch, capsys)
