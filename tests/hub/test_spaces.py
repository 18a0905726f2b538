"""Sanity test over every hub space: random archs build, train one step, give the right shapes."""

import pytest
import torch

from nasx.hub import (
    DARTS,
    ENAS,
    PNAS,
    AmoebaNet,
    MnasNet,
    MobileNetV3Space,
    NasBench201,
    NASNet,
    ProxylessNAS,
    SpineNet,
)
from nasx.space import search_space

# (name, tiny space factory, input shape, expected output shape(s))
SPACES = [
    ("DARTS", lambda: DARTS(width=(4, 6), num_cells=(3, 4)), (2, 3, 16, 16), (2, 10)),
    (
        "DARTS-aux",
        lambda: DARTS(width=4, num_cells=3, auxiliary_loss=True, drop_path_prob=0.2),
        (2, 3, 32, 32),
        (2, 10),
    ),
    ("NASNet", lambda: NASNet(width=4, num_cells=3), (2, 3, 16, 16), (2, 10)),
    ("ENAS", lambda: ENAS(width=4, num_cells=3), (2, 3, 16, 16), (2, 10)),
    ("AmoebaNet", lambda: AmoebaNet(width=4, num_cells=3), (2, 3, 16, 16), (2, 10)),
    ("PNAS", lambda: PNAS(width=4, num_cells=3), (2, 3, 16, 16), (2, 10)),
    (
        "NasBench201",
        lambda: NasBench201(stem_out_channels=4, num_modules_per_stack=1),
        (2, 3, 16, 16),
        (2, 10),
    ),
    ("MnasNet", lambda: MnasNet(num_classes=10), (2, 3, 32, 32), (2, 10)),
    ("ProxylessNAS", lambda: ProxylessNAS(num_classes=10), (2, 3, 32, 32), (2, 10)),
    ("MobileNetV3", lambda: MobileNetV3Space(10, skeleton="small"), (2, 3, 32, 32), (2, 10)),
    ("SpineNet", lambda: SpineNet(scaling="49S"), (2, 3, 64, 64), None),
]


def _loss_and_shapes(out):
    if isinstance(out, dict):  # SpineNet: multi-level features
        return sum(f.float().pow(2).mean() for f in out.values()), [
            tuple(f.shape) for f in out.values()
        ]
    if isinstance(out, tuple):  # logits and auxiliary logits
        return sum(o.logsumexp(1).mean() for o in out), [tuple(o.shape) for o in out]
    return out.logsumexp(1).mean(), [tuple(out.shape)]


@pytest.mark.parametrize("name, make, input_shape, out_shape", SPACES, ids=[s[0] for s in SPACES])
def test_random_archs_train_one_step(name, make, input_shape, out_shape):
    space = make()
    ss = search_space(space)
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = space.freeze(ss.sample(seed=seed))
        assert search_space(model) == {}
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss, shapes = _loss_and_shapes(model(torch.randn(input_shape)))
        assert torch.isfinite(loss), f"{name}: loss {loss}"
        loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
        # batches of 2 at 1x1 resolution make BN gradients huge; clip so the step stays a sanity check
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if out_shape is not None:
            assert all(s == out_shape for s in shapes), f"{name}: {shapes}"
        else:  # P3..P7 at 128 channels for a 64x64 input
            assert shapes == [
                (2, 128, max(1, 64 // 2**level), max(1, 64 // 2**level)) for level in range(3, 8)
            ]
        with torch.no_grad():
            out = model.eval()(torch.randn(input_shape))
        assert all(
            torch.isfinite(t).all() for t in (out.values() if isinstance(out, dict) else [out])
        )
