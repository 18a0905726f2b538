"""Does the evaluator's fast path train as well as a plain loop? Test accuracy after equal epochs.

    PYTHONPATH=. python benchmarks/retrain_accuracy.py --data-dir ../shared/data \
        [--model darts-v2 --train-images 10000 --epochs 3 --seeds 0,1 --batch 96]

``benchmarks/retrain_step.py`` shows that ``darts_retrain_evaluator(...).fit(model)`` is faster than
a hand-written fp32 loop (on a GPU, each step replayed from a CUDA graph). Speed is worth nothing
if the replayed step trains a worse model, so this script trains the same model, from the same
initial weights, on the same real CIFAR-10 batches, for the same epochs, both ways:

- **plain**: a hand-written eager fp32 loop of DARTS's recipe (SGD with momentum 0.9 and weight
  decay 3e-4, cosine learning rate over the run, auxiliary head weighted 0.4, clipping at 5);
- **nasx**: ``darts_retrain_evaluator(loader, recipe=...).fit(model)`` with its defaults (on one
  GPU: :class:`nasx.evaluator.CudaGraphTraining` replays each step from a graph).

and prints the test accuracy on the 10,000 test images and the wall time of each, per seed. The
difference between seeds of one variant is the noise the two variants must agree within.

The batches come from uint8 images kept on the device, augmented there (random crop with 4-pixel
padding, flip, cutout 16: ``train_pretrained.Augment``), in an order drawn from a generator seeded
by (seed, epoch): both variants see exactly the same images in the same order. Drop-path is off
(it is a schedule over hundreds of epochs). Runs on a CPU too (``--device cpu``, tiny sizes), as
the test suite's smoke run does.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from retrain_step import build_model, sync  # noqa: E402
from train_pretrained import Augment, load_cifar  # noqa: E402

from nasx.evaluator import CudaGraphTraining  # noqa: E402
from nasx.evaluator.recipes import DartsRecipe, darts_retrain_evaluator  # noqa: E402


class DeviceLoader:
    """Augmented CIFAR-10 batches [B, 3, 32, 32] drawn from uint8 images on the device.

    Iterating starts the next epoch; its order comes from a CPU generator seeded with
    ``(seed, epoch)``, so two trainings that iterate it the same number of times see the same
    images in the same order. The last incomplete batch is dropped (a CUDA graph replays one
    shape)."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, batch: int, seed: int) -> None:
        self.images, self.labels, self.batch, self.seed = images, labels, batch, seed
        self.augment = Augment(images.device)
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.images) // self.batch

    def __iter__(self):
        order = torch.randperm(
            len(self.images), generator=torch.Generator().manual_seed(self.seed * 1000 + self.epoch)
        ).to(self.images.device)
        self.epoch += 1
        for i in range(len(self)):
            idx = order[i * self.batch : (i + 1) * self.batch]
            yield self.augment(self.images[idx]), self.labels[idx]


def plain_fit(model: nn.Module, loader: DeviceLoader, recipe: DartsRecipe) -> None:
    """The recipe's training as a hand-written eager fp32 loop (what a user writes by hand)."""
    opt = torch.optim.SGD(
        model.parameters(),
        lr=recipe.learning_rate,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
    )
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, recipe.max_epochs, eta_min=recipe.eta_min
    )
    model.train()
    for _ in range(recipe.max_epochs):
        for x, y in loader:
            opt.zero_grad(set_to_none=True)
            logits, aux = model(x)
            loss = F.cross_entropy(logits, y)
            loss = loss + recipe.auxiliary_loss_weight * F.cross_entropy(aux, y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), recipe.gradient_clip_val)
            opt.step()
        schedule.step()


def nasx_fit(model: nn.Module, loader: DeviceLoader, recipe: DartsRecipe, device) -> str:
    """``darts_retrain_evaluator(...).fit(model)`` with its defaults; returns how steps ran."""
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    seen: list[str] = []

    class _HowStepsRan(pl.Callback):
        def on_train_end(self, trainer, pl_module) -> None:
            graphs = [c for c in trainer.callbacks if isinstance(c, CudaGraphTraining)]
            seen.append(
                f"graph replays: {graphs[0].steps}, eager reason: {graphs[0].disabled_reason}"
                if graphs
                else "no graph callback"
            )

    ev = darts_retrain_evaluator(
        loader, recipe=recipe, accelerator=accelerator, devices=1, callbacks=[_HowStepsRan()]
    )
    ev.fit(model)
    return seen[-1] if seen else ""


@torch.no_grad()
def test_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Top-1 accuracy (%) on normalised test images, batches of 1000, eval mode."""
    model.eval()
    normalize = Augment(images.device).normalize
    correct = 0
    for i in range(0, len(images), 1000):
        out = model(normalize(images[i : i + 1000]))
        logits = out[0] if isinstance(out, (tuple, list)) else out
        correct += int((logits.argmax(1) == labels[i : i + 1000]).sum())
    return 100.0 * correct / len(images)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None, help="folder holding cifar10/cifar10_jpg.tar.gz")
    p.add_argument("--model", default="darts-v2")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--train-images", type=int, default=10000)
    p.add_argument("--test-images", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=96)
    p.add_argument("--lr", type=float, default=DartsRecipe.learning_rate)
    p.add_argument("--seeds", default="0,1")
    args = p.parse_args()
    device = torch.device(args.device)
    seeds = [int(s) for s in args.seeds.split(",")]
    recipe = dataclasses.replace(
        DartsRecipe(), max_epochs=args.epochs, drop_path_prob=0.0, learning_rate=args.lr
    )
    train_x, train_y, test_x, test_y = load_cifar(args.data_dir, device)
    subset = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(12345))
    subset = subset[: args.train_images].to(device)
    train_x, train_y = train_x[subset], train_y[subset]
    test_x, test_y = test_x[: args.test_images], test_y[: args.test_images]
    print(
        f"{args.model} on CIFAR-10: {len(train_x)} training images, {len(test_x)} test images, "
        f"{args.epochs} epochs at batch {args.batch}, lr {args.lr} cosine, device {device}"
    )
    if device.type == "cuda":
        print(f"  {torch.cuda.get_device_name()}, torch {torch.__version__}")

    results: dict[str, list[tuple[float, float]]] = {"plain": [], "nasx": []}
    for seed in seeds:
        for variant in ("plain", "nasx"):  # interleaved, the same seed for both
            torch.manual_seed(seed)
            model = build_model(args.model, device)  # seeds 0 inside: same initial weights
            torch.manual_seed(seed)  # the augmentation's draws start alike
            loader = DeviceLoader(train_x, train_y, args.batch, seed)
            sync(device)
            start = time.perf_counter()
            how = ""
            if variant == "plain":
                plain_fit(model, loader, recipe)
            else:
                how = nasx_fit(model, loader, recipe, device)
            sync(device)
            seconds = time.perf_counter() - start
            model.to(device)  # Lightning's teardown moves a fitted model back to the CPU
            accuracy = test_accuracy(model, test_x, test_y)
            results[variant].append((accuracy, seconds))
            images = len(loader) * args.batch * args.epochs
            print(
                f"  seed {seed} {variant:5s}: test accuracy {accuracy:6.2f}%  "
                f"{seconds:6.1f} s ({images / seconds:6.0f} img/s)  {how}",
                flush=True,
            )
            del model
    print(f"{'variant':8s} {'test acc % (per seed)':28s} {'mean':>6s} {'median s':>9s}")
    for variant, rows in results.items():
        accs = " ".join(f"{a:6.2f}" for a, _ in rows)
        mean = statistics.mean(a for a, _ in rows)
        print(f"{variant:8s} {accs:28s} {mean:6.2f} {statistics.median(s for _, s in rows):9.1f}")
    diffs = [n[0] - p[0] for p, n in zip(results["plain"], results["nasx"], strict=True)]
    print(f"nasx minus plain, per seed: {' '.join(f'{d:+.2f}' for d in diffs)} points")


if __name__ == "__main__":
    main()
