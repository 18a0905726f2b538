import pytest
import torch.nn as nn

from nasx.space import (
    Categorical,
    InputChoice,
    LabelConflictError,
    LayerChoice,
    ModelSpace,
    choice,
    label_scope,
    model_context,
    search_space,
)


class Unlabelled(ModelSpace):
    def __init__(self):
        super().__init__()
        self.a = LayerChoice([nn.ReLU(), nn.Tanh()])
        self.b = LayerChoice([nn.ReLU(), nn.Tanh()])
        self.i = InputChoice(2)


def test_auto_labels_restart_for_every_top_level_space():
    first = list(search_space(Unlabelled()))
    second = list(search_space(Unlabelled()))
    assert first == second == ["1", "2", "3"]


def test_auto_labels_match_under_model_context():
    arch = {"1": 1, "2": 0, "3": [1]}
    with model_context(arch):
        model = Unlabelled()
    assert isinstance(model.a, nn.Tanh) and isinstance(model.b, nn.ReLU)
    assert model.i.chosen == [1]


class Block(ModelSpace):
    label_prefix = "block"

    def __init__(self):
        super().__init__()
        self.op = LayerChoice([nn.ReLU(), nn.Tanh()], label="op")
        self.auto = LayerChoice([nn.ReLU(), nn.Tanh()])


class Outer(ModelSpace):
    def __init__(self):
        super().__init__()
        self.first = Block(label_prefix="stage1")
        self.second = Block(label_prefix="stage2")
        self.shared = Block()  # the class default prefix


def test_nested_spaces_compose_labels_with_slash():
    assert list(search_space(Outer())) == [
        "stage1/op",
        "stage1/1",
        "stage2/op",
        "stage2/1",
        "block/op",
        "block/1",
    ]


def test_label_scope_context_manager():
    with label_scope("net"):
        with label_scope("stem"):
            assert Categorical([1, 2], label="w").label == "net/stem/w"
        assert Categorical([1, 2], label="w").label == "net/w"
    with label_scope(None):
        assert Categorical([1, 2], label="w").label == "w"


class SharedDecision(ModelSpace):
    def __init__(self):
        super().__init__()
        self.a = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.b = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.w1 = choice("width", [4, 8])
        self.w2 = choice("width", [4, 8])


def test_reused_label_is_one_decision():
    space = search_space(SharedDecision())
    assert list(space) == ["width", "act"] or list(space) == ["act", "width"]
    with model_context({"act": 1, "width": 8}):
        model = SharedDecision()
    assert isinstance(model.a, nn.Tanh) and isinstance(model.b, nn.Tanh)
    assert model.w1 == model.w2 == 8


class Conflicting(ModelSpace):
    def __init__(self):
        super().__init__()
        self.a = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.b = LayerChoice([nn.ReLU(), nn.Tanh(), nn.GELU()], label="act")


def test_conflicting_label_fails_at_construction():
    with pytest.raises(LabelConflictError, match="label 'act' is used by two different choices"):
        Conflicting()


def test_invalid_label_strings():
    for bad in ["", "/x", "x/", 3]:
        with pytest.raises(ValueError, match="invalid label"):
            Categorical([1], label=bad)


def test_signature_of_space_and_choice_classes():
    import inspect

    class Net(ModelSpace):
        def __init__(self, width: int = 8, *, depth: int = 2):
            super().__init__()

        def forward(self, x):
            return x

    assert str(inspect.signature(Net)) == "(width: int = 8, *, depth: int = 2, label_prefix=None)"
    assert str(inspect.signature(Net().forward)) == "(x)"
    assert "candidates" in inspect.signature(LayerChoice).parameters
