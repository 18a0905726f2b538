"""NNI 3.0's documented evaluator behaviour (``nni.nas.evaluator(.pytorch)`` -> ``nasx.evaluator``),
written from its API reference: Classification/Regression arguments, ``fit``, the
``ClassificationModule`` a user subclasses (``hparams``, ``metrics``, ``criterion``), ``Lightning``
with a ``Trainer`` spec, ``FunctionalEvaluator`` calling ``fn(model, **kwargs)``, the traced
``DataLoader``."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

import nasx
from nasx.evaluator import (
    Classification,
    ClassificationModule,
    DataLoader,
    FunctionalEvaluator,
    Lightning,
    Regression,
    RegressionModule,
    Trainer,
)

FAST = dict(enable_progress_bar=False, logger=False)


def _loaders(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    data = nasx.trace(TensorDataset)(x, (x[:, 0] > 0).long())
    return DataLoader(data, batch_size=16), DataLoader(data, batch_size=32)


def test_classification_with_nni_arguments_fits_the_model_in_place():
    train, val = _loaders()
    ev = Classification(
        learning_rate=0.1,
        weight_decay=1e-4,
        train_dataloaders=train,
        val_dataloaders=val,
        max_epochs=3,
        gpus=0,
        export_onnx=False,
        **FAST,
    )
    model = nn.Linear(4, 2)
    before = model.weight.detach().clone()
    acc = ev.fit(model)  # NNI: evaluator.fit(model) trains that very model
    assert not torch.equal(before, model.weight) and acc is not None and acc > 0.8


def test_fit_without_validation_data_trains_and_returns_none():
    train, _ = _loaders()
    assert (
        Classification(train_dataloader=train, max_epochs=1, gpus=0, **FAST).fit(nn.Linear(4, 2))
        is None
    )


def test_classification_module_exposes_hparams_metrics_and_criterion():
    module = ClassificationModule(learning_rate=0.05, weight_decay=1e-3, export_onnx=False)
    assert module.hparams.learning_rate == 0.05 and module.hparams.weight_decay == 1e-3
    assert list(module.metrics) == ["acc"] and isinstance(module.criterion, nn.CrossEntropyLoss)
    logits, y = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]]), torch.tensor([0, 1, 1])
    assert float(module.metrics["acc"](logits, y)) == pytest.approx(2 / 3)  # batch accuracy
    assert list(RegressionModule(export_onnx=False).metrics) == ["mse"]


def test_a_subclass_in_nnis_style_trains_through_lightning():
    seen = {}

    class MyModule(ClassificationModule):
        def configure_optimizers(self):
            seen["lr"] = self.hparams.learning_rate
            return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate, momentum=0.9)

        def training_step(self, batch, batch_idx):
            x, y = batch
            y_hat = self(x)
            loss = self.criterion(y_hat, y)
            self.log("train_loss", loss)
            for name, metric in self.metrics.items():
                self.log("train_" + name, metric(y_hat, y))
            return loss

    train, val = _loaders()
    ev = Lightning(
        MyModule(learning_rate=0.2, export_onnx=False),
        trainer=Trainer(gpus=0, max_epochs=3, **FAST),
        train_dataloaders=train,
        val_dataloaders=val,
    )
    assert ev.evaluate(nn.Linear(4, 2)) > 0.8 and seen["lr"] == 0.2


def test_regression_minimises_mse():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    data = DataLoader(TensorDataset(x, x @ torch.tensor([1.0, -1.0, 0.5])), batch_size=16)
    ev = Regression(
        learning_rate=0.05,
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=20,
        gpus=0,
        **FAST,
    )
    assert ev.direction == "minimize" and ev.evaluate(nn.Linear(3, 1)) < 0.1


def test_functional_evaluator_calls_fn_with_the_model_instance_and_kwargs():
    calls = []
    ev = FunctionalEvaluator(
        lambda model, scale: calls.append((model, scale)) or 1.5 * scale, scale=2
    )
    model = nn.Linear(1, 1)
    assert ev.evaluate(model) == 3.0 and calls == [(model, 2)]


def test_classification_module_takes_nni_s_positional_order():
    # NNI 3.0: (criterion, learning_rate, weight_decay, optimizer, export_onnx, num_classes)
    module = ClassificationModule(torch.nn.CrossEntropyLoss, 1e-3, 0.0, torch.optim.Adam, False, 10)
    assert module.num_classes == 10
