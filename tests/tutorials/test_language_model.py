"""The language-model tutorial (train, prune, distill, rank, save) runs in fast mode."""

import os
import re
import runpy
import sys
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "language_model.py"


def test_language_model_tutorial_fast_mode(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(TUTORIAL)])
    monkeypatch.setitem(os.environ, "NASX_FAST", "1")
    namespace = runpy.run_path(str(TUTORIAL), run_name="__main__")
    out = capsys.readouterr().out
    assert "parent:" in out and "best child" in out
    ranked = namespace["ranked"]
    losses = [c.loss_distilled for c in ranked]
    assert losses == sorted(losses)
    assert all(c.params < namespace["n_parent"] for c in ranked)
    # the candidates drawn, to a file it names (matplotlib: a dev dependency)
    figure = re.search(r"figure of the candidates .*: (\S+\.png)$", out, re.M)
    assert figure and Path(figure[1]).stat().st_size > 10_000
