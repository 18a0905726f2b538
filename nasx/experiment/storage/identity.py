"""Which experiment a workdir holds: the meta stored in ``nasx.db``, and the check on resume.

A run writes :func:`experiment_meta` (the space's class and fingerprint, the strategy's and the
evaluator's settings, the direction) when it creates the store; a resume compares it with what
is stored (:func:`differences`) and refuses another experiment, naming what differs, before
anything is written. Multi-trial and one-shot runs go through the same :func:`open_store`.

    >>> stored = {'space': 'Net', 'strategy_config': {'type': 'Random', 'seed': 0}}
    >>> meta = {'space': 'Net', 'search_space': {}, 'strategy_config': {'type': 'Random', 'seed': 1}}
    >>> differences(stored, meta)
    ["strategy setting 'seed': was 0, now 1"]
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nasx._config import describe
from nasx.experiment.storage.store import ExperimentDirError, TrialStore, remove_experiment
from nasx.space import BaseModelSpace, SearchSpace, fingerprint_differences, space_fingerprint

_log = logging.getLogger("nasx.experiment")

__all__ = [
    "adopt_stored_seed",
    "differences",
    "experiment_meta",
    "open_store",
    "setting_differences",
    "space_differences",
]


def experiment_meta(
    model_space: BaseModelSpace,
    strategy: Any,
    evaluator: Any,
    direction: str,
    space: SearchSpace | None = None,
    hparam_space: SearchSpace | None = None,
) -> dict[str, Any]:
    """What identifies an experiment, as it reads back from the store (tuples as lists).

    ``space``: the search space (a one-shot run passes none: its labels come from the space's
    fingerprint alone).
    """
    meta: dict[str, Any] = {
        "space": type(model_space).__qualname__,  # not the module: __main__ may resume elsewhere
        "fingerprint": space_fingerprint(model_space),
        "strategy": type(strategy).__name__,
        "strategy_seed": getattr(strategy, "seed", None),
        "strategy_config": describe(strategy),
        "evaluator_config": describe(evaluator),
        "direction": direction,
    }
    if space is not None:
        meta["search_space"] = {label: repr(c) for label, c in space.items()}
        if space.constraints:
            meta["constraints"] = [c.label for c in space.constraints]
    if hparam_space:  # written only when there are any: older experiments compare as before
        meta["hparam_space"] = {label: repr(c) for label, c in hparam_space.items()}
    decoded: dict[str, Any] = json.loads(json.dumps(meta, default=repr))
    return decoded


def differences(stored: Mapping[str, Any], meta: Mapping[str, Any]) -> list[str]:
    """What differs between the stored experiment and this one, one line each (keys an older
    nasx did not store are not compared)."""
    return space_differences(stored, meta) + setting_differences(stored, meta)


def space_differences(stored: Mapping[str, Any], meta: Mapping[str, Any]) -> list[str]:
    """What differs in the space (its class, labels and candidates) and the evaluator's choices:
    a resume can never accept these (the stored archs would mean other models)."""
    lines = []
    if stored.get("space") != meta["space"]:
        lines.append(f"space class: was {stored.get('space')}, now {meta['space']}")
    key = "fingerprint" if "fingerprint" in stored else "search_space"
    lines += fingerprint_differences(stored.get(key, {}), meta.get(key, {}))
    lines += [
        f"evaluator {line}"
        for line in fingerprint_differences(
            stored.get("hparam_space", {}), meta.get("hparam_space", {})
        )
    ]
    return lines


def setting_differences(stored: Mapping[str, Any], meta: Mapping[str, Any]) -> list[str]:
    """What differs in the strategy's and the evaluator's settings (``resume="force"`` accepts
    these). A setting the stored experiment did not record (written by an older nasx) is not
    compared.

    >>> stored = {'evaluator_config': {'type': 'Classification', 'cuda_graphs': None}}
    >>> now = {'evaluator_config': {'type': 'Classification', 'cuda_graphs': None,
    ...                             'learning_rate': 0.5}}
    >>> setting_differences(stored, now)
    []
    >>> stored['evaluator_config']['learning_rate'] = 0.001
    >>> setting_differences(stored, now)
    ["evaluator setting 'learning_rate': was 0.001, now 0.5"]
    """
    lines = []
    for key, what in (("strategy_config", "strategy"), ("evaluator_config", "evaluator")):
        if key not in stored or stored[key] == meta.get(key):
            continue
        lines += _setting_differences(what, stored[key], meta[key])
    return lines


def _setting_differences(what: str, stored: dict[str, Any], now: dict[str, Any]) -> list[str]:
    if stored.get("type") != now.get("type"):
        return [f"{what}: was {stored.get('type')}, now {now.get('type')}"]
    recorded = {k: v for k, v in now.items() if k in stored}
    return [f"{what} {line}" for line in fingerprint_differences(stored, recorded, "setting")]


def open_store(
    workdir: Path,
    meta: dict[str, Any],
    *,
    resume: bool | str,
    overwrite: bool,
    continuing: bool = False,
) -> tuple[TrialStore, dict[str, Any]]:
    """The store of ``workdir`` for a run of the experiment ``meta``, and the stored meta.

    A new store when there is none (or ``overwrite``: the stored experiment is deleted first);
    the stored one when it holds this experiment and ``resume`` (or ``continuing``: a second
    ``run()`` of the same object). ``resume="force"`` also accepts other strategy or evaluator
    settings (never another space): they are logged and stored as the experiment's settings
    from then on. Anything else is an :class:`ExperimentDirError` that says what differs, and
    nothing is changed.
    """
    if overwrite and not continuing:
        remove_experiment(workdir)
    if not TrialStore.exists(workdir):
        record = {**meta, "created": time.time(), "launch": _launch_record()}
        store = TrialStore.create(workdir, record)
        _log.info("new experiment in %s", workdir)
        return store, record
    store = TrialStore(workdir)
    try:
        stored = store.meta()
        if not stored and not store.trials():  # a creation cut short (killed) before its meta
            record = {**meta, "created": time.time(), "launch": _launch_record()}
            store.set_meta_all(record)
            return store, record
        _check_same(workdir, stored, meta, force=resume == "force")
        if not (resume or continuing):
            raise ExperimentDirError(
                f"{workdir} already holds an experiment with {len(store.trials())} trials; "
                "pass resume=True to continue it, or choose another workdir (nothing was changed)"
            )
        if resume == "force" and setting_differences(stored, meta):
            _log.warning(
                "%s: resuming with other settings, as resume='force' asks: %s",
                workdir,
                "; ".join(setting_differences(stored, meta)),
            )
            for key in ("strategy_config", "evaluator_config"):
                store.set_meta(key, meta[key])
                stored[key] = meta[key]
    except BaseException:
        store.close()
        raise
    return store, stored


def _check_same(
    workdir: Path, stored: dict[str, Any], meta: dict[str, Any], *, force: bool = False
) -> None:
    space = space_differences(stored, meta)
    settings = setting_differences(stored, meta)
    found = space + ([] if force else settings)
    if found:
        shown = "; ".join(found[:8]) + ("; ..." if len(found) > 8 else "")
        labels = len(stored.get("search_space", {}))
        forcing = (
            ', or pass resume="force" to continue it with the new settings on purpose'
            if settings and not space
            else ""
        )
        raise ExperimentDirError(
            f"{workdir} holds another experiment (space {stored.get('space')}, {labels} labels, "
            f"strategy {stored.get('strategy')}) than this one: {shown}. Resuming would mix the "
            "two; to start fresh choose another workdir, or pass overwrite=True to delete the "
            f"stored experiment{forcing} (nothing was changed)"
        )
    if stored.get("direction") != meta["direction"]:
        raise ExperimentDirError(
            f"{workdir} holds an experiment that {stored.get('direction')}s its metric, this one "
            f"would {meta['direction']} it; choose another workdir (nothing was changed)"
        )


def adopt_stored_seed(strategy: Any, stored: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
    """An unseeded strategy resumes its own sequence: it takes the seed it drew the first time."""
    if (
        not getattr(strategy, "seed_given", True)
        and stored.get("strategy") == meta["strategy"]
        and stored.get("strategy_seed") is not None
    ):
        strategy.seed = stored["strategy_seed"]


def _launch_record() -> dict[str, Any]:
    """How this process was started, so that ``nasx resume`` can start it again."""
    return {"argv": list(sys.argv), "cwd": os.getcwd(), "python": sys.executable}
