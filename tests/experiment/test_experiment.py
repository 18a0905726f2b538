"""NasExperiment end to end on a 6-arch space, sequential execution: results against hand-computed
metrics, storage layout, limits, filters, resume and bad input."""

from __future__ import annotations

import json
import math

import pytest
import torch.nn as nn

from nasx.experiment import ExperimentDirError, NasExperiment, TrialStore, load_trials
from nasx.space import InvalidArchError, LayerChoice
from nasx.strategy import GridSearch, ParamCountFilter, Random, RegularizedEvolution
from nasx.strategy.base import Strategy
from nasx.trial import Trial, failure_kind

from .helpers import FailOnTanh, Returns, SmallNet, reference_metric, width_metric


def test_grid_search_runs_every_arch_with_the_right_metric(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path)
    exp.run()
    trials = exp.trials()
    assert [t.id for t in trials] == list(range(6))
    assert all(t.status == "succeeded" for t in trials)
    for t in trials:
        assert t.metric == reference_metric(t.arch)
        assert t.metrics == {"default": t.metric}
        assert t.duration >= 0 and t.end_time >= t.start_time
        # one folder per trial with its arch as JSON, and a log
        assert json.loads((tmp_path / "trials" / str(t.id) / "arch.json").read_text()) == t.arch
        assert "arch" in (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
    assert exp.stop_reason == "the strategy has no more archs to propose"


def test_export_top_models_dict_and_instance(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path)
    exp.run()
    assert exp.export_top_models(top_k=3) == [
        {"width": 8, "act": 1},
        {"width": 8, "act": 0},
        {"width": 4, "act": 1},
    ]
    (model,) = exp.export_top_models(formatter="instance")
    # Same structure as the hand-written model of the best arch.
    assert (
        isinstance(model.act, nn.Tanh)
        and model.fc1.out_features == 8
        and model.fc2.in_features == 8
    )
    assert not any("LayerChoice" in type(m).__name__ for m in model.modules())
    with pytest.raises(ValueError, match="formatter"):
        exp.export_top_models(formatter="code")


def test_minimize_direction_orders_the_export(tmp_path):
    exp = NasExperiment(
        SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path, direction="minimize"
    )
    exp.run()
    assert exp.export_top_models() == [{"width": 2, "act": 0}]


def test_failing_trial_is_recorded_with_its_error_and_the_experiment_goes_on(tmp_path):
    exp = NasExperiment(SmallNet(), FailOnTanh(), GridSearch(shuffle=False), workdir=tmp_path)
    exp.run()
    trials = exp.trials()
    failed = [t for t in trials if t.status == "failed"]
    assert [t.arch["act"] for t in failed] == [1, 1, 1]
    for t in failed:
        assert t.error.startswith("RuntimeError: tanh is not supported by this evaluator")
        assert "Traceback" in t.error and t.metric is None
        assert (
            "tanh is not supported" in (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
        )
    ok = [t for t in trials if t.status == "succeeded"]
    assert len(ok) == 3
    for t in ok:
        assert t.intermediates == [0.0, 1.0, 2.0]
        assert t.metrics == {
            "default": reference_metric(t.arch),
            "params": 4 * t.arch["width"] + 2 * t.arch["width"] + 1,
        }
    table = str(exp.trial_table())
    assert "failed" in table and "RuntimeError: tanh" in table


@pytest.mark.parametrize(
    "value, message",
    [
        (float("nan"), "trial 0: the metric must be finite, got nan"),
        (None, "trial 0: the evaluator returned None"),
        ("0.9", "trial 0: the metric must be a real number, got str '0.9'"),
        ({"acc": 0.9}, "trial 0: a metric dict needs a 'default' key"),
        (math.inf, "trial 0: the metric must be finite, got inf"),
    ],
)
def test_evaluator_returning_a_non_number_fails_the_trial_clearly(tmp_path, value, message):
    exp = NasExperiment(SmallNet(), Returns(value), Random(seed=0), workdir=tmp_path, max_trials=2)
    exp.run()
    trials = exp.trials()
    assert [t.status for t in trials] == ["failed", "failed"]
    assert message in trials[0].error


class BadStrategy(Strategy):
    def next_arch(self, rng):
        return {"width": 3, "act": 0}


def test_invalid_arch_from_a_custom_strategy_is_a_clear_error_and_stores_nothing(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, BadStrategy(), workdir=tmp_path)
    with pytest.raises(
        InvalidArchError,
        match=r"strategy BadStrategy proposed an invalid arch .*'width'.*\[2, 4, 8\]",
    ):
        exp.run()
    assert load_trials(tmp_path) == []


def test_directory_of_another_experiment_is_refused_and_left_untouched(tmp_path):
    NasExperiment(
        SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path, max_trials=2
    ).run()
    before = (tmp_path / "nasx.db").read_bytes(), load_trials(tmp_path)

    class OtherNet(SmallNet):
        pass

    with pytest.raises(ExperimentDirError, match="holds another experiment"):
        NasExperiment(
            OtherNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path, resume=True
        ).run()
    with pytest.raises(ExperimentDirError, match="resume=True"):
        NasExperiment(SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path).run()
    with pytest.raises(ExperimentDirError, match="minimize"):
        NasExperiment(
            SmallNet(),
            width_metric,
            GridSearch(shuffle=False),
            workdir=tmp_path,
            resume=True,
            direction="minimize",
        ).run()
    assert load_trials(tmp_path) == before[1]


def test_trials_folder_without_database_is_refused(tmp_path):
    (tmp_path / "trials").mkdir()
    with pytest.raises(ExperimentDirError, match="refusing"):
        NasExperiment(SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path).run()


def test_resume_continues_numbering_and_strategy_state(tmp_path):
    def make(workdir, max_trials, resume=False):
        strategy = RegularizedEvolution(population_size=3, sample_size=2, mutation_prob=0.5, seed=7)
        return NasExperiment(
            SmallNet(),
            width_metric,
            strategy,
            workdir=workdir,
            max_trials=max_trials,
            resume=resume,
        )

    straight = make(tmp_path / "a", 5)
    straight.run()
    make(tmp_path / "b", 3).run()
    resumed = make(tmp_path / "b", 5, resume=True)
    resumed.run()
    assert [t.id for t in resumed.trials()] == list(range(5))
    assert [t.arch for t in resumed.trials()] == [t.arch for t in straight.trials()]


def test_second_run_of_the_same_object_goes_on(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, Random(seed=1), workdir=tmp_path, max_trials=2)
    exp.run()
    exp.max_trials = 4
    exp.run()
    assert [t.id for t in exp.trials()] == [0, 1, 2, 3]


def test_interrupted_trials_are_rerun_or_marked_failed(tmp_path):
    NasExperiment(
        SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path / "a", max_trials=2
    ).run()
    # Pretend the process died while trial 2 ran: its row says 'running'.
    for d, rerun in ((tmp_path / "a", True),):
        store = TrialStore(d)
        store.add(Trial(2, {"width": 4, "act": 0}, "running", start_time=1.0))
        store.close()
        exp = NasExperiment(
            SmallNet(),
            width_metric,
            GridSearch(shuffle=False),
            workdir=d,
            resume=True,
            max_trials=3,
            rerun_interrupted=rerun,
        )
        exp.run()
        t2 = exp.trials()[2]
        assert t2.status == "succeeded" and t2.metric == 4.0
        assert len(exp.trials()) == 3  # nothing else proposed: the rerun counted toward max_trials

    NasExperiment(
        SmallNet(), width_metric, GridSearch(shuffle=False), workdir=tmp_path / "b", max_trials=2
    ).run()
    store = TrialStore(tmp_path / "b")
    store.add(Trial(2, {"width": 4, "act": 0}, "running", start_time=1.0))
    store.close()
    exp = NasExperiment(
        SmallNet(),
        width_metric,
        GridSearch(shuffle=False),
        workdir=tmp_path / "b",
        resume=True,
        max_trials=4,
        rerun_interrupted=False,
    )
    exp.run()
    trials = exp.trials()
    assert trials[2].status == "failed" and trials[2].error.startswith("Interrupted")
    assert [t.id for t in trials] == [0, 1, 2, 3] and trials[3].status == "succeeded"
    # grid search continued after the interrupted proposal instead of repeating it
    assert trials[3].arch == {"width": 4, "act": 1}


def test_max_failed_trials_stops_the_experiment(tmp_path):
    exp = NasExperiment(
        SmallNet(), Returns(None), Random(seed=0), workdir=tmp_path, max_failed_trials=1
    )
    exp.run()
    assert len(exp.trials()) == 2
    assert "more than max_failed_trials (1)" in exp.stop_reason


def test_max_duration_stops_proposing(tmp_path):
    exp = NasExperiment(
        SmallNet(), width_metric, Random(seed=0), workdir=tmp_path, max_duration=1e-9
    )
    exp.run()
    assert exp.trials() == [] and "max_duration" in exp.stop_reason


def test_param_count_filter_rejects_before_training(tmp_path):
    # params of SmallNet: 4w + w + w + 1 = 6w + 1 -> 13, 25, 49 for widths 2, 4, 8
    evaluated = []

    def metric(model):
        evaluated.append(model.fc1.out_features)
        return width_metric(model)

    exp = NasExperiment(
        SmallNet(),
        metric,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        filter=ParamCountFilter(max_params=30),
    )
    exp.run()
    rejected = exp.trials("rejected")
    assert [t.arch["width"] for t in rejected] == [8, 8]
    assert rejected[0].error == "rejected by ParamCountFilter: 49 parameters, allowed at most 30"
    assert sorted(evaluated) == [2, 2, 4, 4]
    assert exp.export_top_models() == [{"width": 4, "act": 1}]


def test_filter_patience_stops_the_experiment(tmp_path):
    from nasx.strategy import Filter

    exp = NasExperiment(
        SmallNet(),
        width_metric,
        Random(seed=0),
        workdir=tmp_path,
        filter=Filter(lambda arch: arch["width"] == 99, patience=3),
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["rejected"] * 3
    assert "rejected 3 archs in a row" in exp.stop_reason


def test_plain_function_filter_and_max_trials_ignores_rejections(tmp_path):
    exp = NasExperiment(
        SmallNet(),
        width_metric,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        max_trials=2,
        filter=lambda arch: arch["act"] == 0,
    )
    exp.run()
    statuses = [t.status for t in exp.trials()]
    assert statuses == ["succeeded", "rejected", "succeeded"]


class FakeOneShot:
    is_one_shot = True

    def run(self, model_space, evaluator, workdir=None):
        self.ran_in = workdir

    def export_top_models(self, top_k=1):
        return [{"width": 4, "act": 1}][:top_k]


def test_one_shot_strategies_are_delegated_to(tmp_path):
    strategy = FakeOneShot()
    exp = NasExperiment(SmallNet(), width_metric, strategy, workdir=tmp_path)
    exp.run()
    assert strategy.ran_in == tmp_path
    assert exp.export_top_models() == [{"width": 4, "act": 1}]
    (model,) = exp.export_top_models(formatter="instance")
    assert isinstance(model.act, nn.Tanh) and model.fc1.out_features == 4


def test_a_directory_run_by_another_process_is_locked(tmp_path):
    store = TrialStore.create(tmp_path, {})
    try:
        with pytest.raises(ExperimentDirError, match="being run by another process"):
            TrialStore(tmp_path)
    finally:
        store.close()


def test_unseeded_strategy_resumes_with_the_stored_seed(tmp_path):
    first = RegularizedEvolution(population_size=2, sample_size=2)
    NasExperiment(SmallNet(), width_metric, first, workdir=tmp_path, max_trials=3).run()
    again = RegularizedEvolution(population_size=2, sample_size=2)
    NasExperiment(
        SmallNet(), width_metric, again, workdir=tmp_path, max_trials=6, resume=True
    ).run()
    assert again.seed == first.seed
    archs = [json.dumps(t.arch, sort_keys=True) for t in load_trials(tmp_path)]
    assert len(archs) == len(set(archs)) == 6


def test_grid_search_resumed_with_another_order_never_repeats(tmp_path):
    NasExperiment(
        SmallNet(), width_metric, GridSearch(seed=1), workdir=tmp_path, max_trials=3
    ).run()
    NasExperiment(SmallNet(), width_metric, GridSearch(seed=2), workdir=tmp_path, resume=True).run()
    archs = [json.dumps(t.arch, sort_keys=True) for t in load_trials(tmp_path)]
    assert len(archs) == len(set(archs)) == 6


def test_nni_style_config_and_run_port(tmp_path):
    exp = NasExperiment(SmallNet(), width_metric, Random(seed=0), workdir=tmp_path)
    exp.config.max_trial_number = 3
    exp.config.trial_gpu_number = 0  # NNI field without a meaning here: accepted
    exp.config.training_service.use_active_gpu = False
    exp.run(port=8081)
    assert exp.max_trials == 3 and len(exp.trials()) == 3
    with pytest.raises(AttributeError, match="max_trial_number"):
        exp.config.no_such_field  # noqa: B018


def test_a_filter_that_raises_fails_the_trial_not_the_experiment(tmp_path):
    from nasx.strategy import Filter

    def picky(model):
        if model.fc1.out_features == 4:
            raise RuntimeError("cannot measure this one")
        return True

    exp = NasExperiment(
        SmallNet(),
        width_metric,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        filter=Filter(picky, on="model"),
    )
    exp.run()
    failed = exp.trials("failed")
    assert [t.arch["width"] for t in failed] == [4, 4]
    assert failed[0].error == "FilterError: the filter raised RuntimeError: cannot measure this one"
    assert failure_kind(failed[0].error) == "FilterError"
    assert len(exp.trials("succeeded")) == 4


class ArchLookup:
    """An Evaluator-like class that asks for the arch and needs no model."""

    needs_model = False

    def __init__(self):
        self.models = []

    def evaluate(self, model, report=None, arch=None):
        self.models.append(model)
        return reference_metric(arch)


def test_evaluators_that_declare_arch_receive_it_and_can_skip_the_model(tmp_path):
    # a plain function with `arch`: the model is still built (needs_model defaults to True)
    built = []

    def fn(model, arch):
        built.append(model is not None)
        return reference_metric(arch) + width_metric(model) * 0

    exp = NasExperiment(SmallNet(), fn, GridSearch(shuffle=False), workdir=tmp_path / "fn")
    exp.run()
    assert exp.build_model and all(built) and len(built) == 6
    assert [t.metric for t in exp.trials()] == [reference_metric(t.arch) for t in exp.trials()]

    # an evaluator class with needs_model = False: no model is built, the arch is enough
    ev = ArchLookup()
    exp = NasExperiment(SmallNet(), ev, GridSearch(shuffle=False), workdir=tmp_path / "cls")
    exp.run()
    assert exp.build_model is False and ev.models == [None] * 6
    assert [t.metric for t in exp.trials()] == [reference_metric(t.arch) for t in exp.trials()]

    # build_model=True overrides the evaluator's needs_model
    ev = ArchLookup()
    NasExperiment(
        SmallNet(), ev, Random(seed=0), workdir=tmp_path / "on", max_trials=2, build_model=True
    ).run()
    assert len(ev.models) == 2 and all(isinstance(m, SmallNet) for m in ev.models)


@pytest.mark.parametrize(("max_trial_crashes", "runs_to_finish"), [(1, 3), (2, 5)])
def test_a_trial_that_kills_the_process_is_failed_after_max_trial_crashes(
    tmp_path, max_trial_crashes, runs_to_finish
):
    from .helpers import ProcessDeath, dies_on_width_4

    def run():
        exp = NasExperiment(
            SmallNet(),
            dies_on_width_4,
            GridSearch(shuffle=False),
            workdir=tmp_path,
            resume=True,
            max_trial_crashes=max_trial_crashes,
            progress=False,
        )
        exp.run()
        return exp

    # Width 4 (trials 2 and 3, in grid order) kills the process each time it runs.
    for _ in range(runs_to_finish - 1):
        with pytest.raises(ProcessDeath):
            run()
        assert sum(t.status == "running" for t in load_trials(tmp_path)) == 1
    exp = run()
    statuses = {t.id: t.status for t in exp.trials()}
    assert statuses == {0: "succeeded", 1: "succeeded", 2: "failed", 3: "failed"} | {
        4: "succeeded",
        5: "succeeded",
    }
    for t in exp.trials("failed"):
        assert failure_kind(t.error) == "Crashed"
        assert (
            f"crashed the process: the experiment's process died {max_trial_crashes} time"
            in t.error
        )


def test_crashes_are_not_counted_for_trials_that_ran_in_workers(tmp_path):
    # A trial of a process pool that kills its worker is failed by the pool (WorkerDied); the
    # pool's trials left running by a killed experiment process are re-run however often.
    def run():
        NasExperiment(
            SmallNet(),
            width_metric,
            GridSearch(shuffle=False),
            workdir=tmp_path,
            max_trials=2,
            max_trial_crashes=1,
            resume=True,
            progress=False,
        ).run()

    run()
    for _ in range(3):  # as if a process-pool run had been killed with trial 1 in a worker
        store = TrialStore(tmp_path)
        store.set_meta("execution", "process")
        store.update(Trial(1, store.trials()[1].arch, "running", start_time=1.0))
        store.close()
        run()
        assert [t.status for t in load_trials(tmp_path)] == ["succeeded", "succeeded"]


class _ReorderedNet(SmallNet):
    """SmallNet with its activation candidates swapped: same labels, other modules."""

    def __init__(self, in_features: int = 4):
        super().__init__(in_features)
        self.act = LayerChoice([nn.Tanh(), nn.ReLU()], label="act")


_ReorderedNet.__qualname__ = "SmallNet"  # as if the script's own class had been edited


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"space": _ReorderedNet()},
            r"label 'act': was .*over \[0: ReLU\(\), 1: Tanh\(\)\], now .*over \[0: Tanh\(\), 1: ReLU\(\)\]",
        ),
        (
            {"strategy": RegularizedEvolution(population_size=3, sample_size=2, seed=0)},
            r"strategy setting 'population_size': was 4, now 3",
        ),
        (
            {"strategy": GridSearch(shuffle=False)},
            r"strategy: was RegularizedEvolution, now GridSearch",
        ),
        ({"evaluator": FailOnTanh()}, r"evaluator: was width_metric, now FailOnTanh"),
    ],
)
def test_resume_with_another_space_strategy_or_evaluator_is_refused(tmp_path, change, message):
    def make(**kw):
        args = {
            "space": SmallNet(),
            "evaluator": width_metric,
            "strategy": RegularizedEvolution(population_size=4, sample_size=2, seed=0),
            **kw,
        }
        return NasExperiment(
            args["space"],
            args["evaluator"],
            args["strategy"],
            workdir=tmp_path,
            max_trials=2,
            resume=True,
            progress=False,
        )

    make().run()
    before = load_trials(tmp_path)
    with pytest.raises(ExperimentDirError, match=message) as err:
        make(**change).run()
    assert "choose another workdir, or pass overwrite=True" in str(err.value)
    assert load_trials(tmp_path) == before
    # An explicit overwrite starts afresh.
    exp = make(**change)
    exp.resume, exp.overwrite = False, True
    exp.run()
    assert [t.id for t in load_trials(tmp_path)] == [0, 1]
    assert load_trials(tmp_path)[0].start_time > before[-1].start_time


def test_limits_count_stored_trials_of_every_status_on_resume(tmp_path):
    # The limits read counters kept as trials change (not a recount per step): after a resume
    # they must start from the stored trials, rejected ones excluded from max_trials.
    def first(max_trials, resume=False):
        return NasExperiment(
            SmallNet(),
            FailOnTanh(),
            GridSearch(shuffle=False),
            workdir=tmp_path,
            max_trials=max_trials,
            filter=lambda arch: arch["width"] != 8,
            resume=resume,
            progress=False,
        )

    exp = first(2)
    exp.run()
    # grid order: (2, relu) ok, (2, tanh) fails -> 2 counted, max_trials reached
    assert [t.status for t in exp.trials()] == ["succeeded", "failed"]
    exp = first(5, resume=True)
    exp.run()
    # (4, relu) ok, (4, tanh) fails, (8, *) rejected: the strategy runs out with 4 counted
    statuses = [t.status for t in exp.trials()]
    assert statuses == ["succeeded", "failed", "succeeded", "failed", "rejected", "rejected"]
    assert exp.stop_reason == "the strategy has no more archs to propose"
    recount = {s: statuses.count(s) for s in set(statuses)}
    assert {s: n for s, n in exp._book.counts.items() if n} == recount
    exp = first(4, resume=True)
    exp.run()
    assert exp.stop_reason == "max_trials (4) reached" and len(exp.trials()) == 6


def test_finished_trials_live_in_the_database_not_in_memory(tmp_path):
    # Memory must not grow with the trials (100k of them): only unfinished ones stay in memory.
    exp = NasExperiment(
        SmallNet(),
        width_metric,
        Random(dedup=False, seed=0),
        workdir=tmp_path,
        max_trials=5,
        progress=False,
    )
    exp.run()
    assert exp._book.unfinished == {}
    assert exp.stop_reason == "max_trials (5) reached"  # the limit counts trials not in memory
    assert [t.status for t in exp.trials()] == ["succeeded"] * 5
    exp.max_trials = 7
    exp.run()  # the counts carry over to a second run
    assert len(exp.trials()) == 7 and exp._book.unfinished == {}
