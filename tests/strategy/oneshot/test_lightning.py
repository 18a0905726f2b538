"""OneShotModule through Lightning: checkpoint/resume, arch-weight logging, trainer adjustments."""

import csv
from contextlib import nullcontext

import pytest
import torch

from nasx.strategy import DARTS
from nasx.strategy.oneshot.lightning import split_optimizer_config

from .toys import ToySpace, toy_evaluator

STEPS_PER_EPOCH = 16  # 512 samples / batch 32


def test_checkpoint_then_resume_continues_training(tmp_path):
    torch.manual_seed(0)
    first = DARTS(arc_learning_rate=3e-2)
    first.run(ToySpace(), toy_evaluator(epochs=1), workdir=tmp_path)
    ckpt = tmp_path / "checkpoints" / "last.ckpt"
    assert ckpt.exists()
    saved = torch.load(ckpt, weights_only=False)
    alpha_key = next(k for k in saved["state_dict"] if k.endswith("arch_params.op"))
    assert len(saved["optimizer_states"]) == 2  # weights and architecture

    second = DARTS(arc_learning_rate=3e-2)
    second.run(ToySpace(), toy_evaluator(epochs=2), workdir=tmp_path)
    assert second.module.step_index == 2 * STEPS_PER_EPOCH  # one epoch restored, one trained
    assert second.trainer.global_step == 2 * 2 * STEPS_PER_EPOCH  # Lightning counts both optimizers
    resumed = torch.load(ckpt, weights_only=False)
    assert resumed["epoch"] == saved["epoch"] + 1
    assert not torch.equal(resumed["state_dict"][alpha_key], saved["state_dict"][alpha_key])


def test_arch_probabilities_are_logged_every_n_steps(tmp_path):
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger

    s = DARTS(arc_learning_rate=3e-2, log_arch_every=4)
    csv_logger = CSVLogger(tmp_path, name="csv")
    tb_logger = TensorBoardLogger(tmp_path, name="tb")
    s.run(ToySpace(), toy_evaluator(epochs=1, logger=[csv_logger, tb_logger]))
    with open(f"{csv_logger.log_dir}/metrics.csv") as f:
        rows = list(csv.DictReader(f))
    logged = [r for r in rows if r.get("arch/op/linear")]
    assert [int(r["step"]) for r in logged] == [0, 4, 8, 12]
    assert {"arch/op/noise", "arch/pick/0", "arch/pick/1"} <= set(rows[0])
    assert list((tmp_path / "tb").rglob("events.out.tfevents.*"))


def test_trainer_gradient_clip_is_applied_by_the_strategy():
    s = DARTS()
    trainer = s._build_trainer(toy_evaluator(gradient_clip_val=0.5), None)
    assert s.gradient_clip_val == 0.5 and not trainer.gradient_clip_val
    assert trainer.precision in ("32-true", "32")  # 'auto' picks bf16 only on a GPU


def test_non_lightning_evaluator_is_refused():
    from nasx.evaluator import FunctionalEvaluator

    with pytest.raises(TypeError, match="Lightning evaluator"):
        DARTS().run(ToySpace(), FunctionalEvaluator(lambda model: 0.0))


def test_optimizer_configs_of_every_shape_are_understood():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    assert split_optimizer_config(opt) == (opt, [])
    assert split_optimizer_config([opt]) == (opt, [])
    assert split_optimizer_config(([opt], [sched])) == (opt, [sched])
    assert split_optimizer_config({"optimizer": opt, "lr_scheduler": {"scheduler": sched}}) == (
        opt,
        [sched],
    )
    with pytest.raises(ValueError, match="exactly one"):
        split_optimizer_config([opt, opt])


def test_a_resumed_run_continues_the_strategys_own_schedule(tmp_path):
    """GumbelDARTS's temperature is checkpointed: 2 epochs + 1 resumed = 3 uninterrupted ones."""
    from nasx.strategy import GumbelDARTS

    def strategy():
        return GumbelDARTS(gumbel_temperature=1.0, temperature_decay=0.5, min_temperature=0.01)

    whole = strategy()
    whole.run(ToySpace(), toy_evaluator(epochs=3))
    assert whole.temperature == 0.125
    first = strategy()
    first.run(ToySpace(), toy_evaluator(epochs=2), workdir=tmp_path)
    assert first.temperature == 0.25
    resumed = strategy()
    resumed.run(ToySpace(), toy_evaluator(epochs=3), workdir=tmp_path)
    assert resumed.temperature == 0.125  # without the checkpointed state: 1.0 * 0.5 = 0.5


def test_the_evaluator_modules_own_logs_reach_the_trainer():
    s = DARTS(arc_learning_rate=3e-2)
    s.run(ToySpace(), toy_evaluator(epochs=1))
    assert {"train_loss", "val_loss", "val_acc"} <= set(s.trainer.callback_metrics)


def test_lightning_does_not_route_a_child_modules_log_by_itself(monkeypatch):
    """Why OneShotModule._inner_logging exists (see its docstring): Lightning attaches the inner
    module to the trainer, but only the top module gets the hook name that ``log`` needs. If this
    test fails, Lightning now routes a child module's ``log`` itself and the routing can go."""
    from pytorch_lightning.utilities.exceptions import MisconfigurationException

    from nasx.strategy.oneshot.lightning import OneShotModule

    monkeypatch.setattr(OneShotModule, "_inner_logging", lambda self, enabled=True: nullcontext())
    with pytest.raises(MisconfigurationException, match="not managed by the `Trainer`"):
        DARTS(arc_learning_rate=3e-2).run(ToySpace(), toy_evaluator(epochs=1))
