"""RandomOneShot (SPOS, Guo et al. 2020): train the supernet on uniformly sampled paths (or with
the sandwich rule of BigNAS and OFA: the largest, the smallest and n random paths per step), then
search it: score archs with inherited weights on validation data, optionally proposed by any
multi-trial strategy (``Random``, ``RegularizedEvolution``, ...)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.nn as nn

from nasx._checks import check_int

from .base import BaseOneShotStrategy
from .sampling import (
    batch_reward,
    modes_kept,
    scoring_model,
    split_batch,
    split_scored_batch,
    step_rng,
)
from .sandwich import DistillLoss, largest_arch, smallest_arch, soft_target_loss
from .supernet import Supernet
from .supernet.mixed_value import MixedBatchNorm2d
from .topk import prob_key

if TYPE_CHECKING:  # imported when a run starts (it imports Lightning)
    from .lightning import OneShotModule


class RandomOneShot(BaseOneShotStrategy):
    """Uniform path sampling over shared weights (SPOS), then a search of the trained supernet.

    Args:
        search_strategy: a multi-trial strategy (``setup``/``propose``/``tell``) that proposes the
            archs to score after training; None scores ``num_samples`` uniformly random archs.
        num_samples: archs scored after training.
        eval_batches: validation batches per scored arch (None: all).
        bn_recalibration_batches: training-mode forwards on validation data before scoring an arch,
            to re-estimate BatchNorm statistics for that path (SPOS does this; 0: off).
        reward_fn: ``(model, batch) -> float`` (``model``: the evaluator's whole model, a head
            around the supernet where its module builds one); default accuracy (class scores, per
            pixel for segmentation) or negative MSE.
        filter: NNI's ``filter``: ``arch -> bool``; paths it refuses are never trained or scored
            (training resamples, up to 100 times per step); e.g.
            :class:`~nasx.strategy.oneshot.cost.ArchCostRange` for a FLOPs or latency range.
        sandwich: the sandwich rule (BigNAS, OFA; AttentiveNAS's ``sandwich_rule`` with
            ``num_arch_training = sandwich + 2``): every weight step trains the largest path, the
            smallest and ``sandwich`` random ones on the same batch, sums their gradients and
            steps once. None (the default): one uniformly random path per step (SPOS). Needs
            choices with ordered values (numbers: the largest path takes every max, the smallest
            every min; see :mod:`~nasx.strategy.oneshot.sandwich`); both extremes must pass the
            space's constraints and ``filter``.
        inplace_distill: with ``sandwich``, in-place distillation (BigNAS): the largest path
            learns the labels (the evaluator's loss) and the other paths its detached outputs, by
            ``nasx.strategy.oneshot.sandwich.soft_target_loss`` (KL of class or token
            distributions) or by a given ``(output, largest_output) -> loss``.

    Example:
        >>> from nasx.strategy import RandomOneShot
        >>> RandomOneShot(num_samples=50).is_one_shot
        True
        >>> RandomOneShot(sandwich=2, inplace_distill=True).sandwich
        2
    """

    supernet_mode = "path"
    needs_alphas = False

    def __init__(
        self,
        search_strategy: Any = None,
        num_samples: int = 20,
        eval_batches: int | None = 4,
        bn_recalibration_batches: int = 0,
        reward_fn: Any = None,
        filter: Any = None,  # noqa: A002 - NNI's name
        sandwich: int | None = None,
        inplace_distill: bool | DistillLoss = False,
        **kwargs: Any,
    ):
        _refuse_sample_penalty(kwargs.pop("penalty", None))
        super().__init__(**kwargs)
        if sandwich is not None:  # None: off (one path per step)
            check_int("sandwich", sandwich, minimum=0, allow_none=False)
        self.sandwich = sandwich
        if not (isinstance(inplace_distill, bool) or callable(inplace_distill)):
            raise TypeError(
                "inplace_distill must be True, False or a function (output, largest_output) -> "
                f"loss, got {inplace_distill!r}"
            )
        if inplace_distill is not False and sandwich is None:
            raise ValueError(
                "inplace_distill distils the largest path into the others of a sandwich step: "
                "give sandwich= too (the number of random paths besides the largest and smallest)"
            )
        self.inplace_distill = inplace_distill
        if filter is not None and not callable(filter):
            raise TypeError(f"filter must be a function arch -> bool, got {filter!r}")
        self.filter = filter
        # at least one arch is scored after training, or there is none to export
        check_int("num_samples", num_samples, minimum=1, allow_none=False)
        check_int("eval_batches", eval_batches, minimum=1)
        check_int("bn_recalibration_batches", bn_recalibration_batches, allow_none=False)
        self.search_strategy, self.num_samples = search_strategy, num_samples
        self.eval_batches, self.bn_recalibration_batches, self.reward_fn = (
            eval_batches,
            bn_recalibration_batches,
            reward_fn,
        )
        self.results: list[tuple[float, dict[str, Any]]] = []

    def build_supernet(self, model_space: nn.Module) -> Supernet:
        supernet = super().build_supernet(model_space)
        if self.sandwich is not None:  # a choice without order is refused before training
            largest_arch(supernet.search_space)
        return supernet

    def before_weight_step(self, module: OneShotModule) -> None:
        if self.sandwich is not None:
            return  # weight_losses sets each of the step's paths
        step = module.step_index
        module.supernet.use_arch(
            self._sample(module.supernet.search_space, step_rng(self.seed, step))
        )

    def sandwich_paths(self, space: Any, step: int) -> list[dict[str, Any]]:
        """The sandwich rule's paths at search step ``step``: the largest, the smallest, then
        ``sandwich`` random ones (the same on every rank and on a resumed run).

        Example:
            >>> from nasx.space import Categorical, SearchSpace
            >>> space = SearchSpace({'width': Categorical([16, 32, 64], label='width')})
            >>> paths = RandomOneShot(sandwich=1).sandwich_paths(space, step=0)
            >>> paths[:2], len(paths)
            ([{'width': 64}, {'width': 16}], 3)
        """
        if self.sandwich is None:
            raise RuntimeError("sandwich_paths: this RandomOneShot has sandwich=None")
        extremes = [largest_arch(space), smallest_arch(space)]
        for name, arch in zip(("largest", "smallest"), extremes, strict=True):
            if not self._allowed(arch):
                raise ValueError(
                    f"the sandwich rule trains the {name} path, but the space's constraints or "
                    f"the filter refuse it: {arch}; loosen them or leave sandwich=None"
                )
        rng = step_rng(self.seed, step)
        return extremes + [self._sample(space, rng) for _ in range(self.sandwich)]

    def weight_losses(
        self, module: OneShotModule, train_batch: Any, batch_idx: int, log: bool
    ) -> Iterator[torch.Tensor]:
        if self.sandwich is None:
            yield from super().weight_losses(module, train_batch, batch_idx, log)
            return
        supernet = module.supernet
        model = scoring_model(supernet, module.inner)  # the head included, as rewards see it
        largest_output: torch.Tensor | None = None
        for i, arch in enumerate(self.sandwich_paths(supernet.search_space, module.step_index)):
            supernet.use_arch(arch)
            if i > 0 and self.inplace_distill is not False:
                assert largest_output is not None
                loss_fn = soft_target_loss if self.inplace_distill is True else self.inplace_distill
                yield loss_fn(model(split_batch(train_batch)[0]), largest_output)
                continue
            with _last_output(model, keep=i == 0 and self.inplace_distill is not False) as seen:
                loss = module.loss(train_batch, batch_idx, log=log and i == 0)
            if seen:
                largest_output = seen[-1].detach()
            yield loss

    def before_validation(self, module: OneShotModule) -> None:
        # A fixed random path per validation run (same on every rank).
        module.supernet.use_arch(
            self._sample(module.supernet.search_space, step_rng(self.seed, -1))
        )

    def _allowed(self, arch: dict[str, Any]) -> bool:
        # the space's constraints (nasx.space.constraints), then NNI's filter
        space = self.supernet.search_space if self.supernet is not None else None
        if space is not None and not space.satisfies(arch):
            return False
        return self.filter is None or bool(self.filter(arch))

    def _sample(self, space: Any, rng: Any) -> dict[str, Any]:
        """A uniformly random arch that ``filter`` accepts (``space.sample`` keeps to the
        space's constraints)."""
        for _ in range(100):
            arch: dict[str, Any] = space.sample(rng)
            if self._allowed(arch):
                return arch
        raise RuntimeError(
            "RandomOneShot: filter refused 100 random archs in a row; is it too strict?"
        )

    def after_fit(self) -> None:
        self.search(self.search_strategy, self.num_samples)

    @torch.no_grad()
    def score(self, arch: dict[str, Any], loader: Any = None) -> float:
        """Mean reward of ``arch`` on validation batches, with the supernet's shared weights."""
        supernet = self._need_supernet()
        loader = loader if loader is not None else self.val_loader
        device = next(supernet.parameters()).device
        supernet.use_arch(arch)
        inner = self.module.inner if self.module is not None else None
        model = scoring_model(supernet, inner)  # head included
        with modes_kept(model, supernet):
            return self._score(supernet, model, loader, device)

    def _score(self, supernet: nn.Module, model: nn.Module, loader: Any, device: Any) -> float:
        if self.bn_recalibration_batches:
            supernet.train()
            for m in supernet.modules():
                if isinstance(m, (nn.modules.batchnorm._BatchNorm, MixedBatchNorm2d)):
                    m.reset_running_stats()
                    m.momentum = None  # cumulative average over the recalibration batches
            for i, batch in enumerate(loader):
                if i >= self.bn_recalibration_batches:
                    break
                supernet(_to(split_batch(batch)[0], device))
        supernet.eval()
        model.eval()
        total, n = 0.0, 0
        precision = self.trainer.precision if self.trainer is not None else None
        with _autocast(device, precision):
            for i, batch in enumerate(loader):
                if self.eval_batches is not None and i >= self.eval_batches:
                    break
                batch = _to(batch, device)
                if self.reward_fn is not None:
                    total += float(self.reward_fn(model, batch))
                else:
                    x, y = split_scored_batch(batch)
                    total += batch_reward(model(x), y)
                n += 1
        return total / max(n, 1)

    def search(
        self, strategy: Any = None, num_samples: int = 20
    ) -> list[tuple[float, dict[str, Any]]]:
        """Score ``num_samples`` archs on the trained supernet; ``strategy`` (multi-trial) proposes
        them, else they are drawn uniformly. Returns ``[(metric, arch)]`` best first."""
        supernet = self._need_supernet()
        space = supernet.search_space
        results = []
        if strategy is None:
            rng = step_rng(self.seed, -2)
            archs: list[dict[str, Any]] = []
            seen: set[str] = set()
            for arch in [space.default()] + [space.sample(rng) for _ in range(4 * num_samples)]:
                if not self._allowed(arch):
                    continue
                if repr(arch) not in seen and len(archs) < min(num_samples, space.size):
                    seen.add(repr(arch))
                    archs.append(arch)
            results = [(self.score(a), a) for a in archs]
        else:
            from nasx.trial import Trial

            strategy.setup(space, trials=(), direction="maximize")
            for i in range(num_samples):
                arch = strategy.propose()
                if arch is None:
                    break
                if not self._allowed(arch):
                    strategy.tell(
                        Trial(id=i, arch=arch, status="rejected", error="refused by filter")
                    )
                    continue
                start = time.time()
                metric = self.score(arch)
                end = time.time()
                strategy.tell(
                    Trial(
                        id=i,
                        arch=arch,
                        status="succeeded",
                        metric=metric,
                        metrics={"default": metric},
                        intermediates=[],
                        start_time=start,
                        end_time=end,
                        duration=end - start,
                        error=None,
                    )
                )
                results.append((metric, arch))
        self.results = sorted(results, key=lambda t: -t[0])
        return self.results

    def export_probs(self) -> dict[str, dict[Any, float]]:
        """Uniform: RandomOneShot learns no architecture distribution."""
        space = self._need_supernet().search_space
        return {label: {prob_key(v): 1.0 / len(c) for v in c.grid()} for label, c in space.items()}

    def export_top_models(self, top_k: int = 1) -> list[dict[str, Any]]:
        if not self.results:
            self.search(self.search_strategy, max(self.num_samples, top_k))
        return [arch for _, arch in self.results[:top_k]]

    def export_scores(self, archs: list[dict[str, Any]]) -> list[dict[str, float]]:
        """``{'supernet_score': s}``: the score :meth:`search` gave each arch on the trained
        supernet (its probability is uniform: RandomOneShot learns no distribution)."""
        scored = {repr(arch): metric for metric, arch in self.results}
        return [{"supernet_score": scored[repr(a)]} if repr(a) in scored else {} for a in archs]


@contextlib.contextmanager
def _last_output(model: nn.Module, keep: bool) -> Iterator[list[Any]]:
    """The outputs ``model`` returns inside the block (when ``keep``): the largest path's outputs,
    caught as the evaluator's ``training_step`` computes its loss, so in-place distillation costs
    no extra forward pass."""
    seen: list[Any] = []
    if not keep:
        yield seen
        return
    handle = model.register_forward_hook(lambda _m, _args, out: seen.append(out))
    try:
        yield seen
    finally:
        handle.remove()


def _to(batch: Any, device: torch.device) -> Any:
    if torch.is_tensor(batch):
        return batch.to(device)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to(b, device) for b in batch)
    return batch


def _autocast(device: torch.device, precision: Any) -> Any:
    """Rank in the precision the supernet was trained in (``bf16-mixed``/``16-mixed``)."""
    import contextlib

    dtypes = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}
    if precision not in dtypes or (precision == "16-mixed" and device.type != "cuda"):
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtypes[precision])


def _refuse_sample_penalty(penalty: Any) -> None:
    """NNI 3.0's ``RandomOneShot(penalty=SampleProfilerPenalty(...))`` scales each sampled
    path's loss by its profiled cost; refused by name, with nasx's ways to the same end."""
    if penalty is None:
        return
    raise TypeError(
        "RandomOneShot(penalty=...) is NNI's SampleProfilerPenalty, built on an NNI profiler "
        "(FLOPs, parameters, latency), which nasx does not provide. In nasx: "
        "filter=ArchCostRange(...) (nasx.strategy) keeps paths outside a cost range from being "
        "trained or scored, the space's own constraints do the same for every strategy "
        "(docs/constraints.md), and reward_fn=(model, batch) -> float can subtract a cost from "
        "the score the search ranks by"
    )
