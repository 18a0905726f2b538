"""Checkpoint: where a trial keeps its training state between budgets, so a promoted trial continues.

With a multi-fidelity scheduler (``NasExperiment(..., scheduler=ASHA(...))``) a trial trained up
to budget ``b`` may pause, and later be promoted to a larger budget ``B``. An evaluator that
declares a ``checkpoint`` parameter (``evaluate(model, report=None, budget=None,
checkpoint=None)``, or a plain ``fn(model, budget, checkpoint)``) receives a :class:`Checkpoint`:
it loads the state it saved at ``b`` (:meth:`Checkpoint.load`), trains from there up to
``budget``, reports only those new budget units, and saves its state at the end
(:meth:`Checkpoint.save`), so the promotion costs ``B - b`` units instead of ``B``. nasx's
``Lightning``, ``Classification`` and ``Regression`` do this with Lightning's own checkpoints.

A checkpoint is a file per budget, ``budget-<b>.pt`` in the trial's folder, written atomically
(a temporary file renamed over it): a process killed while writing leaves the previous one whole.

    >>> import tempfile, torch
    >>> folder = tempfile.mkdtemp()
    >>> first = Checkpoint(folder, from_budget=0, budget=2)
    >>> first.load() is None  # a fresh start: nothing to continue from
    True
    >>> first.save({'epoch': 2, 'w': torch.ones(2)})
    >>> saved_budgets(folder)
    [2]
    >>> Checkpoint(folder, from_budget=2, budget=6).load()['epoch']
    2
"""

from __future__ import annotations

import contextlib
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Checkpoint", "restore_rng_state", "rng_state", "saved_budgets"]

_NAME = re.compile(r"^budget-(\d+(?:\.\d+)?(?:e[-+]?\d+)?)\.pt$")


def _name(budget: int | float) -> str:
    """The file name of the state at ``budget`` (3 and 3.0 name the same file)."""
    if isinstance(budget, float) and budget.is_integer():
        budget = int(budget)
    return f"budget-{budget}.pt"


@dataclass(frozen=True)
class Checkpoint:
    """The training state of one trial, kept between the jobs that train it further.

    Args:
        directory: the trial's checkpoint folder (``<workdir>/trials/<id>/checkpoint``).
        from_budget: where this job's training starts: 0 for a fresh start, else the budget of
            the state :meth:`load` returns (the job then trains ``budget - from_budget`` units).
        budget: the budget this job trains up to; :meth:`save` writes the state at it.
        keep: False when nothing will ever continue from this job's end (it trains to the
            scheduler's maximum budget): :meth:`save` and :meth:`write` then write nothing.

    An evaluator saves once, when it has trained ``budget`` units; a job stopped before that
    (``report`` raised :class:`~nasx.experiment.execution.runner.TrialStopped`) saves nothing.
    """

    directory: str
    from_budget: int | float = 0
    budget: int | float | None = None
    keep: bool = True

    @property
    def resume_path(self) -> str | None:
        """The file holding the state at ``from_budget`` (None for a fresh start)."""
        if not self.from_budget:
            return None
        return os.path.join(self.directory, _name(self.from_budget))

    @property
    def save_path(self) -> str | None:
        """The file :meth:`save` writes (None when nothing is to be kept)."""
        if not self.keep or self.budget is None:
            return None
        return os.path.join(self.directory, _name(self.budget))

    def load(self) -> Any:
        """The state saved at ``from_budget`` (``torch.load(..., weights_only=True)``: tensors,
        dicts, lists, numbers, strings), or None for a fresh start."""
        path = self.resume_path
        if path is None:
            return None
        import torch

        return torch.load(path, map_location="cpu", weights_only=True)

    def save(self, state: Any) -> None:
        """Write ``state`` (what :meth:`load` will return: model, optimizer and scheduler
        ``state_dict()``s, the epoch, :func:`rng_state`) as the state at ``budget``."""
        import torch

        self.write(lambda path: torch.save(state, path))

    def write(self, write_to: Callable[[str], None]) -> None:
        """Atomically make the state file at ``budget`` with ``write_to(path)`` (which writes a
        whole file at ``path``, e.g. Lightning's ``trainer.save_checkpoint``): it writes a
        temporary file, which replaces the final one only once complete, so an earlier state
        is never lost to a crash mid-write. Does nothing when ``keep`` is False.

            >>> import pathlib, tempfile
            >>> ck = Checkpoint(tempfile.mkdtemp(), budget=1)
            >>> def broken(path):
            ...     pathlib.Path(path).write_text('half'); raise OSError('disk full')
            >>> ck.write(broken)
            Traceback (most recent call last):
            ...
            OSError: disk full
            >>> saved_budgets(ck.directory), os.listdir(ck.directory)
            ([], [])
        """
        final = self.save_path
        if final is None:
            return
        os.makedirs(self.directory, exist_ok=True)
        temporary = f"{final}.{os.getpid()}.tmp"
        try:
            write_to(temporary)
            with open(temporary, "rb+") as f:  # on disk before it replaces anything
                os.fsync(f.fileno())
            os.replace(temporary, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise


def saved_budgets(directory: str | os.PathLike[str]) -> list[int | float]:
    """The budgets at which ``directory`` holds a complete state, smallest first (temporary
    files of an interrupted write are not states).

    >>> import tempfile
    >>> saved_budgets(tempfile.mkdtemp() + '/none')
    []
    """
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    budgets: list[int | float] = []
    for name in names:
        match = _NAME.match(name)
        if match is not None:
            text = match.group(1)
            budgets.append(int(text) if text.isdigit() else float(text))
    return sorted(budgets)


def rng_state() -> dict[str, Any]:
    """The state of Python's, numpy's and torch's (CPU and, once used, CUDA) random number
    generators, as tensors and numbers that :meth:`Checkpoint.load` reads back. Saved with a
    checkpoint and restored (:func:`restore_rng_state`) before training goes on, a continued
    training draws what an uninterrupted one would (data order, dropout).

        >>> import torch
        >>> state = rng_state(); a = torch.rand(3)
        >>> restore_rng_state(state); bool((torch.rand(3) == a).all())
        True
    """
    import numpy as np
    import torch

    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [str(kind), torch.from_numpy(np.array(keys)), int(pos), int(has_gauss), gauss],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Set the generators to ``state`` (from :func:`rng_state`)."""
    import numpy as np
    import torch

    python = state["python"]
    random.setstate((python[0], tuple(python[1]), python[2]))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy(), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
