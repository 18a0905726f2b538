"""Internal: how one ``NasExperiment.run()`` goes (import the public names from :mod:`nasx.experiment`).

- :mod:`.trial_loop`: the trial loop of a multi-trial search and the seams it calls
  (``Store``, ``Executor``, ``Strategy``), its limits and its book of unfinished trials;
- :mod:`.scheduled`: the loop's scheduler (every run has one; ``FullBudget()`` without a
  multi-fidelity one), its stored state and its jobs; :mod:`.scheduler_checks` refuses what
  cannot drive one; :mod:`.checkpoints` is where paused trials' states live;
- :mod:`.recovery` and :mod:`.interrupt`: a resumed run's unfinished trials, Ctrl-C and SIGTERM;
- :mod:`.one_shot`: a one-shot strategy's run, stored as every run is.
"""

from nasx._lazy import lazy_attributes

# what ``nasx.experiment.loop`` held when it was one module (now :mod:`.trial_loop`), still there
_OLD_NAMES = {
    name: "nasx.experiment.loop.trial_loop"
    for name in (
        "Executor",
        "Keeper",
        "Limits",
        "NoProgress",
        "Progress",
        "Store",
        "Strategy",
        "TrialBook",
        "TrialLoop",
        "as_seen",
        "label_splitter",
    )
}
__getattr__, __dir__ = lazy_attributes(__name__, _OLD_NAMES, globals())
