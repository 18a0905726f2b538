"""The one-module paths of nasx.experiment before its sub-packages still import: the same module
object as its new path, with a DeprecationWarning naming where it went (nasx/experiment/_moved.py).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import nasx.experiment
from nasx.experiment._moved import MOVED

IMPORT_EVERY_OLD_PATH = """
import importlib, json, warnings
from nasx.experiment._moved import MOVED
out = {}
for old in sorted(MOVED):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        module = importlib.import_module("nasx.experiment." + old)
    out[old] = [module.__name__, [str(w.message) for w in seen if w.category is DeprecationWarning]]
print(json.dumps(out))
"""


def test_every_old_path_imports_the_module_at_its_new_one_and_says_where():
    # one fresh interpreter for all of them: no module imported yet under either name
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_OLD_PATH], capture_output=True, text=True, check=True
    )
    imported = json.loads(run.stdout)
    packages = {p.name for p in Path(nasx.experiment.__file__).parent.iterdir() if p.is_dir()}
    for old, new in MOVED.items():
        name, warned = imported[old]
        if (
            old in packages
        ):  # a sub-package now (storage, execution, display, loop): its old names below
            assert name == f"nasx.experiment.{old}"
            continue
        assert name == f"nasx.experiment.{new}"
        assert any(f"nasx.experiment.{old} moved to nasx.experiment.{new}" in w for w in warned)


# one name each old module defined (read from the modules before the move): an old path must
# lead to the module that defines it now, whatever MOVED says
DEFINED_BEFORE = {
    "builder": "ModelBuilder",
    "display": "progress_for",
    "execution": "make_executor",
    "fidelity": "ScheduledRun",
    "html": "experiment_html",
    "identity": "open_store",
    "interrupt": "sigterm_as_interrupt",
    "jobs": "TrialResult",
    "loading": "load_model",
    "loop": "TrialLoop",
    "loop_parts": "TrialBook",
    "migrate": "is_legacy_one_shot",
    "nni_config": "NasExperimentConfig",
    "notebook": "NotebookProgress",
    "oneshot_progress": "NotebookSearchProgress",
    "oneshot_run": "run_one_shot",
    "pareto": "pareto_front",
    "partial": "top_trials",
    "progress": "Progress",
    "ray_execution": "RayExecutor",
    "readonly": "read_experiment",
    "recovery": "trials_to_rerun",
    "runner": "run_trial",
    "scheduler_checks": "check_scheduler",
    "second_stage": "stage2",
    "storage": "TrialStore",
    "stored": "StoredTrial",
    "summary": "report_end_of_run",
    "table": "TrialTable",
    "tensorboard": "TrialWriter",
    "weights": "kept_weights",
    "webui": "WebUI",
    "worker": "_run",
}


def test_every_old_path_leads_to_what_it_defined():
    # in a fresh interpreter too: the old names must come from the old path's own import
    code = (
        "import importlib, json, sys, warnings\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "names = json.loads(sys.argv[1])\n"
        "print(json.dumps(sorted(old for old, name in names.items()\n"
        "    if not hasattr(importlib.import_module('nasx.experiment.' + old), name))))\n"
    )
    assert set(DEFINED_BEFORE) == set(MOVED)
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(DEFINED_BEFORE)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(run.stdout) == []  # old paths that lost what they defined


def test_what_the_old_modules_held_is_still_there_in_their_packages():
    from nasx.experiment.display import progress_for
    from nasx.experiment.execution import SequentialExecutor, make_executor
    from nasx.experiment.loop import TrialLoop, as_seen
    from nasx.experiment.storage import TrialStore, load_trials

    assert TrialStore.__module__ == "nasx.experiment.storage.store"
    assert load_trials.__module__ == "nasx.experiment.storage.store"
    assert (
        make_executor.__module__
        == SequentialExecutor.__module__
        == "nasx.experiment.execution.local"
    )
    assert progress_for.__module__ == "nasx.experiment.display.choose"
    assert TrialLoop.__module__ == as_seen.__module__ == "nasx.experiment.loop.trial_loop"


def test_a_moved_module_is_the_same_object_under_both_names():
    with pytest.warns(DeprecationWarning, match="nasx.experiment.loop_parts moved"):
        old = importlib.import_module("nasx.experiment.loop_parts")
    from nasx.experiment.loop import trial_loop

    assert old is trial_loop and old.TrialBook is trial_loop.TrialBook
