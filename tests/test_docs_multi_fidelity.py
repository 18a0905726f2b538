"""docs/multi_fidelity.md's python blocks run as written, and say what they claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_readme import python_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "multi_fidelity.md"


def test_multi_fidelity_page_runs(capsys):
    namespace: dict = {"__name__": "docs"}
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) == 4
    for line, code in blocks:
        try:
            exec(compile(code, f"docs/multi_fidelity.md:{line}", "exec"), namespace)
        except Exception as e:  # name the block, keep the traceback
            pytest.fail(f"docs/multi_fidelity.md block at line {line} failed: {e!r}")
    statuses = namespace["statuses"]  # the experiment's block: 4 trials, ASHA promoted one
    assert len(statuses) == 4 and {s for s, _ in statuses.values()} <= {"paused", "succeeded"}
    assert sorted(b for _, b in statuses.values()) == [1, 1, 1, 3]
    full, asha, bohb = capsys.readouterr().out.splitlines()
    assert full.startswith("FullBudget(max_budget=9): ") and asha.startswith("ASHA(min_budget=1")
    assert bohb.startswith("BOHB(min_budget=1")
    assert repr(namespace["by_best"]).endswith("rank_by='best')")  # the rank_by block
    tried = [int(line.split(": ")[1].split()[0]) for line in (full, asha, bohb)]
    assert tried[1] > 3 * tried[0] and tried[2] > 2 * tried[0]  # the same epochs, more archs
    why = "constraint broken at budget 1: params 320 above 200"  # the row says which limit
    assert namespace["too_big"] == {next(iter(namespace["too_big"])): ("pruned", 1, why)}
