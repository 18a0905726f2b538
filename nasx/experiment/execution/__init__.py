"""Internal: where a trial runs (import the public names from :mod:`nasx.experiment`).

- :mod:`.jobs`: what crosses an executor (``Job`` out, ``TrialResult`` back);
- :mod:`.runner` and :mod:`.builder`: one trial where it executes (build, evaluate, report);
- :mod:`.local`: in the experiment's process, or on a pool of worker processes (:mod:`.worker`);
- :mod:`.ray`: as Ray tasks; :mod:`.simulated`: no training, a learning-curve table replayed
  (the simulator of :mod:`nasx.experiment.schedulers`).
"""

from nasx._lazy import lazy_attributes

# what ``nasx.experiment.execution`` held when it was one module (now :mod:`.local`), still there
_OLD_NAMES = {
    "EVALUATING_MARK": "nasx.experiment.execution.local",
    "ProcessPoolExecutor": "nasx.experiment.execution.local",
    "SequentialExecutor": "nasx.experiment.execution.local",
    "evaluating_mark": "nasx.experiment.execution.local",
    "make_executor": "nasx.experiment.execution.local",
}
__getattr__, __dir__ = lazy_attributes(__name__, _OLD_NAMES, globals())
