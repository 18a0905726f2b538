"""Does the sandwich rule train a GPT supernet whose small subnets score and rank better than
uniform path sampling (SPOS) does, at equal search steps? (BigNAS, OFA, on the CPU.)

    PYTHONPATH=. python benchmarks/lm_sandwich.py            # ~15-20 minutes of CPU (results file)
    PYTHONPATH=. python benchmarks/lm_sandwich.py --quick    # a smoke run (a minute or two)

A small elastic GPT (:class:`nasx.hub.gpt.GPTSpace`) learns the Python standard library's source
bytes (``nasx.datasets.text``). Its supernet is trained by ``RandomOneShot`` through the one-shot
run (Lightning), for the same number of search steps, four ways:

- **uniform**: one uniformly random path per step (SPOS, ``RandomOneShot()``);
- **sandwich**: the largest, the smallest and 2 random paths per step, gradients summed, one
  optimizer step (``RandomOneShot(sandwich=2)``);
- **sandwich+KD**: the same with in-place distillation from the largest path
  (``inplace_distill=True``);
- **uniform x4**: uniform sampling for 4 times the steps, i.e. as many path forward/backward
  passes as the sandwich (the sandwich costs 4 paths per step).

Then a fixed set of archs (the smallest, the largest, and random ones) is scored with the
supernet's weights (validation loss, nats per byte, ``strategy.subnet(arch)``) and compared with
the same archs trained alone from scratch (the ground truth of their ranking): the small subnets'
loss (the smallest half by parameters), the smallest's and the largest's, and Kendall's tau
between the two rankings. Mean and spread over seeds.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset

from nasx.datasets.text import stdlib_text
from nasx.evaluator import Lightning, LightningModule, Trainer
from nasx.hub.gpt import GPTSpace
from nasx.lm import evaluate_loss, train
from nasx.space import search_space
from nasx.strategy import RandomOneShot
from nasx.strategy.oneshot.sandwich import largest_arch, smallest_arch

VARIANTS = {  # name: (RandomOneShot arguments, steps multiplier)
    "uniform": ({}, 1),
    "sandwich": ({"sandwich": 2}, 1),
    "sandwich+KD": ({"sandwich": 2, "inplace_distill": True}, 1),
    "uniform x4": ({}, 4),
}


class NextToken(LightningModule):
    """The evaluator's module: next-token cross-entropy of ``[B, T, 256]`` logits, Adam."""

    def __init__(self, lr: float):
        super().__init__()
        self.lr, self.model = lr, None

    def set_model(self, model):
        self.model = model

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.model(x).flatten(0, 1), y.flatten())

    def validation_step(self, batch, batch_idx):
        return None

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr)


def negative_loss(model, batch):
    x, y = batch
    return -F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()


def kendall_tau(a, b):
    """Kendall's tau-a of two equally long lists (ties count as neither)."""
    pairs = list(itertools.combinations(range(len(a)), 2))
    s = sum(((a[i] > a[j]) - (a[i] < a[j])) * ((b[i] > b[j]) - (b[i] < b[j])) for i, j in pairs)
    return s / len(pairs)


def params(model):
    return sum(p.numel() for p in model.parameters())


def train_supernet(space_kwargs, loader, val, steps, seed, lr, options):
    """A RandomOneShot run of ``steps`` search steps; the strategy, trained."""
    trainer = Trainer(
        max_steps=steps,
        max_epochs=-1,
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    evaluator = Lightning(NextToken(lr), trainer, train_dataloaders=loader, val_dataloaders=val)
    strategy = RandomOneShot(
        num_samples=1, eval_batches=1, reward_fn=negative_loss, seed=seed, **options
    )
    torch.manual_seed(seed)
    strategy.run(GPTSpace(**space_kwargs), evaluator)
    return strategy


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, help="default 3 (--quick: 1)")
    ap.add_argument("--steps", type=int, help="search steps; default 400 (--quick: 30)")
    ap.add_argument("--alone-steps", type=int, help="each arch alone; default 800 (--quick: 30)")
    ap.add_argument("--archs", type=int, help="archs scored; default 10 (--quick: 4)")
    return ap.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    q = args.quick
    seeds = args.seeds or (1 if q else 3)
    steps = args.steps or (30 if q else 400)
    alone_steps = args.alone_steps or (30 if q else 800)
    n_archs = args.archs or (4 if q else 10)
    block, batch, lr = 64, 16, 2e-3
    space_kwargs = dict(
        vocab_size=256,
        block_size=block,
        search_embed_dim=(32, 64, 96),
        search_depth=(1, 2, 3),
        search_num_heads=(1, 2, 4),
        search_mlp_ratio=(1.0, 2.0, 4.0),
        head_dim=16,
    )
    train_set = stdlib_text("train", block, max_bytes=(1 if q else 4) * 1_000_000)
    val_set = stdlib_text("validation", block, max_bytes=200_000)
    val_loader = DataLoader(Subset(val_set, range(64 * (2 if q else 8))), batch_size=64)
    val = list(val_loader)  # the same batches, for nasx.lm.evaluate_loss

    def loader(seed):
        g = torch.Generator().manual_seed(seed)
        return DataLoader(train_set, batch_size=batch, shuffle=True, generator=g)

    archs, sizes = scored_archs(space_kwargs, n_archs)
    small = range(len(archs) // 2)  # the smallest half by parameters

    t0 = time.process_time()
    alone = []  # the ground truth: each arch trained alone from scratch
    for arch in archs:
        torch.manual_seed(0)
        model = GPTSpace(**space_kwargs).freeze(arch)
        train(model, loader(0), alone_steps, lr=lr)
        alone.append(evaluate_loss(model, val))
    print(f"{len(archs)} archs, {sizes[0]}..{sizes[-1]} params; alone {alone_steps} steps:")
    for size, loss, arch in zip(sizes, alone, archs, strict=True):
        print(f"  {size:>8} params  alone {loss:.4f}  {arch}")

    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for seed in range(seeds):
        for name, (options, mult) in VARIANTS.items():
            t = time.process_time()
            strategy = train_supernet(
                space_kwargs, loader(seed), val_loader, steps * mult, seed, lr, options
            )
            inherited = [evaluate_loss(strategy.subnet(a), val) for a in archs]
            row = {
                "smallest": inherited[0],
                "small half": statistics.mean(inherited[i] for i in small),
                "largest": inherited[-1],
                "tau": kendall_tau(inherited, alone),
                "cpu s": time.process_time() - t,
            }
            results[name].append(row)
            print(f"seed {seed} {name:<12} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()))

    print(
        f"\nsupernet {steps} search steps (uniform x4: {4 * steps}), batch {batch} x {block} "
        f"bytes, {seeds} seed(s); inherited validation loss (nats/byte), mean (sd):"
    )
    print_summary(results, alone, small, alone_steps)
    print(f"CPU time {time.process_time() - t0:.0f} s")


def scored_archs(space_kwargs, n):
    """The smallest, the largest and random archs (fixed), ``n`` in all, by parameters: (archs,
    parameter counts)."""
    ss = search_space(GPTSpace(**space_kwargs))
    rng = random.Random(1234)
    archs = [smallest_arch(ss), largest_arch(ss)]
    while len(archs) < n:
        arch = ss.sample(rng)
        if arch not in archs:
            archs.append(arch)
    sizes = [params(GPTSpace(**space_kwargs).freeze(a)) for a in archs]
    order = sorted(range(len(archs)), key=lambda i: sizes[i])
    return [archs[i] for i in order], [sizes[i] for i in order]


def print_summary(results, alone, small, alone_steps):
    """One line per variant: mean (sd) over seeds of each measure; then the archs alone."""
    keys = ["smallest", "small half", "largest", "tau", "cpu s"]
    print(f"{'variant':<14}" + "".join(f"{k:>18}" for k in keys))
    for name, rows in results.items():
        cells = []
        for k in keys:
            vals = [r[k] for r in rows]
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            cells.append(f"{statistics.mean(vals):>10.4f} ({sd:.3f})")
        print(f"{name:<14}" + "".join(f"{c:>18}" for c in cells))
    alone_small = statistics.mean(alone[i] for i in small)
    print(
        f"{'alone':<14}{alone[0]:>10.4f}{'':>8}{alone_small:>10.4f}{'':>8}{alone[-1]:>10.4f}"
        f"  ({alone_steps} steps each)"
    )


if __name__ == "__main__":
    main()
