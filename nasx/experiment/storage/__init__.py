"""Internal: what an experiment keeps in its workdir (import the public names from :mod:`nasx.experiment`).

- :mod:`.store`: ``nasx.db`` (SQLite) and the trial folders; :mod:`.stored`: rows read back;
- :mod:`.identity`: which experiment a workdir holds, and the check on resume;
- :mod:`.migrate` and :mod:`.readonly`: older workdirs, and reading without writing;
- :mod:`.weights`: each trial's kept weights.
"""

from nasx._lazy import lazy_attributes

# what ``nasx.experiment.storage`` held when it was one module (now :mod:`.store`), still there
_OLD_NAMES = {
    "DB_NAME": "nasx.experiment.storage.store",
    "DamagedStoreError": "nasx.experiment.storage.store",
    "ExperimentDirError": "nasx.experiment.storage.store",
    "LOCK_NAME": "nasx.experiment.storage.store",
    "LOCK_PID_NAME": "nasx.experiment.storage.store",
    "TRIALS_DIR": "nasx.experiment.storage.store",
    "TrialStore": "nasx.experiment.storage.store",
    "best_stored": "nasx.experiment.storage.store",
    "has_column": "nasx.experiment.storage.store",
    "has_hparams_column": "nasx.experiment.storage.store",
    "load_trials": "nasx.experiment.storage.store",
    "remove_experiment": "nasx.experiment.storage.store",
}
__getattr__, __dir__ = lazy_attributes(__name__, _OLD_NAMES, globals())
