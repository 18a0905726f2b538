"""Cost of one RandomOneShot training step on the MnasNet space against the sampled plain model.

For each of ``--archs`` sampled archs: one step (forward, backward, SGD update) of the supernet on
that arch's path (sliced shared weights, as RandomOneShot trains it), and one step of the plain
model built under ``model_context(arch)`` (build time excluded), on the same batch, in the same
process, alternating the two so that both see the same machine load. Prints the median ms/step
of both and the median of the per-arch ratios.

    python benchmarks/value_choice_step.py                 # CPU (1 thread), batch 16 at 64x64
    python benchmarks/value_choice_step.py --device cuda --batch 128 --size 224
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from nasx.hub.mnasnet import MnasNet
from nasx.space import model_context
from nasx.strategy.oneshot import Supernet


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class _Stepper:
    """One SGD step of a model on a fixed batch, timed."""

    def __init__(self, model, params, x, y, device: torch.device):
        self.model, self.x, self.y, self.device = model, x, y, device
        self.opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)

    def __call__(self) -> float:
        _sync(self.device)
        start = time.perf_counter()
        self.opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(self.model(self.x), self.y).backward()
        self.opt.step()
        _sync(self.device)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--archs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (torch)")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    supernet = Supernet(MnasNet(num_classes=10), mode="path", alphas=False).to(device).train()
    x = torch.randn(args.batch, 3, args.size, args.size, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    rng = random.Random(0)
    rows = []
    for _ in range(args.archs):
        arch = supernet.search_space.sample(rng)
        supernet.use_arch(arch)
        with model_context(arch):
            plain = MnasNet(num_classes=10).to(device).train()
        steps = (
            _Stepper(supernet, supernet.model_parameters(), x, y, device),
            _Stepper(plain, list(plain.parameters()), x, y, device),
        )
        for step in steps:  # warm-up: allocations, oneDNN / cuDNN plans
            step()
        # alternate the two so that both see the same machine load
        pairs = [(steps[0](), steps[1]()) for _ in range(args.repeats)]
        t_super = statistics.median(p[0] for p in pairs)
        t_plain = statistics.median(p[1] for p in pairs)
        rows.append((t_super, t_plain, statistics.median(p[0] / p[1] for p in pairs)))
        print(
            f"  arch {len(rows)}: supernet {t_super * 1e3:8.1f} ms/step, "
            f"plain {t_plain * 1e3:8.1f} ms/step, ratio {rows[-1][2]:.2f}",
            flush=True,
        )
    med_s = statistics.median(r[0] for r in rows)
    med_p = statistics.median(r[1] for r in rows)
    ratio = statistics.median(r[2] for r in rows)
    print(
        f"MnasNet RandomOneShot step on {args.device}, batch {args.batch} at {args.size}x{args.size}: "
        f"supernet path {med_s * 1e3:.1f} ms/step, sampled plain model {med_p * 1e3:.1f} ms/step, "
        f"median ratio {ratio:.2f} over {len(rows)} archs"
    )


if __name__ == "__main__":
    main()
