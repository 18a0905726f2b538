"""TPE (tree-structured Parzen estimator, Bergstra et al. 2011) through Optuna's ``TPESampler``.

Each label becomes an Optuna categorical parameter over the indices of its choice's values; a
:class:`~nasx.space.Numerical` becomes a float parameter over its range (log-scaled when it is),
so numerical choices are searched natively rather than flattened into a grid.
Finished trials are added to an in-memory Optuna study (failed and rejected ones as FAIL, which TPE
ignores), so resuming is replaying the trial table; each proposal uses a sampler seeded by
``(seed, proposal number)``, so a resumed search proposes what the uninterrupted one would have.

    >>> from nasx.space import Categorical, SearchSpace
    >>> from nasx.trial import Trial
    >>> space = SearchSpace(x=Categorical(list(range(10)), label='x'))
    >>> s = TPE(n_startup_trials=3, seed=0); s.setup(space, direction='minimize')
    >>> for i in range(8):
    ...     arch = s.propose()
    ...     s.tell(Trial(i, arch, 'succeeded', metric=float((arch['x'] - 7) ** 2)))
    >>> s.num_told
    8
"""

from __future__ import annotations

import math
import random
from typing import Any

from nasx._checks import check_int
from nasx.space import Numerical
from nasx.trial import Trial, arch_key

from .base import Strategy


class TPE(Strategy):
    """Tree-structured Parzen estimator search, backed by Optuna.

    Args:
        n_startup_trials: random trials before TPE's model is used (Optuna's default is 10).
        dedup: ask again (up to 20 times, then a random unseen arch) instead of repeating an arch.
        seed: makes proposals reproducible, across resumes too.
        **sampler_kwargs: passed on to ``optuna.samplers.TPESampler`` (e.g. ``multivariate=True``).
    """

    keep_history = False  # the Optuna study holds what TPE learns from

    def __init__(
        self,
        n_startup_trials: int = 10,
        dedup: bool = True,
        seed: int | None = None,
        **sampler_kwargs: Any,
    ):
        super().__init__(dedup=dedup, seed=seed)
        self.n_startup_trials = check_int(
            "n_startup_trials", n_startup_trials, minimum=0, allow_none=False
        )
        self.sampler_kwargs = sampler_kwargs

    def reset(self) -> None:
        import optuna  # heavy: imported only when TPE is used

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        space = self.need_space()
        # Numerical choices are searched natively (a float distribution, not a flattened grid).
        self._numerical = {label: c for label, c in space.items() if isinstance(c, Numerical)}
        self._grids = {
            label: c.grid() for label, c in space.items() if label not in self._numerical
        }
        self._distributions: dict[str, Any] = {
            label: optuna.distributions.CategoricalDistribution(list(range(len(grid))))
            for label, grid in self._grids.items()
        }
        for label, c in self._numerical.items():
            self._distributions[label] = _float_distribution(optuna, c)
        self._labels = list(space)
        self._study = optuna.create_study(direction=self.direction)
        self._pending: dict[str, list[int]] = {}  # arch key -> asked Optuna trial numbers
        self._number_of: dict[int, int] = {}  # nasx trial id -> its Optuna trial number
        self._size = 0  # trials in the study (asked or added): the next one's number

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        optuna = self._optuna
        self._study.sampler = optuna.samplers.TPESampler(
            seed=rng.randrange(2**31), n_startup_trials=self.n_startup_trials, **self.sampler_kwargs
        )
        retry = self.dedup or bool(self.need_space().constraints)
        for _ in range(20 if retry else 1):
            asked = self._study.ask(self._distributions)
            self._size += 1
            arch = {label: self._value(label, asked.params[label]) for label in self._labels}
            if self.acceptable(arch):  # new, and within the constraints
                self._pending.setdefault(arch_key(arch), []).append(asked.number)
                return arch
            self._study.tell(asked, state=optuna.trial.TrialState.FAIL)
        return self.random_unseen_arch(rng)

    def learn(self, trial: Trial) -> None:
        optuna = self._optuna
        ok = trial.succeeded
        state = optuna.trial.TrialState.COMPLETE if ok else optuna.trial.TrialState.FAIL
        value = trial.metric if ok else None
        pending = self._pending.get(arch_key(trial.arch))
        if pending:
            number = pending.pop(0)
            self._study.tell(number, value, state=state)
        else:
            params = {k: _index_of(grid, trial.arch[k]) for k, grid in self._grids.items()}
            params.update({label: trial.arch[label] for label in self._numerical})
            self._study.add_trial(
                optuna.trial.create_trial(
                    params=params, distributions=self._distributions, value=value, state=state
                )
            )
            number, self._size = self._size, self._size + 1
        self._number_of[trial.id] = number

    def relearn(self, trial: Trial) -> None:
        # An Optuna trial's value cannot change once told: the study is made again, its told
        # trials in the same order, this one with its newer value (a resumed run's replay
        # builds the same study). Asked trials still running are told later as added ones.
        number = self._number_of.get(trial.id)
        if number is None or not trial.succeeded:
            return  # a promoted job that failed: the lower budget's result stands
        optuna = self._optuna
        done = [t for t in self._study.get_trials(deepcopy=False) if t.state.is_finished()]
        self._study = optuna.create_study(direction=self.direction)
        self._pending.clear()
        renumber = {}
        for new_number, told in enumerate(done):
            renumber[told.number] = new_number
            value = trial.metric if told.number == number else told.value
            self._study.add_trial(
                optuna.trial.create_trial(
                    params=told.params,
                    distributions=told.distributions,
                    value=value if told.state == optuna.trial.TrialState.COMPLETE else None,
                    state=told.state,
                )
            )
        self._number_of = {i: renumber[n] for i, n in self._number_of.items() if n in renumber}
        self._size = len(done)

    def _value(self, label: str, param: Any) -> Any:
        if label in self._numerical:
            return self._numerical[label].qclip(param)
        return self._grids[label][param]


def _float_distribution(optuna: Any, c: Numerical) -> Any:
    """Optuna's distribution for a numerical choice: its range, log-scaled when it is; a normal
    distribution is searched over mu +- 4 sigma (clipped to its bounds), quantised afterwards."""
    low, high = c.low, c.high
    if c.mu is not None and c.sigma is not None:
        lo, hi = c.mu - 4 * c.sigma, c.mu + 4 * c.sigma
        if c.log_distributed:
            lo, hi = math.exp(lo), math.exp(hi)
        low, high = max(low, lo), min(high, hi)
    return optuna.distributions.FloatDistribution(low, high, log=c.log_distributed)


def _index_of(grid: list[Any], value: Any) -> int:
    for i, v in enumerate(grid):
        if v == value or (isinstance(v, (list, tuple)) and list(v) == value):
            return i
    raise ValueError(f"value {value!r} is not one of {grid!r}")
