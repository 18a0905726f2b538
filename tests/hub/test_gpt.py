"""The elastic GPT space: a reference forward written out by hand, causality, subnets equal to
the model_context rebuild with the supernet's weights, one-shot (RandomOneShot) and multi-trial
search."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import LightningModule
from nasx.hub.gpt import GPTSpace, gpt_arch, largest_arch, smallest_arch
from nasx.space import model_context, search_space
from nasx.strategy.oneshot import Supernet, inherit_weights

SMALL = dict(
    vocab_size=32,
    block_size=8,
    search_embed_dim=(16, 32),
    search_depth=(1, 2),
    search_num_heads=(1, 2),
    search_mlp_ratio=(1.0, 2.0),
    head_dim=8,
)


def _scramble(model, seed=0):
    """Weights of order one everywhere, so that every slice and channel changes the output."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def _reference_forward(model, idx):
    """GPT's forward from the weights alone: embeddings, pre-norm blocks with a hand-written
    causal softmax attention and tanh-GELU MLP, final norm, head."""
    t = idx.shape[1]
    x = model.tok_emb.weight[idx] + model.pos_emb.weight[:t]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    for b in model.blocks:
        h = F.layer_norm(x, x.shape[-1:], b.ln1.weight, b.ln1.bias)
        d = b.attn.head_dim
        q, k, v = (
            (h @ lin.weight.T + lin.bias).unflatten(-1, (-1, d)).transpose(1, 2)
            for lin in (b.attn.q, b.attn.k, b.attn.v)
        )
        scores = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(mask, float("-inf"))
        a = (scores.softmax(-1) @ v).transpose(1, 2).flatten(2)
        x = x + a @ b.attn.proj.weight.T + b.attn.proj.bias
        h = F.layer_norm(x, x.shape[-1:], b.ln2.weight, b.ln2.bias)
        m = h @ b.fc1.weight.T + b.fc1.bias
        m = 0.5 * m * (1 + torch.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m**3)))
        x = x + m @ b.fc2.weight.T + b.fc2.bias
    x = F.layer_norm(x, x.shape[-1:], model.ln_f.weight, model.ln_f.bias)
    return x @ model.head.weight.T


@pytest.mark.parametrize(
    "arch", [gpt_arch(32, [2, 1], [2.0, 1.0]), gpt_arch(16, [1, 2], [1.0, 2.0])]
)
def test_the_model_is_a_causal_gpt(arch):
    model = _scramble(GPTSpace(**SMALL).freeze(arch)).eval()
    idx = torch.randint(0, 32, (3, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(idx)
        torch.testing.assert_close(logits, _reference_forward(model, idx), rtol=1e-4, atol=1e-4)
        changed = idx.clone()
        changed[:, 5:] = (changed[:, 5:] + 1) % 32  # the future: earlier logits must not move
        torch.testing.assert_close(model(changed)[:, :5], logits[:, :5])
    assert logits.shape == (3, 8, 32)
    assert len(model.blocks) == 2 and model.blocks[1].fc1.out_features == int(
        arch["embed_dim"] * arch["mlp_ratio_1"]
    )


def test_labels_and_bad_values():
    ss = search_space(GPTSpace(**SMALL))
    assert sorted(ss) == [
        "depth",
        "embed_dim",
        "mlp_ratio_0",
        "mlp_ratio_1",
        "num_head_0",
        "num_head_1",
    ]
    assert largest_arch(ss)["embed_dim"] == 32 and smallest_arch(ss)["depth"] == 1
    with pytest.raises(
        ValueError, match="search_depth must be a non-empty tuple of positive values"
    ):
        GPTSpace(search_depth=())
    with pytest.raises(ValueError, match="longer than block_size=8"):
        GPTSpace(**SMALL).freeze(largest_arch(ss))(torch.zeros(1, 9, dtype=torch.long))


def test_subnets_equal_the_rebuilt_models_with_the_supernets_weights():
    torch.manual_seed(0)
    supernet = Supernet(GPTSpace(**SMALL), mode="path", alphas=False).eval()
    _scramble(supernet)
    ss = supernet.search_space
    x = torch.randint(0, 32, (2, 8), generator=torch.Generator().manual_seed(2))
    archs = [largest_arch(ss), smallest_arch(ss)] + [ss.sample(random.Random(i)) for i in range(3)]
    outputs = []
    for arch in archs:
        supernet.use_arch(arch)
        with model_context(arch):
            rebuilt = GPTSpace(**SMALL)
        model = inherit_weights(supernet, rebuilt, arch).eval()
        with torch.no_grad():
            expected = supernet(x)
            torch.testing.assert_close(model(x), expected, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(model(x), _reference_forward(model, x), rtol=1e-4, atol=1e-4)
        outputs.append(expected)
    assert not torch.allclose(outputs[0], outputs[1])  # the archs do differ


class _LM(LightningModule):
    """The evaluator contract's module for next-token prediction."""

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


def _lm_evaluator(loader):
    from nasx.evaluator import Lightning, Trainer

    trainer = Trainer(
        max_epochs=1,
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
        num_sanity_val_steps=0,
    )
    return Lightning(_LM(), trainer, train_dataloaders=loader, val_dataloaders=loader)


def _token_loader():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 32, (4, 9), generator=g)
    return DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=2)


def _negative_loss(model, batch):
    x, y = batch
    return -F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()


def test_random_one_shot_searches_the_space():
    from nasx.strategy import RandomOneShot

    loader = _token_loader()
    s = RandomOneShot(num_samples=3, eval_batches=1, reward_fn=_negative_loss)
    torch.manual_seed(0)
    s.run(GPTSpace(**SMALL), _lm_evaluator(loader))
    (arch,) = s.export_top_models(top_k=1)
    assert s.supernet.search_space.validate(arch) == arch
    x, _ = next(iter(loader))
    sub = s.subnet(arch).eval()
    s.supernet.eval().use_arch(arch)
    with torch.no_grad():
        torch.testing.assert_close(sub(x), s.supernet(x), rtol=1e-4, atol=1e-4)


def test_multi_trial_search(tmp_path):
    from nasx.experiment import NasExperiment
    from nasx.strategy import Random

    loader = _token_loader()

    def evaluate(model):
        return sum(_negative_loss(model, b) for b in loader)

    exp = NasExperiment(GPTSpace(**SMALL), evaluate, Random(seed=0), workdir=tmp_path, max_trials=2)
    exp.run()
    trials = exp.trials("succeeded")
    assert len(trials) == 2 and all(t.metric < 0 for t in trials)
