"""The sandwich rule (BigNAS, OFA) in RandomOneShot: the paths of a step, the gradients they add
up to (against a hand-written loop), in-place distillation, the refusals, and a run that exports."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import LightningModule
from nasx.hub.gpt import GPTSpace
from nasx.space import (
    Categorical,
    LayerChoice,
    ModelSpace,
    MutableLinear,
    Numerical,
    SearchSpace,
    search_space,
)
from nasx.strategy import RandomOneShot
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.lightning import OneShotModule
from nasx.strategy.oneshot.sampling import step_rng
from nasx.strategy.oneshot.sandwich import largest_arch, smallest_arch, soft_target_loss

from .toys import FAST_TRAINER

GPT = dict(
    vocab_size=32,
    block_size=8,
    search_embed_dim=(8, 16),
    search_depth=(1, 2),
    search_num_heads=(1, 2),
    search_mlp_ratio=(1.0, 2.0),
    head_dim=4,
)


# -- largest and smallest ------------------------------------------------------------------
def test_the_extremes_are_every_choice_s_max_and_min():
    space = SearchSpace(
        {
            "width": Categorical([32, 16, 64], label="width"),
            "ratio": Categorical([3.0, 2.5, 4], label="ratio"),
            "drop": Numerical(0.0, 0.3, quantize=0.1, label="drop"),
        }
    )
    assert largest_arch(space) == {"width": 64, "ratio": 4, "drop": 0.3}
    assert smallest_arch(space) == {"width": 16, "ratio": 2.5, "drop": 0.0}


def test_gpt_s_extremes_by_hand():
    ss = search_space(GPTSpace(**GPT))
    assert largest_arch(ss) == {
        "embed_dim": 16,
        "depth": 2,
        "num_head_0": 2,
        "num_head_1": 2,
        "mlp_ratio_0": 2.0,
        "mlp_ratio_1": 2.0,
    }
    assert smallest_arch(ss) == {
        "embed_dim": 8,
        "depth": 1,
        "num_head_0": 1,
        "num_head_1": 1,
        "mlp_ratio_0": 1.0,
        "mlp_ratio_1": 1.0,
    }


class _OpSpace(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = MutableLinear(4, Categorical([2, 4], label="width"))
        self.op = LayerChoice([nn.ReLU(), nn.Tanh()], label="op")

    def forward(self, x):
        return self.op(self.fc(x))


def test_a_choice_without_order_is_refused_by_label():
    with pytest.raises(ValueError, match=r"choice 'op' has no order: it chooses among modules"):
        largest_arch(search_space(_OpSpace()))
    strings = SearchSpace({"act": Categorical(["relu", "gelu"], label="act")})
    with pytest.raises(ValueError, match=r"'act' has no order: its value 'relu' is not a number"):
        smallest_arch(strings)
    flags = SearchSpace({"bias": Categorical([False, True], label="bias")})
    with pytest.raises(ValueError, match="'bias' has no order"):
        largest_arch(flags)
    with pytest.raises(ValueError, match="'lr' has no order: its bounds"):
        unbounded = Numerical(float("-inf"), float("inf"), mu=0, sigma=1, label="lr")
        largest_arch(SearchSpace({"lr": unbounded}))
    # refused when the run builds its supernet, before any training
    with pytest.raises(ValueError, match="choice 'op' has no order"):
        RandomOneShot(sandwich=1).build_supernet(_OpSpace())


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="sandwich must be an integer >= 0, got -1"):
        RandomOneShot(sandwich=-1)
    with pytest.raises(TypeError, match="sandwich must be an integer"):
        RandomOneShot(sandwich=2.0)
    with pytest.raises(ValueError, match="give sandwich= too"):
        RandomOneShot(inplace_distill=True)
    with pytest.raises(TypeError, match="inplace_distill must be True, False or a function"):
        RandomOneShot(sandwich=0, inplace_distill="kl")


# -- in-place distillation's loss ------------------------------------------------------------
def _kl_by_hand(student, teacher, class_dim):
    p = teacher.softmax(class_dim)
    kl = (p * (p.log() - student.log_softmax(class_dim))).sum(class_dim)  # per prediction
    return kl.mean()


@pytest.mark.parametrize(
    "shape, class_dim", [((3, 5), 1), ((2, 4, 7), 2), ((2, 3, 4, 4), 1)], ids=["BC", "BTV", "BCHW"]
)
def test_soft_target_loss_is_the_kl_per_prediction(shape, class_dim):
    g = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    expected = _kl_by_hand(student, teacher, class_dim)
    torch.testing.assert_close(soft_target_loss(student, teacher), expected)
    with pytest.raises(ValueError, match=r"got \(3, 5\) and \(3, 4\)"):
        soft_target_loss(torch.zeros(3, 5), torch.zeros(3, 4))


# -- the steps: which paths, which gradients -------------------------------------------------
class _Width(ModelSpace):
    """x -> fc1 (width 2, 3 or 4) -> relu -> fc2 -> 3 class scores."""

    def __init__(self):
        super().__init__()
        width = Categorical([2, 3, 4], label="width")
        self.fc1 = MutableLinear(5, width)
        self.fc2 = MutableLinear(width, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class _Classifier(LightningModule):
    """The evaluator's module: cross-entropy, plain SGD at lr 1 (a step is minus the gradient)."""

    def __init__(self):
        super().__init__()
        self.model = None

    def set_model(self, model):
        self.model = model

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.model(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.model.parameters(), lr=1.0)


def _module(strategy):
    torch.manual_seed(0)
    supernet = Supernet(_Width(), mode="path", alphas=False)
    module = OneShotModule(_Classifier(), supernet, strategy)
    module.configure_optimizers()
    return module


def _spy_paths(supernet):
    used = []
    original = supernet.use_arch

    def use_arch(arch, *args, **kwargs):
        used.append(dict(arch))
        return original(arch, *args, **kwargs)

    supernet.use_arch = use_arch
    return used


def test_each_step_trains_the_largest_the_smallest_and_n_random_paths():
    strategy = RandomOneShot(sandwich=3, gradient_clip_val=None, seed=7)
    module = _module(strategy)
    used = _spy_paths(module.supernet)
    batch = (torch.randn(6, 5), torch.randint(0, 3, (6,)))
    for _ in range(3):
        module.search_step(batch, batch)
    assert len(used) == 3 * 5
    space = module.supernet.search_space
    for step in range(3):
        paths = used[5 * step : 5 * step + 5]
        assert paths[:2] == [{"width": 4}, {"width": 2}]  # by hand: max, then min
        rng = step_rng(7, step)  # the random ones: the step's own stream, as plain SPOS draws
        assert paths[2:] == [space.sample(rng) for _ in range(3)]
    assert module.step_index == 3


def _hand_written_step(weights, archs, x, y, distill):
    """The sandwich step on a plain two-layer net written out: each path is a leading slice of the
    largest weights; the gradients of all paths add up; minus the sum is the SGD(lr=1) step."""
    w1, b1, w2, b2 = (w.clone().requires_grad_() for w in weights)
    largest_logits = None
    for arch in archs:
        k = arch["width"]
        logits = F.relu(x @ w1[:k].T + b1[:k]) @ w2[:, :k].T + b2  # [B, 3]
        if largest_logits is None or not distill:
            loss = F.cross_entropy(logits, y)
            largest_logits = logits.detach() if largest_logits is None else largest_logits
        else:
            loss = _kl_by_hand(logits, largest_logits, 1)
        loss.backward()
    return [w.detach() - w.grad for w in (w1, b1, w2, b2)]


@pytest.mark.parametrize("distill", [False, True], ids=["labels", "inplace_distill"])
def test_gradients_add_up_over_the_paths_before_one_step(distill):
    strategy = RandomOneShot(sandwich=1, inplace_distill=distill, gradient_clip_val=None, seed=3)
    module = _module(strategy)
    net = module.supernet
    params = [net.fc1.weight, net.fc1.bias, net.fc2.weight, net.fc2.bias]
    before = [p.detach().clone() for p in params]
    used = _spy_paths(net)
    x, y = torch.randn(8, 5, generator=torch.Generator().manual_seed(1)), torch.arange(8) % 3
    module.search_step((x, y), (x, y))
    assert [a["width"] for a in used[:2]] == [4, 2] and len(used) == 3
    expected = _hand_written_step(before, used, x, y, distill)
    for p, e in zip(params, expected):
        torch.testing.assert_close(p.detach(), e)
    # one path alone (plain SPOS) would have stepped differently: the sum is what was applied
    one_path = _hand_written_step(before, used[:1], x, y, distill)
    assert not torch.allclose(params[0], one_path[0])


def test_without_sandwich_a_step_trains_one_random_path():
    module = _module(RandomOneShot(gradient_clip_val=None, seed=7))
    used = _spy_paths(module.supernet)
    module.search_step(*[(torch.randn(4, 5), torch.zeros(4, dtype=torch.long))] * 2)
    assert used == [module.supernet.search_space.sample(step_rng(7, 0))]


def test_a_refused_extreme_is_named():
    strategy = RandomOneShot(sandwich=1, filter=lambda arch: arch["width"] < 4)
    module = _module(strategy)
    with pytest.raises(ValueError, match=r"trains the largest path, .* refuse it: \{'width': 4\}"):
        module.search_step(*[(torch.randn(4, 5), torch.zeros(4, dtype=torch.long))] * 2)


# -- a run on the GPT space exports archs -----------------------------------------------------
class _LM(LightningModule):
    def __init__(self):
        super().__init__()
        self.model = None

    def set_model(self, model):
        self.model = model

    def _loss(self, batch):
        x, y = batch
        return F.cross_entropy(self.model(x).flatten(0, 1), y.flatten())

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def _negative_loss(model, batch):
    x, y = batch
    return -F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()


def test_a_sandwich_run_on_the_gpt_space_exports_archs(tmp_path):
    from nasx.evaluator import Lightning, Trainer
    from nasx.experiment import NasExperiment

    tokens = torch.randint(0, 32, (8, 9), generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=2)
    trainer = Trainer(**FAST_TRAINER)
    evaluator = Lightning(_LM(), trainer, train_dataloaders=loader, val_dataloaders=loader)
    strategy = RandomOneShot(
        sandwich=1, inplace_distill=True, num_samples=3, eval_batches=1, reward_fn=_negative_loss
    )
    torch.manual_seed(0)
    exp = NasExperiment(GPTSpace(**GPT), evaluator, strategy, workdir=tmp_path)
    exp.run()
    archs = exp.export_top_models(top_k=2)
    ss = search_space(GPTSpace(**GPT))
    assert len(archs) == 2 and all(ss.validate(a) == a for a in archs)
    assert strategy.module.step_index == 4  # one step per training batch
    scores = strategy.export_scores(archs)  # the post-training search scored them
    assert all(s["supernet_score"] < 0 for s in scores)
