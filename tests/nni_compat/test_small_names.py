"""The smaller names NNI code and NNI's own tests use: one-shot strategies' ``mutate_model`` and
``repr``, hub cells' ``.label``, NAS-Bench-201's ``OPS_WITH_STRIDE``, and the evaluator testing
helpers ``Evaluator.mock_runtime`` and ``freeze(...).get()`` (``nni.nas`` -> ``nasx``)."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn as nn

from nasx.evaluator import (
    Evaluator,
    FunctionalEvaluator,
    report_final_result,
    report_intermediate_result,
)
from nasx.hub.modules import AutoActivation, NasBench101Cell, NasBench201Cell
from nasx.hub.nasbench201 import OPS_WITH_STRIDE, PRIMITIVES
from nasx.hub.nasbench201 import NasBench201Cell as BenchmarkCell
from nasx.space import (
    BaseModelSpace,
    Categorical,
    LayerChoice,
    ModelSpace,
    SampleValidationError,
    search_space,
)
from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet

ONE_SHOT = [DARTS, GumbelDARTS, ENAS, RandomOneShot, Proxyless]


# ----------------------------------------------------------------------- one-shot strategies
@pytest.mark.parametrize("cls", ONE_SHOT, ids=lambda c: c.__name__)
def test_one_shot_strategies_repr_as_nni_and_show_the_arguments_given(cls):
    assert repr(cls()) == f"{cls.__name__}()"  # NNI's test: repr(DARTS()) == 'DARTS()'
    assert repr(cls(warmup_epochs=2)) == f"{cls.__name__}(warmup_epochs=2)"


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(3, 4)
        self.op = LayerChoice({"lin": nn.Linear(4, 4), "id": nn.Identity()}, label="op")

    def forward(self, x):
        return self.op(self.stem(x))


@pytest.mark.parametrize("cls", ONE_SHOT, ids=lambda c: c.__name__)
def test_mutate_model_gives_the_supernet_which_simplifies_and_freezes_as_the_space(cls):
    space = Net()
    supernet = cls().mutate_model(space)
    assert isinstance(supernet, Supernet)
    assert isinstance(space.op, LayerChoice)  # the space itself is left as it was
    assert list(supernet.simplify()) == list(space.simplify()) == ["op"]
    model = supernet.freeze({"op": "lin"})
    assert isinstance(model.op, nn.Linear)
    # frozen with the supernet's weights: the stem is the supernet's stem
    assert torch.equal(model.stem.weight, supernet.model.stem.weight)


# --------------------------------------------------------------------------------- hub cells
def test_hub_cells_have_nni_labels():
    ops = {"conv": lambda c_in, c_out: nn.Conv2d(c_in, c_out, 1), "id": lambda c, _: nn.Identity()}

    class Space(ModelSpace, label_prefix="model"):
        def __init__(self):
            super().__init__()
            self.cell = NasBench201Cell(ops, 4, 4, num_tensors=3, label="cell")
            self.numbered = NasBench201Cell(ops, 4, 4, num_tensors=2)
            self.bench = BenchmarkCell(4, label="bench")
            self.act = AutoActivation(label="act")
            self.nb101 = NasBench101Cell(
                {"conv": lambda c: nn.Conv2d(c, c, 1)},
                4,
                4,
                lambda i, o: nn.Conv2d(i, o, 1),
                max_num_nodes=3,
                label="nb101",
            )

    space = Space()
    assert space.cell.label == "model/cell"
    assert space.numbered.label == "model/1"
    assert space.bench.label == "model/bench"
    assert space.act.label == "model/act"
    assert space.nb101.label == "model/nb101"
    labels = list(search_space(space))
    for cell in (space.cell, space.numbered, space.bench, space.act, space.nb101):
        assert any(label.startswith(cell.label + "/") for label in labels), cell.label
    assert NasBench201Cell(ops, 4, 4, label="top").label == "top"


class CellSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        ops = {
            "conv": lambda c_in, c_out: nn.Conv2d(c_in, c_out, 1),
            "id": lambda c, _: nn.Identity(),
        }
        self.cell = NasBench201Cell(ops, 4, 4, num_tensors=3, label="cell")
        self.act = AutoActivation(label="act")

    def forward(self, x):
        return self.act(self.cell(x))


def test_a_model_built_of_hub_cells_keeps_their_labels_and_scripts():
    space = CellSpace()
    model = space.freeze({label: c.default for label, c in search_space(space).items()})
    assert (model.cell.label, model.act.label) == ("cell", "act")
    x = torch.randn(1, 4, 3, 3)
    assert torch.allclose(torch.jit.script(model.eval())(x), model(x))


# ------------------------------------------------------------------------- OPS_WITH_STRIDE
def test_ops_with_stride_is_nnis_table():
    assert set(OPS_WITH_STRIDE) == {
        "none",
        "avg_pool_3x3",
        "max_pool_3x3",
        "conv_3x3",
        "conv_1x1",
        "skip_connect",
    }
    assert PRIMITIVES == ["none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3"]
    x = torch.randn(2, 4, 8, 8)
    for name, make in OPS_WITH_STRIDE.items():
        assert make(4, 6, 2)(x).shape == (2, 6, 4, 4), name
        assert make(4, 4, 1)(x).shape == (2, 4, 8, 8), name
    assert isinstance(OPS_WITH_STRIDE["skip_connect"](4, 4, 1), nn.Identity)
    assert OPS_WITH_STRIDE["none"](4, 6, 2)(x).abs().sum() == 0
    with pytest.raises(ValueError, match="stride 2"):
        OPS_WITH_STRIDE["skip_connect"](4, 6, 1)


def test_ops_with_stride_compute_what_the_benchmark_space_computes():
    # With stride 1 and equal channels each op of the table computes what the NasBench201
    # space's op of that name computes, given the same weights.
    from nasx.hub.nasbench201 import _make_op

    x = torch.randn(2, 4, 8, 8)
    for name in PRIMITIVES:
        ours, table = _make_op(name, 4).eval(), OPS_WITH_STRIDE[name](4, 4, 1).eval()
        table.load_state_dict(ours.state_dict())
        assert torch.allclose(ours(x), table(x)), name


# ------------------------------------------------------------- evaluator testing helpers
def test_mock_runtime_logs_the_reports_as_nnis_does(caplog):
    # NNI's test_mock_trial_api, with the imports changed (no RawFormatModelSpace: a space's own
    # random() gives the model).
    class DummyModelSpace(BaseModelSpace):
        def check_contains(self, sample):
            return None

        def leaf_mutables(self, is_leaf):
            yield from ()

        def freeze(self, sample):
            return self

    def foo(model):
        report_intermediate_result(0.5)
        assert "Intermediate metric: 0.5" in caplog.text
        report_final_result(0.6)
        assert "Final metric: 0.6" in caplog.text

    caplog.set_level(logging.INFO)
    space = DummyModelSpace()
    model = space.random()
    evaluator = FunctionalEvaluator(foo)
    with evaluator.mock_runtime(model):
        assert evaluator.evaluate(model) == 0.6
        assert "[Mock] Final" in caplog.text
        with pytest.raises(RuntimeError, match="already available"):
            with Evaluator.mock_runtime(model):
                pass
    caplog.clear()
    report_intermediate_result(0.7)  # outside: no mock any more
    assert "[Mock]" not in caplog.text


def test_mock_runtime_logs_a_report_callback_and_is_refused_inside_a_trial(caplog):
    def fit(model, report):
        report(0.25)
        return 1.0

    caplog.set_level(logging.INFO)
    with Evaluator.mock_runtime(None):
        assert FunctionalEvaluator(fit).evaluate(None) == 1.0
    assert "[Mock] Intermediate metric: 0.25" in caplog.text

    def nested(model):
        with Evaluator.mock_runtime(model):
            pass

    with pytest.raises(RuntimeError, match="already available"):
        FunctionalEvaluator(nested).evaluate(None, report=lambda value: None)


def test_freeze_get_and_simplify_of_an_evaluator_as_nnis_test():
    # NNI's test_mutable_expression_in_evaluator, with the imports changed.
    def foo():
        pass

    evaluator = FunctionalEvaluator(foo, t=1, x=2)
    assert len(evaluator.simplify()) == 0
    assert evaluator.get() is evaluator.get() is evaluator

    evaluator = FunctionalEvaluator(
        foo, t=1, x=Categorical([1, 2], label="x"), y=Categorical([3, 4], label="y")
    )
    assert len(evaluator.simplify()) == 2

    evaluator1 = evaluator.freeze({"x": 1, "y": 3})
    evaluator2 = evaluator.freeze({"x": 2, "y": 4})

    with pytest.raises(SampleValidationError):
        evaluator.freeze({"x": 3, "y": 4})

    assert evaluator1.get().arguments == {"t": 1, "x": 1, "y": 3}
    assert evaluator2.get().arguments == {"t": 1, "x": 2, "y": 4}
    assert evaluator1.get().function is foo

    # share label
    evaluator = FunctionalEvaluator(
        foo, t=Categorical([1, 2], label="x"), x=Categorical([1, 2], label="x")
    )
    assert len(evaluator.simplify()) == 1
