"""A scheduled experiment (ASHA over a table of learning curves) for the tests that run it in
worker processes, on Ray, or in a child process they SIGKILL; and the checks its store must pass.

As a script, ``python -m tests.experiment.scheduled_helpers WORKDIR EXECUTION KILL_AT JOURNAL
[WORKERS [RAY_ADDRESS]]`` runs (or resumes) the experiment with ``WORKERS`` trials at once
(default: 1 sequential, else 2), on the Ray cluster at ``RAY_ADDRESS`` for ``EXECUTION`` ray;
``KILL_AT`` > 0 SIGKILLs this process at its ``KILL_AT``-th write to the store (before the write
when odd, after it when even: inside the store's transactions too), 0 never. Every job and epoch
the evaluator trains is appended to ``JOURNAL``.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

import torch.nn as nn

from nasx.experiment.loop.scheduled import JOBS_KEY, STATE_KEY
from nasx.experiment.schedulers import ASHA, LearningCurves
from nasx.experiment.storage.store import TrialStore
from nasx.space import ModelSpace, choice

WIDTHS = list(range(1, 9))
ARCHS = [{"w": w, "d": d} for w in WIDTHS for d in WIDTHS]
CURVES = LearningCurves.synthetic(ARCHS, epochs=9, seed=0)
BUDGETS = [1, 3, 9]
N_TRIALS = 20


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(choice("w", WIDTHS), choice("d", WIDTHS))


class FromList:
    """Proposes a fixed shuffled list of archs (the same in every run and every resume)."""

    def __init__(self, n=N_TRIALS, seed=1):
        self.archs = random.Random(seed).sample(ARCHS, n + 5)

    def setup(self, search_space, trials=(), direction="maximize"):
        self.next = len(list(trials))

    def propose(self):
        if self.next >= len(self.archs):
            return None
        self.next += 1
        return dict(self.archs[self.next - 1])

    def tell(self, trial):
        pass


def key(arch) -> str:
    return f"{arch['w']}-{arch['d']}"


class Journaled:
    """Trains ``budget`` epochs of the arch's table curve (``seconds`` each), reporting each;
    appends ``job <arch> <budget>`` when a job begins and ``epoch <arch> <n>`` after each
    epoch to ``journal`` (one ``write`` per line: lines of parallel workers never mix)."""

    def __init__(self, journal: str | Path, seconds: float = 0.0):
        self.journal, self.seconds = str(journal), seconds

    def _write(self, line: str) -> None:
        fd = os.open(self.journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def evaluate(self, model, report=None, arch=None, budget=None):
        row = CURVES.row(arch)
        self._write(f"job {key(arch)} {budget}")
        for epoch in range(budget):
            time.sleep(self.seconds)
            self._write(f"epoch {key(arch)} {epoch + 1}")
            report(CURVES.val[row][epoch])
        return CURVES.val[row][budget - 1]


class ContinuingJournaled(Journaled):
    """:class:`Journaled`, continuing from its checkpoint: a job trains (and journals) only the
    epochs after the state it loads. It refuses a checkpoint folder inside ``workdir``: a
    remote worker must get a folder of its own, as a task on another machine would need."""

    def __init__(self, journal: str | Path, workdir: str | Path):
        super().__init__(journal)
        self.workdir = str(Path(workdir).resolve())

    def evaluate(self, model, report=None, arch=None, budget=None, checkpoint=None):
        folder = str(Path(checkpoint.directory).resolve())
        assert not folder.startswith(self.workdir), f"{folder} is in the workdir"
        state = checkpoint.load()
        start = 0 if state is None else state["epoch"]
        assert start == checkpoint.from_budget, (start, checkpoint.from_budget)
        row = CURVES.row(arch)
        self._write(f"job {key(arch)} {budget}")
        for epoch in range(start, budget):
            self._write(f"epoch {key(arch)} {epoch + 1}")
            report(CURVES.val[row][epoch])
        checkpoint.save({"epoch": budget})
        return CURVES.val[row][budget - 1]


def read_journal(path: str | Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The jobs ``(arch, budget)`` and the epochs ``(arch, n)`` of a journal, in order."""
    jobs, epochs = [], []
    for line in Path(path).read_text().splitlines():
        kind, arch, n = line.split()
        (jobs if kind == "job" else epochs).append((arch, int(n)))
    return jobs, epochs


def experiment(
    workdir,
    journal,
    execution="sequential",
    mode="promotion",
    seconds=0.0,
    workers=None,
    scheduler=None,
    order=1,
    evaluator=None,
    **kwargs,
):
    """The experiment: ``scheduler`` (default: ``ASHA(1, 9, eta=3, mode=mode)``) over the table,
    ``workers`` trials at once (default: 1 sequential, else 2), the archs in the order
    :class:`FromList` draws with seed ``order``; ``evaluator`` (default: :class:`Journaled`
    writing to ``journal``)."""
    from nasx.experiment import NasExperiment

    if workers is None:
        workers = 1 if execution == "sequential" else 2

    return NasExperiment(
        Net(),
        evaluator if evaluator is not None else Journaled(journal, seconds),
        FromList(seed=order),
        workdir=workdir,
        build_model=False,
        progress=False,
        scheduler=scheduler if scheduler is not None else ASHA(1, 9, eta=3, mode=mode),
        max_trials=N_TRIALS,
        execution=execution,
        max_concurrent_trials=workers,
        seed=0,
        **kwargs,
    )


def stored(workdir) -> tuple[list, dict]:
    """The trials and the meta of the experiment in ``workdir``."""
    store = TrialStore(workdir, lock=False, read_only=True)
    try:
        return store.trials(), store.meta()
    finally:
        store.close()


def check_rungs(workdir, mode="promotion") -> None:
    """Nothing lost between the trials' rows and the scheduler's stored state: every trial sits
    in each rung up to the budget it reached with the value it reported there, and in no rung
    above; a trial promoted out of a rung trained past it; no job or promotion is left over."""
    trials, meta = stored(workdir)
    state, jobs = meta[STATE_KEY], meta[JOBS_KEY]
    assert jobs == {"jobs": {}, "promotions": []}, jobs
    assert state["target"] == [] and state["dead"] == []
    rungs = [dict((t, v) for t, v in rung) for rung in state["rungs"]]
    for t in trials:
        assert t.status in ("paused", "pruned", "succeeded"), (t.id, t.status, t.error)
        assert t.intermediates == CURVES.val[CURVES.row(t.arch)][: t.budget], t.id
        for k, b in enumerate(BUDGETS):
            if b <= t.budget:
                assert rungs[k].get(t.id) == [t.intermediates[b - 1]], (t.id, b)
            else:
                assert t.id not in rungs[k], (t.id, b)
        if mode == "promotion":
            for k, b in enumerate(BUDGETS[:-1]):
                assert (t.id in state["promoted"][k]) == (t.budget > b), (t.id, b)
    assert sum(len(r) for r in rungs) == sum(sum(b <= t.budget for b in BUDGETS) for t in trials)


def _kill_at_write(n: int) -> None:
    """SIGKILL this process at its ``n``-th write to a TrialStore (odd: before it, even: after)."""
    count = [0]

    def wrap(method):
        def write(self, *args, **kwargs):
            count[0] += 1
            if count[0] == n and n % 2 == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            result = method(self, *args, **kwargs)
            if count[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return write

    for name in ("add", "update", "set_meta", "set_meta_all"):
        setattr(TrialStore, name, wrap(getattr(TrialStore, name)))


def _join_ray(address: str) -> None:
    """Connect this process (a driver) to the Ray cluster at ``address``; its tasks import the
    tests' modules, as the pytest process's do (tests/experiment/conftest.py)."""
    import ray

    paths = os.pathsep.join(p for p in sys.path if p)
    ray.init(address=address, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": paths}})


if __name__ == "__main__":
    workdir, execution, kill_at, journal = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    workers = int(sys.argv[5]) if len(sys.argv) > 5 else None
    if execution == "ray":
        _join_ray(sys.argv[6])
    if kill_at > 0:
        _kill_at_write(kill_at)
    print("ready", flush=True)
    experiment(workdir, journal, execution, seconds=0.05, workers=workers, resume=True).run()
    print("done", flush=True)
