"""Issue 32 item 2: NNI's ``choice(label, values)`` inside ``Mutable*`` layers, searched one-shot.

In NNI, ``MutableConv2d(1, nni.choice('w', [4, 8]), 3)`` shares one weight over ``w``. In nasx,
``nasx.choice`` returns a plain value inside a space's constructor (so ``nn.Conv2d(1, w, 3)``
works as written), and that value does not say it came from a choice: the one-shot strategies
refuse such a space, naming each label and the ``Categorical([...], label=...)`` to write
instead. The same space written with ``Categorical`` searches with weight sharing, and the
subnet of an arch is the model rebuilt under ``model_context(arch)`` with the same weights.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import nasx
from nasx.experiment import NasExperiment
from nasx.space import (
    Categorical,
    ModelSpace,
    MutableBatchNorm2d,
    MutableConv2d,
    MutableLinear,
    model_context,
    search_space,
)
from nasx.strategy import DARTS, RandomOneShot

from .toys import FAST_TRAINER, classification


class NniSpelling(ModelSpace):
    """A width and a hidden size written as NNI writes them: ``choice(label, values)``."""

    def __init__(self):
        super().__init__()
        width = nasx.choice("w", [4, 8])
        self.conv = MutableConv2d(1, width, 3, padding=1)
        self.bn = MutableBatchNorm2d(width)
        self.fc = MutableLinear(width, nasx.choice("h", [6, 10]))
        self.out = MutableLinear(nasx.choice("h", [6, 10]), 3)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x))).mean((2, 3))  # [B, w]
        return self.out(torch.relu(self.fc(x)))  # [B, 3]


class CategoricalSpelling(NniSpelling):
    """The same space written nasx's one-shot way: the ``Categorical`` objects themselves."""

    def __init__(self):
        ModelSpace.__init__(self)
        width = Categorical([4, 8], label="w")
        hidden = Categorical([6, 10], label="h")
        self.conv = MutableConv2d(1, width, 3, padding=1)
        self.bn = MutableBatchNorm2d(width)
        self.fc = MutableLinear(width, hidden)
        self.out = MutableLinear(hidden, 3)


STRATEGIES = {
    "random": lambda: RandomOneShot(num_samples=2, eval_batches=1),
    "darts": lambda: DARTS(),
}


def _evaluator():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(24, 1, 6, 6, generator=g), torch.randint(0, 3, (24,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=8)  # three batches
    return classification(train_dataloaders=loader, val_dataloaders=loader, **FAST_TRAINER)


def test_both_spellings_declare_the_same_search_space():
    assert search_space(NniSpelling()) == search_space(CategoricalSpelling())


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_nni_spelling_is_refused_naming_each_label_and_the_categorical_to_write(strategy, tmp_path):
    exp = NasExperiment(NniSpelling(), _evaluator(), STRATEGIES[strategy](), workdir=tmp_path)
    with pytest.raises(NotImplementedError) as info:
        exp.run()
    message = str(info.value)
    assert "Categorical([4, 8], label='w')" in message
    assert "Categorical([6, 10], label='h')" in message
    assert "nasx.choice" in message and "plain value" in message


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_categorical_spelling_searches_and_its_subnet_is_the_rebuilt_model(strategy, tmp_path):
    torch.manual_seed(0)
    exp = NasExperiment(
        CategoricalSpelling(), _evaluator(), STRATEGIES[strategy](), workdir=tmp_path
    )
    exp.run()
    (arch,) = exp.export_top_models(formatter="dict")
    assert set(arch) == {"w", "h"}
    sub = exp.strategy.subnet(arch).eval()
    with model_context(arch):
        rebuilt = NniSpelling()  # NNI's spelling rebuilds the same fixed model
    rebuilt.load_state_dict(sub.state_dict())  # same names and shapes, or this raises
    rebuilt.eval()
    assert rebuilt.conv.out_channels == arch["w"] and rebuilt.fc.out_features == arch["h"]
    supernet = exp.strategy.supernet.eval()
    supernet.use_arch(arch)
    x = torch.randn(4, 1, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(x), sub(x))
        torch.testing.assert_close(sub(x), supernet(x), rtol=1e-5, atol=1e-5)
