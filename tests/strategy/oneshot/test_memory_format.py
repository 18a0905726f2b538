"""The supernet's memory format: channels-last where measured faster, never where oneDNN crashes.

The crash (torch 2.14.1: heap corruption in the backward pass of a strided 1x1 convolution with
few input channels, channels-last, one thread) kills the whole process, so the risky paths run in
a subprocess: a crash there is one failed test, not a dead test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch.nn as nn

from nasx.strategy.oneshot.memory_format import resolve_channels_last, unsafe_channels_last_convs
from tests.conftest import REPO_ROOT


def run_isolated(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO_ROOT,
    )


# A DARTS search on a small CPU space whose cells reduce with a 1x1 stride-2 conv of 2 -> 4
# channels: the case that died with "double free or corruption" before the guard.
SMALL_STRIDED_SEARCH = """
    import warnings
    import torch, torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    from nasx.evaluator import Classification
    from nasx.space import LayerChoice, ModelSpace
    from nasx.strategy import DARTS
    torch.set_num_threads(1)

    class Space(ModelSpace):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 2, 3, padding=1)
            self.reduce = LayerChoice({"pw": nn.Conv2d(2, 4, 1, stride=2),
                                       "pool": nn.Sequential(nn.AvgPool2d(2), nn.Conv2d(2, 4, 1))},
                                      label="reduce")
            self.head = nn.Linear(4, 10)

        def forward(self, x):
            return self.head(self.reduce(self.stem(x)).mean((2, 3)))

    data = TensorDataset(torch.randn(32, 3, 16, 16), torch.randint(0, 10, (32,)))
    ev = Classification(train_dataloaders=DataLoader(data, batch_size=8), max_epochs=1,
                        accelerator="cpu", enable_progress_bar=False, logger=False,
                        enable_checkpointing=False, enable_model_summary=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = DARTS(channels_last=CHANNELS_LAST)
        s.run(Space(), ev)
    print("use_channels_last", s.use_channels_last)
    print("warned", any("NCHW instead of channels-last" in str(w.message) for w in caught))
"""


@pytest.mark.parametrize(
    "requested",
    # the explicit request takes the same guarded path plus a warning (tested in-process below)
    [pytest.param(None, id="auto"), pytest.param(True, id="explicit", marks=pytest.mark.slow)],
)
def test_small_strided_1x1_conv_search_does_not_crash(requested):
    result = run_isolated(SMALL_STRIDED_SEARCH.replace("CHANNELS_LAST", repr(requested)))
    assert result.returncode == 0, f"search died (rc {result.returncode}):\n{result.stderr[-3000:]}"
    assert "use_channels_last False" in result.stdout
    # Only an explicit request that cannot be honoured deserves a warning.
    assert f"warned {requested is True}" in result.stdout


def test_unsafe_convs_are_the_strided_1x1_with_few_input_channels():
    net = nn.Sequential(
        nn.Conv2d(2, 4, 1, stride=2),  # unsafe
        nn.Conv2d(4, 4, 1, stride=1),  # stride 1: safe
        nn.Conv2d(4, 4, 3, stride=2),  # 3x3: safe
        nn.Conv2d(8, 4, 1, stride=2),  # 8 input channels: safe
        nn.Conv2d(7, 16, 1, stride=(1, 2)),  # unsafe
    )
    assert unsafe_channels_last_convs(net) == ["0", "4"]


def test_auto_is_channels_last_on_cpu_only_and_explicit_false_is_kept():
    safe = nn.Conv2d(16, 16, 1, stride=2)
    assert resolve_channels_last(None, safe, "cpu") is True
    assert resolve_channels_last(None, safe, "cuda") is False
    assert resolve_channels_last(True, safe, "cuda") is True
    assert resolve_channels_last(False, safe, "cpu") is False


def test_explicit_channels_last_on_an_unsafe_cpu_net_warns_and_falls_back():
    with pytest.warns(RuntimeWarning, match="strided 1x1 convolution"):
        assert resolve_channels_last(True, nn.Conv2d(3, 8, 1, stride=2), "cpu") is False


# (in_channels, kernel, stride) and whether the guard must flag the conv: the 1x1 convolutions
# with a stride above 1 and fewer than 8 input channels (on torch 2.14.1, 2..7 input channels
# crashed; 8 and more passed).
CONVS = [
    (1, 2, 1, False),
    (2, 1, 2, True),
    (4, 1, 2, True),
    (7, 1, 2, True),
    (8, 1, 2, False),
    (16, 1, 2, False),
    (4, 3, 2, False),
    (4, 1, 3, True),
]


@pytest.mark.parametrize("c_in, kernel, stride, unsafe", CONVS)
def test_the_guard_flags_exactly_the_crash_prone_convs(c_in, kernel, stride, unsafe):
    """The guard's decision for each conv of the crash matrix, on any CPU: whether torch crashes
    depends on the CPU and its oneDNN build (it did not on every machine), so the matrix below
    can only catch a missing flag where it crashes; this one fails wherever the guard drifts."""
    conv = nn.Conv2d(c_in, 4, kernel, stride=stride)
    assert bool(unsafe_channels_last_convs(conv)) is unsafe
    assert resolve_channels_last(None, conv, "cpu") is not unsafe


def test_the_isolated_run_reports_a_crash():
    """The matrix below reads a crash from the return code: an aborted process must show one."""
    assert run_isolated("import os; os.abort()").returncode != 0


@pytest.mark.slow
@pytest.mark.parametrize("c_in, kernel, stride, unsafe", CONVS)
def test_every_conv_that_crashes_torch_is_guarded(c_in, kernel, stride, unsafe):
    """Run the crash-prone backward in plain torch: a conv that kills the process must be flagged,
    and one the table says is safe must not crash (where this CPU does not reproduce the crash,
    the flagged rows simply pass: the test above checks the flags themselves)."""
    result = run_isolated(f"""
        import torch, torch.nn as nn
        torch.set_num_threads(1)
        conv = nn.Conv2d({c_in}, 4, {kernel}, stride={stride}, bias=False)
        conv = conv.to(memory_format=torch.channels_last)
        x = torch.randn(8, {c_in}, 16, 16).contiguous(memory_format=torch.channels_last)
        x.requires_grad_(True)
        for _ in range(20):
            conv(x).sum().backward()
    """)
    flagged = bool(unsafe_channels_last_convs(nn.Conv2d(c_in, 4, kernel, stride=stride)))
    assert flagged is unsafe
    if result.returncode != 0:
        assert flagged, f"torch crashed (rc {result.returncode}) on a conv the guard lets through"


def test_a_searched_strided_1x1_conv_with_few_input_channels_is_flagged():
    from nasx.space import Categorical, ModelSpace, MutableConv2d
    from nasx.strategy.oneshot import Supernet

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            # kernel 1 with stride 2 on 4 input channels: one arch of this layer can crash oneDNN
            self.conv = MutableConv2d(4, 8, Categorical([1, 3], label="k"), stride=2)

        def forward(self, x):
            return self.conv(x)

    assert unsafe_channels_last_convs(Supernet(Net())) == ["model.conv"]
