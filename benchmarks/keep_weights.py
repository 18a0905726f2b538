"""Benchmark: what ``keep_weights`` adds to a trial, and how long ``load_model`` takes.

    PYTHONPATH=. python benchmarks/keep_weights.py [--repeats 5]

For each model (a small MLP, and the DARTS-V2 CIFAR model from the hub, 3.3 M parameters):

- keep: the time a trial spends keeping its weights (``save_in_trial``: state dict to the CPU,
  ``torch.save`` into memory, sha256, two atomic writes with fsync), against the reference
  ``torch.save(model.state_dict(), path)`` of the same model to a file in the same folder.
- load: :func:`nasx.experiment.load_model` (database read, checksum, ``torch.load`` with
  ``weights_only=True``, rebuild from the arch, ``load_state_dict``), against the reference
  ``space.freeze(arch)`` + ``torch.load`` + ``load_state_dict`` of that file.

Every figure is the median of ``--repeats`` runs, printed with its ratio to the reference.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn

from nasx.experiment import NasExperiment, load_model
from nasx.experiment.execution.jobs import Job, TrialResult, WeightsSpec
from nasx.experiment.storage.weights import save_in_trial, space_reference
from nasx.hub import DARTS as DartsSpace
from nasx.hub.genotypes import genotype_to_arch
from nasx.hub.searched_archs import DARTS_V2
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch
from nasx.trial import SUCCEEDED


class Mlp(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(
            nn.Linear(64, choice("width", [256])), nn.ReLU(), nn.Linear(256, 10)
        )


def _median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench(name: str, space: ModelSpace, arch: dict, repeats: int) -> None:
    model = space.freeze(arch)
    params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory() as d:
        ref_path = Path(d) / "ref.pt"
        job = Job(0, arch, weights=WeightsSpec(d, space=space_reference(type(space), (), {})))
        result = TrialResult(0, SUCCEEDED, metric=1.0)
        keep = _median(lambda: save_in_trial(model, job, result), repeats)
        ref = _median(lambda: torch.save(model.state_dict(), ref_path), repeats)
        size = (Path(d) / "weights" / "0.pt").stat().st_size / 2**20
        print(f"{name}: {params / 1e6:.2f} M params, {size:.1f} MiB file")
        print(f"  keep  {keep:8.1f} ms   torch.save {ref:8.1f} ms   ratio {keep / ref:.2f}")

        exp_dir = Path(d) / "exp"
        NasExperiment(
            space,
            lambda m: 1.0,
            GridSearch(),
            workdir=exp_dir,
            keep_weights="best",
            max_trials=1,
            progress=False,
        ).run()

        def reference_load() -> None:
            fresh = space.freeze(arch)
            fresh.load_state_dict(torch.load(ref_path, weights_only=True))

        load = _median(lambda: load_model(exp_dir, "best", model_space=space), repeats)
        ref_load = _median(reference_load, repeats)
        print(
            f"  load  {load:8.1f} ms   freeze+load {ref_load:8.1f} ms   ratio {load / ref_load:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    bench("MLP 64-256-10", Mlp(), {"width": 256}, args.repeats)
    darts = DartsSpace(width=36, num_cells=20)
    bench("DARTS-V2 (width 36, 20 cells)", darts, genotype_to_arch(DARTS_V2), args.repeats)


if __name__ == "__main__":
    main()
