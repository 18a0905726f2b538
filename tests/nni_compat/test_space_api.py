"""NNI 3.0's space API as its documentation describes it, ported by changing imports.

Written from the documented behaviour of ``nni.mutable``, ``nni.nas.nn.pytorch`` and
``nni.nas.space`` (docstrings and user guide), not from NNI's code: the space methods
(``random``, ``grid``, ``freeze``, ``args``), ``ParametrizedModule``, ``BaseModelSpace``,
``current_model``, constraints registered with ``add_mutable``, and the mutable API's details.
"""

import pickle

import pytest
import torch
import torch.nn as nn

import nasx
from nasx.space import (
    BaseModelSpace,
    Categorical,
    ConstraintViolation,
    ExpressionConstraint,
    LabeledMutable,
    LayerChoice,
    ModelSpace,
    MutableConv2d,
    MutableDict,
    MutableList,
    MutableSymbol,
    Numerical,
    ParametrizedModule,
    Repeat,
    SampleMissingError,
    SampleValidationError,
    current_model,
    ensure_frozen,
    frozen_context,
    model_context,
)

# --- nni.choice & co. at a script's top level --------------------------------------------------


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: nasx.choice("x", [1, 2, 3]), "Categorical([1, 2, 3], label='x')"),
        (lambda: nasx.uniform("x", 0, 1), "Numerical(0, 1, label='x')"),
        (lambda: nasx.quniform("x", 2.5, 5.5, 2.0), "Numerical(2.5, 5.5, q=2.0, label='x')"),
        (
            lambda: nasx.loguniform("x", 1e-5, 1e-3),
            "Numerical(1e-05, 0.001, log_distributed=True, label='x')",
        ),
        (
            lambda: nasx.qloguniform("x", 1e-5, 1e-3, 1e-4),
            "Numerical(1e-05, 0.001, q=0.0001, log_distributed=True, label='x')",
        ),
        (lambda: nasx.normal("x", 0, 1), "Numerical(-inf, inf, mu=0, sigma=1, label='x')"),
    ],
    ids=["choice", "uniform", "quniform", "loguniform", "qloguniform", "normal"],
)
def test_shortcuts_give_the_documented_objects(make, text):
    assert repr(make()) == text


def test_quniform_grid_and_int_cast():
    x = nasx.quniform("x", 2, 10, 5)
    assert x.grid() == [2.0, 5.0, 10.0]
    assert isinstance(nasx.normal("x", 0, 1).random(), float)


def test_shortcut_objects_are_leaves_of_expressions():
    expr = nasx.choice("a", [1, 2]) * 10 + nasx.choice("b", [3, 4])
    assert expr.freeze({"a": 2, "b": 3}) == 23
    assert list(expr.simplify()) == ["a", "b"]


def test_labeled_mutable_and_symbol_are_the_choice_classes():
    assert isinstance(Categorical([1, 2], label="a"), LabeledMutable)
    assert isinstance(Numerical(0, 1, label="a"), MutableSymbol)


# --- nni.mutable: errors, containers, simplify, frozen_context --------------------------------


def test_sample_validation_error_has_msg_and_paths():
    error = SampleValidationError("bad", paths=["a", "b"])
    assert error.msg == "bad" and error.paths == ["a", "b"]
    assert "bad" in str(error) and "a -> b" in str(error)
    try:
        Categorical([1, 2], label="k").freeze({"k": 3})
    except SampleValidationError as caught:
        assert "k" in caught.msg
    missing = SampleMissingError("k", ["a"])
    assert "k" in missing.msg and isinstance(missing, SampleValidationError)
    assert pickle.loads(pickle.dumps(error)).paths == ["a", "b"]


def test_mutable_dict_and_list_defaults():
    d = MutableDict({"a": Categorical([3, 5], label="a"), "b": Categorical([1, 2], label="b")})
    assert d.default == {"a": 3, "b": 1}
    assert MutableList([Categorical([3, 5], label="a"), 7]).default == [3, 7]


def test_simplify_with_is_leaf_keeps_layer_choices_whole():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.conv = LayerChoice([nn.Conv2d(3, 3, 3), nn.Conv2d(3, 3, 5)], label="conv")
            self.fc = nn.Linear(3, nasx.choice("width", [4, 8]))

    space = Net()
    leaves = space.simplify(is_leaf=lambda m: isinstance(m, (LayerChoice, MutableSymbol)))
    assert leaves["conv"] is space.conv and isinstance(leaves["width"], Categorical)
    assert set(space.simplify()) == {"conv", "width"}
    with pytest.raises(ValueError):  # every choice must be a leaf
        space.simplify(is_leaf=lambda m: isinstance(m, LayerChoice))


def test_frozen_context_update_reaches_ensure_frozen():
    a = Categorical([1, 2, 3], label="a")
    with frozen_context():
        frozen_context.update({"a": 3})
        assert ensure_frozen(a) == 3
    assert frozen_context.current() is None
    with pytest.raises(RuntimeError):
        frozen_context.update({"a": 3})


def test_ensure_frozen_refuses_without_a_context():
    with pytest.raises(RuntimeError):
        ensure_frozen(Categorical([1, 2], label="a"))
    with pytest.raises(RuntimeError):
        ensure_frozen(Categorical([1, 2], label="a") + 1)


# --- nni.nas.space ----------------------------------------------------------------------------


def test_current_model_inside_model_context():
    assert current_model() is None
    with model_context({"a": 1}):
        arch = current_model()
        assert arch == {"a": 1}
        arch["a"] = 2  # a copy
        assert current_model() == {"a": 1}


def test_base_model_space_is_the_base_of_model_spaces():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()

    assert isinstance(Net(), BaseModelSpace)


# --- nni.nas.nn.pytorch: ModelSpace methods ---------------------------------------------------


class Space(ModelSpace, label_prefix="model"):
    def __init__(self, channels=4, classes=3):
        super().__init__()
        self.conv = LayerChoice(
            [nn.Conv2d(3, channels, 3, padding=1), nn.Conv2d(3, channels, 5, padding=2)],
            label="conv",
        )
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))


def test_model_space_args_and_trace_kwargs():
    space = Space(8)
    assert space.trace_kwargs == {"channels": 8}
    assert space.args == {"channels": 8, "classes": 3}
    assert space.trace_args == () and space.trace_symbol is Space


def test_random_gives_a_frozen_model_and_fills_the_memo():
    space = Space()
    memo = {}
    model = space.random(memo, random_state=0)
    assert list(memo) == ["model/conv"]
    assert isinstance(model.conv, nn.Conv2d)
    assert model.conv.kernel_size == ((3, 3) if memo["model/conv"] == 0 else (5, 5))
    fixed = space.random({"model/conv": 1})
    assert fixed.conv.kernel_size == (5, 5)


def test_grid_gives_every_model():
    kernels = [m.conv.kernel_size for m in Space().grid()]
    assert kernels == [(3, 3), (5, 5)]


def test_freeze_keeps_the_trained_weights():
    space = Space()
    with torch.no_grad():
        for p in space.parameters():
            p.add_(torch.randn_like(p))
    model = space.freeze({"model/conv": 1})
    x = torch.randn(2, 3, 6, 6)
    assert torch.allclose(model(x), space.fc(space.conv[1](x).mean((2, 3))))


def test_contains_and_validate():
    space = Space()
    assert space.contains({"model/conv": 1}) and not space.contains({"model/conv": 2})
    with pytest.raises(SampleValidationError):
        space.validate({"model/conv": 2})


def test_frozen_factory_classmethod():
    model = Space.frozen_factory({"model/conv": 1})(channels=2)
    assert model.conv.out_channels == 2 and model.conv.kernel_size == (5, 5)


def test_expression_constraint_added_with_add_mutable():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            a = self.add_mutable(Categorical([1, 2, 3], label="a"))
            b = self.add_mutable(Categorical([1, 2, 3], label="b"))
            self.add_mutable(ExpressionConstraint(a <= b, label="a<=b"))

    space = Net()
    for seed in range(10):
        memo = {}
        space.random(memo, random_state=seed)
        assert memo["a"] <= memo["b"]
    assert not space.contains({"a": 3, "b": 1})
    with pytest.raises(ConstraintViolation):
        space.validate({"a": 3, "b": 1})
    assert len(list(space.grid())) == 6


# --- ParametrizedModule and freeze of the choice modules --------------------------------------


def test_parametrized_module_documented_example():
    class MyModule(ParametrizedModule):
        def __init__(self, x):
            super().__init__()
            self.t = x

    module = MyModule(Categorical([1, 2, 3], label="choice1"))
    assert module.t == 1 and module.args["x"].label == "choice1"
    assert module.freeze({"choice1": 3}).t == 3


def test_parametrized_module_wraps_a_torch_layer():
    class ParametrizedConv2d(ParametrizedModule, nn.Conv2d, wraps=nn.Conv2d):
        pass

    conv = ParametrizedConv2d(3, Categorical([8, 16], label="out"), 1)
    assert conv.out_channels == 8 and conv.args["out_channels"].label == "out"
    frozen = conv.freeze({"out": 16})
    assert type(frozen) is nn.Conv2d and frozen.out_channels == 16
    assert isinstance(MutableConv2d(3, 4, 1), ParametrizedModule)


def test_layer_choice_freeze_gives_the_candidate():
    lc = LayerChoice([nn.Conv2d(3, 3, 3), nn.Conv2d(3, 3, 5)], label="conv")
    frozen = lc.freeze({"conv": 1})
    assert frozen.kernel_size == (5, 5) and torch.equal(frozen.weight, lc[1].weight)


def test_repeat_depth_as_an_expression_of_choices():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.blocks = Repeat(nn.Linear(4, 4), Categorical([1, 2], label="d") * 2)

    space = Net()
    assert list(space.simplify()) == ["d"] and len(space.blocks.blocks) == 4
    assert len(space.freeze({"d": 1}).blocks) == 2
    assert len(space.freeze({"d": 2}).blocks) == 4
    assert len(space.blocks.freeze({"d": 1})) == 2


def test_create_fixed_module_with_the_sample_first():
    class Activation(nasx.space.MutableModule):
        def __init__(self):
            super().__init__()
            self.choice = self.add_mutable(Categorical(["relu", "tanh"], label="act"))

        @classmethod
        def create_fixed_module(cls, sample):
            return nn.Tanh() if sample["act"] == "tanh" else nn.ReLU()

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.act = Activation()

    assert type(Net().freeze({"act": "tanh"}).act) is nn.Tanh


def test_shortcut_as_an_evaluator_argument_is_searched():
    # NNI's MutableEvaluator pattern: Classification(learning_rate=nni.loguniform(...)).
    from nasx.evaluator import Classification
    from nasx.evaluator.hparams import evaluator_choices

    evaluator = Classification(learning_rate=nasx.loguniform("lr", 1e-4, 1e-1), max_epochs=1)
    assert list(evaluator_choices(evaluator)) == ["lr"]
