"""Retraining speed through nasx's evaluator API against a plain PyTorch loop (issue 12).

    PYTHONPATH=. python benchmarks/retrain_step.py [--model darts-v2 --batch 96 --steps 30]

What a user runs to retrain a searched model, ``darts_retrain_evaluator(...).fit(model)``
(Lightning, DARTS's recipe: SGD with momentum, cosine learning rate, auxiliary head weighted 0.4,
gradient clipping at 5), timed against a hand-written fp32 loop doing the same step, in the same
process, on the same batches (random images already on the device: this measures the training
step, not data loading). The nasx variants: its defaults (on a GPU, each step replayed from a
CUDA graph by :class:`nasx.evaluator.CudaGraphTraining`), the same with ``cuda_graphs=False``, and
``precision='bf16-mixed'``. Prints images/s (median of ``--repeats`` fits, each timed over its
last ``--steps`` steps after ``--warmup`` steps) and the ratio to the plain loop.

On a CPU it runs too (``--device cpu``, small ``--batch``), where graphs are not used: nasx must
then match the plain loop.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasx.evaluator import CudaGraphTraining  # noqa: E402
from nasx.evaluator.recipes import DartsRecipe, darts_retrain_evaluator  # noqa: E402
from nasx.hub.pretrained import SEARCHED_MODELS  # noqa: E402
from nasx.space import model_context  # noqa: E402

RECIPE = DartsRecipe()


def build_model(name: str, device: torch.device) -> nn.Module:
    """The hub model with its auxiliary head (DARTS retrains with one), seeded, on ``device``."""
    entry = SEARCHED_MODELS[name]
    module_name, cls_name = entry.space.split(":")
    cls = getattr(__import__(module_name, fromlist=[cls_name]), cls_name)
    torch.manual_seed(0)
    with model_context(entry.arch()):
        model = cls(**entry.kwargs, auxiliary_loss=True)
    return model.to(device)


class Batches:
    """Ready batches, iterable as a data loader (a plain list would be read by Lightning as a
    list of data loaders)."""

    def __init__(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def make_batches(n: int, batch: int, device: torch.device) -> Batches:
    g = torch.Generator().manual_seed(0)
    return Batches(
        [
            (
                torch.randn(batch, 3, 32, 32, generator=g).to(device),
                torch.randint(0, 10, (batch,), generator=g).to(device),
            )
            for _ in range(n)
        ]
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def plain_loop(model: nn.Module, batches, device: torch.device, warmup: int) -> float:
    """Seconds per step of a hand-written fp32 loop: the recipe's step, nothing else."""
    opt = torch.optim.SGD(
        model.parameters(),
        lr=RECIPE.learning_rate,
        momentum=RECIPE.momentum,
        weight_decay=RECIPE.weight_decay,
    )
    model.train()
    start = 0.0
    for i, (x, y) in enumerate(batches):
        if i == warmup:
            sync(device)
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits, aux = model(x)
        loss = F.cross_entropy(logits, y) + RECIPE.auxiliary_loss_weight * F.cross_entropy(aux, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), RECIPE.gradient_clip_val)
        opt.step()
    sync(device)
    return (time.perf_counter() - start) / (len(batches) - warmup)


class _StepClock(pl.Callback):
    """Wall time from the end of batch ``warmup - 1`` to the end of the fit's last batch.

    The evaluator deep-copies its callbacks for each fit: results go to the class-level list."""

    results: list[tuple[float, str]] = []

    def __init__(self, warmup: int, device: torch.device) -> None:
        self.warmup, self.device, self.start = warmup, device, 0.0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx == self.warmup - 1:
            sync(self.device)
            self.start = time.perf_counter()

    def on_train_end(self, trainer, pl_module) -> None:
        sync(self.device)
        seconds = time.perf_counter() - self.start
        graphs = [c for c in trainer.callbacks if isinstance(c, CudaGraphTraining)]
        how = f"steps {graphs[0].steps} {graphs[0].disabled_reason}" if graphs else ""
        self.results.append((seconds, how))


def nasx_fit(
    model: nn.Module, batches, device: torch.device, warmup: int, **options
) -> tuple[float, str]:
    """Seconds per step of ``darts_retrain_evaluator(...).fit(model)``, and how steps ran."""
    clock = _StepClock(warmup, device)
    recipe = dataclasses.replace(RECIPE, max_epochs=1)
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    ev = darts_retrain_evaluator(
        batches, recipe=recipe, accelerator=accelerator, devices=1, callbacks=[clock], **options
    )
    ev.fit(model)
    seconds, how = _StepClock.results.pop()
    return seconds / (len(batches) - warmup), how


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="darts-v2")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=96)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=6)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    device = torch.device(args.device)
    batches = make_batches(args.warmup + args.steps, args.batch, device)
    print(
        f"{args.model}, batch {args.batch}, {args.steps} timed steps after {args.warmup}, device {device}"
    )
    if device.type == "cuda":
        print(
            f"  {torch.cuda.get_device_name()}, torch {torch.__version__}, Lightning {pl.__version__}"
        )
    variants = {
        "plain fp32 loop (eager)": None,
        "nasx defaults (fit)": {},
        "nasx cuda_graphs=False": {"cuda_graphs": False},
        "nasx precision='bf16-mixed'": {"precision": "bf16-mixed"},
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    notes: dict[str, str] = {}
    for _ in range(args.repeats):  # interleaved, so drift hits every variant alike
        for name, options in variants.items():
            model = build_model(args.model, device)
            if options is None:
                times[name].append(plain_loop(model, batches, device, args.warmup))
            else:
                seconds, notes[name] = nasx_fit(model, batches, device, args.warmup, **options)
                times[name].append(seconds)
            del model
            if device.type == "cuda":
                torch.cuda.empty_cache()
    reference = statistics.median(times["plain fp32 loop (eager)"])
    print(f"{'variant':32s} {'ms/step':>8s} {'img/s':>8s} {'vs plain':>9s}")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(
            f"{name:32s} {t * 1000:8.1f} {args.batch / t:8.0f} {reference / t:8.2f}x  {notes.get(name, '')}"
        )


if __name__ == "__main__":
    main()
