"""Where a scheduled run finds the checkpoints its paused trials continue from.

:class:`~nasx.experiment.loop.scheduled.ScheduledRun` asks one :class:`Checkpoints` object whether a
trial has a state at a budget, which :class:`~nasx.evaluator.checkpoint.Checkpoint` a job gets,
and tidies after each job; it never looks at folders itself. Three kinds answer it:

- :class:`TrialFolders`: the files of an experiment, ``<workdir>/trials/<id>/checkpoint``;
- :class:`NoCheckpoints`: a run with nowhere to keep them (every promotion trains from scratch);
- :class:`ReplayedCheckpoints`: a replayed learning-curve table (the simulator), where every
  budget a trial reached can be continued, as the table is one training run.

    >>> import tempfile
    >>> from pathlib import Path
    >>> folders = TrialFolders(lambda trial: Path(tempfile.mkdtemp()) / str(trial))
    >>> folders.at(0, 3), folders.latest_below(0, 9)
    (False, 0)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from nasx.evaluator.checkpoint import Checkpoint, saved_budgets

__all__ = ["Checkpoints", "NoCheckpoints", "ReplayedCheckpoints", "TrialFolders"]

Budget = int | float


class Checkpoints(Protocol):
    """What a scheduled run asks of the place its trials' training states live."""

    def at(self, trial: int, budget: Budget) -> bool:
        """Whether ``trial`` has a state saved at ``budget``."""
        ...

    def latest_below(self, trial: int, budget: Budget | None) -> Budget:
        """The largest budget below ``budget`` (None: any) ``trial`` has a state at; 0: none."""
        ...

    def for_job(
        self, trial: int, start: Budget, budget: Budget | None, keep: bool
    ) -> Checkpoint | None:
        """The checkpoint a job of ``trial`` trains with, from ``start`` up to ``budget``."""
        ...

    def keep_only(self, trial: int, budget: Budget) -> None:
        """``trial`` paused at ``budget``: every other state of it goes."""
        ...

    def drop(self, trial: int) -> None:
        """Nothing will continue ``trial`` (pruned, failed, complete): all its states go."""
        ...


class NoCheckpoints:
    """Nowhere to keep states: nothing is saved, so every promotion restarts."""

    def at(self, trial: int, budget: Budget) -> bool:
        return False

    def latest_below(self, trial: int, budget: Budget | None) -> Budget:
        return 0

    def for_job(
        self, trial: int, start: Budget, budget: Budget | None, keep: bool
    ) -> Checkpoint | None:
        return None

    def keep_only(self, trial: int, budget: Budget) -> None:
        pass

    def drop(self, trial: int) -> None:
        pass


class ReplayedCheckpoints(NoCheckpoints):
    """A replayed table: a trial continues from any budget it reached (one training run), and
    the replaying executor needs no file for it."""

    def at(self, trial: int, budget: Budget) -> bool:
        return True


class TrialFolders:
    """The checkpoint folder of each trial, ``trial_dir(trial) / 'checkpoint'``, one file per
    budget (:mod:`nasx.evaluator.checkpoint`)."""

    def __init__(self, trial_dir: Callable[[int], Path]) -> None:
        self._trial_dir = trial_dir

    def folder(self, trial: int) -> Path:
        return self._trial_dir(trial) / "checkpoint"

    def at(self, trial: int, budget: Budget) -> bool:
        return budget in saved_budgets(self.folder(trial))

    def latest_below(self, trial: int, budget: Budget | None) -> Budget:
        below = [b for b in saved_budgets(self.folder(trial)) if budget is None or b < budget]
        return below[-1] if below else 0

    def for_job(
        self, trial: int, start: Budget, budget: Budget | None, keep: bool
    ) -> Checkpoint | None:
        return Checkpoint(str(self.folder(trial)), start, budget, keep)

    def keep_only(self, trial: int, budget: Budget) -> None:
        folder = self.folder(trial)
        if not os.path.isdir(folder):
            return
        kept = Checkpoint(str(folder), budget=budget).save_path
        for name in os.listdir(folder):  # old states and temporary files of a killed write
            path = os.path.join(folder, name)
            if path == kept:
                continue
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    def drop(self, trial: int) -> None:
        shutil.rmtree(self.folder(trial), ignore_errors=True)
