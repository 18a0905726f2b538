"""The hub guide's deterministic size figures come from the code: each one is computed here (on the
meta device: shapes only, nothing run) and formatted as docs/hub.md prints it (the README's hub
section moved there), and that text must be on the page. A model change that moves a count fails
here until the page says the new one.

The figures printed by code blocks (`arch_cost`, the MnasNet reward) are checked against their
output in `tests/test_readme.py`; benchmarks/AUDIT.md lists every
figure of README, docs and results files, with the command that produces it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nasx.profiler import count_macs, count_parameters
from nasx.space import model_context

README = (Path(__file__).resolve().parents[1] / "docs" / "hub.md").read_text()
# the page wraps its lines: compare with runs of whitespace made single spaces
README_TEXT = " ".join(README.split())


def millions(count: float, decimals: int = 2) -> str:
    """A count in millions as the README writes it.

    >>> millions(5_483_032), millions(3_349_342, 1), millions(311_579_072, 1)
    ('5.48M', '3.3M', '311.6M')
    """
    return f"{count / 1e6:.{decimals}f}M"


def meta_params_macs(build, shape=(3, 224, 224)) -> tuple[int, int]:
    with torch.device("meta"):
        model = build()
    return count_parameters(model), count_macs(model, shape)


def darts_v2() -> str:
    from nasx.hub import load_searched_model

    with torch.device("meta"):
        params = count_parameters(load_searched_model("darts-v2"))
    return f'load_searched_model("darts-v2") # {params:,} parameters'


def nasbench101() -> str:
    from nasx.hub import NasBench101
    from nasx.hub.nasbench101 import nb101_spec_to_arch
    from tests.hub.test_nasbench101 import INCEPTION_LIKE, LARGEST, SMALLEST

    def params(spec) -> int:
        with torch.device("meta"):
            return count_parameters(NasBench101().freeze(nb101_spec_to_arch(*spec)))

    return (
        f"Inception-like cell has the benchmark's {params(INCEPTION_LIKE):,} parameters, and the "
        f"space's smallest and largest networks the paper's {params(SMALLEST):,} and "
        f"{params(LARGEST):,})"
    )


def proxylessnas() -> str:
    from nasx.hub.proxylessnas import (
        GPU_WIDTHS,
        PROXYLESSNAS_GPU,
        PROXYLESSNAS_MOBILE,
        ProxylessNAS,
    )

    def build(arch, **kwargs):
        with model_context(arch):
            return ProxylessNAS(**kwargs)

    mp, mm = meta_params_macs(lambda: build(PROXYLESSNAS_MOBILE))
    gp, gm = meta_params_macs(lambda: build(PROXYLESSNAS_GPU, widths=GPU_WIDTHS))
    return (
        f"(`PROXYLESSNAS_MOBILE`: {mp:,} params / {millions(mm, 1)} MACs, the published 4.1M / "
        f"320M; `PROXYLESSNAS_GPU` with `widths=GPU_WIDTHS`: {gp:,} / {millions(gm, 1)}, the "
        "published 7.1M / 465M)"
    )


def mobilenetv3() -> str:
    from nasx.hub.mobilenetv3 import MOBILENETV3_LARGE, MOBILENETV3_SMALL, MobileNetV3Space

    def build(arch, **kwargs):
        with model_context(arch):
            return MobileNetV3Space(**kwargs)

    lp, lm = meta_params_macs(lambda: build(MOBILENETV3_LARGE))
    sp, sm = meta_params_macs(lambda: build(MOBILENETV3_SMALL, skeleton="small"))
    return (
        f"(`MOBILENETV3_LARGE`: {millions(lp)} / {millions(lm, 1)} MACs, `MOBILENETV3_SMALL` with "
        f'`skeleton="small"`: {millions(sp)} / {millions(sm, 1)},'
    )


def spos() -> str:
    from nasx.hub import SPOS, ShuffleNetSpace

    params, macs = meta_params_macs(lambda: ShuffleNetSpace().freeze(SPOS))
    return (
        f"the `SPOS` arch: {millions(params)} params / {millions(macs, 1)} MACs, the paper's 319M)"
    )


def autoformer() -> str:
    from nasx.hub import AutoFormer

    sizes = []
    for name in ("autoformer-tiny", "autoformer-small", "autoformer-base"):
        with torch.device("meta"):
            sizes.append(millions(count_parameters(AutoFormer.load_searched_model(name))))
    return f"`AUTOFORMER_TINY` / `_SMALL` / `_BASE`: {' / '.join(sizes)} params, the paper's"


def enas() -> str:
    from nasx.hub import load_searched_model

    with torch.device("meta"):
        params = count_parameters(load_searched_model("enas"))
    return f"ENAS: {millions(params)} against the paper's 4.6M"


def hub_sizes() -> str:
    """The line quoting `benchmarks/hub_sizes.py`, which counts DARTS-family models without their
    auxiliary head and SpineNet inside torchvision's RetinaNet (91 COCO classes)."""
    from torchvision.models.detection import RetinaNet

    from nasx.hub import load_searched_model

    with torch.device("meta"):
        darts = load_searched_model("darts-v2")
        mnasnet = load_searched_model("mnasnet-a1")
        spinenet = RetinaNet(load_searched_model("spinenet-49"), num_classes=91)
    darts_params = sum(p.numel() for n, p in darts.named_parameters() if "auxiliary" not in n)
    mnas_params, mnas_macs = count_parameters(mnasnet), count_macs(mnasnet, (3, 224, 224))
    return (
        f"DARTS-V2 CIFAR {millions(darts_params)}, MnasNet-A1 {millions(mnas_params)} params / "
        f"{millions(mnas_macs, 1)} MACs, SpineNet-49 + RetinaNet at 640 "
        f"{millions(count_parameters(spinenet), 1)}."
    )


FIGURES = {
    f.__name__: f
    for f in (darts_v2, nasbench101, proxylessnas, mobilenetv3, spos, autoformer, enas, hub_sizes)
}


@pytest.mark.parametrize("name", FIGURES)
def test_readme_states_the_computed_figure(name):
    expected = FIGURES[name]()
    assert expected in README_TEXT, f"docs/hub.md should say {expected!r} (computed from the code)"
