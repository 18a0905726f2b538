"""Issue 32 item 2: NNI's ``choice(label, values)`` inside ``Mutable*`` layers, searched one-shot.

In NNI, ``MutableConv2d(1, nni.choice('w', [4, 8]), 3)`` shares one weight over ``w``. In nasx,
``nasx.choice`` returns the value in a space's search form, and the value remembers its choice
(``ChosenInt``; arithmetic on it, the expression), so a ``Mutable*`` layer (or a ``Repeat``
depth) searches it exactly as it searches ``Categorical([4, 8], label='w')`` (or ``... * 2``).
The references: the same space written with ``Categorical`` (identical supernet, identical
subnets) and the model rebuilt under ``model_context(arch)`` (what
every strategy's ``subnet(arch)`` must equal, weights loaded).
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import nasx
from nasx.experiment import NasExperiment
from nasx.space import (
    Categorical,
    ModelSpace,
    MutableBatchNorm2d,
    MutableConv2d,
    MutableLayerNorm,
    MutableLinear,
    MutableMultiheadAttention,
    ParametrizedModule,
    Repeat,
    model_context,
    search_space,
)
from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.supernet import subnet

from .toys import FAST_TRAINER, classification


def _pick(nni: bool):
    """``choice(label, values)`` in NNI's spelling (``nasx.choice``) or as the object."""
    if nni:
        return nasx.choice
    return lambda label, values: Categorical(values, label=label)


class ConvNet(ModelSpace):
    """MutableConv2d, MutableBatchNorm2d and MutableLinear sized by two choices."""

    def __init__(self, nni: bool = True):
        super().__init__()
        choice = _pick(nni)
        width = choice("w", [4, 8])
        self.conv = MutableConv2d(1, width, 3, padding=1)
        self.bn = MutableBatchNorm2d(width)
        self.fc = MutableLinear(width, choice("h", [6, 10]))
        self.out = MutableLinear(choice("h", [6, 10]), 3)  # the same label again, as NNI allows

    def forward(self, x):  # [B, 1, 6, 6] -> [B, 3]
        x = torch.relu(self.bn(self.conv(x))).mean((2, 3))  # [B, w]
        return self.out(torch.relu(self.fc(x)))


class NormNet(ModelSpace):
    """MutableLinear and MutableLayerNorm sized by one choice."""

    def __init__(self, nni: bool = True):
        super().__init__()
        width = _pick(nni)("w", [4, 8])
        self.fc = MutableLinear(6, width)
        self.norm = MutableLayerNorm(width)
        self.out = MutableLinear(width, 3)

    def forward(self, x):  # [B, 1, 6, 6] -> [B, 3]
        h = self.norm(self.fc(x.squeeze(1)))  # 6 tokens: [B, 6, w]
        return self.out(torch.relu(h).mean(1))


class HeadsNet(ModelSpace):
    """MutableMultiheadAttention with a searched ``num_heads``."""

    def __init__(self, nni: bool = True):
        super().__init__()
        self.attn = MutableMultiheadAttention(6, _pick(nni)("heads", [1, 2]), batch_first=True)
        self.out = nn.Linear(6, 3)

    def forward(self, x):  # 6 tokens of 6 features
        h = x.squeeze(1)
        return self.out(self.attn(h, h, h)[0].mean(1))


class EmbedNet(ModelSpace):
    """MutableMultiheadAttention with a searched ``embed_dim`` (and ``num_heads``)."""

    def __init__(self, nni: bool = True):
        super().__init__()
        choice = _pick(nni)
        embed = choice("embed", [4, 8])
        self.proj = MutableLinear(6, embed)
        self.attn = MutableMultiheadAttention(embed, choice("heads", [1, 2]), batch_first=True)
        self.out = MutableLinear(embed, 3)

    def forward(self, x):
        h = self.proj(x.squeeze(1))
        return self.out(self.attn(h, h, h)[0].mean(1))


class ExpressionNet(ModelSpace):
    """Layers sized by arithmetic on a choice: NNI's expressions (``w * 2``, ``w // 2 + 1``)."""

    def __init__(self, nni: bool = True):
        super().__init__()
        width = _pick(nni)("w", [4, 8])
        self.fc = MutableLinear(6, width * 2)
        self.mid = MutableLinear(width * 2, width // 2 + 1)
        self.out = MutableLinear(width // 2 + 1, 3)

    def forward(self, x):
        return self.out(torch.relu(self.mid(torch.relu(self.fc(x.squeeze(1))))).mean(1))


class DepthNet(ModelSpace):
    """A ``Repeat`` whose depth is a choice (NNI searches it; so does nasx in both spellings)."""

    def __init__(self, nni: bool = True):
        super().__init__()
        self.stem = nn.Linear(6, 4)
        self.blocks = Repeat(lambda i: nn.Linear(4, 4), _pick(nni)("depth", [1, 2, 3]))
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        return self.out(self.blocks(torch.relu(self.stem(x.squeeze(1)))).mean(1))


SPACES = {
    "conv": ConvNet,
    "layernorm": NormNet,
    "heads": HeadsNet,
    "embed": EmbedNet,
    "expression": ExpressionNet,
    "repeat": DepthNet,
}
STRATEGIES = {
    "darts": lambda: DARTS(),
    "gumbel": lambda: GumbelDARTS(),
    "enas": lambda: ENAS(hidden=8),
    "random": lambda: RandomOneShot(num_samples=2, eval_batches=1),
    "proxyless": lambda: Proxyless(),
}


def _evaluator():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(24, 1, 6, 6, generator=g), torch.randint(0, 3, (24,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=8)  # three batches
    return classification(train_dataloaders=loader, val_dataloaders=loader, **FAST_TRAINER)


def _archs(space):
    """Every arch of ``space``."""
    ss = search_space(space)
    grids = itertools.product(*(c.grid() for c in ss.values()))
    return [dict(zip(ss, values, strict=True)) for values in grids]


@pytest.mark.parametrize("space", list(SPACES))
def test_both_spellings_give_the_same_supernet_and_subnets(space):
    cls = SPACES[space]
    assert search_space(cls(nni=True)) == search_space(cls(nni=False))
    torch.manual_seed(0)
    nni = Supernet(cls(nni=True), mode="path")
    torch.manual_seed(0)
    cat = Supernet(cls(nni=False), mode="path")
    shapes = {k: v.shape for k, v in nni.state_dict().items()}
    assert shapes == {k: v.shape for k, v in cat.state_dict().items()}
    assert any(k.startswith("arch_params.") for k in shapes)  # the labels are searched
    for arch in _archs(cls()):
        a, b = subnet(nni, arch), subnet(cat, arch)
        assert repr(a) == repr(b)
        for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert ka == kb
            torch.testing.assert_close(va, vb)


@pytest.mark.parametrize("space", list(SPACES))
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_nni_spelling_searches_and_its_subnet_is_the_rebuilt_model(strategy, space, tmp_path):
    cls = SPACES[space]
    torch.manual_seed(0)
    exp = NasExperiment(cls(nni=True), _evaluator(), STRATEGIES[strategy](), workdir=tmp_path)
    exp.run()
    (arch,) = exp.export_top_models(formatter="dict")
    assert set(arch) == set(search_space(cls()))
    sub = exp.strategy.subnet(arch).eval()
    with model_context(arch):
        rebuilt = cls(nni=True)
    assert repr(rebuilt) == repr(sub)  # the same structure: plain torch layers, chosen sizes
    assert all(type(m).__module__.startswith("torch.") for m in sub.modules() if m is not sub)
    rebuilt.load_state_dict(sub.state_dict())  # same names and shapes, or this raises
    rebuilt.eval()
    supernet = exp.strategy.supernet.eval()
    supernet.use_arch(arch)
    x = torch.randn(4, 1, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(x), sub(x))
        torch.testing.assert_close(sub(x), supernet(x), rtol=1e-5, atol=1e-5)


def test_the_values_stay_plain_where_torch_and_a_fixed_model_see_them():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            width = nasx.choice("w", [4, 8])
            self.kind = type(width)
            self.plain = nn.Linear(2, width)  # nasx's spelling: a torch layer takes the value
            self.searched = MutableLinear(width, 3)

    space = Net()
    assert space.kind is not int and issubclass(space.kind, int)  # an int that remembers w
    assert space.plain.out_features == 4 and space.searched.in_features == 4
    assert type(space.searched.in_features) is int  # a Mutable layer's attributes are plain
    assert space.searched.args["in_features"] == Categorical([4, 8], label="w")
    with model_context({"w": 8}):
        fixed = Net()
    assert fixed.kind is int and type(fixed.plain.out_features) is int
    assert type(fixed.searched) is nn.Linear and fixed.searched.in_features == 8


def test_a_choice_also_sizing_a_plain_torch_layer_is_refused_naming_it():
    # the supernet would keep nn.BatchNorm2d at 4 channels; the model rebuilt for w=8 would not
    class Mixed(ModelSpace):
        def __init__(self):
            super().__init__()
            width = nasx.choice("w", [4, 8])
            self.conv = MutableConv2d(1, width, 3)
            self.bn = nn.BatchNorm2d(width)

    with pytest.raises(NotImplementedError, match=r"'w'.*bn\.num_features.*MutableBatchNorm2d"):
        Supernet(Mixed())


def test_a_choice_reaching_only_plain_layers_is_refused_naming_both_spellings():
    class Plain(ModelSpace):
        def __init__(self):
            super().__init__()
            width = nasx.choice("w", [4, 8])
            self.fc = MutableLinear(2, int(width / 2))  # a conversion gives a plain number

    with pytest.raises(NotImplementedError) as info:
        Supernet(Plain())
    message = str(info.value)
    assert "nasx.choice('w', [4, 8]) or Categorical([4, 8], label='w')" in message
    assert "int(w / 2)" in message


class _PLinear(ParametrizedModule, nn.Linear, wraps=nn.Linear):
    """NNI's way of parametrizing a torch layer: a plain nn.Linear in a fixed build."""


class _ParametrizedSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        width = Categorical([8, 16], label="w")
        self.a = _PLinear(4, width)
        self.b = MutableLinear(width, 3)

    def forward(self, x):
        raise AssertionError("trained: the refusal came too late")


def test_a_parametrized_plain_layer_sized_by_a_choice_is_refused_by_label_before_training(
    tmp_path,
):
    # Issue 45: the supernet kept _PLinear at 8 features and the first step of an arch with
    # w=16 died in MixedLinear's shape check, naming neither the label nor the module.
    from nasx.evaluator import Classification

    expected = r"label\(s\) 'w' in _PLinear \(a ParametrizedModule wrapping nn\.Linear\).*Mutable"
    with pytest.raises(NotImplementedError, match=expected):
        Supernet(_ParametrizedSpace())
    data = TensorDataset(torch.randn(8, 4), torch.randint(0, 3, (8,)))
    loader = DataLoader(data, batch_size=4)
    for strategy in (DARTS(), RandomOneShot()):
        evaluator = Classification(
            max_epochs=1, train_dataloaders=loader, val_dataloaders=loader, num_classes=3
        )
        exp = NasExperiment(
            _ParametrizedSpace(), evaluator, strategy, workdir=tmp_path / repr(strategy)
        )
        with pytest.raises(NotImplementedError, match=expected):
            exp.run()
