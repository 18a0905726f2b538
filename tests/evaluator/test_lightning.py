"""Tests for the Lightning evaluator and the Trainer spec (tiny models, CPU, a few epochs)."""

import pickle

import pytest
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Lightning, LightningModule, Trainer


def _regression_data(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-1.0], [0.5]])  # (n, 1)
    return TensorDataset(x, y)


class MSEModule(LightningModule):
    """Minimal user module: logs val_loss, minimized."""

    metric_name = "val_loss"
    direction = "minimize"

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y), batch_size=len(x))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def _trainer(**kwargs):
    return Trainer(**{"accelerator": "cpu", "max_epochs": 3, **kwargs})


def test_trainer_spec_builds_fresh_quiet_trainers():
    spec = Trainer(max_epochs=2, limit_train_batches=5)
    assert spec.kwargs == {"max_epochs": 2, "limit_train_batches": 5}
    a, b = spec.build(), spec.build(max_epochs=4)
    assert a is not b and isinstance(a, pl.Trainer)
    assert (a.max_epochs, b.max_epochs, a.limit_train_batches) == (2, 4, 5)
    assert a.logger is None and not a.checkpoint_callbacks and a.progress_bar_callback is None
    loud = Trainer(enable_progress_bar=True).build()
    assert loud.progress_bar_callback is not None
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_trainer_spec_copies_callbacks_per_build():
    stop = pl.callbacks.EarlyStopping("val_loss")
    spec = Trainer(callbacks=[stop])
    built = [cb for cb in spec.build().callbacks if isinstance(cb, pl.callbacks.EarlyStopping)]
    assert len(built) == 1 and built[0] is not stop


def test_report_gets_one_value_per_epoch_and_final_metric_is_last():
    data = DataLoader(_regression_data(), batch_size=8)
    ev = Lightning(MSEModule(), _trainer(), train_dataloaders=data, val_dataloaders=data)
    assert ev.direction == "minimize" and ev.metric == "val_loss"
    model = torch.nn.Linear(3, 1)
    seen = []
    result = ev.evaluate(model, report=seen.append)
    assert len(seen) == 3 and result == seen[-1]
    assert seen[0] > seen[-1]  # it learned something
    # reference: the full-data MSE of the trained model, computed by hand
    x, y = data.dataset.tensors
    with torch.no_grad():
        assert result == pytest.approx(F.mse_loss(model(x), y).item(), rel=1e-5)
    assert "model" not in ev.module._modules  # the evaluator's module was not touched


# LightningDataModule.from_datasets asks for pinned memory, which torch says is unused on CPU.
PIN_MEMORY_ON_CPU = pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")


@PIN_MEMORY_ON_CPU
def test_datamodule():
    dm = pl.LightningDataModule.from_datasets(
        _regression_data(), _regression_data(seed=1), batch_size=8
    )
    ev = Lightning(MSEModule(), _trainer(), datamodule=dm)
    seen = []
    assert ev.evaluate(torch.nn.Linear(3, 1), report=seen.append) == seen[-1]
    assert len(seen) == 3


def test_missing_validation_data_is_a_clear_error():
    data = DataLoader(_regression_data(), batch_size=8)
    with pytest.raises(ValueError, match="needs validation data"):
        Lightning(MSEModule(), _trainer(), train_dataloaders=data).evaluate(torch.nn.Linear(3, 1))
    dm = pl.LightningDataModule.from_datasets(_regression_data(), batch_size=8)
    with pytest.raises(ValueError, match="val_dataloader"):
        Lightning(MSEModule(), _trainer(), datamodule=dm).evaluate(torch.nn.Linear(3, 1))


def test_metric_never_logged_names_the_logged_ones():
    data = DataLoader(_regression_data(), batch_size=8)
    ev = Lightning(MSEModule(), _trainer(max_epochs=1), data, data, metric="val_acc")
    with pytest.raises(RuntimeError, match=r"'val_acc' was never logged.*val_loss"):
        ev.evaluate(torch.nn.Linear(3, 1))


def test_constructor_errors():
    with pytest.raises(TypeError, match="LightningModule"):
        Lightning(torch.nn.Linear(1, 1))
    with pytest.raises(TypeError, match="set_model"):
        Lightning(pl.LightningModule())
    with pytest.raises(TypeError, match="spec"):
        Lightning(MSEModule(), pl.Trainer(logger=False))
    with pytest.raises(ValueError, match="not both"):
        Lightning(MSEModule(), datamodule=pl.LightningDataModule(), val_dataloaders=[])
    with pytest.raises(ValueError, match="direction"):
        Lightning(MSEModule(), direction="up")


def test_set_model():
    module = LightningModule()
    with pytest.raises(RuntimeError, match="set_model"):
        module(torch.zeros(1))
    with pytest.raises(TypeError, match="nn.Module"):
        module.set_model(lambda x: x)
    lin = torch.nn.Linear(2, 2)
    module.set_model(lin)
    assert module.model is lin and list(module.parameters()) == list(lin.parameters())


class _CtrlC(pl.Callback):
    def on_train_batch_end(self, *args, **kwargs):
        raise KeyboardInterrupt


def test_ctrl_c_surfaces_as_keyboard_interrupt_and_keeps_sigint():
    """Lightning turns Ctrl+C into sys.exit(1) and ignores SIGINT afterwards; we undo both."""
    import signal

    data = DataLoader(_regression_data(), batch_size=8)
    ev = Lightning(MSEModule(), _trainer(callbacks=[_CtrlC()]), data, data)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        ev.evaluate(torch.nn.Linear(3, 1))
    assert signal.getsignal(signal.SIGINT) is before


def test_quiet_by_default(caplog):
    import logging

    data = DataLoader(_regression_data(), batch_size=8)
    with caplog.at_level(logging.INFO):
        Lightning(MSEModule(), _trainer(max_epochs=1), data, data).evaluate(torch.nn.Linear(3, 1))
    assert not [r for r in caplog.records if r.name.startswith("pytorch_lightning")]
    assert logging.getLogger("pytorch_lightning").level == logging.INFO  # restored


class _Pruned(Exception):
    """What a strategy's report callback may raise to stop a hopeless trial early."""


def test_exception_from_report_stops_training():
    data = DataLoader(_regression_data(), batch_size=8)
    ev = Lightning(MSEModule(), _trainer(max_epochs=5), data, data)
    seen = []

    def report(value):
        seen.append(value)
        if len(seen) == 2:
            raise _Pruned(value)

    with pytest.raises(_Pruned):
        ev.evaluate(torch.nn.Linear(3, 1), report=report)
    assert len(seen) == 2


def test_model_already_on_the_module_is_left_untouched():
    module = MSEModule()
    module.set_model(torch.nn.Linear(3, 1))
    data = DataLoader(_regression_data(), batch_size=8)
    ev = Lightning(module, _trainer(max_epochs=1), data, data)
    before = module.model.weight.detach().clone()
    ev.evaluate(torch.nn.Linear(3, 1))
    assert torch.equal(module.model.weight, before)  # the evaluator's module is untouched


@PIN_MEMORY_ON_CPU
def test_datamodule_from_datasets_pickles():
    """from_datasets builds local functions, which plain pickle refuses; evaluators still travel."""
    dm = pl.LightningDataModule.from_datasets(
        _regression_data(), _regression_data(seed=1), batch_size=8
    )
    ev = Lightning(MSEModule(), _trainer(max_epochs=1), datamodule=dm)
    clone = pickle.loads(pickle.dumps(ev))
    assert len(clone.datamodule.val_dataloader().dataset) == 40
    assert clone.evaluate(torch.nn.Linear(3, 1)) > 0
