"""NNI 3.0's DARTS tutorial ("Searching in DARTS search space"), its code verbatim after the import
change, runs on CPU in fast mode.

The code cells below are NNI's ``examples/tutorials/darts.py`` (MIT License, Copyright (c)
Microsoft Corporation), prose left out; the only edits are the import lines (``nni.nas.*`` ->
``nasx.*``, ``import nni`` -> ``import nasx as nni``). The test then does what the tutorial tells
a reader to do: ``fast_dev_run = True``, and ``gpus=0`` / ``cuda=False`` without a GPU. Its
data is a small CIFAR-10 sample from ``../shared/data`` (torchvision's ``CIFAR10`` is replaced by
a reader of that copy, as nothing may be downloaded); ``pretrained=True`` loads the DARTS-V2
weights nasx ships. The full search and retraining (hours) is what a GPU run does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

TUTORIAL = '''
import nasx as nni
import torch
from torchvision import transforms
from torchvision.datasets import CIFAR10
from nasx.evaluator import DataLoader

CIFAR_MEAN = [0.49139968, 0.48215827, 0.44653124]
CIFAR_STD = [0.24703233, 0.24348505, 0.26158768]

transform_valid = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize(CIFAR_MEAN, CIFAR_STD),
])
valid_data = nni.trace(CIFAR10)(root='./data', train=False, download=True, transform=transform_valid)
valid_loader = DataLoader(valid_data, batch_size=256, num_workers=6)

from nasx.hub import DARTS as DartsSpace

darts_v2_model = DartsSpace.load_searched_model('darts-v2', pretrained=True, download=True)

def evaluate_model(model, cuda=False):
    device = torch.device('cuda' if cuda else 'cpu')
    model.to(device)
    model.eval()
    with torch.no_grad():
        correct = total = 0
        for inputs, targets in valid_loader:
            inputs, targets = inputs.to(device), targets.to(device)
            logits = model(inputs)
            _, predict = torch.max(logits, 1)
            correct += (predict == targets).sum().cpu().item()
            total += targets.size(0)
    print('Accuracy:', correct / total)
    return correct / total

evaluate_model(darts_v2_model, cuda=True)  # Set this to false if there's no GPU.

model_space = DartsSpace(
    width=16,           # the initial filters (channel number) for the model
    num_cells=8,        # the number of stacked cells in total
    dataset='cifar'     # to give a hint about input resolution, here is 32x32
)

import numpy as np
from nasx.evaluator import Classification
from torch.utils.data import SubsetRandomSampler

transform = transforms.Compose([
    transforms.RandomCrop(32, padding=4),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize(CIFAR_MEAN, CIFAR_STD),
])

train_data = nni.trace(CIFAR10)(root='./data', train=True, download=True, transform=transform)

num_samples = len(train_data)
indices = np.random.permutation(num_samples)
split = num_samples // 2

search_train_loader = DataLoader(
    train_data, batch_size=64, num_workers=6,
    sampler=SubsetRandomSampler(indices[:split]),
)

search_valid_loader = DataLoader(
    train_data, batch_size=64, num_workers=6,
    sampler=SubsetRandomSampler(indices[split:]),
)

fast_dev_run = False

evaluator = Classification(
    learning_rate=1e-3,
    weight_decay=1e-4,
    train_dataloaders=search_train_loader,
    val_dataloaders=search_valid_loader,
    max_epochs=10,
    gpus=1,
    fast_dev_run=fast_dev_run,
)

from nasx.strategy import DARTS as DartsStrategy

strategy = DartsStrategy()

from nasx.experiment import NasExperiment

experiment = NasExperiment(model_space, evaluator, strategy)
experiment.run()

exported_arch = experiment.export_top_models(formatter='dict')[0]

exported_arch

from nasx.space import model_context

with model_context(exported_arch):
    final_model = DartsSpace(width=16, num_cells=8, dataset='cifar')

train_loader = DataLoader(train_data, batch_size=96, num_workers=6)  # Use the original training data

valid_loader

max_epochs = 100

evaluator = Classification(
    learning_rate=1e-3,
    weight_decay=1e-4,
    train_dataloaders=train_loader,
    val_dataloaders=valid_loader,
    max_epochs=max_epochs,
    gpus=1,
    export_onnx=False,          # Disable ONNX export for this experiment
    fast_dev_run=fast_dev_run   # Should be false for fully training
)

evaluator.fit(final_model)

import torch
from nasx.evaluator import ClassificationModule

class DartsClassificationModule(ClassificationModule):
    def __init__(
        self,
        learning_rate: float = 0.001,
        weight_decay: float = 0.,
        auxiliary_loss_weight: float = 0.4,
        max_epochs: int = 600
    ):
        self.auxiliary_loss_weight = auxiliary_loss_weight
        # Training length will be used in LR scheduler
        self.max_epochs = max_epochs
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, export_onnx=False)

    def configure_optimizers(self):
        """Customized optimizer with momentum, as well as a scheduler."""
        optimizer = torch.optim.SGD(
            self.parameters(),
            momentum=0.9,
            lr=self.hparams.learning_rate,
            weight_decay=self.hparams.weight_decay
        )
        return {
            'optimizer': optimizer,
            'lr_scheduler': torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, self.max_epochs, eta_min=1e-3)
        }

    def training_step(self, batch, batch_idx):
        """Training step, customized with auxiliary loss."""
        x, y = batch
        if self.auxiliary_loss_weight:
            y_hat, y_aux = self(x)
            loss_main = self.criterion(y_hat, y)
            loss_aux = self.criterion(y_aux, y)
            self.log('train_loss_main', loss_main)
            self.log('train_loss_aux', loss_aux)
            loss = loss_main + self.auxiliary_loss_weight * loss_aux
        else:
            y_hat = self(x)
            loss = self.criterion(y_hat, y)
        self.log('train_loss', loss, prog_bar=True)
        for name, metric in self.metrics.items():
            self.log('train_' + name, metric(y_hat, y), prog_bar=True)
        return loss

    def on_train_epoch_start(self):
        # Set drop path probability before every epoch. This has no effect if drop path is not enabled in model.
        self.model.set_drop_path_prob(self.model.drop_path_prob * self.current_epoch / self.max_epochs)

        # Logging learning rate at the beginning of every epoch
        self.log('lr', self.trainer.optimizers[0].param_groups[0]['lr'])

from nasx.evaluator import Lightning, Trainer

max_epochs = 50

evaluator = Lightning(
    DartsClassificationModule(0.025, 3e-4, 0., max_epochs),
    trainer=Trainer(
        gpus=1,
        max_epochs=max_epochs,
        fast_dev_run=fast_dev_run,
    ),
    train_dataloaders=search_train_loader,
    val_dataloaders=search_valid_loader
)

strategy = DartsStrategy(gradient_clip_val=5.)

model_space = DartsSpace(width=16, num_cells=8, dataset='cifar')

experiment = NasExperiment(model_space, evaluator, strategy)
experiment.run()

exported_arch = experiment.export_top_models(formatter='dict')[0]

exported_arch

def cutout_transform(img, length: int = 16):
    h, w = img.size(1), img.size(2)
    mask = np.ones((h, w), np.float32)
    y = np.random.randint(h)
    x = np.random.randint(w)

    y1 = np.clip(y - length // 2, 0, h)
    y2 = np.clip(y + length // 2, 0, h)
    x1 = np.clip(x - length // 2, 0, w)
    x2 = np.clip(x + length // 2, 0, w)

    mask[y1: y2, x1: x2] = 0.
    mask = torch.from_numpy(mask)
    mask = mask.expand_as(img)
    img *= mask
    return img

transform_with_cutout = transforms.Compose([
    transforms.RandomCrop(32, padding=4),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize(CIFAR_MEAN, CIFAR_STD),
    cutout_transform,
])

train_data_cutout = nni.trace(CIFAR10)(root='./data', train=True, download=True, transform=transform_with_cutout)
train_loader_cutout = DataLoader(train_data_cutout, batch_size=96)

with model_context(exported_arch):
    final_model = DartsSpace(width=36, num_cells=20, dataset='cifar', auxiliary_loss=True, drop_path_prob=0.2)

max_epochs = 600

evaluator = Lightning(
    DartsClassificationModule(0.025, 3e-4, 0.4, max_epochs),
    trainer=Trainer(
        gpus=1,
        gradient_clip_val=5.,
        max_epochs=max_epochs,
        fast_dev_run=fast_dev_run
    ),
    train_dataloaders=train_loader_cutout,
    val_dataloaders=valid_loader,
)

evaluator.fit(final_model)
'''

SAMPLES = {True: 128, False: 64}  # images per split taken from the local CIFAR-10 copy


def _local_cifar10():
    from nasx.datasets import DataNotFoundError, cifar10

    try:
        return {True: cifar10("train"), False: cifar10("test")}
    except DataNotFoundError as err:
        pytest.skip(f"CIFAR-10 not found ({err}); set NASX_DATA_DIR or provide ../shared/data")


def _reader_of(local):
    from PIL import Image

    class LocalCIFAR10(torch.utils.data.Dataset):
        """torchvision's CIFAR10 signature over the first images of the local copy (PIL images)."""

        def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
            data = local[train]
            n = SAMPLES[train]
            self.data = np.asarray(data.images[:n]).transpose(0, 2, 3, 1)  # (N, 32, 32, 3) uint8
            self.targets = [int(t) for t in data.targets[:n]]
            self.transform = transform

        def __len__(self):
            return len(self.targets)

        def __getitem__(self, i):
            img = Image.fromarray(self.data[i])
            return (self.transform(img) if self.transform else img), self.targets[i]

    return LocalCIFAR10


@pytest.mark.slow
# The tutorial asks for num_workers=6; on a machine with fewer cores torch says so (harmless here).
@pytest.mark.filterwarnings("ignore:This DataLoader will create .* worker processes:UserWarning")
def test_nni_darts_tutorial_runs_verbatim_after_the_import_change(tmp_path, monkeypatch, capsys):
    import torchvision.datasets

    local = _local_cifar10()
    monkeypatch.setattr(torchvision.datasets, "CIFAR10", _reader_of(local))
    monkeypatch.chdir(tmp_path)
    # What the tutorial tells its reader to change: fast_dev_run, and no GPU -> gpus=0, cuda=False.
    code = TUTORIAL.replace("fast_dev_run = False", "fast_dev_run = True")
    if not torch.cuda.is_available():
        code = code.replace("gpus=1", "gpus=0").replace("cuda=True)", "cuda=False)")
    namespace: dict = {"__name__": "__nni_darts_tutorial__"}
    exec(compile(code, "nni_darts_tutorial.py", "exec"), namespace)

    out = capsys.readouterr().out
    # the shipped DARTS-V2 weights (90.1% on the test set) on the first 64 test images
    assert float(out.split("Accuracy:")[1].split()[0]) > 0.6
    arch = namespace[
        "exported_arch"
    ]  # NNI's arch format: 2 cells x 4 nodes x 2 edges x (op, input)
    assert len(arch) == 32 and arch["normal/input_2_0"] in ([0], [1])
    assert namespace["final_model"].drop_path_prob == 0.2
