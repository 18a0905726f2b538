"""The multi-trial strategy seam: :class:`MultiTrialStrategy` (the contract) and :class:`Strategy`
(the base class most strategies subclass).

A multi-trial strategy has three methods. ``setup(search_space, trials, direction)`` rebuilds all
state from stored trials, so resuming an experiment needs nothing but its trial table;
``propose()`` returns the next arch (``None`` when the strategy has nothing left);
``tell(trial)`` hands back a finished trial.

To make a resumed run continue exactly where the first one stopped, every random draw for the
``n``-th proposal comes from a generator seeded by ``(seed, n)``: the state is a function of the
seed and the stored trials, never of a generator that lived in a dead process.

    >>> from nasx.space import Categorical, SearchSpace
    >>> class First(Strategy):
    ...     def next_arch(self, rng):
    ...         return self.random_unseen_arch(rng)
    >>> space = SearchSpace(k=Categorical([3, 5], label='k'))
    >>> s = First(seed=0); s.setup(space)
    >>> sorted([s.propose()['k'], s.propose()['k']]), s.propose()
    ([3, 5], None)
"""

from __future__ import annotations

import abc
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from nasx.trial import SUCCEEDED, Trial, arch_digest

if TYPE_CHECKING:
    from nasx.space import SearchSpace

__all__ = ["Direction", "MultiTrialStrategy", "Strategy"]

#: Whether the search looks for the largest metric (``'maximize'``) or the smallest.
Direction = Literal["maximize", "minimize"]

# Above this many archs, an exhausted-looking dedup search gives up instead of enumerating.
_ENUMERATE_LIMIT = 200_000


@runtime_checkable
class MultiTrialStrategy(Protocol):
    """What :class:`~nasx.experiment.NasExperiment` needs from a multi-trial strategy.

    The experiment calls ``setup`` once per ``run()`` with every stored trial (so a resumed
    experiment rebuilds the strategy's state from storage alone), then alternates ``propose`` (one
    arch per free trial slot; ``None`` ends the search) and ``tell`` (each trial once it finished:
    succeeded, failed or rejected by a filter). Subclassing :class:`Strategy` gives seeding,
    deduplication and replay for free; a class written from scratch works as well.

    Optional attributes the experiment uses when present: ``seed`` (stored with the experiment)
    and ``seed_given`` (False lets a resumed run reuse the stored seed).

    A minimal implementation (proposes the archs in grid order, skipping stored ones):

        >>> from nasx.space import Categorical, SearchSpace
        >>> class Sweep:
        ...     def setup(self, search_space, trials=(), direction='maximize'):
        ...         done = [t.arch for t in trials]
        ...         self.todo = [a for a in search_space.grid() if a not in done]
        ...     def propose(self):
        ...         return self.todo.pop(0) if self.todo else None
        ...     def tell(self, trial):
        ...         pass
        >>> isinstance(Sweep(), MultiTrialStrategy)
        True
        >>> s = Sweep(); s.setup(SearchSpace(k=Categorical([3, 5], label='k')))
        >>> s.propose(), s.propose(), s.propose()
        ({'k': 3}, {'k': 5}, None)
    """

    def setup(
        self,
        search_space: SearchSpace,
        trials: Iterable[Trial] = (),
        direction: Direction = "maximize",
    ) -> None:
        """Called at the start of every ``run()``: forget all state, then replay ``trials``
        (every stored trial, any status, in id order) to rebuild it."""

    def propose(self) -> dict[str, Any] | None:
        """Called whenever a trial slot is free: the next arch, or None when exhausted."""

    def tell(self, trial: Trial) -> None:
        """Called once per finished trial (succeeded, failed or rejected), in finishing order."""

    # Optional, not part of the protocol's check: ``update(trial)``, called when a trial told
    # before has a newer result (a multi-fidelity scheduler promoted it to a higher budget).
    # A strategy without it keeps what it learned from the trial's first result.


class Strategy(abc.ABC):
    """Base class of multi-trial strategies (implements :class:`MultiTrialStrategy`).

    Subclasses implement :meth:`next_arch` (and :meth:`learn` if they learn from results);
    the base class handles seeding, deduplication and replaying stored trials. A subclass that
    forgets ``next_arch`` cannot be instantiated (TypeError naming it).

    Memory: the base class remembers a 64-bit digest per proposed arch (``seen``, for
    deduplication) and, when ``keep_history`` is true (the default, for subclasses that read
    it), every finished trial in :attr:`history`. The built-in strategies that learn nothing
    from old trials, or keep what they need themselves (evolution's population), set
    ``keep_history = False``: a 100,000-trial search then holds no trial in memory (the
    experiment's database has them all).

    Args:
        dedup: never propose an arch twice (including archs of failed or rejected trials).
        seed: makes proposals reproducible; ``None`` draws a seed from the OS.
    """

    is_one_shot: ClassVar[bool] = False
    # Keep every finished trial in `history`: on for subclasses that may read it, off in the
    # built-in strategies that do not (a trial with its arch costs about 1 KB: 100 MB per 100k).
    keep_history: ClassVar[bool] = True

    def __init__(self, *, dedup: bool = True, seed: int | None = None):
        self.dedup = dedup
        # Without a seed one is drawn here; NasExperiment stores it so that a resume reuses it.
        self.seed_given = seed is not None
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        self.search_space: SearchSpace | None = None
        self.direction: Direction = "maximize"
        self.num_proposed = 0
        self.num_told = 0  # finished trials told so far
        self.seen: set[int] = set()  # arch_digest of every arch proposed (see was_proposed)
        self._history: list[Trial] = []  # finished trials, in the order told (keep_history)

    # ----------------------------------------------------------------- the three public methods
    def setup(
        self,
        search_space: SearchSpace,
        trials: Iterable[Trial] = (),
        direction: Direction = "maximize",
    ) -> None:
        """Start over on ``search_space`` and replay ``trials`` (every stored trial, any status).

        Unfinished trials count as proposed (for numbering and deduplication); finished ones are
        told in the order they finished.
        """
        if direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        if not search_space:
            raise ValueError(
                f"{type(self).__name__} got an empty search space: the model space declares no "
                "choices (is it a fixed model built under model_context?)"
            )
        self.search_space = search_space
        self.direction = direction
        self.num_proposed = 0
        self.num_told = 0
        self.seen = set()
        self._history = []
        self.reset()
        trials = sorted(trials, key=lambda t: t.id)
        for t in trials:
            self._count_proposal(t.arch)
        finished = [t for t in trials if t.finished]
        finished.sort(key=lambda t: (t.end_time if t.end_time is not None else float("inf"), t.id))
        for t in finished:
            self._record(t)  # all counted as proposed just above

    def propose(self) -> dict[str, Any] | None:
        """The next arch to evaluate, or None when the strategy is exhausted."""
        if self.search_space is None:
            raise RuntimeError(f"call {type(self).__name__}.setup(search_space) before propose()")
        arch = self.next_arch(self.rng(self.num_proposed))
        if arch is not None and not self.satisfies(arch):
            arch = self._propose_valid(arch)
        if arch is None:
            return None
        self._count_proposal(arch)
        return arch

    def tell(self, trial: Trial) -> None:
        """Learn from a finished trial (succeeded, failed or rejected)."""
        if not self.was_proposed(trial.arch):  # told without being proposed (seeded by hand)
            self._count_proposal(trial.arch)
        self._record(trial)

    def update(self, trial: Trial) -> None:
        """A trial told before has a newer result: a multi-fidelity scheduler promoted it and it
        reached a higher budget (:attr:`~nasx.trial.Trial.budget`). It replaces the told trial
        of the same id in :attr:`history` (kept in its place), then :meth:`relearn` sees it.

        A resumed run replays each stored trial once, at the highest budget it reached, which
        is what the uninterrupted run's strategy holds after its updates.

            >>> from nasx.space import Categorical, SearchSpace
            >>> from nasx.strategy import RegularizedEvolution
            >>> s = RegularizedEvolution(population_size=4, sample_size=2, seed=0)
            >>> s.setup(SearchSpace(x=Categorical([1, 2, 3], label='x')))
            >>> s.tell(Trial(0, s.propose(), 'succeeded', metric=0.2, budget=1))
            >>> s.update(Trial(0, s.population()[0].arch, 'succeeded', metric=0.7, budget=3))
            >>> [(t.metric, t.budget) for t in s.population()]
            [(0.7, 3)]
        """
        if self.keep_history:
            for i, told in enumerate(self._history):
                if told.id == trial.id:
                    self._history[i] = trial
                    break
        self.relearn(trial)

    @property
    def history(self) -> list[Trial]:
        """The finished trials, in the order they were told (only with ``keep_history``)."""
        if not self.keep_history:
            raise AttributeError(
                f"{type(self).__name__} keeps no trial history (keep_history = False, so that a "
                "long search does not hold every trial in memory); read the trials from the "
                "experiment (exp.trials()), or subclass it with keep_history = True"
            )
        return self._history

    @history.setter
    def history(self, trials: list[Trial]) -> None:
        self._history = trials

    # ----------------------------------------------------------------- for subclasses
    def reset(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Clear learned state (called by :meth:`setup` before replaying trials)."""

    @abc.abstractmethod
    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        """Called by :meth:`propose` once per proposal, with the generator of proposal *n*
        (draw randomness only from it); return the arch, or None when exhausted."""

    def learn(self, trial: Trial) -> None:  # noqa: B027 - an optional hook
        """Update learned state with a finished trial (default: nothing to learn)."""

    def relearn(self, trial: Trial) -> None:  # noqa: B027 - an optional hook
        """Update learned state with a newer result of a trial learned before (:meth:`update`;
        default: keep what was learned from its first result)."""

    # ----------------------------------------------------------------- helpers
    def need_space(self) -> SearchSpace:
        """The search space given to :meth:`setup` (RuntimeError before it)."""
        if self.search_space is None:
            raise RuntimeError(f"call {type(self).__name__}.setup(search_space) first")
        return self.search_space

    def rng(self, n: int) -> random.Random:
        """The generator of the ``n``-th proposal (a pure function of the seed and ``n``)."""
        return random.Random(f"{type(self).__name__}:{self.seed}:{n}")

    def is_new(self, arch: dict[str, Any]) -> bool:
        """Whether ``arch`` was not proposed yet (always true without dedup)."""
        return not self.dedup or not self.was_proposed(arch)

    def was_proposed(self, arch: dict[str, Any]) -> bool:
        """Whether ``arch`` was proposed (or replayed from storage) since :meth:`setup`."""
        return arch_digest(arch) in self.seen

    def satisfies(self, arch: dict[str, Any]) -> bool:
        """Whether ``arch`` satisfies the search space's constraints (:mod:`nasx.space.constraints`)."""
        return self.need_space().satisfies(arch)

    def acceptable(self, arch: dict[str, Any]) -> bool:
        """Whether ``arch`` may be proposed: new (:meth:`is_new`) and within the constraints.
        Strategies that build archs themselves (mutations, asks) test their candidates with it."""
        return self.is_new(arch) and self.satisfies(arch)

    def _propose_valid(self, rejected: dict[str, Any]) -> dict[str, Any] | None:
        """A strategy that does not check constraints itself proposed ``rejected``: ask it again
        with fresh generators (rejection, up to the space's ``max_rejections``), then fall back
        to a uniformly random unseen arch that satisfies them."""
        space = self.need_space()
        n = self.num_proposed
        for k in range(1, min(space.max_rejections, 100) + 1):
            arch = self.next_arch(random.Random(f"{type(self).__name__}:{self.seed}:{n}:retry{k}"))
            if arch is None or self.satisfies(arch):
                return arch
        return self.random_unseen_arch(self.rng(n))

    def score(self, trial: Trial) -> float:
        """The trial's metric oriented so that larger is better."""
        if trial.metric is None:
            raise ValueError(f"trial {trial.id} has no metric (status {trial.status})")
        return trial.metric if self.direction == "maximize" else -trial.metric

    def succeeded_trials(self) -> list[Trial]:
        """Succeeded trials in the order they were told (needs ``keep_history``)."""
        return [t for t in self.history if t.status == SUCCEEDED]

    def random_unseen_arch(self, rng: random.Random, tries: int = 100) -> dict[str, Any] | None:
        """A uniformly random arch not yet proposed, or None when every arch has been.

        Samples a few times, then enumerates the remaining archs of small spaces. With
        constraints it samples only archs that satisfy them (raising
        :class:`~nasx.space.EmptySpaceError` when the space has none or almost none).
        """
        space = self.need_space()
        for _ in range(tries):
            arch = space.sample(rng)
            if self.is_new(arch):
                return arch
        if space.size > _ENUMERATE_LIMIT:
            return None
        if space.constraints:
            from nasx.space.constraints import enumerate_limit

            if space.size > enumerate_limit(space):  # rules that build models: too slow
                return None
        archs = space.valid_archs() if space.constraints else space.grid()
        remaining = [a for a in archs if self.is_new(a)]
        return dict(rng.choice(remaining)) if remaining else None

    def _count_proposal(self, arch: dict[str, Any]) -> None:
        self.num_proposed += 1
        self.seen.add(arch_digest(arch))

    def _record(self, trial: Trial) -> None:
        self.num_told += 1
        if self.keep_history:
            self._history.append(trial)
        self.learn(trial)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dedup={self.dedup}, seed={self.seed})"
