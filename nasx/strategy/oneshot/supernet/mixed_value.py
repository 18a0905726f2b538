"""Weight sharing over value choices: layers that slice one shared, largest weight.

A ``MutableConv2d(c_in, Categorical([16, 32], label='w'), kernel_size=Categorical([3, 5]))`` in a
space becomes a :class:`MixedConv2d` in the supernet: one weight of the largest shape
(``[32, c_in, 5, 5]``) that every value shares, as in once-for-all, SPOS channel search and
AutoFormer. Each argument is evaluated under the arch (a choice gives its value; a derived value
or expression is frozen with the arch), so ``c_in * expand`` works like a plain choice.

- path mode (RandomOneShot, Proxyless, ENAS): the chosen sizes are sliced out: output and input
  channels are leading slices, a kernel is the centre crop of the largest one; BatchNorm and
  LayerNorm slice their affine parameters and running statistics.
- mixture mode (DARTS family): every module runs at the largest size with soft masks, as NNI's
  differentiable mixed operations do: the weight of output channel ``i`` is scaled by the
  probability that the chosen width exceeds ``i``, and a kernel's ring by the probability that
  the chosen kernel covers it, so the gradient reaches each label's alphas.

A fixed model built under ``model_context(arch)`` has the same layers with the sliced shapes; the
supernet's state for it is :meth:`sliced_state` (used by ``inherit_weights``).

    >>> import torch, torch.nn as nn
    >>> from nasx.space import Categorical, ModelSpace, MutableConv2d
    >>> from nasx.strategy.oneshot import Supernet
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         k = Categorical([3, 5], label='k')
    ...         self.conv = MutableConv2d(3, Categorical([4, 8], label='w'), k, padding=derived(lambda k: k // 2, k))
    ...     def forward(self, x):
    ...         return self.conv(x)
    >>> from nasx.space.derived import derived
    >>> net = Supernet(Net(), mode='path', alphas=False)
    >>> net.model.conv.weight.shape
    torch.Size([8, 3, 5, 5])
    >>> net.use_arch({'k': 3, 'w': 4})
    >>> net(torch.randn(1, 3, 8, 8)).shape
    torch.Size([1, 4, 8, 8])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from nasx.space import Choice
from nasx.space.value_switch import child_name

from .mixed import MixedLayer
from .state import ArchState, gated
from .value_args import (
    MutableLayerLike,
    all_archs,
    check_input,
    fit_channels,
    largest,
    leaf_choices,
    max_arch,
    outcomes,
    pair,
    value_of,
)


class MixedValueOp(nn.Module):
    """Shared machinery: the layer's arguments, cached per arch, mixture masks, Proxyless gates."""

    _state: ArchState
    size_args: tuple[str, ...]  # arguments that set the output's shape (gated in Proxyless)
    in_arg: str  # the argument that is the input's width
    dim: int = 1  # the dimension holding channels / features

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__()
        # the constructor's arguments by name, defaults included (choices where they were given)
        self.args: dict[str, Any] = {k: v for k, v in source.args.items() if k != "self"}
        self.__dict__["_state"] = state
        self._cached_arch: Any = None
        self._cached: dict[str, Any] = {}
        # per argument, fixed for the module's life: its choices and every value it can take
        self._leaves = {k: leaf_choices(v) for k, v in self.args.items()}
        self._outcomes = {k: outcomes(v) if self._leaves[k] else [] for k, v in self.args.items()}
        self._max_values: dict[str, Any] | None = None
        self._mask_tables: dict[tuple[Any, ...], tuple[list[torch.Tensor], torch.Tensor]] = {}

    # labels --------------------------------------------------------------------------------
    def labels(self) -> dict[str, Choice]:
        out: dict[str, Choice] = {}
        for leaves in self._leaves.values():
            out.update(leaves)
        return out

    def alpha_keys(self) -> list[tuple[str, int]]:
        return [(label, len(c)) for label, c in self.labels().items()]

    # values --------------------------------------------------------------------------------
    def values(self, arch: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every argument's value under ``arch`` (default: the supernet's current arch)."""
        if arch is not None:
            return {k: value_of(v, arch) for k, v in self.args.items()}
        arch = self._state.arch
        if arch is None:
            raise RuntimeError("no arch set: call Supernet.use_arch first")
        if arch is not self._cached_arch:  # a new arch each step: evaluate once per module
            self._cached = {k: value_of(v, arch) for k, v in self.args.items()}
            self._cached_arch = arch
        return self._cached

    def mask(self, arg: str, n: int, window: bool = False) -> torch.Tensor | None:
        """Mixture mode: ``[n]`` probability that index ``i`` lies within the chosen size of
        ``arg`` (a leading slice; ``window``: a centred one); None when ``arg`` is fixed."""
        options = self._outcomes[arg]
        if not options:
            return None
        weights = [self._state.weight(label) for label in self._leaves[arg]]
        device, dtype = weights[0].device, weights[0].dtype
        key = (arg, n, window, device, dtype)
        if key not in self._mask_tables:
            # Built once per device: the outcomes' grid indices per label, [outcomes], and their
            # indicator rows, [outcomes, n]; then a mask is a product and one matmul per forward.
            index = [
                torch.tensor([o[0][label] for o in options], device=device)
                for label in self._leaves[arg]
            ]
            rows = torch.zeros(len(options), n)
            for r, (_, value) in enumerate(options):
                size = value if isinstance(value, int) else pair(value)[0]
                start = (n - size) // 2 if window else 0
                rows[r, start : start + size] = 1
            self._mask_tables[key] = (index, rows.to(device=device, dtype=dtype))
        index, rows = self._mask_tables[key]
        p = weights[0][index[0]]
        for w, i in zip(weights[1:], index[1:], strict=True):
            p = p * w[i]
        return p @ rows  # [outcomes] @ [outcomes, n] -> [n]

    def gate(self, out: torch.Tensor, x: Any, run: Callable[[Any, dict[str, Any]], Any]) -> Any:
        """Proxyless: pass the binary-gate gradient of each label that sizes the output."""
        st = self._state
        if not st.gates:
            return out
        # Labels that size the output, and the input's width: a narrower alternative input (cut)
        # changes the output. (A wider one is the chosen input zero-padded: under leading-slice
        # sharing it scores as the chosen path, so widths learn from their narrower neighbours.)
        labels: dict[str, Choice] = {}
        for name in (*self.size_args, self.in_arg):
            labels.update(self._leaves[name])
        arch = st.arch
        assert arch is not None
        width = out.shape[self.dim]
        for label, c in labels.items():
            if label in st.gates:
                out = gated(out, st, label, self._alternative(x, run, arch, label, c.grid(), width))
        return out

    def _alternative(
        self, x: Any, run: Callable[..., Any], arch: Any, label: str, grid: list[Any], width: int
    ) -> Callable[[int], Any]:
        """``k -> output with label's k-th value``, channels fitted to the chosen output's (and
        the input fitted to that value's input width when the label sets both, as in a BN)."""

        def alt(k: int) -> Any:
            v = self.values({**arch, label: grid[k]})
            inp = fit_channels(x, v[self.in_arg], self.dim)
            return fit_channels(run(inp, v), width, self.dim)

        return alt

    def forward(self, x: Any) -> Any:
        if self._state.path_mode:
            return self.gate(self.run(x, self.values()), x, self.run)
        return self.run_mixture(x)

    def run(self, x: Any, v: dict[str, Any]) -> Any:
        raise NotImplementedError

    def run_mixture(self, x: Any) -> Any:
        raise NotImplementedError

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """This layer's state (parameters and buffers) as the fixed model of ``arch`` has it."""
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"labels={list(self.labels())!r}"


class MixedConv2d(MixedValueOp):
    """Replaces a ``MutableConv2d``: one ``[out_max, in_max/g, k_max, k_max]`` weight, sliced.

    Channels are leading slices, the kernel the centre crop; ``groups`` may be 1 or a depthwise
    ``groups == in_channels`` (the weight's second dim is then 1 for every value).
    """

    size_args = ("out_channels", "kernel_size")
    in_arg = "in_channels"

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        a, name = self.args, "MixedConv2d"
        if a["padding_mode"] != "zeros":
            raise NotImplementedError(f"{name}: padding_mode {a['padding_mode']!r} (only 'zeros')")
        self.out_max = largest(a["out_channels"], "out_channels", name)
        self.in_max = largest(a["in_channels"], "in_channels", name)
        ks = [pair(v) for _, v in outcomes(a["kernel_size"])]
        self.k_max = (max(k[0] for k in ks), max(k[1] for k in ks))
        if any((self.k_max[0] - k[0]) % 2 or (self.k_max[1] - k[1]) % 2 for k in ks):
            raise ValueError(f"{name}: kernel sizes {ks} must all be odd or all even (centre crop)")
        # depthwise when groups follows in_channels for every arch; else groups must be 1
        self.depthwise = False
        if leaf_choices(a["groups"]) or a["groups"] != 1:
            self.depthwise = a["groups"] is a["in_channels"] or all(
                value_of(a["groups"], arch) == value_of(a["in_channels"], arch)
                for arch in all_archs(self.labels())
            )
            if not self.depthwise:
                raise NotImplementedError(
                    f"{name}: groups must be 1 or equal to in_channels for every arch, got "
                    f"{a['groups']!r} with in_channels {a['in_channels']!r}"
                )
        like = nn.Conv2d(
            self.in_max,
            self.out_max,
            self.k_max,
            groups=self.in_max if self.depthwise else 1,
            bias=bool(a["bias"]),
        )
        self.weight = like.weight
        self.bias = like.bias

    def _weight(self, out: int, cin: int, k: tuple[int, int]) -> torch.Tensor:
        t, s = (self.k_max[0] - k[0]) // 2, (self.k_max[1] - k[1]) // 2
        return self.weight[:out, : (1 if self.depthwise else cin), t : t + k[0], s : s + k[1]]

    def run(self, x: torch.Tensor, v: dict[str, Any]) -> torch.Tensor:
        check_input("MixedConv2d", x.shape[1], v["in_channels"], "channels")
        out = v["out_channels"]
        w = self._weight(out, v["in_channels"], pair(v["kernel_size"]))
        b = self.bias[:out] if self.bias is not None else None
        groups = v["in_channels"] if self.depthwise else 1
        return F.conv2d(x, w, b, v["stride"], v["padding"], v["dilation"], groups)

    def run_mixture(self, x: torch.Tensor) -> torch.Tensor:
        check_input("MixedConv2d (mixture)", x.shape[1], self.in_max, "channels")
        w = self.weight
        m_out = self.mask("out_channels", self.out_max)
        if m_out is not None:
            w = w * m_out.view(-1, 1, 1, 1)
        if self._leaves["kernel_size"]:
            mh = self.mask("kernel_size", self.k_max[0], window=True)
            assert mh is not None
            w = w * (mh.view(-1, 1) * mh.view(1, -1)).view(1, 1, *self.k_max)
        b = self.bias
        if b is not None and m_out is not None:
            b = b * m_out
        # the largest kernel's arguments: padding (and stride, dilation) at every label's maximum
        if self._max_values is None:
            self._max_values = self.values(max_arch(self.labels()))
        v = self._max_values
        groups = self.in_max if self.depthwise else 1
        return F.conv2d(x, w, b, v["stride"], v["padding"], v["dilation"], groups)

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        v = self.values(arch)
        out = v["out_channels"]
        state = {"weight": self._weight(out, v["in_channels"], pair(v["kernel_size"]))}
        if self.bias is not None:
            state["bias"] = self.bias[:out]
        return state


class MixedLinear(MixedValueOp):
    """Replaces a ``MutableLinear``: one ``[out_max, in_max]`` weight, leading slices."""

    size_args = ("out_features",)
    in_arg, dim = "in_features", -1

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        a = self.args
        self.out_max = largest(a["out_features"], "out_features", "MixedLinear")
        self.in_max = largest(a["in_features"], "in_features", "MixedLinear")
        like = nn.Linear(self.in_max, self.out_max, bias=bool(a["bias"]))
        self.weight, self.bias = like.weight, like.bias

    def run(self, x: torch.Tensor, v: dict[str, Any]) -> torch.Tensor:
        check_input("MixedLinear", x.shape[-1], v["in_features"], "features")
        out = v["out_features"]
        b = self.bias[:out] if self.bias is not None else None
        return F.linear(x, self.weight[:out, : v["in_features"]], b)

    def run_mixture(self, x: torch.Tensor) -> torch.Tensor:
        check_input("MixedLinear (mixture)", x.shape[-1], self.in_max, "features")
        y = F.linear(x, self.weight, self.bias)
        m = self.mask("out_features", self.out_max)
        return y if m is None else y * m

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        v = self.values(arch)
        out = v["out_features"]
        state = {"weight": self.weight[:out, : v["in_features"]]}
        if self.bias is not None:
            state["bias"] = self.bias[:out]
        return state


class MixedBatchNorm2d(MixedValueOp):
    """Replaces a ``MutableBatchNorm2d``: affine parameters and running statistics of the largest
    width; a path normalises with (and updates) their leading slice, as OFA's dynamic BN does."""

    size_args = ("num_features",)
    running_mean: torch.Tensor | None
    running_var: torch.Tensor | None
    num_batches_tracked: torch.Tensor | None
    in_arg = "num_features"

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        a = self.args
        for fixed in ("eps", "momentum", "affine", "track_running_stats"):
            if leaf_choices(a[fixed]):
                raise NotImplementedError(f"MixedBatchNorm2d: {fixed} may not be a choice")
        self.n_max = largest(a["num_features"], "num_features", "MixedBatchNorm2d")
        like = nn.BatchNorm2d(
            self.n_max,
            a["eps"],
            a["momentum"],
            affine=a["affine"],
            track_running_stats=a["track_running_stats"],
        )
        self.eps, self.momentum = a["eps"], a["momentum"]
        self.weight, self.bias = like.weight, like.bias
        self.track_running_stats = a["track_running_stats"]
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            self.register_buffer(name, getattr(like, name))

    def reset_running_stats(self) -> None:
        """As ``nn.BatchNorm2d.reset_running_stats`` (SPOS's recalibration before scoring)."""
        if self.running_mean is not None and self.running_var is not None:
            self.running_mean.zero_()
            self.running_var.fill_(1)
        if self.num_batches_tracked is not None:
            self.num_batches_tracked.zero_()

    def _bn(self, x: torch.Tensor, n: int) -> torch.Tensor:
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or self.running_mean is None
        rm = self.running_mean[:n] if self.running_mean is not None else None
        rv = self.running_var[:n] if self.running_var is not None else None
        w = self.weight[:n] if self.weight is not None else None
        b = self.bias[:n] if self.bias is not None else None
        # slices are views: F.batch_norm updates the shared running statistics in place
        return F.batch_norm(x, rm, rv, w, b, use_batch, factor, self.eps)

    def run(self, x: torch.Tensor, v: dict[str, Any]) -> torch.Tensor:
        check_input("MixedBatchNorm2d", x.shape[1], v["num_features"], "channels")
        return self._bn(x, v["num_features"])

    def run_mixture(self, x: torch.Tensor) -> torch.Tensor:
        check_input("MixedBatchNorm2d (mixture)", x.shape[1], self.n_max, "channels")
        y = self._bn(x, self.n_max)
        m = self.mask("num_features", self.n_max)
        # normalising would lift the masked-down channels back to unit scale: mask again
        return y if m is None else y * m.view(1, -1, 1, 1)

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        n = self.values(arch)["num_features"]
        state = {}
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None:
                state[name] = t[:n]
        if self.num_batches_tracked is not None:
            state["num_batches_tracked"] = self.num_batches_tracked
        return state


class MixedLayerNorm(MixedValueOp):
    """Replaces a ``MutableLayerNorm`` over the last dimension (an int ``normalized_shape``)."""

    size_args = ("normalized_shape",)
    in_arg, dim = "normalized_shape", -1

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        a = self.args
        self.n_max = largest(a["normalized_shape"], "normalized_shape (one int)", "MixedLayerNorm")
        like = nn.LayerNorm(self.n_max, a["eps"], a["elementwise_affine"], bias=a.get("bias", True))
        self.eps = a["eps"]
        self.weight, self.bias = like.weight, like.bias

    def run(self, x: torch.Tensor, v: dict[str, Any]) -> torch.Tensor:
        n = v["normalized_shape"]
        check_input("MixedLayerNorm", x.shape[-1], n, "features")
        w = self.weight[:n] if self.weight is not None else None
        b = self.bias[:n] if self.bias is not None else None
        return F.layer_norm(x, (n,), w, b, self.eps)

    def run_mixture(self, x: torch.Tensor) -> torch.Tensor:
        check_input("MixedLayerNorm (mixture)", x.shape[-1], self.n_max, "features")
        if not self._leaves["normalized_shape"]:
            return F.layer_norm(x, (self.n_max,), self.weight, self.bias, self.eps)
        # Statistics span the features, so a mask would not do: mix each width's normalisation
        # (zero-padded to the largest); LayerNorm is cheap next to the layers around it.
        out: torch.Tensor | None = None
        for idx, n in self._outcomes["normalized_shape"]:
            p = torch.stack([self._state.weight(label)[k] for label, k in idx.items()]).prod()
            y = self.run(x[..., :n], {"normalized_shape": n})
            term = p * F.pad(y, (0, self.n_max - n))
            out = term if out is None else out + term
        assert out is not None
        return out

    def forward(self, x: Any) -> Any:
        if self._state.path_mode:  # the feature dim is the last one: gate on it, not dim 1
            return self.run(x, self.values())
        return self.run_mixture(x)

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        n = self.values(arch)["normalized_shape"]
        return {
            k: t[:n] for k, t in (("weight", self.weight), ("bias", self.bias)) if t is not None
        }


class MixedSwitch(MixedLayer):
    """Replaces a :class:`~nasx.space.value_switch.ValueSwitch`: a MixedLayer over its values
    whose candidates are named by ``child_name(value)`` (values such as ``0.25`` hold a dot)."""

    def __init__(
        self, label: str, candidates: list[tuple[Any, nn.Module]], state: ArchState
    ) -> None:
        nn.Module.__init__(self)
        self.label = label
        self.values = [v for v, _ in candidates]
        for value, module in candidates:
            self.add_module(child_name(value), module)
        self.__dict__["_state"] = state
        self._skip = [False] * len(self.values)

    def candidate(self, value: Any) -> nn.Module:
        module = self._modules[child_name(value)]
        assert module is not None
        return module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        st = self._state
        if st.path_mode:
            out = self.candidate(st.value(self.label))(*args, **kwargs)
            if self.label not in st.gates:
                return out
            # Proxyless: alternatives of another width are fitted to the chosen output's.
            return gated(
                out,
                st,
                self.label,
                lambda k: fit_channels(
                    self.candidate(self.values[k])(*args, **kwargs), out.shape[1]
                ),
            )
        # Candidates may differ in width (an expansion conv or none): zero-pad to the widest,
        # which is what the widest mixed layer after the switch takes.
        done: dict[int, Any] = {}  # candidates shared by several values run once
        outs = []
        for v in self.values:
            module = self.candidate(v)
            if id(module) not in done:
                done[id(module)] = module(*args, **kwargs)
            outs.append(done[id(module)])
        width = max(o.shape[1] for o in outs)
        w = self._state.weight(self.label)
        return sum(w[k] * fit_channels(o, width) for k, o in enumerate(outs))


ValueOp = MixedValueOp  # the name before the supernet package


def value_ops(root: nn.Module) -> list[tuple[str, MixedValueOp]]:
    """The mixed value layers below ``root``, by name."""
    return [(n, m) for n, m in root.named_modules() if isinstance(m, MixedValueOp)]
