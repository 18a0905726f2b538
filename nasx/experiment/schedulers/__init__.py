"""Multi-fidelity schedulers: stop poor architectures early, promote good ones (issue 31).

Each scheduler decides, after every budget unit a trial trains (an epoch by default), whether it
continues, pauses (and may be promoted to a larger budget later), is pruned, or is complete; and
what a free worker runs next. Their state is JSON (``state_dict``), their decisions a function
of the events they heard, so a resumed search decides as an uninterrupted one.

- :class:`ASHA`: asynchronous successive halving (promotion or stopping), several objectives too;
- :class:`AutoASHA`: ASHA whose grace period and ``eta`` come from the first trials' curves;
- :class:`Hyperband`, :class:`SuccessiveHalving`: synchronous brackets;
- :class:`BOHB`: Hyperband's brackets, new trials proposed by a TPE-style model per budget;
- :class:`MedianStopping`: prune below the median at the same budget;
- :class:`CurveFitting`: prune when the extrapolated curve ends below a share of the best;
- :class:`FullBudget`: no early stopping (the baseline);
- :func:`from_nni`, :func:`Medianstop`: NNI's names (``Hyperband``, ``BOHB``, ``Medianstop``,
  ``Curvefitting``);
- :func:`simulate` with :class:`LearningCurves`: replay a table of learning curves with simulated
  workers, to compare schedulers and strategies over many seeds.

``NasExperiment(..., scheduler=...)`` runs every one of them, sequentially, in the process pool
or on Ray (:mod:`nasx.experiment.loop.scheduled`), and decides there as :func:`simulate` decides on the
same curves (tests/experiment/test_every_scheduler.py); docs/multi_fidelity.md is the guide.
"""

from nasx.experiment.schedulers.asha import ASHA
from nasx.experiment.schedulers.auto import AutoASHA
from nasx.experiment.schedulers.base import (
    COMPLETE,
    CONTINUE,
    PAUSE,
    PRUNE,
    Assignment,
    Decision,
    RungScheduler,
    Scheduler,
    rung_budgets,
)
from nasx.experiment.schedulers.bohb import BOHB
from nasx.experiment.schedulers.curvefit import CurveFitting
from nasx.experiment.schedulers.fifo import FullBudget
from nasx.experiment.schedulers.halving import Hyperband, SuccessiveHalving
from nasx.experiment.schedulers.median import MedianStopping
from nasx.experiment.schedulers.nni import Medianstop, from_nni
from nasx.experiment.schedulers.pareto import best_first, nondominated_fronts
from nasx.experiment.schedulers.simulate import (
    LearningCurves,
    SimulatedTrial,
    SimulationResult,
    simulate,
)

__all__ = [
    "ASHA",
    "AutoASHA",
    "COMPLETE",
    "CONTINUE",
    "CurveFitting",
    "PAUSE",
    "PRUNE",
    "Assignment",
    "BOHB",
    "Decision",
    "FullBudget",
    "Hyperband",
    "LearningCurves",
    "MedianStopping",
    "Medianstop",
    "RungScheduler",
    "Scheduler",
    "SimulatedTrial",
    "SimulationResult",
    "SuccessiveHalving",
    "best_first",
    "from_nni",
    "nondominated_fronts",
    "rung_budgets",
    "simulate",
]
