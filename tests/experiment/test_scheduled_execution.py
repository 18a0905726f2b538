"""A multi-fidelity scheduler deciding for trials in worker processes and Ray tasks: each
``report`` asks the experiment and waits, so a pruned trial stops at the report that prunes it;
promotions of trials whose pausing job is still in flight wait for it; the jobs in flight and
their answers are stored, so a resumed run answers a re-run job as before."""

from __future__ import annotations

import asyncio
import collections
import json

import pytest

from nasx.evaluator.checkpoint import saved_budgets
from nasx.experiment.execution.jobs import Job
from nasx.experiment.execution.local import ProcessPoolExecutor
from nasx.experiment.execution.ray import DecisionBox
from nasx.experiment.execution.runner import no_model
from nasx.experiment.loop.scheduled import JOBS_KEY, STATE_KEY, ScheduledRun, check_scheduler
from nasx.experiment.schedulers import ASHA
from nasx.trial import Trial

from .scheduled_helpers import (
    BUDGETS,
    CURVES,
    N_TRIALS,
    ContinuingJournaled,
    check_rungs,
    experiment,
    key,
    read_journal,
)


def _trained(journal):
    """Epochs trained per arch, from the evaluator's journal."""
    return collections.Counter(arch for arch, _ in read_journal(journal)[1])


@pytest.mark.parametrize("mode", ["stopping", "promotion"])
def test_the_process_pool_asks_the_scheduler_at_each_report(tmp_path, mode):
    journal = tmp_path / "journal"
    exp = experiment(tmp_path / "exp", journal, "process", mode=mode)
    exp.run()
    trials = exp.trials()
    assert len(trials) == N_TRIALS and exp.stop_reason == f"max_trials ({N_TRIALS}) reached"
    check_rungs(tmp_path / "exp", mode)
    statuses = collections.Counter(t.status for t in trials)
    if mode == "stopping":
        # every job aims at budget 9: a pruned trial trained exactly up to the report that
        # pruned it (it stopped there, in its worker), not to its job's end
        assert statuses["pruned"] >= 3 and {t.budget for t in trials} >= {1, 9}
        trained = _trained(journal)
        assert {key(t.arch): t.budget for t in trials} == dict(trained)
    else:
        assert statuses["paused"] >= 10 and any(t.budget == 9 for t in trials)


class _Raises(ASHA):
    def report(self, trial, budget, value):
        raise ValueError(f"no rung for trial {trial}")


def test_a_scheduler_error_fails_the_trial_in_its_worker(tmp_path):
    def fn(model, budget, report):
        report(0.5)
        return 0.5

    pool = ProcessPoolExecutor(no_model, fn, 1, tmp_path)
    pool.decide = _Raises().report
    try:
        pool.submit(Job(0, {}, budget=3))
        results = []
        while not results:
            results = pool.wait(timeout=60)
    finally:
        pool.shutdown()
    assert results[0].status == "failed"
    assert results[0].error.startswith("DecisionError: ValueError: no rung for trial 0")


def test_a_promotion_waits_for_the_trial_s_pausing_job_to_end():
    run = ScheduledRun(ASHA(1, 9, eta=3))
    for trial in range(3):  # three trials in flight at budget 1
        run.started(trial, run.next_assignment(allow_new=True))
    run.decide(0, 1, 0.1)
    run.decide(1, 1, 0.2)
    assert run.decide(2, 1, 0.9) == "pause"  # trial 2's result is not back yet...
    job = run.next_assignment(allow_new=True)  # ...so its promotion waits; a new trial meanwhile
    assert job.trial is None and [a.trial for a in run.promotions] == [2]
    run.finished(Trial(2, {}, "paused", budget=1))
    promoted = run.next_assignment(allow_new=True)
    assert (promoted.trial, promoted.budget, promoted.from_budget) == (2, 3, 1)
    assert run.promote(promoted).id == 2 and run.promotions == []


class _MetaStore:
    """Keeps the meta as nasx.db does: through JSON."""

    def __init__(self):
        self.meta = {}

    def set_meta_all(self, meta):
        self.meta.update(json.loads(json.dumps(meta)))


def _stored_state(store):
    return {"state": store.meta[STATE_KEY], "jobs": store.meta[JOBS_KEY]}


def test_a_resumed_run_answers_a_re_run_job_as_before_and_knows_its_budget():
    store = _MetaStore()
    first = ScheduledRun(ASHA(1, 9, eta=3, mode="stopping"), store)
    for trial, value in enumerate([0.5, 0.9, 0.1]):
        first.started(trial, first.next_assignment(allow_new=True))
        first.decide(trial, 1, value)
    first.save()  # (the loop saves at the next assignment or result)
    answers = {t: first.decide(t, 1, v) for t, v in enumerate([0.5, 0.9, 0.1])}
    assert answers == {0: "continue", 1: "continue", 2: "prune"}

    running = [Trial(t, {}, "running", budget=9) for t in range(3)]
    resumed = ScheduledRun(
        ASHA(1, 9, eta=3, mode="stopping"), store, running, **_stored_state(store)
    )
    assert resumed.jobs[2] == (9, 0)
    resumed.rerun(running[2])
    assert resumed.job_fields(2, 9) == {"from_budget": 0, "decided_budget": 0}
    # the scheduler heard these reports already: asked again it would record them twice
    assert {t: resumed.decide(t, 1, v) for t, v in enumerate([0.5, 0.9, 0.1])} == answers
    assert resumed.scheduler.state_dict() == first.scheduler.state_dict()
    assert resumed.decide(1, 3, 0.95) == "continue"  # beyond: the scheduler answers
    assert store.meta[JOBS_KEY]["jobs"]["2"] == [9, 0, [[1, "prune"]]]


def test_a_job_whose_row_failed_on_resume_counts_as_failed():
    store = _MetaStore()
    first = ScheduledRun(ASHA(1, 9, eta=3), store)
    first.started(0, first.next_assignment(allow_new=True))
    crashed = Trial(0, {}, "failed", error="Crashed: ...")
    resumed = ScheduledRun(ASHA(1, 9, eta=3), store, [crashed], **_stored_state(store))
    assert resumed.jobs == {} and resumed.scheduler.dead == {0}


def test_the_scheduler_refuses_an_execution_whose_workers_cannot_ask_it():
    with pytest.raises(NotImplementedError, match="execution in .*'sequential'.*not 'mpi'"):
        check_scheduler(ASHA(), lambda model, budget: 1.0, False, "mpi")


def test_the_decision_box_answers_each_trial_its_own_question():
    async def rounds():
        box = DecisionBox()
        first = asyncio.ensure_future(box.ask(0, 1, 0.5))
        second = asyncio.ensure_future(box.ask(1, 1, 0.7))
        gone = asyncio.ensure_future(box.ask(2, 1, 0.1))
        asked = await box.questions()
        gone.cancel()  # a trial cancelled while waiting (trial_timeout): its answer is dropped
        await box.answer(2, "continue")
        await box.answer(1, "prune")
        await box.answer(0, "pause")
        later = asyncio.ensure_future(box.questions())  # waits for the next question
        await asyncio.sleep(0.01)
        waited = not later.done()
        third = asyncio.ensure_future(box.ask(0, 3, 0.6))
        again = await later
        await box.answer(0, "complete")
        return asked, await first, await second, waited, again, await third

    asked, first, second, waited, again, third = asyncio.run(rounds())
    assert asked == [(0, 1, 0.5), (1, 1, 0.7), (2, 1, 0.1)]
    assert (first, second, third) == ("pause", "prune", "complete")
    assert waited and again == [(0, 3, 0.6)]


def test_ray_tasks_ask_the_scheduler_at_each_report(tmp_path, ray_cluster):
    pytest.importorskip("ray")
    journal = tmp_path / "journal"
    exp = experiment(tmp_path / "exp", journal, "ray", mode="stopping")
    exp.run()
    trials = exp.trials()
    assert len(trials) == N_TRIALS
    check_rungs(tmp_path / "exp", "stopping")
    assert sum(t.status == "pruned" for t in trials) >= 3
    # each trial trained up to the report that stopped it, in its Ray task
    assert {key(t.arch): t.budget for t in trials} == dict(_trained(journal))


def test_ray_tasks_continue_promoted_trials_from_checkpoints_that_travel(tmp_path, ray_cluster):
    """On a cluster the workdir may be on another machine: each task keeps the checkpoint in a
    folder of its own, the state to continue from goes out with the job, the state saved comes
    back with the result and the experiment writes it into the trial's folder."""
    pytest.importorskip("ray")
    journal, workdir = tmp_path / "journal", tmp_path / "exp"
    exp = experiment(workdir, journal, "ray", evaluator=ContinuingJournaled(journal, workdir))
    exp.run()
    trials = exp.trials()
    assert len(trials) == N_TRIALS
    check_rungs(workdir)
    # every epoch of every trial trained once: each promotion continued from the state that
    # travelled, none trained again from scratch
    epochs = read_journal(journal)[1]
    assert len(epochs) == len(set(epochs)) == sum(t.budget for t in trials)
    assert {key(t.arch): t.budget for t in trials} == dict(_trained(journal))
    promoted = [t for t in trials if t.budget > 1]
    assert promoted
    # a paused trial's state at its budget is in its folder here, written by the experiment
    for t in trials:
        folder = workdir / "trials" / str(t.id) / "checkpoint"
        if t.status == "paused":
            assert saved_budgets(folder) == [t.budget], (t.id, t.budget)
        else:
            assert not folder.exists()


def test_the_helpers_rungs_are_the_schedulers():
    assert BUDGETS == ASHA(1, 9, eta=3).budgets and len(CURVES.val[0]) == 9
