"""The trial loop on a fake store and a fake executor: no workdir, no process, no model."""

from __future__ import annotations

import contextlib
import pickle

import pytest

from nasx.experiment.execution.jobs import Job, TrialResult, WeightsSpec
from nasx.experiment.loop.trial_loop import Limits, TrialBook, TrialLoop, label_splitter
from nasx.space import Categorical, SearchSpace
from nasx.strategy import GridSearch
from nasx.trial import Trial


class FakeStore:
    """Keeps each trial's row (a copy of the Trial as written) and the order of writes."""

    def __init__(self, first_id: int = 0):
        self.rows: dict[int, Trial] = {}
        self.writes: list[tuple[str, int, str]] = []
        self.first_id = first_id

    def add(self, trial: Trial) -> None:
        assert trial.id not in self.rows, f"trial {trial.id} added twice"
        self.rows[trial.id] = Trial.from_dict(trial.to_dict())
        self.writes.append(("add", trial.id, trial.status))

    def atomic(self):
        return contextlib.nullcontext()

    def update(self, trial: Trial) -> None:
        assert trial.id in self.rows, f"trial {trial.id} updated before it was added"
        self.rows[trial.id] = Trial.from_dict(trial.to_dict())
        self.writes.append(("update", trial.id, trial.status))

    def next_id(self) -> int:
        return self.first_id + len(self.rows)

    def log_path(self, trial_id: int) -> str:
        return f"/nowhere/{trial_id}.log"


class FakeExecutor:
    """Runs up to ``capacity`` jobs 'at once'; ``wait`` finishes the newest first (results come
    back out of submission order), metric = ``metric_of(job)``."""

    def __init__(self, metric_of, capacity: int = 1):
        self.capacity, self.metric_of = capacity, metric_of
        self.running: list[Job] = []
        self.submitted: list[Job] = []
        self.most_in_flight = 0

    def submit(self, job: Job) -> None:
        assert len(self.running) < self.capacity, "submitted past capacity"
        self.running.append(job)
        self.submitted.append(job)
        self.most_in_flight = max(self.most_in_flight, len(self.running))

    def wait(self, timeout=None) -> list[TrialResult]:
        if not self.running:
            return []
        job = self.running.pop()
        metric = self.metric_of(job)
        if metric is None:
            return [TrialResult(job.id, "failed", error="RuntimeError: boom")]
        return [TrialResult(job.id, "succeeded", metric=metric, metrics={"default": metric})]


class Told(GridSearch):
    """GridSearch that records what it is told."""

    def __init__(self):
        super().__init__(shuffle=False)
        self.told: list[tuple[int, str]] = []

    def tell(self, trial):
        self.told.append((trial.id, trial.status))
        super().tell(trial)


def grid(n: int = 4) -> tuple[SearchSpace, Told]:
    space = SearchSpace({"k": Categorical(list(range(n)), label="k")})
    strategy = Told()
    strategy.setup(space, [])
    return space, strategy


def test_every_proposal_is_stored_running_then_finished_and_told_after_its_row():
    space, strategy = grid(4)
    store, executor = FakeStore(), FakeExecutor(lambda job: float(job.arch["k"]))
    loop = TrialLoop(store, executor, strategy, space, Limits())
    assert loop.run() == "the strategy has no more archs to propose"
    # the reference: GridSearch's order, one add (running) then one update per trial
    assert [(t.arch, t.status, t.metric) for t in store.rows.values()] == [
        ({"k": k}, "succeeded", float(k)) for k in range(4)
    ]
    assert store.writes == [
        w for k in range(4) for w in (("add", k, "running"), ("update", k, "succeeded"))
    ]
    assert strategy.told == [(k, "succeeded") for k in range(4)]
    assert loop.book.unfinished == {} and dict(loop.book.counts) == {"running": 0, "succeeded": 4}


def test_jobs_carry_the_split_the_seed_and_the_log_path():
    space = SearchSpace({"k": Categorical([1, 2], label="k"), "lr": Categorical([0.1], label="lr")})
    strategy = Told()
    strategy.setup(space, [])
    store, executor = FakeStore(), FakeExecutor(lambda job: 1.0)
    TrialLoop(
        store,
        executor,
        strategy,
        space,
        Limits(),
        seed=10,
        split=label_splitter(frozenset({"k"}), frozenset({"lr"})),
    ).run()
    assert executor.submitted == [
        Job(0, {"k": 1}, {"lr": 0.1}, log_path="/nowhere/0.log", seed=10),
        Job(1, {"k": 2}, {"lr": 0.1}, log_path="/nowhere/1.log", seed=11),
    ]
    assert [(t.arch, t.hparams) for t in store.rows.values()] == [
        ({"k": 1}, {"lr": 0.1}),
        ({"k": 2}, {"lr": 0.1}),
    ]


def test_the_executor_is_kept_full_and_results_out_of_order_land_on_their_trials():
    space, strategy = grid(6)
    store, executor = FakeStore(), FakeExecutor(lambda job: job.arch["k"] * 10.0, capacity=3)
    TrialLoop(store, executor, strategy, space, Limits()).run()
    assert executor.most_in_flight == 3
    assert {t.id: t.metric for t in store.rows.values()} == {k: k * 10.0 for k in range(6)}
    assert sorted(strategy.told) == [(k, "succeeded") for k in range(6)]
    assert strategy.told != sorted(strategy.told)  # they did come back out of order


def test_rejected_archs_are_stored_unrun_told_and_stop_the_loop_after_patience():
    space, strategy = grid(8)
    store, executor = FakeStore(), FakeExecutor(lambda job: 1.0)
    admit = lambda arch: None if arch["k"] < 2 else f"k {arch['k']} too big"  # noqa: E731
    loop = TrialLoop(store, executor, strategy, space, Limits(), admit=admit, patience=3)
    reason = loop.run()
    assert reason == "the filter rejected 3 archs in a row (patience 3); last: k 4 too big"
    assert [(t.id, t.status, t.error) for t in store.rows.values()] == [
        (0, "succeeded", None),
        (1, "succeeded", None),
        (2, "rejected", "k 2 too big"),
        (3, "rejected", "k 3 too big"),
        (4, "rejected", "k 4 too big"),
    ]
    unrun = [store.rows[i] for i in (2, 3, 4)]
    assert all(t.duration == 0.0 and t.end_time == t.start_time for t in unrun)
    assert [w[0] for w in store.writes if w[1] >= 2] == ["add"] * 3  # one write each, no update
    assert strategy.told[2:] == [(2, "rejected"), (3, "rejected"), (4, "rejected")]
    assert len(executor.submitted) == 2


def test_a_filter_that_raises_fails_the_trial_and_the_search_goes_on():
    space, strategy = grid(3)
    store, executor = FakeStore(), FakeExecutor(lambda job: 1.0)

    def admit(arch):
        if arch["k"] == 1:
            raise MemoryError("cannot build")
        return None

    TrialLoop(store, executor, strategy, space, Limits(), admit=admit).run()
    assert [t.status for t in store.rows.values()] == ["succeeded", "failed", "succeeded"]
    assert store.rows[1].error == "FilterError: the filter raised MemoryError: cannot build"


def test_limits_count_trials_of_every_status_but_rejected():
    space, strategy = grid(10)
    store, executor = FakeStore(), FakeExecutor(lambda job: None if job.arch["k"] % 2 else 1.0)
    loop = TrialLoop(store, executor, strategy, space, Limits(max_failed_trials=1))
    assert loop.run() == "2 trials failed, more than max_failed_trials (1)"
    assert [t.status for t in store.rows.values()] == ["succeeded", "failed"] * 2

    space, strategy = grid(10)
    store = FakeStore()
    admit = lambda arch: "no" if arch["k"] in (1, 2) else None  # noqa: E731
    loop = TrialLoop(store, FakeExecutor(lambda job: 1.0), strategy, space, Limits(3), admit=admit)
    assert loop.run() == "max_trials (3) reached"
    assert [t.status for t in store.rows.values()] == ["succeeded", "rejected", "rejected"] + [
        "succeeded"
    ] * 2


def test_interrupted_trials_rerun_first_even_past_max_trials():
    space, strategy = grid(4)
    store = FakeStore()
    old = [Trial(0, {"k": 3}, "succeeded", metric=3.0), Trial(1, {"k": 2}, "running")]
    for t in old:
        store.add(t)
    strategy.setup(space, old)
    book = TrialBook({1: old[1]})
    book.counts.update(t.status for t in old)
    executor = FakeExecutor(lambda job: float(job.arch["k"]))
    loop = TrialLoop(store, executor, strategy, space, Limits(max_trials=2), book=book)
    assert loop.run(queue=[old[1]]) == "max_trials (2) reached"
    assert [job.id for job in executor.submitted] == [1]  # the re-run, then nothing new
    assert store.rows[1].status == "succeeded" and store.rows[1].metric == 2.0
    assert store.writes[-2:] == [("update", 1, "running"), ("update", 1, "succeeded")]


def test_keeper_and_callbacks_see_each_trial_after_its_row():
    space, strategy = grid(2)
    store = FakeStore()
    seen = []

    class Keeper:
        def job_spec(self):
            return WeightsSpec("/w", threshold=0.5)

        def finished(self, trial, result):
            seen.append(("keeper", trial.id, store.rows[trial.id].status))

    executor = FakeExecutor(lambda job: 1.0)
    TrialLoop(
        store,
        executor,
        strategy,
        space,
        Limits(),
        keeper=Keeper(),
        on_finished=lambda t: seen.append(("callback", t.id, store.rows[t.id].status)),
    ).run()
    assert seen == [
        ("keeper", 0, "succeeded"),
        ("callback", 0, "succeeded"),
        ("keeper", 1, "succeeded"),
        ("callback", 1, "succeeded"),
    ]
    assert all(job.weights == WeightsSpec("/w", threshold=0.5) for job in executor.submitted)


def test_an_invalid_proposal_names_the_strategy():
    space, strategy = grid(2)
    strategy.propose = lambda: {"k": 7}
    from nasx.space import InvalidArchError

    loop = TrialLoop(FakeStore(), FakeExecutor(lambda job: 1.0), strategy, space, Limits())
    with pytest.raises(InvalidArchError, match="strategy Told proposed an invalid arch"):
        loop.run()


def test_jobs_and_results_pickle_and_old_dict_jobs_still_run():
    job = Job(3, {"k": [0, 1]}, {"lr": 0.1}, "/x.log", 7, WeightsSpec(None, 0.2, "minimize", {}))
    result = TrialResult(3, "succeeded", 0.5, {"default": 0.5}, [0.1], 1.0, 2.0, 1.0)
    assert pickle.loads(pickle.dumps(job)) == job
    assert pickle.loads(pickle.dumps(result)) == result
    assert Job.of(
        {"id": 3, "arch": {"k": [0, 1]}, "weights": {"dir": None, "threshold": 0.2}}
    ) == Job(3, {"k": [0, 1]}, weights=WeightsSpec(None, 0.2))
    with pytest.raises(TypeError, match="a job has no field"):
        Job.of({"id": 0, "arch": {}, "sede": 1})
    assert job.remote().log_path is None and job.remote().weights.directory is None
