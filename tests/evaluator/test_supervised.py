"""Tests for Classification and Regression: metrics equal hand-computed references; pickling."""

import copy
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import cloudpickle
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

from nasx.evaluator import (
    Classification,
    ClassificationModule,
    Lightning,
    Regression,
    RegressionModule,
    Trainer,
)

REPO = Path(__file__).resolve().parents[2]
QUIET = {"accelerator": "cpu", "max_epochs": 3}


def _separable(n, seed):
    """Two Gaussian blobs split by the line x0 + x1 = 0: (n, 2) float inputs, (n,) labels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g)
    y = (x.sum(dim=1) > 0).long()
    x = x + 0.5 * (2 * y[:, None] - 1)  # push the classes apart
    return TensorDataset(x, y)


def _mlp(out=2):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, out))


def test_classification_val_acc_equals_hand_computed_accuracy():
    # 101 validation samples with batch 16: the last batch is short, the mean must still be exact
    train = DataLoader(_separable(256, 0), batch_size=32, shuffle=True)
    val = DataLoader(_separable(101, 1), batch_size=16)
    ev = Classification(learning_rate=0.05, train_dataloaders=train, val_dataloaders=val, **QUIET)
    assert ev.metric == "val_acc" and ev.direction == "maximize"
    model = _mlp()
    seen = []
    acc = ev.evaluate(model, report=seen.append)
    x, y = val.dataset.tensors
    with torch.no_grad():
        hand = (model(x).argmax(dim=1) == y).float().mean().item()
    assert acc == pytest.approx(hand, abs=1e-6)
    assert acc > 0.95
    assert len(seen) == 3 and seen[-1] == acc


def test_classification_with_num_classes_and_val_loss_reference():
    train = DataLoader(_separable(128, 0), batch_size=32)
    val = DataLoader(_separable(50, 2), batch_size=16)
    module = ClassificationModule(learning_rate=0.05, num_classes=2)
    ev = Lightning(module, Trainer(**QUIET), train, val, metric="val_loss", direction="minimize")
    model = _mlp()
    loss = ev.evaluate(model)
    x, y = val.dataset.tensors
    with torch.no_grad():
        assert loss == pytest.approx(F.cross_entropy(model(x), y).item(), rel=1e-5)


def test_regression_val_mse_equals_hand_computed_mse():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(90, 2, generator=g)
    y = 2 * x[:, 0] - x[:, 1] + 0.1  # (90,) targets; the model outputs (B, 1)
    train = DataLoader(TensorDataset(x[:60], y[:60]), batch_size=16)
    val = DataLoader(TensorDataset(x[60:], y[60:]), batch_size=7)
    ev = Regression(learning_rate=0.05, train_dataloaders=train, val_dataloaders=val, **QUIET)
    assert ev.metric == "val_mse" and ev.direction == "minimize"
    model = torch.nn.Linear(2, 1)
    seen = []
    mse = ev.evaluate(model, report=seen.append)
    with torch.no_grad():
        hand = ((model(x[60:]).squeeze(1) - y[60:]) ** 2).mean().item()
    assert mse == pytest.approx(hand, rel=1e-5)
    assert seen[0] > seen[-1] == mse


def test_module_exposes_science_for_one_shot_reuse():
    ev = Classification(learning_rate=0.02, weight_decay=1e-4, optimizer=torch.optim.SGD)
    module = ev.module
    assert isinstance(module.criterion, torch.nn.CrossEntropyLoss)
    opt = module.make_optimizer(torch.nn.Linear(1, 1).parameters())
    assert isinstance(opt, torch.optim.SGD)
    assert opt.defaults["lr"] == 0.02 and opt.defaults["weight_decay"] == 1e-4
    assert isinstance(RegressionModule().criterion, torch.nn.MSELoss)
    # a loss function instead of a class is used as is
    assert ClassificationModule(criterion=F.cross_entropy).criterion is F.cross_entropy


def test_trainer_kwargs_and_errors():
    ev = Classification(max_epochs=2, limit_train_batches=3)
    assert ev.trainer.kwargs == {"max_epochs": 2, "limit_train_batches": 3}
    assert Regression(trainer=Trainer(max_epochs=5)).trainer.kwargs == {"max_epochs": 5}
    with pytest.raises(ValueError, match="not both"):
        Classification(trainer=Trainer(), max_epochs=1)
    with pytest.raises(ValueError, match="learning_rate"):
        Classification(learning_rate=0)
    with pytest.raises(ValueError, match="needs validation data"):
        Classification(train_dataloaders=DataLoader(_separable(8, 0))).evaluate(_mlp())


class ShiftedDataset(Dataset):
    """An ordinary dataset class defined in a test module, with an optional transform."""

    def __init__(self, n, seed, transform=None):
        self.data = _separable(n, seed)
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        x, y = self.data[i]
        return (self.transform(x) if self.transform else x), y


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_evaluator_survives_pickling_with_test_module_dataset_and_lambda(dumps):
    transform = lambda x: x * 2.0  # noqa: E731  (a lambda on purpose: not importable)
    train = DataLoader(ShiftedDataset(64, 0, transform), batch_size=16)
    val = DataLoader(ShiftedDataset(32, 1, transform), batch_size=16)
    ev = Classification(
        learning_rate=0.05,
        train_dataloaders=train,
        val_dataloaders=val,
        num_classes=2,
        accelerator="cpu",
        max_epochs=1,
    )
    clone = pickle.loads(dumps(ev))
    assert clone.val_dataloaders.dataset[0][0].tolist() == val.dataset[0][0].tolist()
    model = _mlp()
    twin = copy.deepcopy(model)
    torch.manual_seed(1)
    a = ev.evaluate(model)
    torch.manual_seed(1)
    b = clone.evaluate(twin)
    assert a == b


def test_main_module_dataset_travels_by_value(tmp_path):
    """A dataset class and evaluator made in a script's __main__ load in another process."""
    script = textwrap.dedent(
        """
        import pickle, sys, torch
        from torch.utils.data import DataLoader, Dataset
        from nasx.evaluator import Classification

        class Blobs(Dataset):
            def __init__(self):
                g = torch.Generator().manual_seed(0)
                self.x = torch.randn(32, 2, generator=g)
                self.y = (self.x[:, 0] > 0).long()
            def __len__(self):
                return 32
            def __getitem__(self, i):
                return self.x[i], self.y[i]

        loader = DataLoader(Blobs(), batch_size=8)
        ev = Classification(train_dataloaders=loader, val_dataloaders=loader, max_epochs=1)
        with open(sys.argv[1], 'wb') as f:
            pickle.dump(ev, f)
        """
    )
    path = tmp_path / "ev.pkl"
    subprocess.run(
        [sys.executable, "-c", script, str(path)],
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    ev = pickle.loads(path.read_bytes())
    assert type(ev.val_dataloaders.dataset).__name__ == "Blobs"
    assert len(ev.val_dataloaders.dataset) == 32


def test_trainer_kwarg_typos_fail_at_construction():
    with pytest.raises(TypeError, match="'max_epoch' \\(did you mean 'max_epochs'\\?\\)"):
        Classification(max_epoch=1)
    with pytest.raises(TypeError, match="does not accept"):
        Trainer(no_such_option=True)


def test_nni_spellings_are_accepted():
    loader = DataLoader(_separable(8, 0))
    ev = Classification(train_dataloader=loader, val_dataloader=loader, max_epochs=1)
    assert ev.train_dataloaders is loader and ev.val_dataloaders is loader
    assert ev.trainer.kwargs == {"max_epochs": 1}
    with pytest.raises(TypeError, match="not both"):
        Regression(train_dataloaders=loader, train_dataloader=loader)
    with pytest.warns(UserWarning, match="export_onnx"):
        Classification(export_onnx=True)
