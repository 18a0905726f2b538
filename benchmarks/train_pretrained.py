"""Train a pre-searched hub model on CIFAR-10 on a GPU: the hub's shipped weights come from here.

    PYTHONPATH=. python benchmarks/train_pretrained.py --data-dir ../shared/data --out runs/dv2 \
        [--model darts-v2 --minutes 9 --epochs auto --batch 128 --lr 0.05 --resume runs/dv2]

Two phases in one process:

1. **Retraining speed**: images/s of one training step of the model at ``--speed-batch`` (96, as
   DARTS trains) for a plain fp32 PyTorch loop and for nasx's fast path (the whole step, data
   augmentation and optimizer included, replayed from one CUDA graph: :mod:`nasx._cuda_graph`),
   in fp32 and bf16, NCHW and channels-last. Same data pipeline for all of them.
2. **Training** with the fastest variant: DARTS's recipe (SGD with Nesterov momentum 0.9, weight
   decay 3e-4, cosine learning rate, auxiliary head weighted 0.4, cutout 16, random crop with
   4-pixel padding and horizontal flips, gradient clipping at 5) without drop-path (it pays only
   over the paper's 600 epochs). ``--epochs auto`` fits the schedule into ``--minutes`` from the
   measured speed. A checkpoint (weights, momentum, position) is written after every epoch, so a
   schedule can span several runs (``--resume`` the same ``--out``; ``--minutes`` bounds each).
   ``--init FILE`` starts a new schedule from shipped fp16 weights instead (a warm restart, when
   the full checkpoint of the run that made them is gone): the auxiliary head starts fresh and
   the momentum at zero.

At the end: the test accuracy of the weights loaded into ``load_searched_model(model)`` (the
auxiliary head dropped), and ``<model>-cifar10.pt``: those weights in fp16 with their SHA-256.
Augmentation runs on the GPU on uint8 images kept there (padding is zeros after normalisation,
that is the mean colour, where torchvision's RandomCrop pads black).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from nasx._cuda_graph import CapturedStep
from nasx.datasets import cifar10
from nasx.datasets.cifar import CIFAR10_MEAN, CIFAR10_STD
from nasx.hub.pretrained import SEARCHED_MODELS, load_searched_model
from nasx.space import model_context

AUX_WEIGHT, CUTOUT, PAD, CLIP, WEIGHT_DECAY, MOMENTUM = 0.4, 16, 4, 5.0, 3e-4, 0.9


def load_cifar(data_dir: str, device: torch.device):
    """uint8 images [N, 3, 32, 32] and int64 labels [N], train and test, on ``device``."""
    out = []
    for split in ("train", "test"):
        ds = cifar10(split, root=data_dir)
        out.append(torch.tensor(ds.images).to(device))  # a copy: the array is read-only
        out.append(torch.from_numpy(ds.targets).to(device))
    return out


class Augment:
    """Random crop (zero padding after normalisation), flip, cutout, on a uint8 batch on GPU."""

    def __init__(self, device: torch.device):
        self.mean = torch.tensor(CIFAR10_MEAN, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(CIFAR10_STD, device=device).view(1, 3, 1, 1)
        self.grid = torch.arange(32, device=device)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() / 255 - self.mean) / self.std

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        x = F.pad(self.normalize(x), (PAD, PAD, PAD, PAD))  # [B, 3, 40, 40]
        oy, ox = (torch.randint(0, 2 * PAD + 1, (2, b), device=x.device)).unbind(0)
        rows = (oy[:, None] + self.grid)[:, None, :, None]  # [B, 1, 32, 1]
        cols = (ox[:, None] + self.grid)[:, None, None, :]  # [B, 1, 1, 32]
        batch = torch.arange(b, device=x.device)[:, None, None, None]
        chans = torch.arange(3, device=x.device)[None, :, None, None]
        x = x[batch, chans, rows, cols]  # [B, 3, 32, 32]
        flip = torch.rand(b, device=x.device)[:, None, None, None] < 0.5
        x = torch.where(flip, x.flip(3), x)
        cy, cx = torch.randint(0, 32, (2, b), device=x.device).unbind(0)
        inside_y = (self.grid[None, :] - cy[:, None]).abs() < CUTOUT // 2  # [B, 32]
        inside_x = (self.grid[None, :] - cx[:, None]).abs() < CUTOUT // 2
        hole = inside_y[:, None, :, None] & inside_x[:, None, None, :]  # [B, 1, 32, 32]
        return x.masked_fill(hole, 0.0)


def build_model(name: str, device: torch.device, channels_last: bool) -> nn.Module:
    """The hub model with an auxiliary head (DARTS trains with one), on ``device``."""
    entry = SEARCHED_MODELS[name]
    module_name, cls_name = entry.space.split(":")
    cls = getattr(__import__(module_name, fromlist=[cls_name]), cls_name)
    with model_context(entry.arch()):
        model = cls(**entry.kwargs, auxiliary_loss=True)
    model = model.to(device)
    return model.to(memory_format=torch.channels_last) if channels_last else model


class SGD:
    """SGD with Nesterov momentum and weight decay, its learning rate a device tensor, so the
    step can be replayed from a CUDA graph while a cosine schedule changes the rate."""

    def __init__(self, params: list[nn.Parameter], lr: float):
        self.params = params
        self.lr = torch.tensor(lr, device=params[0].device)
        self.momentum = [torch.zeros_like(p) for p in params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        grads = [p.grad for p in self.params]
        torch._foreach_add_(grads, self.params, alpha=WEIGHT_DECAY)  # g += wd * p
        torch._foreach_mul_(self.momentum, MOMENTUM)
        torch._foreach_add_(self.momentum, grads)  # m = mu m + g
        torch._foreach_add_(grads, self.momentum, alpha=MOMENTUM)  # nesterov: g + mu m
        torch._foreach_mul_(grads, self.lr)
        torch._foreach_sub_(self.params, grads)


def make_step(model, opt, augment, images, labels, bf16: bool, channels_last: bool):
    """One training step on the batch ``images[idx]``; returns the loss."""

    def step(idx: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        x, y = augment(images[idx]), labels[idx]
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
            logits, aux = model(x)
            loss = F.cross_entropy(logits, y) + AUX_WEIGHT * F.cross_entropy(aux, y)
        loss.backward()
        nn.utils.clip_grad_norm_(opt.params, CLIP)
        opt.step()
        return loss.detach()

    return step


def speed(args, data, device) -> dict[str, float]:
    """Images/s of each variant's training step at ``--speed-batch`` (median of 3 x 10 steps)."""
    images, labels = data[0], data[1]
    augment = Augment(device)
    variants = {
        "plain fp32 (eager)": dict(graph=False, bf16=False, cl=False),
        "nasx fast fp32": dict(graph=True, bf16=False, cl=False),
        "nasx fast bf16": dict(graph=True, bf16=True, cl=False),
        "nasx fast bf16 channels_last": dict(graph=True, bf16=True, cl=True),
    }
    result = {}
    for name, v in variants.items():
        model = build_model(args.model, device, v["cl"])
        opt = SGD(list(model.parameters()), args.lr)
        step = make_step(model, opt, augment, images, labels, v["bf16"], v["cl"])
        run = CapturedStep(step, optimizers=[]) if v["graph"] else None
        gen = torch.Generator(device=device).manual_seed(0)

        def one(run=run, step=step, gen=gen):
            idx = torch.randint(0, len(images), (args.speed_batch,), device=device, generator=gen)
            return run((idx,)) if run is not None else step(idx)

        for _ in range(4):  # warm-up; graphs capture at the third call
            one()
        torch.cuda.synchronize()
        times = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(10):
                one()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) / 10)
        result[name] = args.speed_batch / statistics.median(times)
        print(f"  {name:30s} {result[name]:8.0f} img/s", flush=True)
        del model, opt, run
        torch.cuda.empty_cache()
    return result


@torch.no_grad()
def accuracy(model: nn.Module, images, labels, augment: Augment, bf16: bool) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(images), 1000):
        x = augment.normalize(images[i : i + 1000])
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = model(x)
        correct += int((out.argmax(1) == labels[i : i + 1000]).sum())
    model.train()
    return correct / len(images)


def save_checkpoint(out: Path, model, opt, meta: dict) -> None:
    # two files, each under the device tool's 16 MB limit; written then renamed (atomic)
    for name, obj in (
        ("ckpt_model.pt", model.state_dict()),
        ("ckpt_momentum.pt", opt.momentum),
    ):
        tmp = out / (name + ".tmp")
        torch.save(obj, tmp)
        os.replace(tmp, out / name)
    (out / "ckpt_meta.json").write_text(json.dumps(meta))


def load_init(model: nn.Module, path: str) -> str:
    """Load shipped fp16 weights (no auxiliary head) into ``model``; returns the file's sha256.

    Every weight but the auxiliary head's must be in the file, and nothing else may be."""
    blob = Path(path).read_bytes()  # read once: hashed and loaded
    state = torch.load(io.BytesIO(blob), map_location="cpu")
    missing, unexpected = model.load_state_dict(
        {k: v.float() if v.is_floating_point() else v for k, v in state.items()}, strict=False
    )
    not_aux = [k for k in missing if not k.startswith("auxiliary_head.")]
    if not_aux or unexpected:
        raise SystemExit(f"--init {path}: missing {not_aux[:5]}, unexpected {unexpected[:5]}")
    return hashlib.sha256(blob).hexdigest()


def train(args, data, device, variant: dict, start: float) -> None:
    images, labels, test_x, test_y = data
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    augment = Augment(device)
    model = build_model(args.model, device, variant["cl"])
    opt = SGD(list(model.parameters()), args.lr)
    meta = {"epoch": 0, "epochs": None, "history": []}
    resume = Path(args.resume) if args.resume else None
    if resume and (resume / "ckpt_meta.json").exists():
        model.load_state_dict(torch.load(resume / "ckpt_model.pt", map_location=device))
        for m, saved in zip(
            opt.momentum, torch.load(resume / "ckpt_momentum.pt", map_location=device), strict=True
        ):
            m.copy_(saved)
        meta = json.loads((resume / "ckpt_meta.json").read_text())
        print(f"resumed at epoch {meta['epoch']} of {meta['epochs']}")
    elif args.init:
        meta["init"] = {"file": args.init, "sha256": load_init(model, args.init)}
        before = accuracy(model, test_x, test_y, augment, variant["bf16"])
        meta["init"]["test_acc"] = before
        print(f"started from {args.init} (test {before:.4f}): a new schedule, lr {args.lr}")
    steps_per_epoch = len(images) // args.batch
    step = make_step(model, opt, augment, images, labels, variant["bf16"], variant["cl"])
    run = CapturedStep(step, optimizers=[], name="training step")
    torch.manual_seed(1000 + meta["epoch"])
    while True:
        if meta["epochs"] is not None and meta["epoch"] >= meta["epochs"]:
            break
        t_epoch = time.perf_counter()
        perm = torch.randperm(len(images), device=device)
        total = meta["epochs"] or 10**9
        for i in range(steps_per_epoch):
            progress = (meta["epoch"] * steps_per_epoch + i) / (total * steps_per_epoch)
            opt.lr.fill_(args.lr * 0.5 * (1 + math.cos(math.pi * progress)))
            loss = run((perm[i * args.batch : (i + 1) * args.batch],))
        torch.cuda.synchronize()
        epoch_s = time.perf_counter() - t_epoch
        if meta["epochs"] is None:  # --epochs auto: fit the schedule into the time left
            left = args.minutes * 60 - (time.perf_counter() - start) - 60  # final eval, save
            meta["epochs"] = (
                int(args.epochs) if args.epochs != "auto" else max(2, int(left / epoch_s) + 1)
            )
            print(f"epoch {epoch_s:.1f} s: training {meta['epochs']} epochs")
        meta["epoch"] += 1
        acc = accuracy(model, test_x, test_y, augment, variant["bf16"])
        meta["history"].append(
            {"epoch": meta["epoch"], "loss": float(loss), "test_acc": acc, "epoch_s": epoch_s}
        )
        save_checkpoint(out, model, opt, meta)
        print(
            f"epoch {meta['epoch']:3d}/{meta['epochs']} loss {float(loss):.3f} test {acc:.4f} "
            f"({epoch_s:.1f} s, {time.perf_counter() - start:.0f} s total)",
            flush=True,
        )
        if time.perf_counter() - start > args.minutes * 60 - 45 and meta["epoch"] < meta["epochs"]:
            print("out of time: resume with --resume to finish the schedule")
            return
    export(args, model, test_x, test_y, augment, out)


def export(args, model, test_x, test_y, augment, out: Path) -> None:
    """fp16 weights without the auxiliary head, checked by loading them into the hub model."""
    state = {
        k: v.half() if v.is_floating_point() else v
        for k, v in model.state_dict().items()
        if not k.startswith("auxiliary_head.")
    }
    path = out / f"{args.model}-cifar10.pt"
    torch.save(state, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    hub_model = load_searched_model(args.model).to(test_x.device)
    hub_model.load_state_dict(
        {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    )
    acc = accuracy(hub_model, test_x, test_y, augment, bf16=False)
    print(f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB sha256 {digest}")
    print(
        f"test accuracy of the fp16 weights in load_searched_model({args.model!r}), fp32: {acc:.4f}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="darts-v2")
    p.add_argument("--data-dir", default=None, help="folder holding cifar10/cifar10_jpg.tar.gz")
    p.add_argument("--out", required=True)
    p.add_argument("--resume", default=None)
    p.add_argument(
        "--init", default=None, help="start from these fp16 weights (a shipped .pt file)"
    )
    p.add_argument("--minutes", type=float, default=9.0, help="wall-clock budget of this run")
    p.add_argument("--epochs", default="auto")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--speed-batch", type=int, default=96)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    start = time.perf_counter()
    if not torch.cuda.is_available():
        sys.exit("train_pretrained.py needs a CUDA GPU")
    device = torch.device("cuda")
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    data = load_cifar(args.data_dir, device)
    print(f"data on the GPU after {time.perf_counter() - start:.1f} s", flush=True)
    # without the speed phase: the variant that was fastest on both the H100 and the H200
    variant = dict(graph=True, bf16=True, cl=True)
    if not args.skip_speed:
        print(f"retraining speed, batch {args.speed_batch}:")
        ips = speed(args, data, device)
        plain = ips["plain fp32 (eager)"]
        best = max((n for n in ips if n.startswith("nasx")), key=ips.get)
        print(f"fastest: {best} {ips[best] / plain:.2f}x the plain fp32 loop")
        variant = {
            "nasx fast fp32": dict(graph=True, bf16=False, cl=False),
            "nasx fast bf16": dict(graph=True, bf16=True, cl=False),
            "nasx fast bf16 channels_last": dict(graph=True, bf16=True, cl=True),
        }[best]
    train(args, data, device, variant, start)


if __name__ == "__main__":
    main()
