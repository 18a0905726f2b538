"""The module paths of ``nasx.experiment`` before it was cut into sub-packages by concept
(issue 47), still importable: ``import nasx.experiment.storage`` gives the module now at
``nasx.experiment.storage.store`` (the same object), with a DeprecationWarning naming it.

Only the names of :mod:`nasx.experiment` and :mod:`nasx.experiment.schedulers` are public; these
paths were internal, but scripts and notebooks reached into them.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     from nasx.experiment.table import TrialTable
    >>> TrialTable.__module__
    'nasx.experiment.results.table'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install"]

#: old module (under ``nasx.experiment.``) -> where it lives now
MOVED = {
    "builder": "execution.builder",
    "display": "display.choose",
    "execution": "execution.local",
    "fidelity": "loop.scheduled",
    "html": "display.html",
    "identity": "storage.identity",
    "interrupt": "loop.interrupt",
    "jobs": "execution.jobs",
    "loading": "results.loading",
    "loop": "loop.trial_loop",
    "loop_parts": "loop.trial_loop",
    "migrate": "storage.migrate",
    "nni_config": "nni.config",
    "notebook": "display.notebook",
    "oneshot_progress": "display.one_shot",
    "oneshot_run": "loop.one_shot",
    "pareto": "results.pareto",
    "partial": "results.partial",
    "progress": "display.progress",
    "ray_execution": "execution.ray",
    "readonly": "storage.readonly",
    "recovery": "loop.recovery",
    "runner": "execution.runner",
    "scheduler_checks": "loop.scheduler_checks",
    "second_stage": "results.second_stage",
    "storage": "storage.store",
    "stored": "storage.stored",
    "summary": "results.summary",
    "table": "results.table",
    "tensorboard": "display.tensorboard",
    "weights": "storage.weights",
    "webui": "display.webui",
    "worker": "execution.worker",
}
_PREFIX = "nasx.experiment."


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads the module from its new one."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        # asked only after the path finders found nothing: a sub-package of the same name
        # (display, execution, storage) is found where it is, before this
        old = fullname[len(_PREFIX) :] if fullname.startswith(_PREFIX) else None
        return importlib.machinery.ModuleSpec(fullname, self) if old in MOVED else None

    def create_module(self, spec: Any) -> ModuleType:
        new = _PREFIX + MOVED[spec.name[len(_PREFIX) :]]
        warnings.warn(
            f"{spec.name} moved to {new}; import public names from nasx.experiment",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed under its new name


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (after the path finders)."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
