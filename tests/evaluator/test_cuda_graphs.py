"""CudaGraphTraining: the graphed training step equals Lightning's automatic one.

On a CPU no graph is captured, but with the device check lifted (``graph_blocker`` patched) the
callback runs its whole manual step (zero_grad, forward, recorded logs, backward, clipping,
optimizer step, epoch-wise schedulers, global_step counting) eagerly: the same code a GPU replays.
These tests compare it against Lightning's automatic optimization, weight for weight. The GPU
tests at the end run the real graphs where a GPU is present.
"""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification, CudaGraphTraining, Trainer
from nasx.evaluator import cuda_graphs as cuda_graphs_module
from nasx.evaluator.recipes import DartsRetrainModule


def _data(n: int = 64, batch: int = 16) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=batch)


def _model() -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))


def _fit(cuda_graphs: bool | None, lift_device_check: bool, monkeypatch, **trainer_kwargs):
    if lift_device_check:
        monkeypatch.setattr(cuda_graphs_module, "graph_blocker", lambda trainer, module: None)
    data = _data()
    ev = Classification(
        learning_rate=0.05,
        optimizer=torch.optim.SGD,
        train_dataloaders=data,
        val_dataloaders=data,
        accelerator="cpu",
        cuda_graphs=cuda_graphs,
        **trainer_kwargs,
    )
    model = _model()
    acc = ev.evaluate(model)
    return model, acc


@pytest.mark.parametrize(
    "clip",
    [
        None,
        {"gradient_clip_val": 0.05},
        {"gradient_clip_val": 0.01, "gradient_clip_algorithm": "value"},
    ],
)
def test_manual_step_equals_automatic_optimization(monkeypatch, clip):
    kwargs = {"max_epochs": 2, **(clip or {})}
    reference, ref_acc = _fit(False, False, monkeypatch, **kwargs)
    graphed, acc = _fit(None, True, monkeypatch, **kwargs)
    for (name, a), b in zip(
        reference.state_dict().items(), graphed.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(b, a, msg=f"{name} differs")
    assert acc == pytest.approx(ref_acc)


def test_global_step_and_max_steps_count_graphed_steps(monkeypatch):
    monkeypatch.setattr(cuda_graphs_module, "graph_blocker", lambda trainer, module: None)
    module = Classification(learning_rate=0.1).module
    module.set_model(_model())
    trainer = Trainer(max_steps=5, accelerator="cpu", callbacks=[CudaGraphTraining()]).build()
    trainer.fit(module, _data(), _data())
    (callback,) = [c for c in trainer.callbacks if isinstance(c, CudaGraphTraining)]  # a copy
    assert trainer.global_step == 5
    assert callback.steps["eager"] == 5  # on a CPU every step runs the same code eagerly
    assert module.automatic_optimization  # restored at the end of the fit
    assert "training_step" not in module.__dict__


def test_epoch_schedulers_and_logs_match_lightning(monkeypatch):
    """DartsRetrainModule: cosine LR stepped per epoch, train_loss/train_acc logged per epoch."""

    def fit(lift: bool) -> tuple[nn.Module, dict[str, float]]:
        if lift:
            monkeypatch.setattr(cuda_graphs_module, "graph_blocker", lambda trainer, module: None)
        module = DartsRetrainModule(learning_rate=0.1, max_epochs=3, auxiliary_loss_weight=0.0)
        model = _model()
        module.set_model(model)
        trainer = Trainer(
            max_epochs=3, accelerator="cpu", callbacks=[CudaGraphTraining(None if lift else False)]
        ).build()
        trainer.fit(module, _data(), _data())
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        return model, {**metrics, "final_lr": trainer.optimizers[0].param_groups[0]["lr"]}

    ref_model, ref = fit(False)
    model, got = fit(True)
    for a, b in zip(ref_model.state_dict().values(), model.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a)
    assert set(got) == set(ref)
    for name in ref:
        assert got[name] == pytest.approx(ref[name], rel=1e-5), name


def test_blockers_name_the_reason():
    module = Classification().module
    module.set_model(_model())
    trainer = Trainer(max_epochs=1, accelerator="cpu").build()
    reason = cuda_graphs_module.graph_blocker(trainer, module)
    assert reason == "the model trains on cpu, not on a CUDA GPU"


def test_true_raises_where_graphs_cannot_be_used():
    data = _data()
    ev = Classification(
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=1,
        accelerator="cpu",
        cuda_graphs=True,
    )
    with pytest.raises(
        ValueError,
        match="cuda_graphs=True, but this training cannot use them: the model trains on cpu",
    ):
        ev.evaluate(_model())


def test_bad_value_is_refused():
    with pytest.raises(ValueError, match="cuda_graphs must be None, True or False"):
        Classification(cuda_graphs="yes")  # type: ignore[arg-type]


def test_step_hooks_are_found_on_modules_and_callbacks():
    class Hooked(pl.Callback):
        def on_after_backward(self, trainer, pl_module):
            pass

    class Module(DartsRetrainModule):
        def on_before_optimizer_step(self, optimizer):
            pass

    hooks = cuda_graphs_module._STEP_HOOKS
    assert cuda_graphs_module._overridden(Hooked(), pl.Callback, hooks) == ["on_after_backward"]
    assert cuda_graphs_module._overridden(Module(), pl.LightningModule, hooks) == [
        "on_before_optimizer_step"
    ]
    assert cuda_graphs_module._overridden(CudaGraphTraining(), pl.Callback, hooks) == []


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@gpu
@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
@pytest.mark.filterwarnings("ignore:You defined a `validation_step` but have no")  # training only
def test_gpu_replayed_training_equals_eager(precision):
    def fit(cuda_graphs: bool) -> tuple[nn.Module, CudaGraphTraining]:
        torch.manual_seed(0)
        x = torch.randn(256, 3, 16, 16, device="cuda")
        y = torch.randint(0, 10, (256,), device="cuda")
        batches = DataLoader(TensorDataset(x, y), batch_size=32)  # 8 batches, in order
        torch.manual_seed(1)
        model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(8, 10),
        )
        module = DartsRetrainModule(learning_rate=0.05, max_epochs=2, auxiliary_loss_weight=0.0)
        module.set_model(model)
        callback = CudaGraphTraining(cuda_graphs)
        trainer = Trainer(
            max_epochs=2,
            accelerator="gpu",
            devices=1,
            precision=precision,
            gradient_clip_val=5.0,
            callbacks=[callback],
        ).build()
        trainer.fit(module, batches)
        # Trainer.build() deep-copies its callbacks: read the copy that ran
        ran = next(c for c in trainer.callbacks if isinstance(c, CudaGraphTraining))
        return model, ran

    eager, _ = fit(False)
    graphed, callback = fit(True)
    steps = (callback.steps, callback.disabled_reason)
    assert callback.steps["replays"] > 0 and callback.steps["captures"] == 2, (
        steps
    )  # one per epoch (LR)
    tol = {"atol": 1e-4, "rtol": 1e-4} if precision == "32-true" else {"atol": 2e-2, "rtol": 2e-2}
    for a, b in zip(eager.state_dict().values(), graphed.state_dict().values(), strict=True):
        torch.testing.assert_close(b.float(), a.float(), **tol)
