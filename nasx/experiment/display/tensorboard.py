"""TensorBoard logs of a multi-trial experiment: ``tensorboard --logdir <workdir>`` shows it.

Each finished trial gets a run ``<workdir>/tensorboard/trial_<id>`` with its intermediate
metrics as a curve (``intermediate``, one step per report), its final metrics (``metric/<name>``)
and its arch as hyper-parameters (the HPARAMS tab then compares archs against metrics). One-shot
runs log their architecture weights through Lightning's logger (``arch/<label>/<value>``, every
``log_arch_every`` steps) into ``<workdir>/lightning_logs``, under the same ``--logdir``.

``NasExperiment(..., tensorboard=True)`` writes each trial as it finishes;
:func:`write_trials` (or ``nasx tensorboard EXP``) writes those of a stored experiment.

    >>> import tempfile
    >>> from nasx.trial import Trial
    >>> d = tempfile.mkdtemp()
    >>> write_trials(d, [Trial(0, {'op': 'conv', 'in': [1]}, 'succeeded', metric=0.9,
    ...                        metrics={'default': 0.9}, intermediates=[0.5, 0.9])])
    1
    >>> sorted(p.name for p in (Path(d) / 'tensorboard').iterdir())
    ['trial_0']
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nasx.trial import SUCCEEDED, Trial

TB_DIR = "tensorboard"


def hparam_value(value: Any) -> int | float | str | bool:
    """An arch value as TensorBoard accepts it: numbers and strings as they are, others as JSON.

    >>> hparam_value([0]), hparam_value('conv'), hparam_value(3)
    ('[0]', 'conv', 3)
    """
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value)


class TrialWriter:
    """Writes finished trials under ``<workdir>/tensorboard`` (one run folder per trial)."""

    def __init__(self, workdir: str | os.PathLike[str]):
        from nasx._optional import optional_import

        # torch's writer needs the tensorboard package
        writer = optional_import(
            "torch.utils.tensorboard", "tensorboard", "TensorBoard logging", package="tensorboard"
        )
        self._writer_cls = writer.SummaryWriter
        self.root = Path(workdir) / TB_DIR

    def written(self, trial_id: int) -> bool:
        return (self.root / f"trial_{int(trial_id)}").exists()

    def write(self, trial: Trial) -> None:
        """Log one finished trial (its curve, final metrics and arch)."""
        run = self.root / f"trial_{int(trial.id)}"
        with self._writer_cls(log_dir=str(run)) as w:
            for step, value in enumerate(trial.intermediates or [], start=1):
                w.add_scalar("intermediate", value, step)
            last = max(1, len(trial.intermediates or []))
            finals = {k: v for k, v in (trial.metrics or {}).items() if _number(v)}
            for name, value in finals.items():
                w.add_scalar(f"metric/{name}", value, last)
            hparams = {label: hparam_value(v) for label, v in trial.sample.items()}
            hparams["status"] = trial.status
            results = {f"hparam/{k}": float(v) for k, v in finals.items()}
            if trial.status != SUCCEEDED or not results:
                results = {"hparam/default": float("nan")}
            w.add_hparams(hparams, results, run_name=".")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def write_trials(
    workdir: str | os.PathLike[str], trials: Iterable[Trial], overwrite: bool = False
) -> int:
    """Log every finished trial not logged yet (all of them with ``overwrite``); returns how many."""
    writer = TrialWriter(workdir)
    n = 0
    for t in trials:
        if t.finished and (overwrite or not writer.written(t.id)):
            writer.write(t)
            n += 1
    return n
