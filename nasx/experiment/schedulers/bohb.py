"""BOHB: Hyperband whose new trials come from a model, not at random (Falkner, Klein and Hutter,
"BOHB: Robust and Efficient Hyperparameter Optimization at Scale", ICML 2018).

The brackets, rungs and promotions are :class:`~nasx.experiment.schedulers.Hyperband`'s. What
differs is where a new trial's architecture comes from: BOHB proposes it itself
(:attr:`~nasx.experiment.schedulers.Assignment.arch`), from a TPE-style model fitted on the
results of the **largest budget that has enough of them**:

1. that rung's live results are ranked (best first; by non-dominated fronts with several
   objectives); the best ``top_n_percent`` (at least ``min_points_in_model``) are *good*, the
   next ones (at least ``min_points_in_model`` of them, else the rung does not qualify) *bad*;
2. two kernel densities over the architectures, ``l`` on the good and ``g`` on the bad ones: a
   product over labels of Aitchison-Aitken kernels (the label's value kept with probability
   ``1 - bw``, any other one with ``bw / (c - 1)``; ``bw`` per label is the share of the points
   that disagree with its most common value, at least ``min_bandwidth``);
3. ``num_samples`` candidates drawn from ``l`` with every bandwidth widened ``bandwidth_factor``
   times; the one with the largest ``l(x) / g(x)`` that was not proposed before is the proposal
   (when all were, candidates are drawn again with the sampling bandwidths doubled: in a finite
   space the good density can sit on archs already tried).

A share ``random_fraction`` of the proposals (and all of them until a rung qualifies) are drawn
uniformly among the architectures not proposed before, as BOHB keeps exploring. Every draw
comes from a generator seeded by ``(seed, number of trials started)``, so the proposals are a
function of the seed and the events heard: a scheduler restored from :meth:`BOHB.state_dict`
proposes what the uninterrupted one would have.

    >>> from nasx.space import Categorical, SearchSpace
    >>> space = SearchSpace(op=Categorical(['a', 'b', 'c'], label='op'))
    >>> bohb = BOHB(min_budget=1, max_budget=9, eta=3, seed=0); bohb.setup(space)
    >>> job = bohb.assign(); (job.trial, job.budget, job.arch['op'] in 'abc')
    (None, 1, True)
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nasx.experiment.schedulers.base import Assignment, Budget, RankBy
from nasx.experiment.schedulers.halving import Hyperband

__all__ = ["BOHB"]


class BOHB(Hyperband):
    """Hyperband brackets with a TPE-style model proposing new trials (see the module docstring).

    Args:
        min_budget, max_budget, eta: the rungs, as for
            :class:`~nasx.experiment.schedulers.Hyperband`.
        rank_by: what a rung ranks (``'last'``, ``'mean'``, ``'best'``), as for ASHA; the model
            is fitted on those scores.
        seed: seeds every draw (None: one drawn now, kept in :meth:`state_dict`).
        min_points_in_model: points a model needs in each of its good and bad sets (None: the
            number of labels + 1, BOHB's default).
        top_n_percent: the share (in %) of a rung's results that are good.
        num_samples: candidates drawn from the good density per model-based proposal.
        random_fraction: the share of proposals drawn at random, in [0, 1].
        bandwidth_factor: how much wider the sampling kernels are than the fitted ones (>= 1).
        min_bandwidth: the smallest kernel bandwidth, in (0, 1), so no value is ruled out.
        directions, objectives, constraints: see :class:`~nasx.experiment.schedulers.Scheduler`.

    The architectures are searched over finite choices (``Categorical``, ``InputChoice``,
    ``Repeat`` depths, quantised ``Numerical``); a continuous ``Numerical`` is refused by
    :meth:`setup`, naming its label.
    """

    def __init__(
        self,
        min_budget: Budget = 1,
        max_budget: Budget = 27,
        eta: int = 3,
        *,
        seed: int | None = None,
        min_points_in_model: int | None = None,
        top_n_percent: int = 15,
        num_samples: int = 64,
        random_fraction: float = 1 / 3,
        bandwidth_factor: float = 3.0,
        min_bandwidth: float = 1e-3,
        rank_by: RankBy = "last",
        directions: str | Sequence[str] = "maximize",
        objectives: Any = None,
        constraints: Any = None,
    ) -> None:
        super().__init__(
            min_budget,
            max_budget,
            eta,
            rank_by=rank_by,
            directions=directions,
            objectives=objectives,
            constraints=constraints,
        )
        self._adopt_seed = seed is None  # a resumed state brings its own
        if seed is None:
            seed = random.SystemRandom().randrange(2**32)  # kept in state_dict
        _check_int("seed", seed, 0)
        if min_points_in_model is not None:
            _check_int("min_points_in_model", min_points_in_model, 1)
        _check_int("num_samples", num_samples, 1)
        _check_int("top_n_percent", top_n_percent, 1)
        if top_n_percent >= 100:
            raise ValueError(f"top_n_percent must be in 1..99, got {top_n_percent!r}")
        _check_float("random_fraction", random_fraction, 0.0, 1.0)
        _check_float("bandwidth_factor", bandwidth_factor, 1.0, math.inf)
        _check_float("min_bandwidth", min_bandwidth, 0.0, 1.0, open_low=True, open_high=True)
        self.seed = seed
        self.min_points_in_model = min_points_in_model
        self.top_n_percent = top_n_percent
        self.num_samples = num_samples
        self.random_fraction = float(random_fraction)
        self.bandwidth_factor = float(bandwidth_factor)
        self.min_bandwidth = float(min_bandwidth)
        self.labels: list[str] = []
        self.values: list[list[Any]] = []  # per label, its values in the choice's grid order
        self.space: Mapping[str, Any] | None = None
        self.configs: dict[int, list[int]] = {}  # trial -> its arch as value indices
        self.seen: set[tuple[int, ...]] = set()

    def __repr__(self) -> str:
        return (
            f"BOHB(min_budget={self.budgets[0]}, max_budget={self.max_budget}, eta={self.eta}, "
            f"seed={self.seed}{self._rank_by_repr()})"
        )

    def setup(self, search_space: Mapping[str, Any]) -> None:
        """Take the search space (``{label: Choice}``) the model proposes archs from; a
        continuous choice, or another space than the one already modelled, raises a
        ``ValueError``."""
        labels, values = [], []
        for label, choice in search_space.items():
            if not getattr(choice, "finite", True):
                raise ValueError(
                    f"BOHB models finite choices; label {label!r} is continuous ({choice!r}): "
                    "quantise it (Numerical(..., quantize=...)) or use the TPE strategy"
                )
            labels.append(label)
            values.append(list(choice.grid()))
        if not labels:
            raise ValueError("BOHB needs a search space with at least one choice")
        if self.labels and (self.labels, self.values) != (labels, values):
            raise ValueError("BOHB.setup() got another search space than the one it models")
        self.labels, self.values, self.space = labels, values, search_space

    # -- proposals -------------------------------------------------------------------------

    def assign(self, new_trials: bool = True) -> Assignment | None:
        job = super().assign(new_trials)
        if job is None or job.trial is not None:
            return job
        arch = self.propose()
        if arch is None:  # every architecture was proposed: promotions only from now on
            return super().assign(new_trials=False)
        return Assignment(None, job.budget, job.from_budget, job.bracket, arch)

    def started(self, trial: int, assignment: Assignment) -> None:
        """Record that new trial ``trial`` trains the arch ``assignment`` proposed (a
        ``ValueError`` when it carries none: BOHB's trials train BOHB's archs)."""
        if assignment.arch is None:
            raise ValueError(
                "BOHB proposes its trials' archs: start a trial on the arch of the assignment "
                "that assign() returned (Assignment.arch), not on the strategy's"
            )
        super().started(trial, assignment)
        config = self._encode(assignment.arch)
        self.configs[trial] = config
        self.seen.add(tuple(config))

    def propose(self) -> dict[str, Any] | None:
        """The arch the next new trial trains (None when every arch was proposed already).
        Depends only on the state, so asking twice before :meth:`started` gives the same arch."""
        if not self.labels:
            raise ValueError("call BOHB.setup(search_space) before assign(): BOHB proposes archs")
        if len(self.seen) >= math.prod(len(v) for v in self.values):
            return None
        rng = np.random.default_rng([self.seed, len(self.configs)])
        model = self.model_data()
        config = None
        if model is not None and rng.random() >= self.random_fraction:
            config = self._from_model(rng, *model)
        if config is None:
            config = self._at_random(rng)
        return None if config is None else self._decode(config)

    def model_data(self) -> tuple[int, np.ndarray, np.ndarray] | None:
        """``(rung, good, bad)``: the largest rung with enough live results, and its good and
        bad archs as value-index arrays (one row each); None while no rung has enough."""
        need = self.min_points_in_model or len(self.labels) + 1
        for k in reversed(range(len(self.budgets))):
            ranked = [t for t in self.ranked(k) if t in self.configs]
            n_good = max(need, self.top_n_percent * len(ranked) // 100)
            n_bad = max(need, (100 - self.top_n_percent) * len(ranked) // 100)
            good, bad = ranked[:n_good], ranked[n_good : n_good + n_bad]
            if len(good) >= need and len(bad) >= need:
                return k, self._array(good), self._array(bad)
        return None

    def _array(self, trials: list[int]) -> np.ndarray:
        return np.array([self.configs[t] for t in trials], dtype=np.int64)

    def _bandwidths(self, points: np.ndarray) -> np.ndarray:
        """Per label: the share of ``points`` off its most common value, clipped to
        [min_bandwidth, (c - 1) / c] (the upper end makes the kernel uniform)."""
        sizes = np.array([len(v) for v in self.values])
        mode_share = np.array(
            [np.bincount(points[:, j], minlength=c).max() for j, c in enumerate(sizes)]
        ) / len(points)
        return np.clip(1.0 - mode_share, self.min_bandwidth, (sizes - 1) / sizes)

    def _density(self, x: np.ndarray, points: np.ndarray, bw: np.ndarray) -> np.ndarray:
        """Product Aitchison-Aitken kernel density of ``points`` at each row of ``x``."""
        sizes = np.array([len(v) for v in self.values])
        other = np.where(sizes > 1, bw / np.maximum(sizes - 1, 1), 0.0)
        same = x[:, None, :] == points[None, :, :]  # (candidates, points, labels)
        kernel = np.where(same, 1.0 - bw, other)
        return np.asarray(kernel.prod(axis=2).mean(axis=1))

    def _from_model(
        self, rng: np.random.Generator, rung: int, good: np.ndarray, bad: np.ndarray
    ) -> list[int] | None:
        """The unseen candidate with the largest ``l(x) / g(x)``. In a finite space the good
        density may sit on archs all proposed already; then the candidates are drawn again with
        the sampling bandwidths doubled (up to 8 times), so the proposal stays as near the good
        region as the unseen archs allow."""
        sizes = np.array([len(v) for v in self.values])
        uniform = (sizes - 1) / sizes  # the bandwidth at which a kernel is uniform
        bw_good, bw_bad = self._bandwidths(good), self._bandwidths(bad)
        factor = self.bandwidth_factor
        for _ in range(8):
            wide = np.minimum(bw_good * factor, uniform)
            # candidates: a good point each, each label moved to another value w.p. ``wide``
            base = good[rng.integers(len(good), size=self.num_samples)]
            flip = rng.random(base.shape) < wide
            shift = rng.integers(1, np.maximum(sizes, 2), size=base.shape)  # 1..c-1
            candidates = np.where(flip & (sizes > 1), (base + shift) % sizes, base)
            ratio = self._density(candidates, good, bw_good) / np.maximum(
                self._density(candidates, bad, bw_bad), 1e-300
            )
            for i in np.argsort(-ratio, kind="stable"):
                config = [int(v) for v in candidates[i]]
                if tuple(config) not in self.seen and self._allowed(config):
                    return config
            factor *= 2
        return None  # every candidate was proposed before: a random one instead

    def _at_random(self, rng: np.random.Generator) -> list[int] | None:
        for _ in range(1000):
            config = [int(rng.integers(len(v))) for v in self.values]
            if tuple(config) not in self.seen and self._allowed(config):
                return config
        return None

    def _allowed(self, config: list[int]) -> bool:
        """Whether the space's constraints (if any) accept the arch."""
        satisfies = getattr(self.space, "satisfies", None)
        if not getattr(self.space, "constraints", ()) or satisfies is None:
            return True
        return bool(satisfies(self._decode(config)))

    def _encode(self, arch: Mapping[str, Any]) -> list[int]:
        if not self.labels:
            raise ValueError(
                "call BOHB.setup(search_space) first: BOHB encodes archs by its labels"
            )
        config = []
        for label, values in zip(self.labels, self.values):
            if label not in arch or arch[label] not in values:
                raise ValueError(
                    f"arch {dict(arch)!r}: label {label!r} must take one of {values[:10]!r}"
                )
            config.append(values.index(arch[label]))
        return config

    def _decode(self, config: Sequence[int]) -> dict[str, Any]:
        return {label: self.values[j][i] for j, (label, i) in enumerate(zip(self.labels, config))}

    # -- state -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Hyperband's state, the seed and each trial's arch, as JSON-compatible data."""
        return {
            **super().state_dict(),
            "seed": self.seed,
            "configs": [[t, json.dumps(self._decode(c))] for t, c in sorted(self.configs.items())],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") == "BOHB" and self._adopt_seed:
            self.seed = int(state["seed"])
        elif state.get("kind") == "BOHB" and int(state["seed"]) != self.seed:
            raise ValueError(
                f"the stored BOHB state has seed {state.get('seed')}, this one {self.seed}: "
                "resume with the same seed (or seed=None, which adopts the stored one)"
            )
        super().load_state_dict(state)
        self.configs = {int(t): self._encode(json.loads(a)) for t, a in state["configs"]}
        self.seen = {tuple(c) for c in self.configs.values()}


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_float(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if open_low else value >= low)
    ok = ok and (value < high if open_high else value <= high)
    if not ok:
        interval = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
