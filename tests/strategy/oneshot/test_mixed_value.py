"""Weight sharing over value choices (mixed_value.py): slices equal the rebuilt model, mixture masks
equal the path they pick, every one-shot strategy searches NNI's value-choice test models."""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.experiment import NasExperiment
from nasx.space import (
    Categorical,
    LayerChoice,
    ModelSpace,
    MutableBatchNorm2d,
    MutableConv2d,
    MutableLayerNorm,
    MutableLinear,
    Repeat,
    model_context,
    search_space,
)
from nasx.space.derived import derived
from nasx.space.value_switch import ValueSwitch
from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet, inherit_weights
from nasx.strategy.oneshot.supernet.mixed_value import MixedBatchNorm2d, MixedConv2d, MixedLinear

from .toys import FAST_TRAINER, classification


def _half(k):
    return k // 2


class ValueChoiceConvNet(ModelSpace):
    """NNI's one-shot test model with value choices: a conv whose width and kernel are choices
    (padding ``kernel // 2``), the BatchNorm and the next conv following that width, a
    LayerChoice of dropouts. Input ``[N, 1, 8, 8]``, 10 classes."""

    def __init__(self):
        super().__init__()
        ch1 = Categorical([16, 32], label="ch1")
        kernel = Categorical([3, 5], label="kernel")
        self.conv1 = MutableConv2d(1, ch1, kernel, padding=derived(_half, kernel))
        self.batch_norm = MutableBatchNorm2d(ch1)
        self.conv2 = MutableConv2d(ch1, 64, 3)
        self.dropout1 = LayerChoice([nn.Dropout(0.25), nn.Dropout(0.5)], label="dropout")
        self.fc = MutableLinear(64, Categorical([16, 24], label="hidden"))
        self.out = MutableLinear(Categorical([16, 24], label="hidden"), 10)

    def forward(self, x):
        x = torch.relu(self.batch_norm(self.conv1(x)))
        x = torch.relu(self.conv2(x)).mean((2, 3))
        return self.out(torch.relu(self.fc(self.dropout1(x))))


class RepeatNet(ModelSpace):
    """NNI's repeat test model: a stem, then a block repeated a chosen 1 to 3 times, whose width
    (shared by every block) and depthwise kernel are choices."""

    def __init__(self):
        super().__init__()
        ch = Categorical([8, 16], label="ch")
        k = Categorical([3, 5], label="k")
        self.stem = MutableConv2d(1, ch, 3, padding=1)

        def block(i):
            return nn.Sequential(
                MutableConv2d(ch, ch, k, padding=derived(_half, k), groups=ch, bias=False),
                MutableBatchNorm2d(ch),
                nn.ReLU(),
            )

        self.blocks = Repeat(block, (1, 3), label="depth")
        self.fc = MutableLinear(ch, 10)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


class ExpandNet(ModelSpace):
    """An inverted bottleneck: width ``ch * expand`` (a derived value), expand 1 drops the 1x1
    expansion conv (a ValueSwitch over the same choice), LayerNorm over a chosen width."""

    def __init__(self):
        super().__init__()
        ch = Categorical([4, 8], label="ch")
        expand = Categorical([3, 1], label="expand")
        mid = derived(lambda c, e: c * e, ch, expand)
        self.stem = MutableConv2d(1, ch, 3, padding=1)
        self.expand = ValueSwitch(
            expand, {3: nn.Sequential(MutableConv2d(ch, mid, 1), nn.ReLU()), 1: nn.Identity()}
        )
        self.dw = MutableConv2d(mid, mid, 3, padding=1, groups=mid)
        self.project = MutableConv2d(mid, ch, 1)
        self.norm = MutableLayerNorm(ch)
        self.fc = MutableLinear(ch, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.project(torch.relu(self.dw(self.expand(x))))
        return self.fc(self.norm(x.mean((2, 3))))


class ExpressionNet(ModelSpace):
    """Value-choice arithmetic as NNI writes it: ``ch * 2`` channels, ``kernel // 2`` padding."""

    def __init__(self):
        super().__init__()
        ch = Categorical([4, 8], label="ch")
        kernel = Categorical([3, 5], label="kernel")
        self.conv1 = MutableConv2d(1, ch, kernel, padding=kernel // 2)
        self.conv2 = MutableConv2d(ch, ch * 2, 3, padding=1)
        self.bn = MutableBatchNorm2d(ch * 2)
        self.fc = MutableLinear(ch * 2, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv2(torch.relu(self.conv1(x)))))
        return self.fc(x.mean((2, 3)))


MODELS = [ValueChoiceConvNet, RepeatNet, ExpandNet]


def _rebuild(cls, arch):
    with model_context(arch):
        return cls()


@pytest.mark.parametrize("cls", [*MODELS, ExpressionNet])
@pytest.mark.parametrize("training", [False, True])
def test_a_sliced_path_equals_the_rebuilt_model_with_inherited_weights(cls, training):
    torch.manual_seed(0)
    supernet = Supernet(cls(), mode="path", alphas=False)
    for p in supernet.parameters():  # not the init values: every slice must be the right one
        p.data.normal_()
    supernet.train(training)
    x = torch.randn(4, 1, 8, 8)
    rng = random.Random(0)
    for _ in range(6):
        arch = supernet.search_space.sample(rng)
        supernet.use_arch(arch)
        model = inherit_weights(supernet, _rebuild(cls, arch), arch).train(training)
        with torch.no_grad():
            torch.manual_seed(1)  # the same dropout masks in both
            expected = supernet(x)
            torch.manual_seed(1)
            torch.testing.assert_close(model(x), expected, rtol=1e-5, atol=1e-5)


def test_the_shared_weight_is_the_largest_and_a_path_uses_its_leading_slice_and_centre_crop():
    supernet = Supernet(ValueChoiceConvNet(), mode="path", alphas=False)
    conv = supernet.model.conv1
    assert isinstance(conv, MixedConv2d) and conv.weight.shape == (32, 1, 5, 5)
    assert isinstance(supernet.model.batch_norm, MixedBatchNorm2d)
    assert isinstance(supernet.model.fc, MixedLinear) and supernet.model.fc.weight.shape == (24, 64)
    arch = {"ch1": 16, "kernel": 3, "dropout": 0, "hidden": 16}
    model = inherit_weights(supernet, _rebuild(ValueChoiceConvNet, arch), arch)
    assert torch.equal(model.conv1.weight, conv.weight[:16, :, 1:4, 1:4])
    assert model.conv2.weight.shape == (64, 16, 3, 3)


def test_batchnorm_statistics_of_a_path_update_the_leading_slice_only():
    supernet = Supernet(ValueChoiceConvNet(), mode="path", alphas=False).train()
    supernet.use_arch({"ch1": 16, "kernel": 3, "dropout": 0, "hidden": 16})
    supernet(torch.randn(4, 1, 8, 8) + 3)
    bn = supernet.model.batch_norm
    assert (bn.running_mean[:16] != 0).all() and (bn.running_mean[16:] == 0).all()


def test_spos_recalibration_resets_sliced_batchnorm_statistics():
    s = RandomOneShot(bn_recalibration_batches=1, eval_batches=1)
    s.supernet = Supernet(ValueChoiceConvNet(), mode="path", alphas=False)
    bn = s.supernet.model.batch_norm
    bn.running_mean.fill_(100.0)
    x = torch.randn(4, 1, 8, 8)
    arch = {"ch1": 16, "kernel": 3, "dropout": 0, "hidden": 16}
    s.score(arch, loader=[(x, torch.zeros(4, dtype=torch.long))])
    # the recalibrated statistics are those of this arch's one batch: no trace of the 100s
    assert bn.running_mean.abs().max() < 10 and (bn.running_mean[16:] == 0).all()


def _one_hot(supernet, arch):
    """Mixture weights that put all mass on ``arch``'s values."""
    space = supernet.search_space

    def weight_fn(key, alpha):
        w = torch.zeros_like(alpha)
        w[space[key].grid().index(arch[key])] = 1.0
        return w

    return weight_fn


@pytest.mark.parametrize("cls", [*MODELS, ExpressionNet])
def test_a_one_hot_mixture_equals_the_path_it_picks(cls):
    # the masks zero what lies outside the chosen slice, so the max-size mixture computes the path
    torch.manual_seed(0)
    supernet = Supernet(cls()).eval()
    x = torch.randn(3, 1, 8, 8)
    for arch in list(supernet.search_space.grid())[:6]:
        supernet.use_arch(arch)
        path = supernet(x)
        supernet.use_mixture(_one_hot(supernet, arch))
        torch.testing.assert_close(supernet(x), path, rtol=1e-5, atol=1e-5)


def test_mixture_gradients_reach_every_value_label():
    supernet = Supernet(ValueChoiceConvNet())
    supernet.use_mixture()
    supernet(torch.randn(2, 1, 8, 8)).square().sum().backward()
    for label in ("ch1", "kernel", "hidden"):
        assert supernet.alpha(label).grad.abs().sum() > 0, label


def test_proxyless_gates_give_value_labels_a_gradient():
    supernet = Supernet(ValueChoiceConvNet(), mode="path")
    probs = {k: a.softmax(-1) for k, a in supernet.alphas().items()}
    # the widest values: each width label has a narrower alternative, which changes the output
    supernet.use_arch({"ch1": 32, "kernel": 3, "dropout": 0, "hidden": 24}, gates=probs)
    supernet(torch.randn(2, 1, 8, 8)).square().sum().backward()
    for label in ("ch1", "kernel", "hidden"):
        assert supernet.alpha(label).grad.abs().sum() > 0, label


def test_a_plain_value_choice_is_still_refused_naming_the_label():
    from nasx.space import choice

    class Plain(ModelSpace):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, choice("width", [4, 8]))

    with pytest.raises(NotImplementedError, match="width.*Mutable"):
        Supernet(Plain())


STRATEGIES = {
    "darts": lambda: DARTS(),
    "gumbel": lambda: GumbelDARTS(),
    "enas": lambda: ENAS(hidden=8),
    "random": lambda: RandomOneShot(num_samples=2, eval_batches=1),
    "proxyless": lambda: Proxyless(),
}


def _evaluator():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 1, 8, 8, generator=g), torch.randint(0, 10, (16,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    return classification(train_dataloaders=loader, val_dataloaders=loader, **FAST_TRAINER)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("cls", MODELS)
def test_every_one_shot_strategy_searches_the_value_choice_models(cls, strategy, tmp_path):
    torch.manual_seed(0)
    space = cls()
    exp = NasExperiment(space, _evaluator(), STRATEGIES[strategy](), workdir=tmp_path)
    exp.run()
    (arch,) = exp.export_top_models(formatter="dict")
    assert search_space(space).validate(arch) == arch
    (model,) = exp.export_top_models(formatter="instance")
    assert search_space(model) == {} and model(torch.randn(2, 1, 8, 8)).shape == (2, 10)
    # the subnet with inherited weights computes what the supernet computes on that path
    s = exp.strategy
    sub = s.subnet(arch).eval()
    s.supernet.eval().use_arch(arch)
    x = torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(sub(x), s.supernet(x), rtol=1e-5, atol=1e-5)


class WidthToy(ModelSpace):
    """x [B, 8] -> 3 classes through a hidden layer of width 1 (too narrow) or 16."""

    def __init__(self):
        super().__init__()
        hidden = Categorical([1, 16], label="hidden")
        self.fc1 = MutableLinear(8, hidden)
        self.fc2 = MutableLinear(hidden, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


SEARCHERS = {
    "darts": lambda: DARTS(arc_learning_rate=3e-2),
    "gumbel": lambda: GumbelDARTS(arc_learning_rate=3e-2),
    "proxyless": lambda: Proxyless(arc_learning_rate=3e-2),
    "random": lambda: RandomOneShot(num_samples=2),
}


@pytest.mark.parametrize("strategy", list(SEARCHERS))
def test_search_prefers_the_width_that_can_fit_the_data(strategy):
    # width 1 cannot separate 3 classes: the mixture (masks), the binary gates (Proxyless) and
    # SPOS's scores all pick 16 (seeds 0-4: p(16) about 0.92-0.94, SPOS accuracy 0.91-0.95 vs
    # 0.31-0.57)
    from .toys import toy_evaluator

    torch.manual_seed(0)
    s = SEARCHERS[strategy]()
    s.run(WidthToy(), toy_evaluator(epochs=3))
    assert s.export_top_models()[0] == {"hidden": 16}
