"""docs/hyperparameters.md's python blocks run as written, top to bottom, in one namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_readme import python_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "hyperparameters.md"


def test_hyperparameters_page_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the experiment writes nasx_experiments/ under the cwd
    namespace: dict = {"__name__": "docs"}
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) == 2
    for line, code in blocks:
        try:
            exec(compile(code, f"docs/hyperparameters.md:{line}", "exec"), namespace)
        except Exception as e:  # name the block, keep the traceback
            pytest.fail(f"docs/hyperparameters.md block at line {line} failed: {e!r}")
    assert set(namespace["best"]["hparams"]) == {"lr", "wd", "aug", "batch_size", "epochs"}
    assert "hparams" in capsys.readouterr().out
