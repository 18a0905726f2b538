"""Benchmark: time of one Classification.evaluate against a hand-written PyTorch training loop.

Both train the same tiny MLP on the same synthetic data for the same epochs and validate once
per epoch; the ratio is the cost of the Lightning-based evaluator per trial (fresh trainer,
module copy, logging, metric objects). Medians of several runs, one torch thread. Run:

    PYTHONPATH=$PWD python benchmarks/bench_evaluator_overhead.py --epochs 3 --repeats 5
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
from _timing import median_time
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification


def make_data(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    return TensorDataset(x, (x[:, :8].sum(1) > x[:, 8:].sum(1)).long())


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))


def plain_loop(model, train, val, epochs: int) -> float:
    """The reference: Adam, cross-entropy, accuracy on the validation set after each epoch."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    acc = 0.0
    for _ in range(epochs):
        model.train()
        for x, y in train:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in val:
                correct += (model(x).argmax(1) == y).sum().item()
                total += len(y)
        acc = correct / total
    return acc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, default=2048)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train = DataLoader(make_data(args.samples, 0), batch_size=64, shuffle=True)
    val = DataLoader(make_data(args.samples // 4, 1), batch_size=256)
    ev = Classification(
        learning_rate=1e-2, train_dataloaders=train, val_dataloaders=val, max_epochs=args.epochs
    )
    ev.evaluate(make_model())  # warm-up: first-use imports and allocations
    plain_loop(make_model(), train, val, 1)
    t_plain, acc_plain = median_time(
        lambda: plain_loop(make_model(), train, val, args.epochs), args.repeats
    )
    t_eval, acc_eval = median_time(lambda: ev.evaluate(make_model()), args.repeats)
    steps = args.epochs * len(train)
    print(f"{args.epochs} epochs x {len(train)} steps, {args.repeats} repeats (medians)")
    print(f"plain PyTorch loop      : {t_plain:.3f} s  val_acc {acc_plain:.3f}")
    print(f"Classification.evaluate : {t_eval:.3f} s  val_acc {acc_eval:.3f}")
    print(
        f"ratio {t_eval / t_plain:.2f}x; overhead {(t_eval - t_plain) * 1000:.0f} ms per trial, "
        f"{(t_eval - t_plain) / steps * 1000:.2f} ms per step"
    )


if __name__ == "__main__":
    main()
