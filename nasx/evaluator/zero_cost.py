"""Zero-cost proxies: score an untrained model from one minibatch, in a fraction of a second.

Three scores from the literature, each computed on a freshly initialised model (larger is better):

- ``synflow`` (Tanaka et al. 2020; as a NAS proxy Abdelfattah et al., ICLR 2021): the sum over
  parameters of ``|theta * dR/dtheta|`` where ``R`` is the output summed over an all-ones input, on
  a copy of the model whose parameters are replaced by their absolute values (batch norm off,
  double precision, so no data and no sign cancellations). Data-independent apart from the shape.
- ``naswot`` (Mellor et al., ICML 2021, "NAS without training", also called jacov's successor):
  ``log |K|`` where ``K[i, j]`` counts the ReLUs on which inputs ``i`` and ``j`` agree (both
  active or both inactive); networks that separate the inputs of a batch score higher.
- ``grad_norm`` (Abdelfattah et al., ICLR 2021): the Euclidean norm of the gradient of the
  cross-entropy loss of the batch with respect to all parameters.

:class:`ZeroCostEvaluator` makes any of them an evaluator, so it plugs in where a trained
evaluator would (``NasExperiment``, or to rank a random sample and warm-start
:class:`~nasx.strategy.LocalSearch` with ``initial_archs``). How well they rank NAS-Bench-201 archs
is measured by ``benchmarks/nb201_zero_cost.py`` (Spearman correlation to the table).

    >>> import torch
    >>> torch.manual_seed(0)
    <torch._C.Generator object at ...>
    >>> model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 8), torch.nn.ReLU(),
    ...                             torch.nn.Linear(8, 3))
    >>> x, y = torch.randn(4, 3, 2, 2), torch.tensor([0, 1, 2, 0])
    >>> sorted(ZeroCostEvaluator('naswot', x, y).evaluate(model))
    ['default', 'seconds']
    >>> round(synflow(torch.nn.Linear(2, 1, bias=False).requires_grad_(), x[:, :2, 0, 0]), 6) >= 0
    True
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import Evaluator, Metric, Report

if TYPE_CHECKING:
    from nasx.space import ModelSpace

__all__ = ["PROXIES", "ZeroCostEvaluator", "grad_norm", "naswot", "synflow", "top_archs"]


def synflow(model: nn.Module, inputs: torch.Tensor) -> float:
    """SynFlow score of ``model`` for inputs shaped like ``inputs`` (their values are not used).

    Example:
        >>> lin = nn.Linear(2, 1, bias=False)
        >>> with torch.no_grad():
        ...     _ = lin.weight.copy_(torch.tensor([[-1.0, 2.0]]))
        >>> synflow(lin, torch.zeros(5, 2))   # R = |w| . 1 = 3; sum |w * dR/dw| = 1 + 2
        3.0
    """
    net = copy.deepcopy(model).double().eval()  # eval: batch norm uses its running stats (0, 1)
    with torch.no_grad():
        for p in net.parameters():
            p.abs_()
    for p in net.parameters():
        p.requires_grad_(True)
        p.grad = None
    ones = torch.ones((1, *inputs.shape[1:]), dtype=torch.float64)
    net(ones).sum().backward()
    score = sum((p * p.grad).abs().sum().item() for p in net.parameters() if p.grad is not None)
    return float(score)


def naswot(model: nn.Module, inputs: torch.Tensor) -> float:
    """NASWOT score: log-determinant of the ReLU activation-agreement kernel of the batch.

    Example:
        >>> relu_net = nn.Sequential(nn.Linear(2, 4), nn.ReLU())
        >>> isinstance(naswot(relu_net, torch.randn(3, 2)), float)
        True
    """
    batch = inputs.shape[0]
    kernel = torch.zeros(batch, batch, dtype=torch.float64)

    def hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        codes = (output.detach().reshape(batch, -1) > 0).double()  # [batch, units]
        # agreements = both on + both off
        kernel.add_(codes @ codes.T + (1 - codes) @ (1 - codes).T)

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.ReLU)]
    if not handles:
        raise ValueError("naswot needs a model with nn.ReLU modules; this one has none")
    try:
        with torch.no_grad():
            model(inputs)
    finally:
        for h in handles:
            h.remove()
    sign, logdet = torch.linalg.slogdet(kernel)
    return float(logdet) if sign > 0 else float("-inf")


def grad_norm(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Norm of the gradient of the batch's cross-entropy loss over all parameters.

    Example:
        >>> lin = nn.Linear(2, 2)
        >>> grad_norm(lin, torch.randn(4, 2), torch.tensor([0, 1, 0, 1])) > 0
        True
    """
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(inputs), targets).backward()
    squares = [p.grad.pow(2).sum() for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return float(torch.stack(squares).sum().sqrt()) if squares else 0.0


PROXIES: dict[str, Callable[..., float]] = {
    "synflow": lambda model, x, y: synflow(model, x),
    "naswot": lambda model, x, y: naswot(model, x),
    "grad_norm": grad_norm,
}
"""Proxy name -> ``f(model, inputs, targets) -> score``."""


class ZeroCostEvaluator(Evaluator):
    """Score each model with a zero-cost proxy on one fixed minibatch (no training).

    Args:
        proxy: ``'synflow'``, ``'naswot'`` or ``'grad_norm'``.
        inputs, targets: the minibatch (``[N, ...]`` tensor, ``[N]`` class indices).
        seed: seeds the model's re-initialisation, so a score does not depend on trial order.

    The metric is the score (larger is better); ``'seconds'`` records how long it took.
    A score of ``-inf`` (NASWOT of a network whose batch codes coincide) is returned as the
    smallest finite float, so that such archs rank last instead of failing.
    """

    def __init__(
        self,
        proxy: str,
        inputs: torch.Tensor,
        targets: torch.Tensor | None = None,
        seed: int = 0,
    ):
        if proxy not in PROXIES:
            raise ValueError(f"proxy must be one of {sorted(PROXIES)}, got {proxy!r}")
        if proxy == "grad_norm" and targets is None:
            raise ValueError("grad_norm needs targets (class indices of the minibatch)")
        self.proxy = proxy
        self.inputs = inputs
        self.targets = targets
        self.seed = seed

    def evaluate(self, model: nn.Module, report: Report | None = None) -> Metric:
        """The proxy's score of ``model`` re-initialised under ``seed``."""
        start = time.perf_counter()
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            for m in model.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset) and m is not model:
                    reset()
            model.train()
            score = PROXIES[self.proxy](model, self.inputs, self.targets)
        if score == float("-inf"):
            score = -torch.finfo(torch.float64).max
        return {"default": score, "seconds": time.perf_counter() - start}

    def __repr__(self) -> str:
        return f"ZeroCostEvaluator({self.proxy!r}, batch={tuple(self.inputs.shape)})"


def top_archs(
    model_space: ModelSpace, archs: list[dict], evaluator: Evaluator, k: int
) -> list[dict]:
    """The ``k`` archs of ``archs`` that ``evaluator`` scores highest (each built and scored once).

    A warm start: ``LocalSearch(initial_archs=top_archs(space, sample, ZeroCostEvaluator(...), 20))``
    begins its climb from the proxy's favourites instead of random archs; the proxy's evaluations
    are not trials.

    Example:
        >>> from nasx.space import ModelSpace, choice
        >>> class Wide(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(2, choice('width', [1, 4, 16]))
        >>> class Width(Evaluator):
        ...     def evaluate(self, model, report=None):
        ...         return float(model.fc.out_features)
        >>> top_archs(Wide(), [{'width': 1}, {'width': 16}, {'width': 4}], Width(), k=2)
        [{'width': 16}, {'width': 4}]
    """
    from .base import normalize_metric

    scores = [normalize_metric(evaluator.evaluate(model_space.freeze(a)))[0] for a in archs]
    order = sorted(range(len(archs)), key=lambda i: -scores[i])
    return [archs[i] for i in order[:k]]
