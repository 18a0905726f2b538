"""tutorials/multi_fidelity.py runs in fast mode on a fresh clone (no ../shared, no Fashion-MNIST
anywhere: scikit-learn's digits stand in, nothing is downloaded) and what it prints holds
together: the budget column and the paused / pruned statuses, fewer epochs than full-budget
search, and a resumed ASHA run equal to the uninterrupted one."""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "multi_fidelity.py"


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_multi_fidelity_tutorial_fast_mode_on_a_fresh_clone(
    fresh_clone_data, tmp_path, monkeypatch, capsys
):
    pytest.importorskip("sklearn", reason="scikit-learn's digits are the fresh clone's data")
    import nasx.datasets.fashion as fashion

    # Debian's copy of Fashion-MNIST is not on a fresh machine either
    monkeypatch.setattr(fashion, "FASHION_MNIST_SYSTEM_DIR", tmp_path / "no-debian-copy")
    monkeypatch.setattr(sys, "argv", [str(TUTORIAL), "--workdir", str(tmp_path / "runs")])
    monkeypatch.setitem(os.environ, "NASX_FAST", "1")
    namespace = runpy.run_path(str(TUTORIAL), run_name="__main__")
    out = capsys.readouterr().out

    assert "data: scikit-learn digits" in out and "FAST smoke run" in out
    assert re.search(r"^id +status +budget +metric", out, re.MULTILINE)  # the trial table
    asha = {t.id: t for t in namespace["asha"].trials()}
    assert {t.status for t in asha.values()} == {"paused", "succeeded"}
    assert all(t.budget == 9 for t in asha.values() if t.status == "succeeded")
    assert "pruned" in {t.status for t in namespace["stopping"].trials()}
    assert re.search(r"trials +\d+ succeeded, \d+ paused", out)  # nasx show
    # epochs: counted by the evaluator, fewer with a scheduler, all 9 x trials without
    trained = namespace["EPOCHS_TRAINED"]
    assert trained["full_budget"] == 9 * namespace["N_TRIALS"]
    assert (
        trained["asha"] < trained["full_budget"] and trained["hyperband"] < trained["full_budget"]
    )
    assert re.search(rf"^ASHA +{trained['asha']} +[\d.]+% +\(\d+% fewer epochs\)", out, re.M)
    # stopped after a third of the trials and resumed: the uninterrupted run's trials
    assert "same trials, statuses and budgets as the uninterrupted ASHA run: True" in out
    assert namespace["first"].stop_reason == "max_trials (3) reached"
