"""Cost counters over every hub model: nasx.profiler (torch's FlopCounterMode) against an
independent count (forward hooks on conv and linear modules, exact for these all-CNN models, plus
AutoFormer's and GPT's attention products) and
against the papers' published figures where they exist.

Spaces are counted at their small registry configuration; pre-searched models at their published
size on the ``meta`` device (shapes only, nothing computed), every one in the default suite, against
the paper's figure at the precision the paper prints it.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from nasx.hub import available_models, list_spaces, load_searched_model, space_entry
from nasx.hub.autoformer import RelativePositionSelfAttention
from nasx.hub.gpt import CausalSelfAttention
from nasx.hub.pretrained import SEARCHED_MODELS
from nasx.profiler import count_macs, count_parameters


def hook_macs(model: nn.Module, input_shape: tuple[int, ...], x: torch.Tensor | None = None) -> int:
    """MACs of conv and linear modules from forward hooks (the counter nasx used before)."""
    total = 0

    def conv(module, inputs, output):
        nonlocal total
        per_output = module.in_channels // module.groups * math.prod(module.kernel_size)
        total += output[0].numel() * per_output

    def linear(module, inputs, output):
        nonlocal total
        total += output[0].numel() * module.in_features

    def attention(module, inputs, output):
        nonlocal total  # q k^T and attention @ v, and as much again with relative positions
        n, inner = output.shape[1], module.q.out_features
        total += output.shape[0] * n * n * inner * (4 if module.rpe else 2)

    def causal_attention(module, inputs, output):
        nonlocal total  # q k^T and attention @ v over every (query, key) pair: the mask saves none
        n, inner = output.shape[1], module.q.out_features
        total += output.shape[0] * n * n * inner * 2

    handles = [
        m.register_forward_hook(conv if isinstance(m, nn.modules.conv._ConvNd) else linear)
        for m in model.modules()
        if isinstance(m, (nn.modules.conv._ConvNd, nn.Linear))
    ]
    handles += [
        m.register_forward_hook(attention)
        for m in model.modules()
        if isinstance(m, RelativePositionSelfAttention)
    ]
    handles += [
        m.register_forward_hook(causal_attention)
        for m in model.modules()
        if isinstance(m, CausalSelfAttention)
    ]
    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            model.eval()(torch.zeros(1, *input_shape, device=device) if x is None else x)
    finally:
        for h in handles:
            h.remove()
    return total


@pytest.mark.parametrize("name", list_spaces())
def test_every_hub_space_agrees_with_the_module_count(name):
    entry = space_entry(name)
    torch.manual_seed(0)
    model = entry.cls(**entry.small)
    x = entry.example_input(1)
    macs = count_macs(model, inputs=x)
    assert macs > 0 and macs == hook_macs(model, entry.input_size, x)


# name -> (input shape, our parameters, our MACs). Pinned: a change is a change of the model.
# The papers' figures live in each registry row (SearchedModel.paper_params / paper_macs), with
# the reason where ours differ at the paper's printed precision (size_note). DARTS-family counts
# leave out the auxiliary head, as the DARTS paper does.
OURS = {
    "mnasnet-a1": ((3, 224, 224), 3_887_038, 311_579_072),
    "mobilenetv2": ((3, 224, 224), 3_504_872, 300_774_272),
    "darts-v2": ((3, 32, 32), 3_349_342, 528_359_040),
    "darts-v1": ((3, 32, 32), 3_169_414, 500_987_520),
    "pc-darts": ((3, 32, 32), 3_634_678, 556_670_592),
    "p-darts": ((3, 32, 32), 3_433_798, 532_174_464),
    "nasnet-a": ((3, 32, 32), 3_061_738, 483_842_304),
    "amoebanet-a": ((3, 32, 32), 3_145_078, 488_931_552),
    "enas": ((3, 32, 32), 3_729_430, 590_384_160),
    "proxylessnas-mobile": ((3, 224, 224), 4_080_512, 320_427_584),
    "proxylessnas-gpu": ((3, 224, 224), 7_119_848, 465_260_160),
    "mobilenetv3-large": ((3, 224, 224), 5_483_032, 216_589_760),
    "mobilenetv3-small": ((3, 224, 224), 2_542_856, 56_510_400),
    "spinenet-49s": ((3, 640, 640), 9_089_215, 12_325_257_975),
    "spinenet-49": ((3, 640, 640), 21_831_488, 28_261_990_400),
    "spinenet-96": ((3, 1024, 1024), 36_262_976, 119_054_270_464),
    "spinenet-143": ((3, 1280, 1280), 60_247_616, 295_259_340_800),
}
# Same network, layer for layer, in torchvision: an independent implementation to count against.
TORCHVISION_TWINS = {
    "mobilenetv2": "mobilenet_v2",
    "mobilenetv3-large": "mobilenet_v3_large",
    "mobilenetv3-small": "mobilenet_v3_small",
}
_UNITS = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9}


def agrees_as_printed(count: int, printed: str) -> bool:
    """Whether ``count`` rounds to ``printed`` ("3.3M", "312M") at the precision it is printed
    with: "3.3M" holds 3.25 M to 3.35 M, "312M" 311.5 M to 312.5 M.

    >>> agrees_as_printed(3_349_342, "3.3M"), agrees_as_printed(3_729_430, "4.6M")
    (True, False)
    """
    number, unit = printed[:-1], printed[-1]
    decimals = len(number.partition(".")[2])
    return round(count / _UNITS[unit], decimals) == float(number)


def test_agrees_as_printed_keeps_the_printed_precision():
    assert agrees_as_printed(3_349_999, "3.3M") and not agrees_as_printed(3_350_001, "3.3M")
    assert agrees_as_printed(311_579_072, "312M") and not agrees_as_printed(300_774_272, "300M")
    assert not agrees_as_printed(3_729_430, "4.6M")  # within 20%, which used to pass


def test_the_table_lists_every_searched_model():
    assert sorted(OURS) == available_models()


# On the meta device (shapes only, nothing computed): about 1-4 s a model on one core.
@pytest.mark.parametrize("name", list(OURS))
def test_every_searched_model_at_its_published_size(name):
    shape, params, macs = OURS[name]
    entry = SEARCHED_MODELS[name]
    with torch.device("meta"):
        model = load_searched_model(name)
    assert count_parameters(model) == params
    assert count_macs(model, shape) == macs == hook_macs(model, shape)
    differs = [
        f"{what} {count:,} vs {printed}"
        for what, count, printed in (
            ("parameters", params, entry.paper_params),
            ("MACs", macs, entry.paper_macs),
        )
        if printed is not None and not agrees_as_printed(count, printed)
    ]
    # a difference from the paper is explained in the registry row, with its evidence; a row
    # without any paper figure says why
    if differs or (entry.paper_params is None and entry.paper_macs is None):
        assert entry.size_note, f"{name}: {differs or 'no paper figure'} and no size_note"
    else:
        assert not entry.size_note, f"{name} agrees with the paper: its size_note is stale"


@pytest.mark.parametrize("name", list(TORCHVISION_TWINS))
def test_searched_models_count_as_their_torchvision_twins(name):
    torchvision = pytest.importorskip("torchvision")
    shape, params, macs = OURS[name]
    with torch.device("meta"):
        twin = getattr(torchvision.models, TORCHVISION_TWINS[name])()
    assert (count_parameters(twin), count_macs(twin, shape)) == (params, macs)
