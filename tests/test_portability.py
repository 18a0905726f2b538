"""No POSIX-only import on nasx's import path: what a Windows user gets, simulated on Linux.

A subprocess hides ``fcntl`` and ``resource`` (a meta-path blocker: importing them fails as on
Windows) and deletes ``signal.SIGKILL``, then imports every module of nasx, runs a small
experiment (storage, lock, trial logs) and checks that the one POSIX-only feature, the local
process pool that kills stuck workers, refuses with a message that says so. The simulation
covers imports and nasx's own checks; it is not a Windows run (filelock, for one, locks with
msvcrt there and falls back to its soft lock here).
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nasx

ROOT = Path(nasx.__file__).resolve().parents[1]

# Modules that run something when imported (entry points), not library code.
ENTRY_POINTS = {"nasx.datasets.__main__"}

SCRIPT = textwrap.dedent(
    """
    import importlib, importlib.abc, json, signal, sys, warnings

    BLOCKED = {"fcntl", "resource"}

    class NotOnWindows(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    for name in BLOCKED:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, NotOnWindows())
    del signal.SIGKILL
    warnings.simplefilter("ignore")  # filelock says it falls back to its soft lock here

    report = {"failed": {}}
    for module in json.loads(sys.argv[1]):
        try:
            importlib.import_module(module)
        except Exception as e:
            report["failed"][module] = f"{type(e).__name__}: {e}"

    import torch.nn as nn
    from nasx.experiment import NasExperiment
    from nasx.space import LayerChoice, ModelSpace
    from nasx.strategy import Random

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")

    def score(model):
        return 1.0 if isinstance(model.act, nn.ReLU) else 0.5

    exp = NasExperiment(Net(), score, Random(seed=0), workdir=sys.argv[2], max_trials=2, progress=False)
    exp.run()
    report["trials"] = sorted(t.status for t in exp.trials())
    pool = NasExperiment(Net(), score, Random(seed=0), workdir=sys.argv[2] + "-pool", max_trials=2,
                         max_concurrent_trials=2, progress=False)
    try:
        pool.run()
        report["pool"] = "ran"
    except NotImplementedError as e:
        report["pool"] = f"{type(e).__name__}: {e}"
    report["fcntl_loaded"] = "fcntl" in sys.modules
    print(json.dumps(report))
    """
)


def public_modules() -> list[str]:
    names = ["nasx"]
    for info in pkgutil.walk_packages(nasx.__path__, "nasx."):
        if info.name not in ENTRY_POINTS:
            names.append(info.name)
    return sorted(names)


@pytest.mark.slow  # a fresh interpreter imports all of nasx (torch, Lightning, Optuna): ~15 s
def test_nasx_imports_and_runs_without_posix_only_modules(tmp_path):
    modules = public_modules()
    assert "nasx.experiment.storage.store" in modules and len(modules) > 50
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(modules), str(tmp_path / "exp")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}
    assert report["trials"] == ["succeeded", "succeeded"]
    assert report["pool"].startswith("PosixOnlyError: running trials in local worker processes")
    assert "needs a POSIX system" in report["pool"] and "execution='ray'" in report["pool"]
    assert "trial_timeout, which kills a stuck worker" in report["pool"]
    assert not report["fcntl_loaded"]
