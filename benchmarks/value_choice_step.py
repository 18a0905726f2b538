"""Cost of one RandomOneShot training step on the MnasNet space against the sampled plain model.

For each of ``--archs`` sampled archs: one step (forward, backward, SGD update) of the supernet on
that arch's path (sliced shared weights, as RandomOneShot trains it), and one step of the plain
model built under ``model_context(arch)`` (build time excluded), on the same batch, in the same
process. Prints the median ms/step of both and the median of the per-arch ratios.

    python benchmarks/value_choice_step.py                       # CPU, batch 32 at 64x64
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


def _step_time(model, params, x, y, repeats: int, device: torch.device) -> float:
    """Median seconds of one SGD step of ``model`` on ``(x, y)``."""
    opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    times = []
    for i in range(repeats + 1):
        _sync(device)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        _sync(device)
        if i:  # the first call warms up (allocations, oneDNN / cuDNN plans)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--archs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    supernet = Supernet(MnasNet(num_classes=10), mode="path", alphas=False).to(device).train()
    x = torch.randn(args.batch, 3, args.size, args.size, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    rng = random.Random(0)
    rows = []
    for _ in range(args.archs):
        arch = supernet.search_space.sample(rng)
        supernet.use_arch(arch)
        t_super = _step_time(
            supernet, supernet.model_parameters(), x, y, args.repeats, device
        )
        with model_context(arch):
            plain = MnasNet(num_classes=10).to(device).train()
        t_plain = _step_time(plain, list(plain.parameters()), x, y, args.repeats, device)
        rows.append((t_super, t_plain))
        print(
            f"  arch {len(rows)}: supernet {t_super * 1e3:8.1f} ms/step, "
            f"plain {t_plain * 1e3:8.1f} ms/step, ratio {t_super / t_plain:.2f}"
        )
    med_s = statistics.median(r[0] for r in rows)
    med_p = statistics.median(r[1] for r in rows)
    ratio = statistics.median(r[0] / r[1] for r in rows)
    print(
        f"MnasNet RandomOneShot step on {args.device}, batch {args.batch} at {args.size}x{args.size}: "
        f"supernet path {med_s * 1e3:.1f} ms/step, sampled plain model {med_p * 1e3:.1f} ms/step, "
        f"median ratio {ratio:.2f} over {len(rows)} archs"
    )


if __name__ == "__main__":
    main()
