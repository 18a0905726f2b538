"""Print the size of every pre-searched hub model against the number its paper publishes.

Run: PYTHONPATH=. python benchmarks/hub_sizes.py   (CPU, about a minute; no data, no network)
Columns: parameters (M) and multiply-adds (M) measured by nasx.profiler, the published figure,
and measured / published. DARTS-family CIFAR counts leave out the auxiliary head, as the papers do.
"""

from __future__ import annotations

import torch
from torchvision.models.detection import RetinaNet

from nasx.hub import load_searched_model
from nasx.profiler import count_macs, count_parameters

# name -> (published params, published MACs or None, input shape for MACs, source)
PUBLISHED = {
    "darts-v1": (3.3e6, None, None, "DARTS paper, Table 1 (first order)"),
    "darts-v2": (3.3e6, None, None, "DARTS paper, Table 1; train.py prints 3.349342 MB"),
    "pc-darts": (3.6e6, None, None, "PC-DARTS paper, Table 1"),
    "p-darts": (3.4e6, None, None, "P-DARTS paper, Table 1"),
    "nasnet-a": (3.3e6, None, None, "NASNet paper, Table 1 (6 @ 768)"),
    "amoebanet-a": (3.2e6, None, None, "AmoebaNet paper (N=6, F=36)"),
    "enas": (4.6e6, None, None, "ENAS paper, Table 2 (micro search + cutout)"),
    "mnasnet-a1": (3.9e6, 312e6, (3, 224, 224), "MnasNet paper, Table 1"),
    "mobilenetv2": (3.4e6, 300e6, (3, 224, 224), "MobileNetV2 paper, Table 4"),
    "proxylessnas-mobile": (4.1e6, 320e6, (3, 224, 224), "ProxylessNAS released Mobile model"),
    "proxylessnas-gpu": (7.1e6, 465e6, (3, 224, 224), "ProxylessNAS released GPU model"),
    "mobilenetv3-large": (5.4e6, 219e6, (3, 224, 224), "MobileNetV3 paper, Table 3"),
    "mobilenetv3-small": (2.5e6, 56e6, (3, 224, 224), "MobileNetV3 paper, Table 3"),
    "spinenet-49s": (12.0e6, None, None, "SpineNet paper, Table 2, with RetinaNet"),
    "spinenet-49": (28.5e6, None, None, "SpineNet paper, Table 2, with RetinaNet"),
    "spinenet-96": (43.0e6, None, None, "SpineNet paper, Table 2, with RetinaNet"),
    "spinenet-143": (66.9e6, None, None, "SpineNet paper, Table 2, with RetinaNet"),
}


def main() -> None:
    torch.set_num_threads(1)
    print(
        f"{'model':19s} {'params M':>9s} {'paper':>6s} {'ratio':>6s} {'MACs M':>8s} {'paper':>6s} {'ratio':>6s}  source"
    )
    for name, (params_ref, macs_ref, shape, source) in PUBLISHED.items():
        model = load_searched_model(name)
        if name.startswith("spinenet"):
            model = RetinaNet(
                model, num_classes=91
            )  # the paper's detector: 9 anchors, COCO classes
        params = sum(p.numel() for n, p in model.named_parameters() if "auxiliary" not in n)
        assert params <= count_parameters(model)
        macs = (
            f"{count_macs(model, shape) / 1e6:8.1f} {macs_ref / 1e6:6.0f} {count_macs(model, shape) / macs_ref:6.3f}"
            if macs_ref
            else f"{'-':>8s} {'-':>6s} {'-':>6s}"
        )
        print(
            f"{name:19s} {params / 1e6:9.3f} {params_ref / 1e6:6.1f} {params / params_ref:6.3f} {macs}  {source}"
        )


if __name__ == "__main__":
    main()
