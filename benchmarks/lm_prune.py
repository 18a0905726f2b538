"""Prune + distill + search a small byte-level GPT against the same-size model from scratch and
against random pruning, at equal training tokens (Minitron's comparison, on the CPU).

    PYTHONPATH=. python benchmarks/lm_prune.py            # ~3-4 minutes of CPU (results file)
    PYTHONPATH=. python benchmarks/lm_prune.py --quick    # a smoke run (a minute)

A parent (the space's largest arch) is trained on the Python standard library's source bytes
(``nasx.datasets.text``). Then, with the parent fixed:

- **searched**: Minitron importance, the uniform candidates near half the parent's parameters,
  each pruned and distilled ``search_steps`` steps, ranked on validation loss; the best distilled
  on for ``final_steps`` more;
- **random pruning**: the same arch with random importance (random channels, heads, neurons,
  layers kept), distilled for the searched child's total steps;
- **scratch**: the same arch freshly initialised, trained on the labels for that many steps.

All three see the same number of training tokens after the parent. Prints validation losses
(nats per byte), parameters and CPU latency (median of 20 forwards of one window, thread CPU
time through ``nasx.hardware``).
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader

from nasx.datasets.text import stdlib_text
from nasx.hub.gpt import GPTSpace, largest_arch
from nasx.lm import distill, evaluate_loss, importance, prune, prune_search, train
from nasx.lm.prune import Importance
from nasx.lm.targets import measure_lm_latency
from nasx.space import search_space


def latency_ms(model, context):
    """Median of 20 forwards of one ``context``-byte window through nasx.hardware, counting the
    calling thread's CPU time (one thread): on a loaded machine the wall clock would also count
    the time spent waiting for a core."""
    return measure_lm_latency(model, 256, context, warmup=3, repeats=20, clock="thread")


def params(model):
    return sum(p.numel() for p in model.parameters())


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parent-steps", type=int, help="default 600 (--quick: 60)")
    ap.add_argument("--search-steps", type=int, help="distillation per candidate; default 40")
    ap.add_argument("--final-steps", type=int, help="distillation of the best; default 200")
    return ap.parse_args()


def random_pruning(parent, space, arch, calibration, loader, val, steps):
    """``arch`` pruned from ``parent`` keeping random channels, heads, neurons and layers, then
    distilled ``steps`` steps: the child, its loss before distillation and after."""
    imp = importance(parent, calibration)
    rand = Importance(
        torch.rand_like(imp.embed), [torch.rand_like(h) for h in imp.heads],
        [torch.rand_like(n) for n in imp.neurons], torch.rand_like(imp.layers),
    )  # fmt: skip
    child = prune(parent, space, arch, rand)
    pruned_loss = evaluate_loss(child, val)
    distill(child, parent, loader, steps, lr=1e-3)
    return child, pruned_loss, evaluate_loss(child, val)


def print_comparison(rows, parent_loss, context):
    """One line per ``(name, model, val loss)``: parameters, loss, gap to the parent, latency."""
    print(f"{'model':<28}{'params':>10}{'val loss':>10}{'gap to parent':>15}{'latency ms':>12}")
    for name, model, loss in rows:
        print(
            f"{name:<28}{params(model):>10}{loss:>10.4f}{loss - parent_loss:>15.4f}{latency_ms(model, context):>12.2f}"
        )


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    q = args.quick
    block, batch = (32, 8) if q else (64, 16)
    parent_steps, search_steps, final_steps = (60, 10, 20) if q else (600, 40, 200)
    parent_steps = args.parent_steps or parent_steps
    search_steps = args.search_steps or search_steps
    final_steps = args.final_steps or final_steps
    space = GPTSpace(
        vocab_size=256,
        block_size=block,
        search_embed_dim=(64, 96, 128) if q else (96, 128, 192),
        search_depth=(2, 3, 4),
        search_num_heads=(2, 3, 4),
        search_mlp_ratio=(2.0, 3.0, 4.0),
        head_dim=16 if q else 32,
    )
    train_set = stdlib_text("train", block, max_bytes=(2 if q else 10) * 1_000_000)
    val_set = stdlib_text("validation", block, max_bytes=200_000)
    g = torch.Generator().manual_seed(args.seed)
    loader = DataLoader(train_set, batch_size=batch, shuffle=True, generator=g)
    val = list(DataLoader(val_set, batch_size=64))[: 4 if q else 16]
    calibration = list(DataLoader(train_set, batch_size=batch))[:8]

    t0 = time.process_time()
    parent = space.freeze(largest_arch(search_space(space)))
    train(parent, loader, parent_steps, lr=2e-3)
    parent_loss = evaluate_loss(parent, val)
    n_parent = params(parent)
    print(f"parent: {n_parent} params, val loss {parent_loss:.4f} after {parent_steps} steps")

    ranked = prune_search(
        parent, space, calibration, loader, val, target_params=n_parent // 2, tolerance=0.15,
        max_candidates=4, distill_steps=search_steps, lr=1e-3,
    )  # fmt: skip
    for c in ranked:
        print(
            f"  candidate {c.params} params: pruned {c.loss_pruned:.4f} -> distilled {c.loss_distilled:.4f}  {c.arch}"
        )
    best = ranked[0]
    distill(best.model, parent, loader, final_steps, lr=1e-3)
    searched_loss = evaluate_loss(best.model, val)
    total_steps = search_steps + final_steps  # the best child's training after the parent

    random_child, random_pruned_loss, random_loss = random_pruning(
        parent, space, best.arch, calibration, loader, val, total_steps
    )

    scratch = space.freeze(best.arch)
    train(scratch, loader, total_steps, lr=2e-3)
    scratch_loss = evaluate_loss(scratch, val)
    cpu_s = time.process_time() - t0

    tokens = total_steps * batch * block
    print(f"\nchild arch {best.arch}")
    print(f"training tokens after the parent, each child: {tokens} ({total_steps} steps)")
    rows = [
        ("parent", parent, parent_loss),
        ("searched (prune+distill)", best.model, searched_loss),
        ("random pruning + distill", random_child, random_loss),
        ("from scratch", scratch, scratch_loss),
    ]
    print_comparison(rows, parent_loss, block)
    print(
        f"(random pruning before distillation: {random_pruned_loss:.4f}; searched before: {best.loss_pruned:.4f})"
    )
    ratio = (searched_loss - parent_loss) / max(scratch_loss - parent_loss, 1e-9)
    print(f"gap ratio searched / scratch: {ratio:.3f} (goal < 1); CPU time {cpu_s:.0f} s")


if __name__ == "__main__":
    main()
