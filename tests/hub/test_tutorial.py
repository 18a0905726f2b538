"""Run tutorials/hub_tour.py end to end (it is fast: a few seconds on CPU)."""

import runpy
from pathlib import Path

import pytest

TOUR = Path(__file__).resolve().parents[2] / "tutorials" / "hub_tour.py"


# The tour draws cells with graphviz when `dot` is installed, else with matplotlib and a warning.
@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.filterwarnings("ignore:graphviz's 'dot' program is not installed")
def test_hub_tour_runs(capsys):
    runpy.run_path(str(TOUR), run_name="__main__")
    out = capsys.readouterr().out
    assert "3349342 parameters" in out and "SpineNet-49S levels" in out
    assert "cell pictures: ['darts_v2.png', 'sampled.png']" in out
