"""Run by test_distributed.py: one-shot search under Lightning DDP (gloo, 2 CPU processes).

Each rank writes its architecture parameters and exported arch to ``<out>/<strategy>_rank<r>.pt``.
Lightning's 'ddp' launcher re-runs this script for rank 1.
"""

import sys

import torch
import torch.distributed as dist

from nasx.strategy import DARTS, ENAS, Proxyless
from tests.strategy.oneshot.toys import ToySpace, toy_evaluator


def main(out: str) -> None:
    strategies = [
        ("darts", DARTS(arc_learning_rate=3e-2)),
        ("proxyless", Proxyless(arc_learning_rate=3e-2)),
        ("enas", ENAS(arc_learning_rate=3e-2)),
    ]
    for name, strategy in strategies:
        torch.manual_seed(0)
        ev = toy_evaluator(
            epochs=1,
            strategy="ddp",
            devices=2,
            accelerator="cpu",
            limit_train_batches=6,
            limit_val_batches=2,
        )
        strategy.run(ToySpace(), ev)
        rank = dist.get_rank() if dist.is_initialized() else 0
        alphas = {k: v.detach().clone() for k, v in strategy.supernet.alphas().items()}
        if getattr(strategy, "controller", None) is not None:
            alphas = {k: v.detach().clone() for k, v in strategy.controller.state_dict().items()}
        weights = {k: v.detach().clone() for k, v in strategy.supernet.model.state_dict().items()}
        torch.save(
            {
                "alphas": alphas,
                "weights": weights,
                "arch": strategy.export_top_models()[0],
                "steps": strategy.module.step_index,
            },
            f"{out}/{name}_rank{rank}.pt",
        )


if __name__ == "__main__":
    main(sys.argv[1])
