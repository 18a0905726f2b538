"""Rows of docs/porting_from_nni.md exercised the way an NNI 3.0 script writes them: the "same"
rows no other test used (``test_porting_table.py`` requires one for each) and the nasx way the
table gives for NNI's execution engines, schedules and benchmark constants.

NNI's values below are copied from its source at tag v3.0 (the file named in each test)."""

from __future__ import annotations

import typing

import pytest
import torch
import torch.nn as nn

from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import NasExperiment, NasExperimentConfig
from nasx.hub.nds import CellPostprocessor
from nasx.hub.ops import OPS
from nasx.hub.shufflenet import ShuffleNetBlock, ShuffleXceptionBlock
from nasx.space import (
    Categorical,
    Cell,
    InputChoice,
    LayerChoice,
    ModelSpace,
    MutableBatchNorm1d,
    MutableBatchNorm3d,
    MutableConv1d,
    MutableConv3d,
    MutableConvTranspose2d,
    MutableDropout,
    MutableEmbedding,
    MutableGroupNorm,
    ReductionType,
    Sample,
)
from nasx.space.cell import OpFactory
from nasx.strategy import GridSearch, LinearTemperature

# --- nni.mutable.Sample, nni.nas.nn.pytorch.ReductionType ----------------------------------


def test_sample_is_nni_dict_of_labels_to_values():
    assert typing.get_origin(Sample) is dict  # NNI: Sample = Dict[str, Any]

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.op = LayerChoice({"a": nn.Identity(), "b": nn.ReLU()}, label="op")

    sample: Sample = {"op": "b"}
    assert isinstance(Net().freeze(sample).op, nn.ReLU)


def test_reduction_type_is_nni_literal():
    # nni/nas/nn/pytorch/choice.py: ReductionType = Literal['mean', 'concat', 'sum', 'none']
    assert typing.get_args(ReductionType) == ("mean", "concat", "sum", "none")


class Pick(ModelSpace):
    def __init__(self, reduction: ReductionType):
        super().__init__()
        self.pick = InputChoice(3, 2, reduction=reduction, label="pick")

    def forward(self, xs):
        return self.pick(xs)


@pytest.mark.parametrize("reduction", typing.get_args(ReductionType))
def test_input_choice_takes_each_reduction_type(reduction):
    xs = [torch.ones(1, 2), 2 * torch.ones(1, 2), 4 * torch.ones(1, 2)]
    out = Pick(reduction).freeze({"pick": [0, 2]})(xs)
    if reduction == "sum":
        assert out[0, 0].item() == 5.0
    elif reduction == "mean":
        assert out[0, 0].item() == 2.5
    elif reduction == "concat":
        assert out.shape == (1, 4)
    else:
        assert [t[0, 0].item() for t in out] == [1.0, 4.0]


# --- the Mutable* layers of nni.nas.nn.pytorch no other test builds --------------------------

MUTABLE_LAYERS = {
    # name: (build(c), torch class, attribute c sets, input(c))
    "MutableConv1d": (
        lambda c: MutableConv1d(3, c, 3),
        nn.Conv1d,
        "out_channels",
        lambda v: torch.randn(1, 3, 8),
    ),
    "MutableConv3d": (
        lambda c: MutableConv3d(3, c, 3),
        nn.Conv3d,
        "out_channels",
        lambda v: torch.randn(1, 3, 4, 4, 4),
    ),
    "MutableBatchNorm1d": (
        lambda c: MutableBatchNorm1d(c),
        nn.BatchNorm1d,
        "num_features",
        lambda v: torch.randn(2, v, 5),
    ),
    "MutableBatchNorm3d": (
        lambda c: MutableBatchNorm3d(c),
        nn.BatchNorm3d,
        "num_features",
        lambda v: torch.randn(2, v, 2, 2, 2),
    ),
    "MutableGroupNorm": (
        lambda c: MutableGroupNorm(2, c),
        nn.GroupNorm,
        "num_channels",
        lambda v: torch.randn(2, v, 3),
    ),
    "MutableConvTranspose2d": (
        lambda c: MutableConvTranspose2d(3, c, 2),
        nn.ConvTranspose2d,
        "out_channels",
        lambda v: torch.randn(1, 3, 4, 4),
    ),
    "MutableEmbedding": (
        lambda c: MutableEmbedding(c, 3),
        nn.Embedding,
        "num_embeddings",
        lambda v: torch.tensor([0, v - 1]),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTABLE_LAYERS))
def test_mutable_layer_searches_its_argument_as_nni(name):
    build, torch_class, attr, make_input = MUTABLE_LAYERS[name]

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.layer = build(Categorical([4, 8], label="c"))

        def forward(self, x):
            return self.layer(x)

    space = Net()
    for value in (4, 8):
        model = space.freeze({"c": value})
        assert isinstance(model.layer, torch_class) and getattr(model.layer, attr) == value
        model(make_input(value))


def test_mutable_dropout_searches_p():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.drop = MutableDropout(Categorical([0.1, 0.5], label="p"))

    model = Net().freeze({"p": 0.5})
    assert isinstance(model.drop, nn.Dropout) and model.drop.p == 0.5


# --- nni.nas.nn.pytorch.cell.CellOpFactory -------------------------------------------------


def test_cell_op_factory_is_called_as_nni_calls_it():
    calls = []

    def conv(node_index: int, op_index: int, input_index: int | None) -> nn.Module:
        calls.append((node_index, op_index, input_index))
        return nn.Identity()

    factory: OpFactory = conv
    ops = {"conv": factory, "skip": nn.Identity()}
    Cell(ops, num_nodes=2, num_ops_per_node=1, num_predecessors=2, label="c")
    assert calls and all(len(call) == 3 for call in calls)
    assert {node for node, _, _ in calls} == {2, 3}  # as NNI: nodes numbered after the inputs


# --- nni.nas.hub.pytorch: nasnet.OPS, nasnet.CellPostprocessor, shufflenet blocks -----------

# nni/nas/hub/pytorch/nasnet.py's OPS keys
NNI_NASNET_OPS = {
    "none",
    "avg_pool_2x2",
    "avg_pool_3x3",
    "avg_pool_5x5",
    "max_pool_2x2",
    "max_pool_3x3",
    "max_pool_5x5",
    "max_pool_7x7",
    "skip_connect",
    "conv_1x1",
    "conv_3x3",
    "sep_conv_3x3",
    "sep_conv_5x5",
    "sep_conv_7x7",
    "dil_conv_3x3",
    "dil_conv_5x5",
    "dil_sep_conv_3x3",
    "conv_3x1_1x3",
    "conv_7x1_1x7",
}


def test_nasnet_ops_have_nni_names_and_call_form():
    assert set(OPS) == NNI_NASNET_OPS
    x = torch.randn(2, 8, 8, 8)
    for name, make in OPS.items():  # OPS[name](C, stride, affine)
        if name not in ("avg_pool_2x2", "max_pool_2x2"):  # 2x2 pools without padding: as NNI
            assert make(8, 1, True)(x).shape == (2, 8, 8, 8), name
        assert make(8, 2, False)(x).shape == (2, 8, 4, 4), name


def test_cell_postprocessor_chains_cells_as_nni():
    prev = [torch.zeros(1), torch.ones(1)]
    this = torch.full((1,), 2.0)
    assert CellPostprocessor()(this, prev) == [prev[-1], this]


def test_shufflenet_blocks_take_nni_arguments():
    x = torch.randn(2, 16, 8, 8)
    down = ShuffleNetBlock(16, 48, 24, kernel_size=5, stride=2, sequence="pdp", affine=True)
    assert down(x).shape == (2, 48, 4, 4)  # stride 2: every input channel feeds both branches
    same = ShuffleNetBlock(16, 16, 8, kernel_size=3, stride=1)
    assert same(x).shape == (2, 16, 8, 8)  # stride 1: half the channels pass through
    assert ShuffleXceptionBlock(16, 48, 24, stride=2, affine=False)(x).shape == (2, 48, 4, 4)

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.block = ShuffleNetBlock(
                16, 48, Categorical([8, 24], label="mid"), kernel_size=3, stride=2
            )

        def forward(self, x):
            return self.block(x)

    for mid in (8, 24):
        assert Net().freeze({"mid": mid})(x).shape == (2, 48, 4, 4)


# --- nni.nas.execution.SequentialExecutionEngine and the experiment config -----------------


class TinySpace(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice({"a": nn.Identity(), "b": nn.ReLU(), "c": nn.Tanh()}, label="op")

    def forward(self, x):
        return self.op(x)


def _score(model):
    return 1.0 if isinstance(model.op, nn.ReLU) else 0.5


def test_sequential_execution_engine_is_a_nas_experiment(tmp_path):
    # NNI: strategy(space, SequentialExecutionEngine(max_model_count=2)); strategy.list_models()
    exp = NasExperiment(
        TinySpace(),
        FunctionalEvaluator(_score),
        GridSearch(),
        max_trials=2,
        execution="sequential",
        workdir=tmp_path / "explicit",
        progress=False,
    )
    exp.run()
    assert exp.execution == "sequential" and len(exp.trials()) == 2
    # the default for one trial at a time is the same engine
    default = NasExperiment(
        TinySpace(), FunctionalEvaluator(_score), GridSearch(), workdir=tmp_path / "default"
    )
    assert default.execution == "sequential"


def test_nni_spellings_of_the_sequential_engine_are_accepted(tmp_path):
    config = NasExperimentConfig("sequential", "raw", max_trial_number=3)
    exp = NasExperiment(
        TinySpace(),
        FunctionalEvaluator(_score),
        GridSearch(),
        config,
        workdir=tmp_path,
        progress=False,
    )
    exp.config.execution_engine = "sequential"
    exp.run()
    assert exp.execution == "sequential" and len(exp.trials()) == 3
    assert exp.export_top_models(top_k=1) == [{"op": "b"}]  # NNI's list_models(sort, limit=1)


def test_continue_on_failure_false_is_max_failed_trials_zero(tmp_path):
    def fails(model):
        raise RuntimeError("boom")

    exp = NasExperiment(
        TinySpace(),
        FunctionalEvaluator(fails),
        GridSearch(),
        max_failed_trials=0,
        workdir=tmp_path,
        progress=False,
    )
    exp.run()
    assert [t.status for t in exp.trials()] == ["failed"]  # stopped at the first failure


# --- nni.nas.oneshot.pytorch.differentiable.LinearTemperatureScheduler ------------------------


def test_linear_temperature_is_nnis_schedule():
    def nni_step(init, low, current, total):  # LinearTemperatureScheduler.step, NNI 3.0
        current = min(current, total)
        return (1 - current / total) * (init - low) + low

    schedule = LinearTemperature(1.0, 0.33)
    for epoch in range(6):
        assert schedule.value(epoch, 5) == pytest.approx(nni_step(1.0, 0.33, epoch, 5))


# --- nni.nas.benchmark constants ------------------------------------------------------------


def test_benchmark_operation_names_are_nnis():
    from nasx.hub.nasbench101 import OPERATIONS as NB101_OPERATIONS
    from nasx.hub.nasbench201 import PRIMITIVES

    # nni/nas/benchmark/nasbench201/constants.py: PRIMITIVES = [NONE, SKIP_CONNECT, ...]
    assert PRIMITIVES == ["none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3"]
    # nni/nas/benchmark/nasbench101/constants.py: CONV3X3_BN_RELU, CONV1X1_BN_RELU, MAXPOOL3X3
    assert NB101_OPERATIONS == ["conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"]
    # nni/nas/benchmark/nds/constants.py: its sixteen operation names
    nds = {"none", "skip_connect", "avg_pool_3x3", "max_pool_3x3", "max_pool_5x5"}
    nds |= {"max_pool_7x7", "conv_1x1", "conv_3x3", "conv_3x1_1x3", "conv_7x1_1x7"}
    nds |= {"dil_conv_3x3", "dil_conv_5x5", "sep_conv_3x3", "sep_conv_5x5", "sep_conv_7x7"}
    nds |= {"dil_sep_conv_3x3"}
    assert len(nds) == 16 and nds <= set(OPS)
