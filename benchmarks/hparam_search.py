"""Benchmark: TPE over the architecture *and* the training hyperparameters, against TPE over the
architecture alone with fixed (reasonable default) hyperparameters, on real images.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/hparam_search.py --seeds 5 --trials 20

Task: Fashion-MNIST (Debian's ``dataset-fashion-mnist``, or ``--data digits`` for scikit-learn's
handwritten digits), ``--train`` training and ``--val`` validation images taken from the official
training split, and the best configuration of each search retrained and scored on ``--test``
images of the official test split (held out from both searches). Space: an MLP on the flattened
image (depth 1-3, width 32-256, activation, dropout). Both searches use the same ``Classification``
evaluator, trials, epochs (``--epochs``, fixed: more epochs would always win and cost time) and
seeds; they differ only in the evaluator arguments:

- *arch only*: Adam at ``learning_rate=1e-3`` (its usual default), batch 64, no weight decay, no
  augmentation.
- *arch + hparams*: ``learning_rate=Numerical(1e-4, 1e-1, log_distributed=True)``, batch size
  ``Categorical([32, 64, 128, 256])``, weight decay ``Categorical([0, 1e-5, 1e-4, 1e-3])`` and
  the strength of an additive-noise augmentation ``Numerical(0, 0.3)`` (a traced dataset), all
  searched by the same TPE with the architecture.

Printed: per seed, the best validation accuracy each search found and the test accuracy of its
pick; then the median over seeds of each and their difference, and the wall time of each search.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, TensorDataset

from nasx.evaluator import Classification, DataLoader, trace
from nasx.evaluator.hparams import freeze_evaluator
from nasx.experiment import NasExperiment
from nasx.space import Categorical, LayerChoice, ModelSpace, Numerical, Repeat, choice
from nasx.strategy import TPE


class MLP(ModelSpace):
    """An MLP on flattened images: depth, width, activation and dropout are searched."""

    def __init__(self, in_features: int = 784, num_classes: int = 10):
        super().__init__()
        width = choice("width", [32, 64, 128, 256])
        self.inp = nn.Linear(in_features, width)
        self.body = Repeat(
            lambda i: nn.Sequential(
                LayerChoice([nn.ReLU(), nn.Tanh(), nn.GELU()], label=f"act{i}"),
                nn.Dropout(choice(f"drop{i}", [0.0, 0.2])),
                nn.Linear(width, width),
            ),
            depth=(1, 3),
            label="depth",
        )
        self.out = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.out(torch.relu(self.body(self.inp(x.flatten(1)))))


class Noisy(Dataset):
    """Images plus Gaussian noise of standard deviation ``noise`` (the augmentation strength)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, noise: float = 0.0):
        self.x, self.y, self.noise = x, y, noise

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        x = self.x[i]
        if self.noise > 0:
            x = x + self.noise * torch.randn_like(x)
        return x, self.y[i]


def load(name: str, n_train: int, n_val: int, n_test: int):
    """(train, val, test) as (x float32 flattened in [0, 1], y int64) tensors, seed-0 subsets."""
    if name == "fashion":
        from nasx.datasets import fashion_mnist

        tr, te = fashion_mnist("train"), fashion_mnist("test")
        x_all, y_all = np.asarray(tr.images), tr.targets
        x_test, y_test = np.asarray(te.images), te.targets
    else:
        from sklearn.datasets import load_digits

        d = load_digits()
        x_all, y_all = d.images[:, None] * (255.0 / 16.0), d.target
        x_test, y_test = x_all[-n_test:], y_all[-n_test:]
        x_all, y_all = x_all[:-n_test], y_all[:-n_test]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y_all))
    tr_i, va_i = order[:n_train], order[n_train : n_train + n_val]
    te_i = rng.permutation(len(y_test))[:n_test]

    def tensors(x, y, idx):
        xs = torch.tensor(np.asarray(x[idx], dtype=np.float32) / 255.0).flatten(1)
        return xs, torch.tensor(np.asarray(y[idx], dtype=np.int64))

    return tensors(x_all, y_all, tr_i), tensors(x_all, y_all, va_i), tensors(x_test, y_test, te_i)


def evaluator(train, val, epochs: int, searched: bool) -> Classification:
    if searched:
        lr = Numerical(1e-4, 1e-1, log_distributed=True, label="lr")
        batch = Categorical([32, 64, 128, 256], label="batch_size")
        wd = Categorical([0.0, 1e-5, 1e-4, 1e-3], label="weight_decay")
        noise = Numerical(0.0, 0.3, label="aug_noise")
    else:  # the usual defaults: Adam's lr, a common batch size, no decay, no augmentation
        lr, batch, wd, noise = 1e-3, 64, 0.0, 0.0
    data = trace(Noisy)(*train, noise=noise)
    return Classification(
        learning_rate=lr,
        weight_decay=wd,
        train_dataloaders=DataLoader(data, batch_size=batch, shuffle=True),
        val_dataloaders=DataLoader(TensorDataset(*val), batch_size=1024),
        max_epochs=epochs,
        accelerator="cpu",
    )


def search(args, data, seed: int, searched: bool) -> dict:
    train, val, test = data
    in_features = train[0].shape[1]
    ev = evaluator(train, val, args.epochs, searched)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        exp = NasExperiment(
            MLP(in_features),
            ev,
            TPE(n_startup_trials=args.startup, seed=seed),
            workdir=workdir,
            max_trials=args.trials,
            seed=seed,
            progress=False,
        )
        exp.run()
        (best,) = exp.export_top_trials(1)
    seconds = time.perf_counter() - start
    # The pick, retrained with its hyperparameters and scored on held-out test images.
    tester = evaluator(train, test, args.epochs, searched)
    if best["hparams"]:
        tester = freeze_evaluator(tester, best["hparams"])
    # One retraining's test accuracy moves by several points with its seed (2 epochs, 360 digits
    # test images), so the pick is retrained --retrain-seeds times and scored by the mean.
    tests = []
    for k in range(args.retrain_seeds):
        torch.manual_seed(seed + 100 * k)
        tests.append(tester.evaluate(MLP(in_features).freeze(best["arch"])))
    return {
        "val": best["metric"],
        "test": statistics.fmean(tests),
        "tests": tests,
        "seconds": seconds,
        "best": best,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", choices=["fashion", "digits"], default="fashion")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--startup", type=int, default=8, help="TPE's random trials")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train", type=int, default=4000)
    p.add_argument("--val", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument(
        "--retrain-seeds", type=int, default=3, help="retrain each pick this many times (mean)"
    )
    args = p.parse_args()
    if args.data == "digits":
        args.train, args.val, args.test = min(args.train, 1000), min(args.val, 437), 360
    torch.set_num_threads(1)
    data = load(args.data, args.train, args.val, args.test)
    print(
        f"{args.data}: {args.train} train / {args.val} val / {args.test} test images; "
        f"TPE ({args.startup} random), {args.trials} trials of {args.epochs} epochs, "
        f"seeds 0..{args.seeds - 1}"
    )
    rows = {False: [], True: []}
    for seed in range(args.seeds):
        for searched in (False, True):
            r = search(args, data, seed, searched)
            rows[searched].append(r)
            name = "arch + hparams" if searched else "arch only     "
            print(
                f"seed {seed} {name}: best val {r['val']:.4f}  test of pick {r['test']:.4f} "
                f"(retrained {len(r['tests'])}x: {min(r['tests']):.4f}-{max(r['tests']):.4f})  "
                f"({r['seconds']:.0f} s)  hparams {r['best']['hparams']}",
                flush=True,
            )
    print()
    med = {
        k: {m: statistics.median(r[m] for r in rows[k]) for m in ("val", "test", "seconds")}
        for k in rows
    }
    wins = sum(b["test"] > a["test"] for a, b in zip(rows[False], rows[True], strict=True))
    for key, name in ((False, "arch only (fixed hparams)"), (True, "arch + hparams")):
        print(
            f"{name:27s} median best val {med[key]['val']:.4f}  median test of pick "
            f"{med[key]['test']:.4f}  median search time {med[key]['seconds']:.0f} s"
        )
    print(
        f"difference (arch + hparams minus arch only): val {med[True]['val'] - med[False]['val']:+.4f}, "
        f"test {med[True]['test'] - med[False]['test']:+.4f}; the joint search's pick tested "
        f"better in {wins} of {args.seeds} seeds"
    )


if __name__ == "__main__":
    main()
