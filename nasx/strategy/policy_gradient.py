"""Policy-gradient search (REINFORCE, Williams 1992), the RL baseline of the NAS-Bench-201 paper
(Dong & Yang, ICLR 2020): one independent softmax per label, trained to make good archs likely.

For a finished trial with reward ``r`` (the metric, negated when minimising), the controller takes
one optimizer step on ``-(r - b) * log p(arch)``, where ``b`` is an exponential moving average of
past rewards. Replaying the stored trials in the order they finished rebuilds the controller
exactly, so resuming needs nothing else.

    >>> from nasx.space import Categorical, SearchSpace
    >>> from nasx.trial import Trial
    >>> space = SearchSpace(op=Categorical(['a', 'b', 'c', 'd'], label='op'))
    >>> s = PolicyGradient(learning_rate=0.2, dedup=False, seed=0); s.setup(space)
    >>> for i in range(60):
    ...     arch = s.propose()
    ...     s.tell(Trial(i, arch, 'succeeded', metric=float(arch['op'] == 'c')))
    >>> max(s.probabilities()['op'], key=s.probabilities()['op'].get)
    'c'
"""

from __future__ import annotations

import random
from typing import Any

import torch

from nasx.trial import Trial

from .base import Strategy


class PolicyGradient(Strategy):
    """REINFORCE over independent per-label categorical distributions.

    Args:
        learning_rate: Adam's learning rate for the controller's logits.
        baseline_decay: momentum of the moving-average reward baseline (0.9 in NAS-Bench-201).
        dedup: resample (up to 50 times, then a random unseen arch) instead of repeating an arch.
        seed: makes proposals reproducible, across resumes too.
        samples_per_update: NNI's name: trials per controller step (their losses are averaged);
            1 (the default) steps after every trial.
        reward_for_invalid: NNI's name: the reward of failed or rejected trials; None (the
            default) leaves them out of learning.
        replay_buffer_size, policy_fn, update_kwargs: NNI's PPO settings (its controller is a
            tianshou PPO policy); nasx's is REINFORCE, so only their defaults are accepted.
    """

    keep_history = False  # what it learns is in its logits and baseline

    def __init__(
        self,
        learning_rate: float = 0.01,
        baseline_decay: float = 0.9,
        dedup: bool = True,
        seed: int | None = None,
        samples_per_update: int = 1,
        reward_for_invalid: float | None = None,
        replay_buffer_size: int | None = None,
        policy_fn: Any = None,
        update_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(dedup=dedup, seed=seed)
        ppo = {"replay_buffer_size": replay_buffer_size, "policy_fn": policy_fn}
        ppo["update_kwargs"] = update_kwargs
        given = [name for name, value in ppo.items() if value is not None]
        if given:
            raise TypeError(
                f"{', '.join(given)}: NNI's PolicyBasedRL trains a tianshou PPO policy; nasx's is "
                "REINFORCE (Williams 1992) and has no such setting. Tune learning_rate, "
                "baseline_decay and samples_per_update instead"
            )
        if not isinstance(samples_per_update, int) or samples_per_update < 1:
            raise ValueError(f"samples_per_update must be an int >= 1, got {samples_per_update!r}")
        self.samples_per_update = samples_per_update
        self.reward_for_invalid = reward_for_invalid
        if learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {learning_rate}")
        if not 0.0 <= baseline_decay < 1.0:
            raise ValueError(f"baseline_decay must be in [0, 1), got {baseline_decay}")
        self.learning_rate = learning_rate
        self.baseline_decay = baseline_decay

    def reset(self) -> None:
        self._grids = {label: c.grid() for label, c in self.need_space().items()}
        # One logit vector per label, shape [len(choice)], starting uniform, under key str(i) for
        # the i-th label. ParameterDict sorts the keys of a plain dict ('0', '1', '10', '11', '2',
        # ...), so it is built from ordered pairs, and read by key, never by iteration order.
        self.logits = torch.nn.ParameterDict(
            [
                (str(i), torch.nn.Parameter(torch.zeros(len(g))))
                for i, g in enumerate(self._grids.values())
            ]
        )
        self._optimizer = torch.optim.Adam(self.logits.parameters(), lr=self.learning_rate)
        self.baseline: float | None = None
        self._pending: list[torch.Tensor] = []  # losses waiting for samples_per_update of them

    def _label_logits(self) -> list[torch.nn.Parameter]:
        """The logits of each label, in the order of ``self._grids``."""
        return [self.logits[str(i)] for i in range(len(self._grids))]

    def probabilities(self) -> dict[str, dict[Any, float]]:
        """The controller's current distribution, ``{label: {value: probability}}``."""
        with torch.no_grad():
            out = {}
            for (label, grid), logits in zip(
                self._grids.items(), self._label_logits(), strict=True
            ):
                probs = torch.softmax(logits, 0).tolist()
                out[label] = {_hashable(v): p for v, p in zip(grid, probs, strict=True)}
            return out

    def next_arch(self, rng: random.Random) -> dict[str, Any] | None:
        generator = torch.Generator().manual_seed(rng.randrange(2**62))
        retry = self.dedup or bool(self.need_space().constraints)
        for _ in range(50 if retry else 1):
            arch = self._sample(generator)
            if self.acceptable(arch):  # new, and within the constraints
                return arch
        return self.random_unseen_arch(rng)

    def _sample(self, generator: torch.Generator) -> dict[str, Any]:
        with torch.no_grad():
            arch = {}
            for (label, grid), logits in zip(
                self._grids.items(), self._label_logits(), strict=True
            ):
                index = int(torch.multinomial(torch.softmax(logits, 0), 1, generator=generator))
                arch[label] = grid[index]
            return arch

    def learn(self, trial: Trial) -> None:
        if trial.succeeded:
            reward = self.score(trial)
        elif self.reward_for_invalid is not None:
            reward = float(self.reward_for_invalid)
        else:
            return  # failed and rejected archs carry no reward
        if self.baseline is None:
            self.baseline = reward
        else:
            self.baseline = self.baseline_decay * self.baseline + (1 - self.baseline_decay) * reward
        log_prob = torch.zeros(())
        for (label, grid), logits in zip(self._grids.items(), self._label_logits(), strict=True):
            index = _index_of(grid, trial.arch[label])
            log_prob = log_prob + torch.log_softmax(logits, 0)[index]
        self._pending.append(-(reward - self.baseline) * log_prob)
        if len(self._pending) < self.samples_per_update:
            return
        loss = torch.stack(self._pending).mean()
        self._pending = []
        self._optimizer.zero_grad()
        torch.autograd.backward(loss)
        self._optimizer.step()


def _index_of(grid: list[Any], value: Any) -> int:
    for i, v in enumerate(grid):
        if v == value or (isinstance(v, (list, tuple)) and list(v) == value):
            return i
    raise ValueError(f"value {value!r} is not one of {grid!r}")


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


PolicyBasedRL = PolicyGradient  # the name NNI 3.0 uses
