"""Supernet: a model space whose choices are replaced by mixed modules, plus its arch weights.

Architecture weights are ``nn.Parameter``s named ``arch_params.<key>`` (one per label, shared by
every module with that label; cells add one per edge), apart from the model weights under
``model.``: ``supernet.arch_parameters()`` and ``supernet.model_parameters()`` split them.

    >>> import torch, torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.op = LayerChoice({'lin': nn.Linear(4, 4), 'id': nn.Identity()}, label='op')
    ...     def forward(self, x):
    ...         return self.op(x)
    >>> net = Supernet(Net())
    >>> [name for name, _ in net.named_parameters()]
    ['model.op.lin.weight', 'model.op.lin.bias', 'arch_params.op']
    >>> net.use_arch({'op': 'id'})
    >>> torch.equal(net(torch.ones(1, 4)), torch.ones(1, 4))
    True
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.nn as nn

from nasx.space import ModelSpace, search_space
from nasx.space.chosen import ChosenValue

from ..topk import prob_key
from .convert import to_mixed
from .mixed import NONE_OPS, MixedInput, MixedLayer, MixedRepeat
from .mixed_cell import MixedCell
from .mixed_value import value_ops
from .state import ArchState

#: The classes of the mixed modules a supernet holds in place of its space's choices (for
#: ``isinstance``).
MIXED_TYPES = (MixedLayer, MixedInput, MixedRepeat, MixedCell)
#: The type of any of those mixed modules (for annotations).
MixedModule = MixedLayer | MixedInput | MixedRepeat | MixedCell


def softmax_weights(key: str, alpha: torch.Tensor) -> torch.Tensor:
    """DARTS's mixture weights: ``softmax(alpha)`` over the candidates."""
    return alpha.softmax(-1)


def _param_name(key: str) -> str:
    # ParameterDict keys may not contain '.'; labels may contain '/' (kept as is).
    return key.replace(".", "__dot__")


class Supernet(nn.Module):
    """A weight-sharing supernet built from a model space.

    Args:
        space: the model space (deep-copied; the original is left as it is).
        mode: ``'mixture'`` (DARTS family: alphas per LayerChoice/InputChoice/Repeat label over its
            candidates, and per cell edge over ops) or ``'path'`` (alphas per label over the
            label's ``grid()`` values, for Proxyless).
        alphas: create architecture parameters at all (ENAS and RandomOneShot need none).
        none_ops: op names that output zeros (skipped in mixtures, never exported by cells).
        checkpoint: recompute mixed candidates in backward (activation checkpointing).
        partial_channels: PC-DARTS's K for cell edges (mixture mode only; see ``mixed_cell``).
    """

    source_space: nn.Module  # the space as given; set through __dict__ (see __init__)

    def __init__(
        self,
        space: nn.Module,
        mode: str = "mixture",
        alphas: bool = True,
        none_ops: tuple[str, ...] = NONE_OPS,
        checkpoint: bool = False,
        init_std: float = 1e-3,
        partial_channels: int = 1,
    ):
        super().__init__()
        if mode not in ("mixture", "path"):
            raise ValueError(f"Supernet mode must be 'mixture' or 'path', got {mode!r}")
        self.mode = mode
        self.search_space = search_space(space)
        self.__dict__["source_space"] = space  # not a submodule: used to rebuild fixed models
        self.state = ArchState()
        self.state.checkpoint = checkpoint
        if partial_channels < 1 or (partial_channels > 1 and mode != "mixture"):
            raise ValueError(
                f"partial_channels must be >= 1 and needs mode='mixture', got {partial_channels} with {mode!r}"
            )
        self.model = to_mixed(copy.deepcopy(space), self.state, tuple(none_ops), partial_channels)
        self._check_coverage()
        _refuse_choice_values_in_torch_layers(self.model)
        self.arch_params = nn.ParameterDict()
        self.weight_fn: Callable[[str, torch.Tensor], torch.Tensor] = softmax_weights
        if alphas:
            for key, n in self._alpha_sizes().items():
                self.arch_params[_param_name(key)] = nn.Parameter(init_std * torch.randn(n))

    def __getattr__(self, name: str) -> Any:
        """Parameters, buffers and submodules as ``nn.Module`` finds them; then the space's own
        public attributes, so that the supernet stands where the space stood: a detector reads
        its backbone's ``out_channels``, a recipe calls the model's ``set_drop_path_prob``.

            >>> class Backbone(nn.Module):
            ...     out_channels = 8
            >>> Supernet(Backbone()).out_channels
            8
        """
        try:
            return super().__getattr__(name)
        except AttributeError:
            model = self._modules.get("model")
            if name.startswith("_") or model is None:  # copy/pickle probes; still building
                raise
            try:
                return getattr(model, name)
            except AttributeError:
                raise AttributeError(
                    f"neither the supernet nor its space {type(model).__name__} has attribute {name!r}"
                ) from None

    # -- structure ---------------------------------------------------------------------------
    def mixed_modules(self) -> Iterator[tuple[str, MixedModule]]:
        for name, m in self.model.named_modules():
            if isinstance(m, MIXED_TYPES):
                yield name, m

    def _check_coverage(self) -> None:
        covered = set()
        for _, m in self.mixed_modules():
            if isinstance(m, MixedCell):
                covered |= {
                    f"{m.label}/{kind}_{i}_{k}"
                    for i in m.node_indices
                    for k in range(m.num_ops_per_node)
                    for kind in ("op", "input")
                }
            else:
                covered.add(m.label)
        covered |= {label for _, m in value_ops(self.model) for label in m.labels()}
        missing = [label for label in self.search_space if label not in covered]
        if not missing:
            return
        plain = plain_value_choices(self.model)
        as_plain = [label for label in missing if label in plain]
        if as_plain:
            # nasx.choice's value reached only plain layers or arithmetic (issue 32): say where it
            # must go instead, in both spellings.
            rewrite = "; ".join(
                f"nasx.choice({label!r}, {plain[label].grid()!r}) or {plain[label]!r}"
                for label in as_plain
            )
            raise NotImplementedError(
                f"one-shot strategies cannot share weights over label(s) {as_plain!r}: no Mutable "
                "layer takes the value. nasx.choice's value is a plain value to torch layers "
                "(nn.Linear) and after a conversion or comparison (int(w / 2), w > 16), so "
                "nothing in the supernet can vary it. Pass the choice (or arithmetic on it, "
                f"w * 2) to a Mutable layer (MutableLinear, MutableConv2d, ...): {rewrite}; "
                "plain values search with multi-trial strategies"
            )
        raise NotImplementedError(
            f"one-shot strategies cannot share weights over label(s) {missing!r}: they support "
            "LayerChoice, InputChoice, Repeat, Cell, ValueSwitch and value choices in the arguments of "
            "Mutable{Conv2d,Linear,BatchNorm2d,LayerNorm,MultiheadAttention} layers. Pass a "
            "Categorical to a Mutable layer, express it as a LayerChoice, or use a multi-trial "
            "strategy"
        )

    def _alpha_sizes(self) -> dict[str, int]:
        if self.mode == "path":
            return {label: len(c) for label, c in self.search_space.items()}
        sizes: dict[str, int] = {}
        mods: list[Any] = [m for _, m in self.mixed_modules()] + [
            m for _, m in value_ops(self.model)
        ]
        for m in mods:
            items = m.alpha_keys() if hasattr(m, "alpha_keys") else [(m.label, m.alpha_size())]
            for key, n in items:
                if sizes.setdefault(key, n) != n:
                    raise ValueError(
                        f"label {key!r} is shared by choices with {sizes[key]} and {n} candidates"
                    )
        return sizes

    def arch_parameters(self) -> list[nn.Parameter]:
        return list(self.arch_params.values())

    def model_parameters(self) -> list[nn.Parameter]:
        return list(self.model.parameters())

    def alpha(self, key: str) -> nn.Parameter:
        alpha: nn.Parameter = self.arch_params[_param_name(key)]
        return alpha

    def alphas(self) -> dict[str, nn.Parameter]:
        return {key.replace("__dot__", "."): p for key, p in self.arch_params.items()}

    # -- running ---------------------------------------------------------------------------
    def use_mixture(
        self, weight_fn: Callable[[str, torch.Tensor], torch.Tensor] | None = None
    ) -> None:
        """Run every candidate, weighted by ``weight_fn(key, alpha)`` (default: softmax)."""
        if weight_fn is not None:
            self.weight_fn = weight_fn
        self.state.arch = None
        self.state.gates = {}
        self.state.gate_paths = {}

    def use_arch(
        self,
        arch: dict[str, Any],
        gates: dict[str, torch.Tensor] | None = None,
        gate_paths: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        """Run only the paths ``arch`` picks (validated); ``gates`` carry Proxyless gradients,
        scored in backward over ``gate_paths[label]`` (chosen index first) or every value."""
        self.state.arch = self.search_space.validate(arch)
        self.state.gates = dict(gates or {})
        self.state.gate_paths = dict(gate_paths or {})

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not self.state.path_mode:
            # Recomputed each forward so gradients reach the alphas: {key: [n] weights}.
            self.state.weights = {k: self.weight_fn(k, a) for k, a in self.alphas().items()}
        return self.model(*args, **kwargs)

    # -- NNI's mutated space: simplify() and freeze(sample) answer as the space's did ---------
    def simplify(self) -> dict[str, Any]:
        """``{label: choice}`` of the space this supernet was built from (NNI's ``simplify`` of a
        space after ``strategy.mutate_model``)."""
        return dict(self.search_space)

    def freeze(self, arch: Mapping[str, Any]) -> nn.Module:
        """The fixed model of ``arch`` with this supernet's weights (NNI's ``freeze`` of a
        mutated space; :func:`~nasx.strategy.oneshot.supernet.subnet`)."""
        from .inherit import subnet

        return subnet(self, dict(arch))

    # -- export ----------------------------------------------------------------------------
    @torch.no_grad()
    def probs(self) -> dict[str, torch.Tensor]:
        """Softmax of every alpha, detached, on CPU: ``{key: [n]}``."""
        return {k: a.detach().float().softmax(-1).cpu() for k, a in self.alphas().items()}

    def export(self) -> dict[str, Any]:
        """The arch the alphas favour (mixture mode: DARTS rules; path mode: argmax per label)."""
        probs = self.probs()
        if self.mode == "path":
            return {
                label: c.grid()[int(probs[label].argmax())]
                for label, c in self.search_space.items()
            }
        arch: dict[str, Any] = {}
        for _, m in self.mixed_modules():
            arch.update(m.export(probs) if isinstance(m, MixedCell) else m.export(probs[m.label]))
        for label in self.search_space.keys() - arch.keys():  # value choices: the likeliest value
            arch[label] = self.search_space[label].grid()[int(probs[label].argmax())]
        return self.search_space.validate({k: arch[k] for k in self.search_space})

    def export_probs(self) -> dict[str, dict[Any, float]]:
        """``{label: {value: probability}}`` (values of InputChoices are input indices)."""
        probs = self.probs()
        if self.mode == "path":
            return {
                label: {prob_key(v): float(p) for v, p in zip(c.grid(), probs[label], strict=False)}
                for label, c in self.search_space.items()
            }
        out: dict[str, dict[Any, float]] = {}
        for _, m in self.mixed_modules():
            out.update(
                m.export_probs(probs)
                if isinstance(m, MixedCell)
                else m.export_probs(probs[m.label])
            )
        for label in self.search_space.keys() - out.keys():
            grid = self.search_space[label].grid()
            out[label] = {prob_key(v): float(p) for v, p in zip(grid, probs[label], strict=True)}
        return out


def _refuse_choice_values_in_torch_layers(model: nn.Module) -> None:
    """Refuse a value from ``nasx.choice`` held by a plain torch layer (``nn.BatchNorm2d(w)``)
    while other layers search its label: the supernet would keep that layer at the search form's
    size, and the model rebuilt for an arch would not (its subnet could not be the rebuilt model).
    """
    found: dict[str, list[str]] = {}
    for name, m in model.named_modules():
        if not type(m).__module__.startswith("torch."):
            continue  # a mixed layer, a space, a user's block: their torch layers are visited
        for attr, value in vars(m).items():
            items = value if type(value) in (tuple, list) else (value,)
            for item in items:
                if isinstance(item, ChosenValue):
                    where = f"{name or 'the space'}.{attr} ({type(m).__name__})"
                    for label in item.labels():
                        found.setdefault(label, []).append(where)
    if found:
        places = "; ".join(f"{label!r}: {', '.join(w[:3])}" for label, w in found.items())
        raise NotImplementedError(
            f"one-shot strategies cannot search label(s) {list(found)!r} here: plain torch layers "
            f"hold their values ({places}), so the supernet would keep those layers at the search "
            "form's size while the model rebuilt for an arch changes them. Use the Mutable layer "
            "(MutableBatchNorm2d for nn.BatchNorm2d, ...) for every layer the choice sizes"
        )


def plain_value_choices(model: nn.Module) -> dict[str, Any]:
    """``{label: choice}`` of the value choices the model's spaces resolved to plain values while
    constructed (``nasx.choice``, ``ensure_frozen``): no layer holds them as choices.

    >>> import nasx, torch.nn as nn
    >>> from nasx.space import ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, nasx.choice('width', [4, 8]))
    >>> plain_value_choices(Net())
    {'width': Categorical([4, 8], label='width')}
    """
    found: dict[str, Any] = {}
    for m in model.modules():
        if isinstance(m, ModelSpace):
            for c in m.value_choices():
                found.setdefault(c.label, c)
    return found
