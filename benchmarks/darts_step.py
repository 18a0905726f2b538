"""Benchmark: seconds per DARTS search step (one architecture step + one weight step) and peak
memory, nasx's DARTS against a hand-written plain-PyTorch first-order DARTS of the same network.

    PYTHONPATH=. python benchmarks/darts_step.py [--space hub|local --steps 5 --repeats 5]
        [--width 8 --cells 5 --batch 16 --size 32]
    PYTHONPATH=. python benchmarks/darts_step.py --variants oneshot --ref "sampled 4 archs"

The second form times the path strategies (RandomOneShot, Proxyless with its two-path and
all-paths architecture updates) against plain models of the archs they sample.

``--space hub`` (the default) searches ``nasx.hub.DARTS(width, num_cells)``: NNI's DARTS space,
7 ops per edge, 4 nodes per cell. ``--space local`` searches the tutorials' small DARTS-like
space (4 ops, ``--nodes`` nodes). The plain reference builds the same network by hand (the ops
themselves come from the space's op modules) and checks it has as many weights as nasx's supernet.

Times are medians over ``--repeats`` runs of ``--steps`` steps, the variants interleaved in one
process; the speed-up compares CPU time (robust to other processes on a shared machine). Peak
memory is measured per variant in a fresh subprocess: growth of the peak resident set (VmHWM,
reset before building the model) on CPU, ``torch.cuda.max_memory_allocated`` on GPU. Variants a
space cannot run (e.g. partial channels without ``.partial(k)`` op factories) are skipped with
the reason printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tutorials"))
import darts_space  # noqa: E402

from nasx.hub import DARTS as HubDarts  # noqa: E402
from nasx.hub.nds import CellPreprocessor  # noqa: E402
from nasx.hub.ops import OPS  # noqa: E402
from nasx.space import Cell  # noqa: E402
from nasx.strategy.oneshot.supernet.mixed import NONE_OPS  # noqa: E402

# ---------------------------------------------------------------------------------------------
# The two spaces: how nasx builds each, and what the plain reference needs to build the same
# network by hand (op names, one op on one edge, the cell preprocessor, where the reductions are).


class LocalSpace:
    """tutorials/darts_space.py: 4 ops (sep_conv_3x3, max_pool_3x3, skip_connect, none)."""

    op_names = darts_space.OP_NAMES

    @staticmethod
    def nasx_space(args):
        return darts_space.DartsLikeSpace(
            width=args.width, num_cells=args.cells, num_nodes=args.nodes
        )

    @staticmethod
    def make_op(name, c, reduction, input_index):
        return darts_space.make_op(name, c, 0, 0, input_index, reduction)

    preprocess = darts_space.Preprocess

    @staticmethod
    def reductions(num_cells):
        return [i in (num_cells // 3, 2 * num_cells // 3) and i > 0 for i in range(num_cells)]


class HubSpace:
    """nasx.hub.DARTS: the 7 DARTS ops, 4 nodes per cell, 3 stages starting with a reduction."""

    op_names = tuple(HubDarts.DARTS_OPS)

    @staticmethod
    def nasx_space(args):
        return HubDarts(width=args.width, num_cells=args.cells)

    @staticmethod
    def make_op(name, c, reduction, input_index):
        # DARTS: in a reduction cell, edges leaving the two cell inputs have stride 2.
        return OPS[name](c, 2 if reduction and input_index < 2 else 1, True)

    preprocess = CellPreprocessor

    @staticmethod
    def reductions(num_cells):
        per_stage = [(s + 1) * num_cells // 3 - s * num_cells // 3 for s in range(3)]  # NNI's split
        return [stage > 0 and i == 0 for stage, n in enumerate(per_stage) for i in range(n)]


SPACES = {"hub": HubSpace, "local": LocalSpace}
DEFAULTS = {
    "hub": dict(width=8, cells=5, nodes=4, batch=16),
    "local": dict(width=8, cells=5, nodes=4, batch=32),
}

# ---------------------------------------------------------------------------------------------
# The plain reference: DARTS as one would write it by hand in PyTorch (MixedOp over all ops,
# every node fed by every earlier node, alphas as two parameters, first-order alternating steps).


class PlainMixedOp(nn.Module):
    def __init__(self, ops: list[nn.Module]):
        super().__init__()
        self.ops = nn.ModuleList(ops)

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # w: [n_ops]
        return sum(wk * op(x) for wk, op in zip(w, self.ops, strict=False))


class PlainCell(nn.Module):
    def __init__(self, space, pre: nn.Module, c: int, reduction: bool, nodes: int):
        super().__init__()
        self.pre = pre
        self.nodes = nodes
        self.edges = nn.ModuleList(
            PlainMixedOp([space.make_op(name, c, reduction, j) for name in space.op_names])
            for i in range(2, 2 + nodes)
            for j in range(i)
        )

    def forward(self, s0, s1, weights):  # weights [n_edges, n_ops]
        states, e = self.pre([s0, s1]), 0
        for i in range(2, 2 + self.nodes):
            node = 0
            for j in range(i):
                node = node + self.edges[e](states[j], weights[e])
                e += 1
            states.append(node)
        return s1, torch.cat(states[2:], 1)  # the next cell's two inputs


class PlainDarts(nn.Module):
    def __init__(self, space, width: int, num_cells: int, nodes: int, num_classes: int = 10):
        super().__init__()
        c_stem = 3 * width
        self.stem = nn.Sequential(
            nn.Conv2d(3, c_stem, 3, padding=1, bias=False), nn.BatchNorm2d(c_stem)
        )
        c_pp, c_p, c, prev_red = c_stem, c_stem, width, False
        self.cells, self.reduction = nn.ModuleList(), space.reductions(num_cells)
        for red in self.reduction:
            c = c * 2 if red else c
            self.cells.append(
                PlainCell(space, space.preprocess(c_pp, c_p, c, prev_red), c, red, nodes)
            )
            c_pp, c_p, prev_red = c_p, nodes * c, red
        self.classifier = nn.Linear(c_p, num_classes)
        n_edges = sum(range(2, 2 + nodes))
        self.alpha_normal = nn.Parameter(1e-3 * torch.randn(n_edges, len(space.op_names)))
        self.alpha_reduce = nn.Parameter(1e-3 * torch.randn(n_edges, len(space.op_names)))

    def weights(self):
        return [p for n, p in self.named_parameters() if not n.startswith("alpha")]

    def forward(self, x):
        wn, wr = F.softmax(self.alpha_normal, -1), F.softmax(self.alpha_reduce, -1)
        s0 = s1 = self.stem(x)
        for cell, red in zip(self.cells, self.reduction, strict=False):
            s0, s1 = cell(s0, s1, wr if red else wn)
        return self.classifier(F.adaptive_avg_pool2d(s1, 1).flatten(1))


def plain_network(args):
    return PlainDarts(SPACES[args.space], args.width, args.cells, args.nodes)


def plain_stepper(args, device, channels_last=False, cuda_graph=False, bf16=False):
    """The hand-written first-order DARTS step; ``cuda_graph``: captured whole, as a user would by
    hand following PyTorch's CUDA-graph documentation (capturable Adam, side-stream warm-up)."""
    net = plain_network(args).to(device)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    w_opt = torch.optim.Adam(net.weights(), lr=1e-3, capturable=cuda_graph)
    a_opt = torch.optim.Adam(
        [net.alpha_normal, net.alpha_reduce],
        lr=3e-4,
        betas=(0.5, 0.999),
        weight_decay=1e-3,
        capturable=cuda_graph,
    )
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False)

    def step(xt, yt, xv, yv):
        if channels_last:
            xt, xv = (
                xt.contiguous(memory_format=torch.channels_last),
                xv.contiguous(memory_format=torch.channels_last),
            )
        a_opt.zero_grad()
        with autocast:
            loss_v = F.cross_entropy(net(xv), yv)
        loss_v.backward(inputs=[net.alpha_normal, net.alpha_reduce])
        a_opt.step()
        w_opt.zero_grad()
        with autocast:
            loss = F.cross_entropy(net(xt), yt)
        loss.backward(inputs=net.weights())
        nn.utils.clip_grad_norm_(net.weights(), 5.0)
        w_opt.step()
        return loss.detach()

    if not cuda_graph:
        return lambda train, val: step(*train, *val)
    static, graph = None, None

    def graphed(train, val):
        nonlocal static, graph
        if graph is None:
            static = [t.clone() for t in (*train, *val)]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    step(*static)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            a_opt.zero_grad(set_to_none=True)
            w_opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                step(*static)
        for s_, t in zip(static, (*train, *val), strict=True):
            s_.copy_(t)
        graph.replay()

    return graphed


# ---------------------------------------------------------------------------------------------
# nasx: the DARTS strategy's supernet and search step, driven without a Lightning trainer.


def nasx_supernet(args, strategy, none_ops=None):
    from nasx.strategy.oneshot.supernet import Supernet

    return Supernet(
        SPACES[args.space].nasx_space(args),
        checkpoint=strategy.checkpoint_edges,
        partial_channels=strategy.partial_channels,
        **({"none_ops": none_ops} if none_ops is not None else {}),
    )


def nasx_stepper(args, device, strategy_class="DARTS", precision="auto", **options):
    """nasx's search step as ``BaseOneShotStrategy.run`` sets it up on ``device``, without
    Lightning's loop. ``precision='auto'`` is what the strategy picks: bf16 autocast on a GPU
    that has it (as Lightning's 'bf16-mixed' does around each step), fp32 on CPU."""
    import nasx.strategy as strategies
    from nasx.evaluator import Classification
    from nasx.strategy.oneshot.base import _has_cuda_bf16
    from nasx.strategy.oneshot.lightning import OneShotModule
    from nasx.strategy.oneshot.memory_format import resolve_channels_last

    none_ops = options.pop("none_ops", None)
    batch_edges = options.pop("batch_edges", True)
    strategy = getattr(strategies, strategy_class)(**options)
    if none_ops is None:  # what the strategy builds
        supernet = strategy.build_supernet(SPACES[args.space].nasx_space(args))
    else:  # the same supernet with another set of skipped ops
        supernet = nasx_supernet(args, strategy, none_ops)
    supernet = supernet.to(device)
    for m in supernet.modules():
        if hasattr(m, "batch_edges"):
            m.batch_edges = batch_edges
    # What BaseOneShotStrategy.run decides for this device (None = auto: channels-last on CPU).
    strategy.use_channels_last = resolve_channels_last(
        strategy.channels_last, supernet, device.type
    )
    if strategy.use_channels_last:
        supernet.to(memory_format=torch.channels_last)
    strategy.supernet = supernet
    module = OneShotModule(Classification(learning_rate=1e-3).module, supernet, strategy)
    module.to(device)
    module.configure_optimizers()
    bf16 = precision == "bf16" or (
        precision == "auto" and device.type == "cuda" and _has_cuda_bf16()
    )
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)

    def step(train, val):
        with autocast:
            module.search_step(train, val)

    step.module = module
    return step


def sampled_model_stepper(args, device, archs=1, passes=1):
    """Reference for path-sampling strategies: one weight step of a plain model rebuilt from a
    random arch of the same space (what a step of RandomOneShot should cost). ``archs`` > 1
    cycles through that many random archs, one per step (a path strategy's archs vary in cost
    too); ``passes=2`` takes a step on both batches (a path strategy with an architecture step
    on the validation batch, Proxyless, does two forward-backward passes per step at best)."""
    import random

    from nasx.space import model_context, search_space

    space = SPACES[args.space].nasx_space(args)
    nets, opts = [], []
    for k in range(archs):
        arch = search_space(space).sample(random.Random(k))
        with model_context(arch):
            nets.append(type(space)(width=args.width, num_cells=args.cells).to(device))
        opts.append(torch.optim.Adam(nets[-1].parameters(), lr=1e-3))
    turn = [0]

    def step(train, val):
        k = turn[0] % archs
        turn[0] += 1
        for x, y in (train, val)[:passes]:
            opts[k].zero_grad()
            F.cross_entropy(nets[k](x), y).backward()
            opts[k].step()

    return step


VARIANTS = {
    "plain": lambda a, d: plain_stepper(a, d),
    "plain+channels_last": lambda a, d: plain_stepper(a, d, channels_last=True),
    "plain cuda-graph": lambda a, d: plain_stepper(a, d, cuda_graph=True),
    "plain cuda-graph bf16": lambda a, d: plain_stepper(a, d, cuda_graph=True, bf16=True),
    "nasx (defaults)": lambda a, d: nasx_stepper(a, d),
    "nasx fp32": lambda a, d: nasx_stepper(a, d, precision="fp32"),
    "nasx fp32 no graphs": lambda a, d: nasx_stepper(a, d, precision="fp32", cuda_graphs=False),
    "nasx bf16 no graphs": lambda a, d: nasx_stepper(a, d, precision="bf16", cuda_graphs=False),
    "nasx edge by edge": lambda a, d: nasx_stepper(a, d, batch_edges=False),
    "nasx fp32 edge by edge": lambda a, d: nasx_stepper(a, d, precision="fp32", batch_edges=False),
    "nasx channels_last=False": lambda a, d: nasx_stepper(a, d, channels_last=False),
    "nasx without none-skip": lambda a, d: nasx_stepper(a, d, none_ops=()),
    "nasx checkpoint_edges": lambda a, d: nasx_stepper(a, d, checkpoint_edges=True),
    "nasx partial_channels=2": lambda a, d: nasx_stepper(a, d, partial_channels=2),
    "GumbelDARTS": lambda a, d: nasx_stepper(a, d, "GumbelDARTS"),
    "ENAS": lambda a, d: nasx_stepper(a, d, "ENAS"),
    "RandomOneShot": lambda a, d: nasx_stepper(a, d, "RandomOneShot"),
    "Proxyless": lambda a, d: nasx_stepper(a, d, "Proxyless"),
    "Proxyless all-paths": lambda a, d: nasx_stepper(a, d, "Proxyless", arch_paths="all"),
    "sampled plain model": sampled_model_stepper,
    "sampled 4 archs": lambda a, d: sampled_model_stepper(a, d, archs=4),
    "sampled 4 archs x2": lambda a, d: sampled_model_stepper(a, d, archs=4, passes=2),
}
# Path strategies beside the models they sample (--variants oneshot --ref "sampled 4 archs").
ONESHOT_VARIANTS = ",".join(
    ["sampled plain model", "sampled 4 archs", "sampled 4 archs x2"]
    + ["RandomOneShot", "ENAS", "Proxyless", "Proxyless all-paths"]
)
CPU_VARIANTS = ",".join(
    ["plain", "plain+channels_last", "nasx (defaults)", "nasx channels_last=False"]
    + ["nasx edge by edge"]
    + ["nasx without none-skip", "nasx checkpoint_edges", "nasx partial_channels=2"]
)
GPU_VARIANTS = ",".join(
    ["plain", "plain cuda-graph", "plain cuda-graph bf16", "nasx (defaults)", "nasx fp32"]
    + ["nasx edge by edge", "nasx fp32 edge by edge", "nasx fp32 no graphs", "nasx bf16 no graphs"]
    + ["GumbelDARTS", "ENAS", "RandomOneShot"]
    + ["Proxyless", "sampled plain model"]
)


def why_unsupported(args, name: str) -> str | None:
    """Why variant ``name`` cannot (or need not) run on ``--space`` (None: it can)."""
    factories = {
        v: f
        for m in SPACES[args.space].nasx_space(args).modules()
        if isinstance(m, Cell)
        for v, f in m.op_factories.items()
    }
    if "partial_channels" in name and not all(hasattr(f, "partial") for f in factories.values()):
        kind = type(next(iter(factories.values()))).__name__
        return f"the space's op factories ({kind}) have no .partial(k): PC-DARTS cannot build ops on 1/k channels"
    if "none-skip" in name and not any(v in NONE_OPS for v in factories):
        return "the space has no 'none' op, so there is nothing to skip (= nasx defaults)"
    return None


def parameter_counts(args) -> tuple[int, int]:
    """(plain, nasx) numbers of model weights (alphas not counted); they must be equal."""
    from nasx.strategy import DARTS

    plain = sum(p.numel() for p in plain_network(args).weights())
    nasx = sum(p.numel() for p in nasx_supernet(args, DARTS()).model_parameters())
    return plain, nasx


def batches(args, device):
    g = torch.Generator().manual_seed(0)

    def one_batch():
        return (
            torch.randn(args.batch, 3, args.size, args.size, generator=g).to(device),
            torch.randint(0, 10, (args.batch,), generator=g).to(device),
        )

    return one_batch(), one_batch()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_variants(args, device, names):
    """Median seconds per step of each variant: wall clock and this process's CPU time, and the
    seconds from building it to the end of its first step (``first``) and of its third (by
    then a CUDA graph is captured: ``ready``).

    CPU time is what to compare on a shared machine (other processes' load inflates wall time);
    with one thread it is the work a step takes. On GPU only wall time (after a sync) means much.
    """
    train, val = batches(args, device)
    steppers, first, ready = {}, {}, {}
    for n in names:
        sync(device)
        t = time.perf_counter()
        steppers[n] = VARIANTS[n](args, device)
        for k in range(3):  # warm-up (allocator, kernels, graph capture)
            steppers[n](train, val)
            sync(device)
            if k == 0:
                first[n] = time.perf_counter() - t
        ready[n] = time.perf_counter() - t
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for _ in range(args.repeats):
        for n, s in steppers.items():
            sync(device)
            t, c = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                s(train, val)
            sync(device)
            wall[n].append((time.perf_counter() - t) / args.steps)
            cpu[n].append((time.process_time() - c) / args.steps)
    kernels = (
        {n: gpu_profile(steppers[n], train, val) for n in names} if device.type == "cuda" else {}
    )
    return (
        {n: statistics.median(v) for n, v in wall.items()},
        {n: statistics.median(v) for n, v in cpu.items()},
        first,
        ready,
        kernels,
    )


def gpu_profile(step, train, val, steps=2):
    """(kernels per step, GPU-busy seconds per step) of ``step`` from torch.profiler (CUPTI)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step(train, val)
        torch.cuda.synchronize()
    gpu = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy_us = sum(e.device_time for e in gpu)
    # (the profiler slows the host: the caller judges busy time against the unprofiled step)
    return len(gpu) / steps, busy_us / steps / 1e6


def peak_memory(args, name, device):
    """Peak memory (MiB) of ``name``'s steps in a fresh process (growth over the idle process)."""
    shape = ("space", "width", "cells", "nodes", "batch", "size", "threads", "device")
    cmd = [sys.executable, __file__, "--memory-of", name] + [
        f"--{k}={getattr(args, k)}" for k in shape
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()}
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]


def _rss_mib(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _measure_memory(args, name, device):
    """Print the peak memory growth of 3 steps of ``name`` over the process before building it."""
    # Import what any variant needs first, so import-time memory (Lightning, torchmetrics) is
    # part of the baseline, not of a variant's peak.
    import nasx.evaluator.supervised  # noqa: F401
    import nasx.strategy.oneshot.lightning  # noqa: F401

    torch.manual_seed(0)
    train, val = batches(args, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() / 2**20
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident set size (VmHWM) to the current one
        base = _rss_mib("VmRSS")
    step = VARIANTS[name](args, device)
    for _ in range(4):  # graph variants capture at their third step
        step(train, val)
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else _rss_mib("VmHWM")
    print(json.dumps({"peak_mib": peak - base}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--space", choices=sorted(SPACES), default="hub")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--width", type=int, default=None, help="default: 8")
    p.add_argument("--cells", type=int, default=None, help="default: 5")
    p.add_argument("--nodes", type=int, default=None, help="nodes per cell (hub: always 4)")
    p.add_argument("--batch", type=int, default=None, help="default: 16 (hub), 32 (local)")
    p.add_argument("--size", type=int, default=32, help="image height and width")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: CPU time = work)")
    p.add_argument(
        "--variants", default=None, help="comma-separated, or 'oneshot'; default: per device"
    )
    p.add_argument("--ref", default="plain", help="the variant the ratio column divides by")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda if any")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--memory-of", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    for k, v in DEFAULTS[args.space].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.space == "hub" and args.nodes != 4:
        p.error("the hub's DARTS space has 4 nodes per cell")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_num_threads(args.threads)
    if args.memory_of:
        return _measure_memory(args, args.memory_of, device)
    if args.variants is None:
        args.variants = GPU_VARIANTS if device.type == "cuda" else CPU_VARIANTS
    elif args.variants == "oneshot":
        args.variants = ONESHOT_VARIANTS
    print(
        f"space={args.space} device={device} threads={torch.get_num_threads()} width={args.width} "
        f"cells={args.cells} nodes={args.nodes} batch={args.batch} size={args.size}; "
        f"median of {args.repeats} x {args.steps} steps"
    )
    if device.type == "cuda":
        print(
            f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, "
            f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
        )
    n_plain, n_nasx = parameter_counts(args)
    print(f"model parameters: plain {n_plain:,}, nasx supernet {n_nasx:,}")
    if n_plain != n_nasx:
        raise SystemExit("the plain reference is not the same network as nasx's supernet")
    names = []
    for n in args.variants.split(","):
        reason = why_unsupported(args, n)
        if reason:
            print(f"skipping {n!r}: {reason}")
        else:
            names.append(n)
    wall, cpu, first, ready, kernels = time_variants(args, device, names)
    ref = args.ref if args.ref in names else None
    print(f"ratio: {'CPU time' if device.type == 'cpu' else 'time'} / that of {ref!r}")
    gpu = device.type == "cuda"
    print(
        f"{'variant':24s} {'ms/step':>8s} {'img/s':>7s} {'vs ref':>8s} {'cpu ms':>7s} "
        f"{'first s':>7s} {'ready s':>7s} {'peak MiB':>9s}"
        + (f" {'kernels':>8s} {'busy':>5s}" if gpu else "")
    )
    for n in names:
        base = wall if gpu else cpu
        ratio = f"{base[n] / base[ref]:7.2f}x" if ref else "-"
        mem = "-" if args.no_memory else f"{peak_memory(args, n, device):9.1f}"
        extra = f" {kernels[n][0]:8.0f} {min(1.0, kernels[n][1] / wall[n]):5.0%}" if gpu else ""
        print(
            f"{n:24s} {wall[n] * 1e3:8.1f} {2 * args.batch / wall[n]:7.0f} {ratio:>8s} "
            f"{cpu[n] * 1e3:7.0f} {first[n]:7.2f} {ready[n]:7.2f} {mem:>9s}" + extra,
            flush=True,
        )


if __name__ == "__main__":
    main()
