"""Run by test_distributed_equivalence.py: DARTS and RandomOneShot on a deterministic space, either
under Lightning DDP (gloo, 2 CPU processes, batch 16 per rank) or in one process (batch 32).

    python ddp_equivalence_script.py OUT ddp|single

Each process writes ``<OUT>/<strategy>_<mode>_rank<r>.pt`` with the architecture parameters, the
weights and the exported arch. Rank r reads the samples r, r+2, ... in order, so the two ranks'
batches of a step together are the one-process batch. (Lightning's own sampler would not do:
under DDP it always shuffles training data, whatever the loader says; hence
``use_distributed_sampler=False`` and our own ``DistributedSampler(shuffle=False)``.)
Lightning's 'ddp' launcher re-runs this script for rank 1 (with ``LOCAL_RANK=1``).
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler

from nasx.space import InputChoice, LayerChoice, ModelSpace
from nasx.strategy import DARTS, RandomOneShot
from tests.strategy.oneshot.toys import FAST_TRAINER, Zero, classification, toy_data


class DeterministicSpace(ModelSpace):
    """Like the toy space, without random candidates or batch norm: the output depends only on
    the weights and the input, so one process and two ranks can be compared number for number."""

    def __init__(self):
        super().__init__()
        self.op = LayerChoice(
            {
                "linear": nn.Linear(8, 16),
                "mlp": nn.Sequential(nn.Linear(8, 16), nn.Tanh()),
                "zero": Zero(16),
            },
            label="op",
        )
        self.skip = nn.Linear(8, 16)
        self.pick = InputChoice(2, 1, label="pick")
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pick([self.skip(x), self.op(x)]))


def loader(dataset, ddp: bool) -> DataLoader:
    if not ddp:
        return DataLoader(dataset, batch_size=32, shuffle=False)
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=False)
    return DataLoader(dataset, batch_size=16, sampler=sampler)  # the same global batch


def main(out: str, mode: str) -> None:
    ddp = mode == "ddp"
    for name, make in (
        ("darts", lambda: DARTS(arc_learning_rate=3e-2)),
        ("random", lambda: RandomOneShot(seed=0)),
    ):
        torch.manual_seed(0)  # the same initial weights in every process
        space = DeterministicSpace()
        strategy = make()
        evaluator = classification(
            learning_rate=1e-2,
            train_dataloaders=loader(toy_data(512, 0), ddp),
            val_dataloaders=loader(toy_data(256, 1), ddp),
            **{
                **FAST_TRAINER,
                "limit_train_batches": 6,
                "limit_val_batches": 2,
                **(
                    {"strategy": "ddp", "devices": 2, "use_distributed_sampler": False}
                    if ddp
                    else {}
                ),
            },
        )
        strategy.run(space, evaluator)
        rank = dist.get_rank() if dist.is_initialized() else 0
        torch.save(
            {
                "alphas": {k: v.detach().clone() for k, v in strategy.supernet.alphas().items()},
                "weights": {
                    k: v.detach().clone() for k, v in strategy.supernet.model.state_dict().items()
                },
                "arch": strategy.export_top_models()[0],
                "steps": strategy.module.step_index,
            },
            f"{out}/{name}_{mode}_rank{rank}.pt",
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
