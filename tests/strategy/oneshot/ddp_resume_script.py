"""Run by test_distributed_resume.py: DARTS on 2 gloo ranks under Lightning DDP, checkpointing to
a workdir at every epoch end; optionally one rank SIGKILLs itself mid-epoch.

    python ddp_resume_script.py WORKDIR OUT [KILL_RANK KILL_EPOCH KILL_BATCH]

Without the kill arguments the search runs to its end (or, with ``last.ckpt`` in WORKDIR, resumes
from it: a restarted job) and each rank writes ``<OUT>/rank<r>.pt``: the epoch, step and
architecture parameters just after the checkpoint was restored (``start``) and at the end
(``end``), the final weights and the exported arch. With them, rank KILL_RANK kills itself with
SIGKILL at the start of batch KILL_BATCH of epoch KILL_EPOCH, as a preempted node would die.
Lightning's 'ddp' launcher re-runs this script for rank 1 (with ``LOCAL_RANK=1``).
"""

import os
import signal
import sys

import torch
import torch.distributed as dist
from pytorch_lightning import Callback

from nasx.strategy import DARTS
from tests.strategy.oneshot.ddp_equivalence_script import DeterministicSpace, loader
from tests.strategy.oneshot.toys import FAST_TRAINER, classification, toy_data

EPOCHS, BATCHES = 3, 4


def _alphas(supernet) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in supernet.alphas().items()}


class Probe(Callback):
    """Records where training starts (after a checkpoint was restored); kills this rank when told."""

    def __init__(self, kill: tuple[int, int, int] | None):
        self.kill, self.start = kill, None

    def on_train_start(self, trainer, pl_module) -> None:
        self.start = {
            "epoch": trainer.current_epoch,
            "search_steps": int(pl_module.search_steps),
            "alphas": _alphas(pl_module.supernet),
        }

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        rank = dist.get_rank() if dist.is_initialized() else 0
        if self.kill == (rank, trainer.current_epoch, batch_idx):
            os.kill(os.getpid(), signal.SIGKILL)


def main(workdir: str, out: str, kill: tuple[int, int, int] | None) -> None:
    torch.manual_seed(0)  # the same initial weights in every process
    strategy = DARTS(arc_learning_rate=3e-2)
    probe = Probe(kill)
    evaluator = classification(
        learning_rate=1e-2,
        train_dataloaders=loader(toy_data(512, 0), True),
        val_dataloaders=loader(toy_data(256, 1), True),
        **{
            **FAST_TRAINER,
            "max_epochs": EPOCHS,
            "limit_train_batches": BATCHES,
            "limit_val_batches": 1,
            "strategy": "ddp",
            "devices": 2,
            "use_distributed_sampler": False,
            "callbacks": [probe],
        },
    )
    strategy.run(DeterministicSpace(), evaluator, workdir)
    rank = dist.get_rank() if dist.is_initialized() else 0
    # The callback the trainer ran is a fresh copy of `probe`: find it on the trainer.
    ran = next(c for c in strategy.trainer.callbacks if isinstance(c, Probe))
    torch.save(
        {
            "start": ran.start,
            "end": {
                "epoch": strategy.trainer.current_epoch,
                "search_steps": int(strategy.module.search_steps),
                "alphas": _alphas(strategy.supernet),
            },
            "weights": {
                k: v.detach().clone() for k, v in strategy.supernet.model.state_dict().items()
            },
            "arch": strategy.export_top_models()[0],
        },
        f"{out}/rank{rank}.pt",
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], args[1], tuple(int(a) for a in args[2:5]) if len(args) > 2 else None)
