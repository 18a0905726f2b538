"""Mutator: NNI's one-shot pattern for writing your own algorithm in a plain PyTorch loop.

``mutator = MyMutator(model)`` replaces the model's choices, in place, by the same mixed modules
the one-shot strategies use (:class:`~nasx.strategy.oneshot.supernet.Supernet`). In the training
loop, ``mutator.reset()`` asks :meth:`Mutator.sample_search` for a decision per choice and applies
it; then ``model(x)`` is an ordinary forward/backward. ``mutator.export()`` turns
:meth:`Mutator.sample_final` into an arch dict (JSON-ready), to rebuild with ``model_context``.

Decisions are tensors over a choice's candidates (``mutator.mutables``, each with ``key`` and
``candidates``). In ``mode='path'`` (the default) they are boolean masks: the candidates that run.
In ``mode='mixture'`` they are float weights: every candidate runs and the outputs are weighted
(DARTS); keys are then the supernet's weight keys (a label, or ``'<cell>/edge_<i>_<j>'`` for cell
edges). Either way a decision is applied the one way the strategies apply theirs:
``Supernet.use_arch`` (path) or the supernet's mixture weights (mixture).

To take over how one choice computes its output, override :meth:`Mutator.on_forward_layer_choice`
or :meth:`Mutator.on_forward_input_choice` (NNI's hooks); :meth:`Mutator.decision` reads the
current decision of a choice.

    >>> import torch, torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.op = LayerChoice({'lin': nn.Linear(2, 2), 'id': nn.Identity()}, label='op')
    ...     def forward(self, x):
    ...         return self.op(x)
    >>> model = Net()
    >>> mutator = RandomMutator(model, seed=0)
    >>> [(m.key, m.candidates) for m in mutator.mutables]
    [('op', ['lin', 'id'])]
    >>> mutator.reset(); model(torch.ones(1, 2)).shape
    torch.Size([1, 2])
    >>> mutator.export()['op'] in ('lin', 'id')
    True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from nasx.space.choice import Categorical, CategoricalMultiple

from .supernet import Supernet
from .supernet.mixed import MixedInput, MixedLayer
from .supernet.mixed_cell import MixedCell

__all__ = ["Mutable", "Mutator", "RandomMutator"]


@dataclass(frozen=True)
class Mutable:
    """One decision a mutator makes: ``key`` (NNI's name for the label) over ``candidates``.

    ``kind`` is ``'layer'`` (one candidate), ``'input'`` (``n_chosen`` of them, None: any number)
    or, in mixture mode, ``'weights'`` (a supernet weight key such as a cell edge).
    """

    key: str
    candidates: list[Any]
    kind: str
    n_chosen: int | None = 1

    @property
    def label(self) -> str:
        return self.key

    def __len__(self) -> int:
        return len(self.candidates)


class Mutator(nn.Module):
    """Bind a model space to a decision rule; subclasses write :meth:`~Mutator.sample_search`
    (and :meth:`~Mutator.sample_final`, which defaults to it).

    Args:
        model: a model space; its choices are replaced in place by mixed modules (as NNI's
            mutators do), so calling ``model`` runs what the last :meth:`reset` decided.
        mode: ``'path'`` (boolean masks, one path runs) or ``'mixture'`` (float weights, every
            candidate runs, weighted).

    A Mutator is an ``nn.Module``: architecture parameters it owns (DARTS's alphas) are
    ``mutator.parameters()``, apart from the model's weights.
    """

    # set through __dict__ (see __init__): not submodules of the mutator
    model: nn.Module
    supernet: Supernet

    def __init__(self, model: nn.Module, mode: str = "path") -> None:
        super().__init__()
        if mode not in ("path", "mixture"):
            raise ValueError(f"Mutator mode must be 'path' or 'mixture', got {mode!r}")
        self.mode = mode
        supernet = Supernet(model, mode="mixture" if mode == "mixture" else "path", alphas=False)
        # The model's children become the supernet's (mixed) ones: `model(x)` then runs them.
        for name, child in supernet.model._modules.items():
            model._modules[name] = child
        self.__dict__["model"] = model  # not a submodule: its weights are not arch parameters
        self.__dict__["supernet"] = supernet
        self._decisions: dict[str, torch.Tensor] | None = None
        self._install_hooks()

    # -- what is decided -----------------------------------------------------------------------
    @property
    def mutables(self) -> list[Mutable]:
        """The decisions to make, in the search space's order (cell edges in mixture mode)."""
        supernet: Supernet = self.supernet
        if self.mode == "path":
            out = []
            for label, choice in supernet.search_space.items():
                if isinstance(choice, CategoricalMultiple):
                    out.append(Mutable(label, list(choice.values), "input", choice.n_chosen))
                elif isinstance(choice, Categorical):
                    out.append(Mutable(label, list(choice.values), "layer"))
                else:  # the supernet refuses other choices when built; this is a guard
                    raise TypeError(
                        f"a mutator decides categorical choices; {label!r} is {choice!r}"
                    )
            return out
        sizes: dict[str, Mutable] = {}
        for _, m in supernet.mixed_modules():
            if isinstance(m, MixedCell):
                for key, _n in m.alpha_keys():
                    sizes.setdefault(key, Mutable(key, list(m.values), "weights", None))
            elif isinstance(m, MixedInput):
                sizes.setdefault(
                    m.label, Mutable(m.label, list(range(m.n_candidates)), "input", m.n_chosen)
                )
            elif isinstance(m, MixedLayer):
                sizes.setdefault(m.label, Mutable(m.label, list(m.values), "layer"))
            else:  # MixedRepeat: weights over depths
                sizes.setdefault(m.label, Mutable(m.label, list(m.depths), "layer"))
        return list(sizes.values())

    # -- what subclasses write -------------------------------------------------------------------
    def sample_search(self) -> dict[str, torch.Tensor]:
        """One decision per mutable key, for the next training step (boolean masks in path mode,
        float weights in mixture mode, each of ``len(mutable)``)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement sample_search() -> {{key: tensor over candidates}}"
        )

    def sample_final(self) -> dict[str, torch.Tensor]:
        """The decisions to export (default: :meth:`sample_search`)."""
        return self.sample_search()

    # -- NNI's per-choice hooks (override to take over a choice's forward) --------------------------
    def on_forward_layer_choice(self, mutable: MixedLayer, *args: Any, **kwargs: Any) -> Any:
        """Compute a LayerChoice's output. Default: what the applied decision says."""
        return type(mutable).forward(mutable, *args, **kwargs)

    def on_forward_input_choice(self, mutable: MixedInput, tensor_list: list[torch.Tensor]) -> Any:
        """Compute an InputChoice's output from its candidate inputs. Default: the decision's."""
        return type(mutable).forward(mutable, tensor_list)

    # -- the loop --------------------------------------------------------------------------------
    def reset(self) -> None:
        """Sample the next decisions (:meth:`sample_search`) and apply them to the model."""
        decisions = self._checked(self.sample_search())
        self._decisions = decisions
        self._apply_decisions(decisions)

    def decision(self, key: str) -> torch.Tensor:
        """The decision applied by the last :meth:`reset` for ``key``."""
        if self._decisions is None:
            raise RuntimeError("no decision yet: call mutator.reset() before the forward")
        return self._decisions[key]

    def export(self) -> dict[str, Any]:
        """The arch of :meth:`sample_final`, validated and JSON-ready (``json.dumps`` works)."""
        decisions = self._checked(self.sample_final())
        supernet: Supernet = self.supernet
        if self.mode == "path":
            arch = self._arch_of(decisions)
        else:
            probs = {k: v.detach().float().cpu() for k, v in decisions.items()}
            arch = {}
            for _, m in supernet.mixed_modules():
                arch.update(
                    m.export(probs) if isinstance(m, MixedCell) else m.export(probs[m.label])
                )
            arch = {k: arch[k] for k in supernet.search_space}
        plain: dict[str, Any] = json.loads(json.dumps(supernet.search_space.validate(arch)))
        return plain

    # -- how decisions are applied ------------------------------------------------------------------
    def _checked(self, decisions: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        mutables = {m.key: m for m in self.mutables}
        missing = [k for k in mutables if k not in decisions]
        unknown = [k for k in decisions if k not in mutables]
        if missing or unknown:
            raise ValueError(
                f"{type(self).__name__} decided {sorted(decisions)}; expected exactly the keys "
                f"{list(mutables)} (missing {missing}, unknown {unknown})"
            )
        for key, value in decisions.items():
            if not torch.is_tensor(value) or value.dim() != 1 or len(value) != len(mutables[key]):
                raise ValueError(
                    f"decision for {key!r} must be a 1-D tensor of {len(mutables[key])} "
                    f"(one per candidate {mutables[key].candidates}), got {value!r}"
                )
        return decisions

    def _arch_of(self, masks: dict[str, torch.Tensor]) -> dict[str, Any]:
        arch: dict[str, Any] = {}
        for m in self.mutables:
            chosen = [
                c for c, on in zip(m.candidates, masks[m.key].bool().tolist(), strict=True) if on
            ]
            if m.kind == "layer":
                if len(chosen) != 1:
                    raise ValueError(
                        f"mask for {m.key!r} must pick exactly one candidate, got {chosen}"
                    )
                arch[m.key] = chosen[0]
            else:
                arch[m.key] = chosen
        return arch

    def _apply_decisions(self, decisions: dict[str, torch.Tensor]) -> None:
        supernet: Supernet = self.supernet
        if self.mode == "path":
            supernet.use_arch(self._arch_of(decisions))
        else:
            supernet.use_mixture()
            supernet.state.weights = dict(decisions)

    def _install_hooks(self) -> None:
        """Route mixed choices through the hooks, only where a subclass overrides them."""
        supernet: Supernet = self.supernet
        layer_hook = type(self).on_forward_layer_choice is not Mutator.on_forward_layer_choice
        input_hook = type(self).on_forward_input_choice is not Mutator.on_forward_input_choice
        for _, m in supernet.mixed_modules():
            if layer_hook and isinstance(m, MixedLayer):
                m.forward = _Hook(self, "on_forward_layer_choice", m)  # type: ignore[method-assign]
            elif input_hook and isinstance(m, MixedInput):
                m.forward = _Hook(self, "on_forward_input_choice", m)  # type: ignore[method-assign]


class _Hook:
    """An instance-level ``forward`` calling the mutator's hook with the mixed module.

    NNI 1.x's hooks return ``(output, mask)``; a pair whose second item is a boolean tensor is
    taken as that and the mask dropped.
    """

    def __init__(self, mutator: Mutator, name: str, module: nn.Module) -> None:
        self.mutator, self.name, self.module = mutator, name, module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = getattr(self.mutator, self.name)(self.module, *args, **kwargs)
        if (
            isinstance(out, tuple)
            and len(out) == 2
            and torch.is_tensor(out[1])
            and out[1].dtype == torch.bool
        ):
            return out[0]
        return out


class RandomMutator(Mutator):
    """Uniform random decisions (NNI's ``RandomMutator``): one candidate per layer choice, and
    ``n_chosen`` inputs (any non-empty subset when ``n_chosen`` is None) per input choice.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import InputChoice, ModelSpace
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.pick = InputChoice(3, 2, label='pick')
        ...     def forward(self, xs):
        ...         return self.pick(xs)
        >>> m = RandomMutator(Net(), seed=1)
        >>> int(m.sample_search()['pick'].sum())
        2
    """

    def __init__(self, model: nn.Module, seed: int | None = None) -> None:
        super().__init__(model, mode="path")
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)
        else:
            self.generator.seed()

    def sample_search(self) -> dict[str, torch.Tensor]:
        out = {}
        for m in self.mutables:
            n = len(m)
            if m.kind == "layer":
                k = 1
            elif m.n_chosen is not None:
                k = m.n_chosen
            else:
                k = int(torch.randint(1, n + 1, (), generator=self.generator))
            mask = torch.zeros(n, dtype=torch.bool)
            mask[torch.randperm(n, generator=self.generator)[:k]] = True
            out[m.key] = mask
        return out
