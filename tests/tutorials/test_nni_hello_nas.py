"""NNI 3.0's "Hello, NAS!" tutorial, ported by changing imports only, runs in its fast mode."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "nni_hello_nas.py"


def _has_fashion_mnist() -> bool:
    from nasx.datasets import DataNotFoundError, fashion_mnist

    try:
        fashion_mnist("test")
    except DataNotFoundError:
        return False
    return True


def test_the_port_changes_only_imports_and_the_marked_data_block():
    code = TUTORIAL.read_text()
    start, end = code.index("# ---- nasx port: data"), code.index("# ---- end of the nasx port")
    outside = code[:start] + code[end:]
    code_lines = [line for line in outside.splitlines() if not line.startswith("#")]
    assert not [line for line in code_lines if line.startswith(("import nni", "from nni"))]
    # what NNI's tutorial calls, in nasx names, untouched
    for line in [
        "nni.report_intermediate_result(accuracy)",
        "nni.report_final_result(accuracy)",
        "exp = NasExperiment(model_space, evaluator, search_strategy)",
        "exp.config.max_trial_number = 3   # spawn 3 trials at most",
        "exp.run(port=8081)",
        "for model_dict in exp.export_top_models(formatter='dict'):",
        "train_loader = DataLoader(MNIST('data/mnist', download=True, transform=transf), "
        "batch_size=64, shuffle=True)",
    ]:
        assert line in outside, line


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
@pytest.mark.skipif(
    not _has_fashion_mnist(),
    reason="Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)",
)
def test_nni_hello_nas_fast_mode(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(TUTORIAL)])
    monkeypatch.setitem(os.environ, "NASX_FAST", "1")
    namespace = runpy.run_path(str(TUTORIAL), run_name="__main__")
    out = capsys.readouterr().out
    exp = namespace["exp"]
    trials = exp.trials()
    assert [t.status for t in trials] == ["succeeded"] * 3
    for t in trials:
        # nni.report_intermediate_result once per epoch; the final result is the last accuracy
        assert len(t.intermediates) == 3 and t.metric == t.intermediates[-1]
        assert 0.0 <= t.metric <= 100.0
    assert len({tuple(sorted(t.arch.items())) for t in trials}) == 3  # Random() dedups
    best = namespace["model_dict"]
    assert set(best) == {"conv2", "dropout", "feature"} and str(best) in out
    assert best == max(trials, key=lambda t: t.metric).arch
    assert "Test set: Accuracy:" in out and "/32 (" in out  # the fast mode's 32 test images
