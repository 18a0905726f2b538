"""NNI's tuner, advisor and assessor names for multi-fidelity search, mapped onto nasx's schedulers.

An NNI experiment names them in its config (``advisor: {name: Hyperband, classArgs: {R: 27}}``,
``tuner: {name: BOHB, ...}``, ``assessor: {name: Medianstop, ...}``); :func:`from_nni` takes that
name and its ``classArgs`` and gives the nasx scheduler that does the same job, so a ported
script keeps its settings. ``Hyperband`` and ``BOHB`` are also nasx's own class names; NNI's
``Medianstop`` is :func:`Medianstop` (a factory of :class:`MedianStopping`); its
``Curvefitting`` assessor is :class:`CurveFitting` (one power-law curve model, not NNI's
ensemble).

    >>> from_nni('Hyperband', {'R': 27, 'eta': 3, 'optimize_mode': 'maximize'})
    Hyperband(min_budget=1, max_budget=27, eta=3)
    >>> Medianstop(optimize_mode='minimize', start_step=2, max_budget=9)
    MedianStopping(min_budget=2, max_budget=9, min_trials=1, direction='minimize')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nasx.experiment.schedulers.base import Scheduler
from nasx.experiment.schedulers.bohb import BOHB
from nasx.experiment.schedulers.curvefit import CurveFitting
from nasx.experiment.schedulers.halving import Hyperband
from nasx.experiment.schedulers.median import MedianStopping

__all__ = ["Medianstop", "from_nni"]

_MODES = ("maximize", "minimize")


def _mode(optimize_mode: Any) -> str:
    if optimize_mode not in _MODES:
        raise ValueError(f"optimize_mode must be 'maximize' or 'minimize', got {optimize_mode!r}")
    return str(optimize_mode)


def Medianstop(  # noqa: N802 -- NNI's name, kept so that ported configs read the same
    optimize_mode: str = "maximize", start_step: int = 0, *, max_budget: int | float
) -> MedianStopping:
    """NNI's ``Medianstop`` assessor as a :class:`MedianStopping` scheduler.

    NNI judges a trial once it has reported ``start_step`` intermediate results, against the
    median of the other trials' results at the same step; nasx's rule is the same with
    ``min_budget=max(1, start_step)`` and ``min_trials=1``, except that it counts running
    trials' results too (NNI: completed trials only), so it can prune the first trials sooner.
    NNI's assessor does not know the full budget; nasx's scheduler needs ``max_budget``.

    >>> Medianstop(start_step=3, max_budget=27).min_budget
    3
    """
    if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 0:
        raise ValueError(f"start_step must be an integer >= 0, got {start_step!r}")
    return MedianStopping(
        max(1, start_step), max_budget, min_trials=1, direction=_mode(optimize_mode)
    )


def _hyperband(args: dict[str, Any]) -> Hyperband:
    """NNI's ``R`` is the largest budget; its smallest is ``R / eta**s_max`` with
    ``s_max = floor(log_eta(R))`` (NNI's rule), at least 1 for whole-number budgets."""
    if "R" not in args:
        raise ValueError("NNI's Hyperband needs classArgs 'R' (the largest budget, in epochs)")
    r, eta = args.pop("R"), args.pop("eta", 3)
    mode = _mode(args.pop("optimize_mode", "maximize"))
    exec_mode = args.pop("exec_mode", "parallelism")
    if exec_mode not in ("parallelism", "serial"):
        raise ValueError(f"exec_mode must be 'parallelism' or 'serial', got {exec_mode!r}")
    if isinstance(r, bool) or not isinstance(r, int | float) or not r >= 1:
        raise ValueError(f"R must be a number >= 1, got {r!r}")
    if isinstance(eta, bool) or not isinstance(eta, int) or eta < 2:
        raise ValueError(f"eta must be an integer >= 2, got {eta!r}")
    s_max = math.floor(math.log(r, eta) + 1e-9)
    low = max(1, r // eta**s_max) if isinstance(r, int) else r / eta**s_max
    return Hyperband(low, r, eta, directions=mode)


def _bohb(args: dict[str, Any]) -> BOHB:
    mode = _mode(args.pop("optimize_mode", "maximize"))
    known = (
        "min_budget",
        "max_budget",
        "eta",
        "min_points_in_model",
        "top_n_percent",
        "num_samples",
        "random_fraction",
        "bandwidth_factor",
        "min_bandwidth",
        "seed",
    )
    kwargs = {k: args.pop(k) for k in known if k in args}
    kwargs.setdefault("min_budget", 1)
    kwargs.setdefault("max_budget", 3)  # NNI's default
    return BOHB(**kwargs, directions=mode)


def _medianstop(args: dict[str, Any], max_budget: int | float | None) -> MedianStopping:
    if max_budget is None:
        raise ValueError(
            "NNI's Medianstop does not know the full budget: give from_nni(..., max_budget=)"
        )
    return Medianstop(
        args.pop("optimize_mode", "maximize"), args.pop("start_step", 0), max_budget=max_budget
    )


def _curvefitting(args: dict[str, Any]) -> CurveFitting:
    if "epoch_num" not in args:
        raise ValueError("NNI's Curvefitting needs classArgs 'epoch_num' (the full budget)")
    return CurveFitting(
        args.pop("epoch_num"),
        start_step=args.pop("start_step", 6),
        threshold=args.pop("threshold", 0.95),
        gap=args.pop("gap", 1),
        direction=_mode(args.pop("optimize_mode", "maximize")),
    )


def from_nni(
    name: str,
    class_args: Mapping[str, Any] | None = None,
    *,
    max_budget: int | float | None = None,
) -> Scheduler:
    """The nasx scheduler for NNI's builtin ``name`` with its ``classArgs``.

    Names: ``'Hyperband'`` (advisor; ``R``, ``eta``, ``optimize_mode``, ``exec_mode``),
    ``'BOHB'`` (advisor; NNI's arguments, same names), ``'Medianstop'`` (assessor;
    ``optimize_mode``, ``start_step``; needs ``max_budget``), ``'Curvefitting'`` (assessor;
    ``epoch_num``, ``start_step``, ``threshold``, ``gap``). An argument nasx does not know is
    refused by name.

    >>> from_nni('BOHB', {'max_budget': 9, 'optimize_mode': 'maximize', 'seed': 0})
    BOHB(min_budget=1, max_budget=9, eta=3, seed=0)
    """
    args = dict(class_args or {})
    scheduler: Scheduler
    if name == "Hyperband":
        scheduler = _hyperband(args)
    elif name == "BOHB":
        scheduler = _bohb(args)
    elif name == "Medianstop":
        scheduler = _medianstop(args, max_budget)
    elif name == "Curvefitting":
        scheduler = _curvefitting(args)
    else:
        raise ValueError(
            f"unknown NNI name {name!r}: nasx maps 'Hyperband', 'BOHB', 'Medianstop' and "
            "'Curvefitting'"
        )
    if args:
        raise ValueError(f"NNI's {name} classArgs {sorted(args)} have no nasx equivalent")
    return scheduler
