"""Custom spaces written NNI's way, as ``BaseModelSpace`` subclasses that set their own mutables
and override ``leaf_mutables`` / ``check_contains`` / ``freeze`` (``nni.nas.space`` ->
``nasx.space``), searched by Random, RegularizedEvolution and TPE through ``NasExperiment``.

The spaces are NNI 3.0's own test spaces (``test/ut/nas/strategy/test_sanity.py``,
``test/ut/nas/space/test_executable_space.py``, ``test/ut/nas/test_engine.py``) with the imports
changed, and a hyperparameter space (a dict of values, no module at all) in the style of NNI's
HPO examples.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

import nasx
from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import NasExperiment
from nasx.space import (
    BaseModelSpace,
    Categorical,
    ConstraintViolation,
    ExpressionConstraint,
    InvalidArchError,
    ModelSpace,
    Mutable,
    MutableDict,
    MutableList,
    Numerical,
    current_model,
    ensure_frozen,
    model_context,
    search_space,
)
from nasx.strategy import (
    TPE,
    GridSearch,
    LocalSearch,
    PolicyBasedRL,
    Random,
    RegularizedEvolution,
)


# ----------------------------------------------------------------- NNI's test_sanity.py space
@nasx.trace
class MyModelSpace(BaseModelSpace):
    def __init__(self, mutables: list[Mutable]):
        self.mutables = MutableList(mutables)

        if current_model() is not None:
            self.numbers = ensure_frozen(self.mutables)

    def call(self, x):
        return sum(n for n in self.numbers if n is not None) + x

    def leaf_mutables(self, is_leaf):
        yield from self.mutables.leaf_mutables(is_leaf)

    def check_contains(self, sample):
        for mutable in self.mutables:
            exc = mutable.check_contains(sample)
            if exc is not None:
                return exc
        return None

    def freeze(self, sample):
        with model_context(sample):
            return MyModelSpace(self.mutables)


def foo(model, a, optimal, minimal):
    nasx.report_intermediate_result(a)
    nasx.report_final_result((model.call(a) - minimal) / (optimal - minimal))


def named_model_space(name):
    if name == "base":
        model = MyModelSpace([nasx.choice("a", [1, 2, 3]), nasx.choice("b", [4, 5, 6, 7])])
        evaluator = FunctionalEvaluator(foo, a=nasx.choice("c", [0, 1]), optimal=11.0, minimal=5.0)
    if name == "constraint":
        a, b = nasx.choice("a", [1, 2, 3]), nasx.choice("b", [4, 5, 6, 7])
        model = MyModelSpace([a, b, ExpressionConstraint((a + b) % 2 == 1, label="odd")])
        evaluator = FunctionalEvaluator(foo, a=nasx.choice("c", [0, 1]), optimal=10.0, minimal=5.0)
    if name == "numerical":
        model = MyModelSpace([nasx.quniform("a", 1, 3, 0.75), nasx.quniform("b", 4, 7, 1)])
        evaluator = FunctionalEvaluator(foo, a=1, optimal=11.0, minimal=6.0)
    return model, evaluator


STRATEGIES = {
    "Random": lambda: Random(dedup=True, seed=0),
    "RegularizedEvolution": lambda: RegularizedEvolution(
        population_size=4, sample_size=2, mutation_prob=0.5, dedup=True, seed=0
    ),
    "TPE": lambda: TPE(seed=0),
}


@pytest.mark.parametrize("space_name", ["base", "constraint", "numerical"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_nni_sanity_space_runs_under_multi_trial_strategies(tmp_path, space_name, strategy):
    model_space, evaluator = named_model_space(space_name)
    exp = NasExperiment(
        model_space,
        evaluator,
        STRATEGIES[strategy](),
        workdir=tmp_path,
        max_trials=10,
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert len(trials) == 10
    assert all(t.status == "succeeded" for t in trials), [t.error for t in trials]
    labels = {"base": {"a", "b"}, "constraint": {"a", "b"}, "numerical": {"a", "b"}}[space_name]
    optimal, minimal = {"base": (11, 5), "constraint": (10, 5), "numerical": (11, 6)}[space_name]
    for t in trials:
        assert set(t.arch) == labels and model_space.contains(t.arch)
        if space_name == "constraint":
            assert (t.arch["a"] + t.arch["b"]) % 2 == 1  # never proposed against the constraint
        c = t.hparams.get("c", 1)
        expected = (t.arch["a"] + t.arch["b"] + c - minimal) / (optimal - minimal)
        assert t.metric == pytest.approx(expected)
        assert t.intermediates == [c]
    best = exp.export_top_models(formatter="instance")[0]
    assert isinstance(best, MyModelSpace) and best.numbers[:2] == [
        exp.export_top_models()[0]["a"],
        exp.export_top_models()[0]["b"],
    ]


def test_random_with_dedup_finds_the_optimum_of_the_whole_grid(tmp_path):
    # NNI's test_random: with dedup, as many trials as archs try every arch once (24 here).
    model_space, evaluator = named_model_space("base")
    exp = NasExperiment(
        model_space, evaluator, Random(dedup=True, seed=1), workdir=tmp_path, progress=False
    )
    exp.run()  # Random stops when every arch was tried
    assert len(exp.trials()) == 24
    assert max(t.metric for t in exp.trials()) == 1.0


def test_the_constraint_is_part_of_the_search_space_and_of_freeze():
    model_space, _ = named_model_space("constraint")
    space = search_space(model_space)
    assert list(space) == ["a", "b"] and [c.label for c in space.constraints][0] == "odd"
    assert space.count_valid().count == 6
    assert list(model_space.simplify()) == ["a", "b", "odd"]  # NNI's simplify keeps it too
    assert model_space.freeze({"a": 1, "b": 4}).numbers == [1, 4, None]
    with pytest.raises(ConstraintViolation):
        model_space.freeze({"a": 1, "b": 5})
    assert not model_space.contains({"a": 2, "b": 4})


def test_the_space_pickles_into_worker_processes(tmp_path):
    model_space, evaluator = named_model_space("base")
    exp = NasExperiment(
        model_space,
        evaluator,
        Random(dedup=True, seed=0),
        workdir=tmp_path,
        max_trials=4,
        max_concurrent_trials=2,
        progress=False,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["succeeded"] * 4


# ----------------------------------------------------------- NNI's test_executable_space.py
class AttrSpace(BaseModelSpace):
    def __init__(self):
        self.a = Categorical([1, 2, 3], label="a")
        self.b = Categorical([4, 5, 6, 7], label="b")

        if current_model() is not None:
            self.a1 = ensure_frozen(self.a)
            self.b1 = ensure_frozen(self.b)

    def call(self, x):
        return x + self.a1 + self.b1

    def leaf_mutables(self, is_leaf):
        yield from [self.a, self.b]

    def check_contains(self, sample):
        return self.a.check_contains(sample) or self.b.check_contains(sample)

    def freeze(self, sample):
        with model_context(sample):
            return AttrSpace()


def test_a_space_of_attributes_simplifies_checks_and_freezes():
    space = AttrSpace()
    assert repr(space) == "AttrSpace()"
    simplified = space.simplify()
    assert list(simplified) == ["a", "b"] and simplified["a"].equals(
        Categorical([1, 2, 3], label="a")
    )
    assert space.contains({"a": 1, "b": 4}) and not space.contains({"a": 0, "b": 4})
    with pytest.raises(InvalidArchError):
        space.validate({"a": 1})
    assert space.freeze({"a": 2, "b": 6}).call(1) == 9
    assert space.default().call(0) == 5
    memo = {}
    assert space.random(memo, random_state=0).call(0) == memo["a"] + memo["b"]
    assert sorted(m.call(0) for m in space.grid()) == sorted(
        a + b for a in (1, 2, 3) for b in (4, 5, 6, 7)
    )
    assert space.frozen_factory({"a": 3, "b": 7})().call(0) == 10


EVERY_STRATEGY = {
    **STRATEGIES,
    "GridSearch": lambda: GridSearch(seed=0),
    "PolicyBasedRL": lambda: PolicyBasedRL(samples_per_update=2, seed=0),
    "LocalSearch": lambda: LocalSearch(seed=0),
}


@pytest.mark.parametrize("strategy", list(EVERY_STRATEGY))
def test_a_space_of_attributes_runs_under_every_multi_trial_strategy(tmp_path, strategy):
    exp = NasExperiment(
        AttrSpace(),
        FunctionalEvaluator(lambda model: model.call(0)),
        EVERY_STRATEGY[strategy](),
        workdir=tmp_path,
        max_trials=6,
        progress=False,
    )
    exp.run()
    assert len(exp.trials()) == 6
    assert [t.metric for t in exp.trials()] == [t.arch["a"] + t.arch["b"] for t in exp.trials()]


def test_a_run_of_a_base_model_space_resumes(tmp_path):
    def run(max_trials):
        model_space, evaluator = named_model_space("constraint")
        exp = NasExperiment(
            model_space,
            evaluator,
            RegularizedEvolution(population_size=4, sample_size=2, seed=0),
            workdir=tmp_path,
            max_trials=max_trials,
            resume=True,
            progress=False,
        )
        exp.run()
        return exp

    first = [t.arch for t in run(4).trials()]
    again = run(8).trials()
    assert len(again) == 8 and [t.arch for t in again[:4]] == first


# ---------------------------------------------------------------------- NNI's test_engine.py
@nasx.trace
class ArgSpace(BaseModelSpace):
    def __init__(self, a):
        if current_model() is not None:
            self.a = current_model()["a"]
        else:
            self.a = nasx.choice("a", a)

    def call(self, x):
        return x + self.a

    def leaf_mutables(self, is_leaf):
        yield self.a


def test_a_traced_space_without_freeze_is_made_again_from_its_arguments(tmp_path):
    space = ArgSpace([1, 2, 3])
    assert space.freeze({"a": 2}).call(1) == 3
    exp = NasExperiment(
        space,
        FunctionalEvaluator(lambda model, b: model.call(1) + b, b=1),
        TPE(seed=0),
        workdir=tmp_path,
        max_trials=3,
        progress=False,
    )
    exp.run()
    assert sorted(t.metric for t in exp.trials()) == [3, 4, 5]


def test_a_space_that_sets_mutables_only_needs_freeze_and_an_untraced_one_says_so():
    class Plain(BaseModelSpace):
        def __init__(self):
            self.mutables = [Categorical([1, 2], label="x")]

    space = Plain()
    assert list(search_space(space)) == ["x"] and space.contains({"x": 2})
    with pytest.raises(NotImplementedError, match=r"override it .*model_context\(sample\)"):
        space.freeze({"x": 2})

    class Nothing(BaseModelSpace):
        pass

    with pytest.raises(NotImplementedError, match="set self.mutables"):
        Nothing().simplify()

    class Added(BaseModelSpace):
        def __init__(self):
            self.add_mutable(Categorical([1, 2], label="y"))

    assert list(Added().simplify()) == ["y"]


# ------------------------------------------------------------- a hyperparameter-only space
class Hyperparameters(BaseModelSpace):
    """HPO written as a model space: the "model" is the configuration itself."""

    def __init__(self):
        self.mutables = MutableDict(
            {
                "lr": Numerical(1e-4, 1e-1, log_distributed=True, label="lr"),
                "layers": Categorical([1, 2, 3, 4], label="layers"),
                "act": Categorical(["relu", "tanh"], label="act"),
            }
        )

    def check_contains(self, sample):
        if sample.get("act") == "tanh" and sample.get("layers", 0) > 2:
            return ConstraintViolation("tanh only up to 2 layers")
        return super().check_contains(sample)

    def freeze(self, sample):
        self.validate(sample)
        return self.mutables.freeze(sample)


def score(config):
    return -((math.log10(config["lr"]) + 2) ** 2) - (config["layers"] - 2) ** 2


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_a_hyperparameter_space_runs_and_its_own_check_contains_holds(tmp_path, strategy):
    exp = NasExperiment(
        Hyperparameters(),
        FunctionalEvaluator(score),
        STRATEGIES[strategy](),
        workdir=tmp_path,
        max_trials=12,
        progress=False,
    )
    exp.run()
    trials = exp.trials()
    assert len(trials) == 12 and all(t.status == "succeeded" for t in trials)
    for t in trials:
        assert not (t.arch["act"] == "tanh" and t.arch["layers"] > 2)  # the override is obeyed
        assert t.metric == pytest.approx(score(t.arch))
    assert exp.export_top_models(formatter="instance")[0] == exp.export_top_models()[0]


def test_model_space_is_a_base_model_space_with_the_same_protocol():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, nasx.choice("width", [3, 4]))

    net = Net()
    assert isinstance(net, BaseModelSpace)
    assert [c.label for c in net.leaf_mutables(lambda m: True)] == ["width"]
    assert net.default().fc.out_features == 3
    assert net.contains({"width": 4}) and not net.contains({"width": 5})


# ------------------------------------------------ keep_weights with a space written NNI's way
@nasx.trace
class LinearWidths(BaseModelSpace):
    """Sets its own mutable and freezes into a plain nn.Linear (no ModelSpace anywhere)."""

    def __init__(self):
        self.width = Categorical([2, 4], label="width")

    def leaf_mutables(self, is_leaf):
        yield self.width

    def check_contains(self, sample):
        return self.width.check_contains(sample)

    def freeze(self, sample):
        return torch.nn.Linear(3, sample["width"])


def _train_in_place(model):
    """'Trains' the model to weights a reference can name: every weight = its width."""
    with torch.no_grad():
        model.weight.fill_(float(model.out_features))
    return float(model.out_features)


def test_kept_weights_of_a_base_model_space_load_back_trained(tmp_path):
    exp = NasExperiment(
        LinearWidths(),
        FunctionalEvaluator(_train_in_place),
        GridSearch(shuffle=False),
        workdir=tmp_path,
        keep_weights="all",
        progress=False,
    )
    exp.run()
    assert [t.metric for t in exp.trials()] == [2.0, 4.0]
    best = exp.load_model("best")  # rebuilt with the space's own freeze, then the weights loaded
    assert isinstance(best, torch.nn.Linear) and best.out_features == 4
    assert torch.equal(best.weight, torch.full((4, 3), 4.0))
    assert torch.equal(exp.load_model(0).weight, torch.full((2, 3), 2.0))
