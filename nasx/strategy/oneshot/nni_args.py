"""NNI's one-shot strategy arguments, mapped onto nasx's own (or refused, saying what to use).

The strategies' signatures hold nasx's spelling of each setting only; NNI's arrive in their
``**kwargs`` and are translated here, when the strategy is built, so ported NNI scripts run as
they are:

- ``log_prob_every_n_step`` (DARTS, GumbelDARTS, Proxyless, ENAS) is nasx's ``log_arch_every``.
- ``penalty`` (DARTS family) takes an NNI profiler (``ExpectationProfilerPenalty``); nasx's
  differentiable cost term is ``cost_penalty=CostPenalty(...)`` (Proxyless: ``cost=``/``cost_fn=``).
- GumbelDARTS's temperature: NNI 3.0's ``temperature`` (a float, ``(init, min)``, ``{'init', 'min'}``
  or a scheduler with ``init``/``min``) and NNI 2.x's ``use_temp_anneal`` + ``min_temp`` (with
  ``gumbel_temperature``) all mean a temperature that falls linearly from ``init`` at the first
  epoch towards ``min`` at ``max_epochs``: nasx's ``temperature_decay='linear'``
  (:class:`LinearTemperature`).
- ENAS's ``batches_per_update`` is nasx's ``ctrl_steps_aggregate``; ``replay_buffer_size`` and
  ``penalty`` are refused (NNI's controller trains by PPO from a replay buffer).
"""

from __future__ import annotations

from typing import Any, Literal

from nasx._checks import check_int

__all__ = [
    "LinearTemperature",
    "apply_log_prob_every_n_step",
    "enas_nni_arguments",
    "gumbel_nni_arguments",
    "nni_strategy_arguments",
    "refuse_nni_penalty",
]


def apply_log_prob_every_n_step(
    log_prob_every_n_step: int | None, kwargs: dict[str, Any], strategy: str
) -> None:
    """Put NNI's ``log_prob_every_n_step`` into ``kwargs`` as nasx's ``log_arch_every``.

    >>> kwargs = {}
    >>> apply_log_prob_every_n_step(10, kwargs, 'DARTS'); kwargs
    {'log_arch_every': 10}
    >>> apply_log_prob_every_n_step(10, {'log_arch_every': 5}, 'DARTS')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: DARTS(log_prob_every_n_step=10, log_arch_every=5): both set how often ...
    """
    if log_prob_every_n_step is None:
        return
    check_int("log_prob_every_n_step", log_prob_every_n_step, minimum=1, allow_none=False)
    given = kwargs.get("log_arch_every")
    if given is not None and given != log_prob_every_n_step:
        raise ValueError(
            f"{strategy}(log_prob_every_n_step={log_prob_every_n_step}, log_arch_every={given}): "
            "both set how often the architecture probabilities are logged (NNI's name and "
            "nasx's); give one"
        )
    kwargs["log_arch_every"] = log_prob_every_n_step


def refuse_nni_penalty(penalty: Any, strategy: str, alternative: str) -> None:
    """Refuse NNI's ``penalty=`` (a profiler-based penalty), naming nasx's ``alternative``.

    >>> refuse_nni_penalty(None, 'DARTS', 'cost_penalty=CostPenalty(...)')  # not given: fine
    """
    if penalty is None:
        return
    raise TypeError(
        f"{strategy}(penalty=...) is NNI's ExpectationProfilerPenalty, built on an NNI profiler "
        f"(FLOPs, parameters, latency), which nasx does not provide; pass {alternative} instead "
        "(nasx.strategy.oneshot.cost: CostPenalty.from_space(space, input_shape, 'macs' | "
        "'params' | 'flops', weight=..., target=..., mode='linear' | 'hinge'), the same "
        "expected cost, differentiable in the architecture weights)"
    )


class LinearTemperature:
    """NNI's Gumbel temperature schedule: ``init`` at epoch 0, falling linearly towards ``min``.

    ``value(epoch, max_epochs) = (1 - epoch / max_epochs) * (init - min) + min``, as NNI's
    ``LinearTemperatureScheduler``; without ``max_epochs`` (an endless run) it stays at ``init``.

    >>> t = LinearTemperature(1.0, 0.33)
    >>> [round(t.value(e, 4), 4) for e in range(5)]
    [1.0, 0.8325, 0.665, 0.4975, 0.33]
    >>> LinearTemperature.parse((1.0, 0.5)).min, LinearTemperature.parse(0.7).init
    (0.5, 0.7)
    """

    def __init__(self, init: float, min: float):  # noqa: A002 - NNI's argument name
        init, min = float(init), float(min)  # noqa: A001
        if not init >= min > 0:
            raise ValueError(
                f"a Gumbel temperature schedule needs init >= min > 0 (the temperature divides "
                f"the logits), got init={init}, min={min}"
            )
        self.init, self.min = init, min

    def value(self, epoch: int, max_epochs: int | None) -> float:
        """The temperature of (0-based) ``epoch`` of ``max_epochs``."""
        if not max_epochs or max_epochs < 0:
            return self.init
        epoch = min(epoch, max_epochs)
        return (1 - epoch / max_epochs) * (self.init - self.min) + self.min

    @classmethod
    def parse(cls, temperature: Any) -> LinearTemperature:
        """NNI 3.0's ``temperature=``: a float (fixed), ``(init, min)``, ``{'init': .., 'min': ..}``
        or an object with ``init`` and ``min`` attributes (NNI's ``LinearTemperatureScheduler``)."""
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
            return cls(temperature, temperature)
        if isinstance(temperature, tuple) and len(temperature) == 2:
            return cls(*temperature)
        if isinstance(temperature, dict) and set(temperature) == {"init", "min"}:
            return cls(temperature["init"], temperature["min"])
        if hasattr(temperature, "init") and hasattr(temperature, "min"):
            return cls(temperature.init, temperature.min)
        raise ValueError(
            "temperature must be a float, a tuple (init, min), a dict {'init': ..., 'min': ...} or "
            f"a scheduler with init and min attributes, got {temperature!r}"
        )

    def __repr__(self) -> str:
        return f"LinearTemperature(init={self.init}, min={self.min})"


def nni_strategy_arguments(kwargs: dict[str, Any], strategy: str, penalty_alternative: str) -> None:
    """Translate NNI's arguments common to the one-shot strategies, found in ``kwargs`` (in place):
    ``log_prob_every_n_step`` becomes ``log_arch_every``, ``penalty`` is refused naming
    ``penalty_alternative``.

    >>> kwargs = {'log_prob_every_n_step': 5, 'warmup_epochs': 1}
    >>> nni_strategy_arguments(kwargs, 'DARTS', 'cost_penalty=CostPenalty(...)'); kwargs
    {'warmup_epochs': 1, 'log_arch_every': 5}
    """
    refuse_nni_penalty(kwargs.pop("penalty", None), strategy, penalty_alternative)
    apply_log_prob_every_n_step(kwargs.pop("log_prob_every_n_step", None), kwargs, strategy)


def gumbel_nni_arguments(
    kwargs: dict[str, Any], gumbel_temperature: float
) -> tuple[float, Literal["linear"], float] | None:
    """NNI's GumbelDARTS temperature arguments popped from ``kwargs`` (3.0's ``temperature``, 2.x's
    ``use_temp_anneal`` and ``min_temp``) as nasx's ``(gumbel_temperature, temperature_decay,
    min_temperature)``; None when neither is given (nasx's own arguments apply).

    >>> gumbel_nni_arguments({'temperature': (1.0, 0.33)}, 1.0)
    (1.0, 'linear', 0.33)
    >>> gumbel_nni_arguments({'use_temp_anneal': False}, 0.7)  # NNI 2.x's default: fixed
    (0.7, 'linear', 0.7)
    >>> gumbel_nni_arguments({}, 1.0) is None
    True
    """
    temperature = kwargs.pop("temperature", None)
    use_temp_anneal = kwargs.pop("use_temp_anneal", None)
    min_temp = kwargs.pop("min_temp", None)
    if temperature is not None:
        if use_temp_anneal is not None or min_temp is not None:
            raise ValueError(
                "GumbelDARTS: give NNI 3.0's temperature=(init, min) or NNI 2.x's "
                "use_temp_anneal/min_temp, not both"
            )
        if isinstance(temperature, (int, float)) and not temperature > 0:
            raise ValueError(
                f"GumbelDARTS(temperature={temperature!r}): a Gumbel-softmax temperature must be "
                "> 0 (it divides the logits)"
            )
        schedule = LinearTemperature.parse(temperature)
    elif use_temp_anneal is None:
        if min_temp is not None:
            raise ValueError(
                "GumbelDARTS(min_temp=...) is the end of NNI 2.x's linear schedule: pass "
                "use_temp_anneal=True with it (or nasx's min_temperature= for the per-epoch decay)"
            )
        return None
    elif use_temp_anneal:
        schedule = LinearTemperature(gumbel_temperature, 0.33 if min_temp is None else min_temp)
    else:
        schedule = LinearTemperature(gumbel_temperature, gumbel_temperature)  # fixed, as in NNI
    return schedule.init, "linear", schedule.min


def enas_nni_arguments(kwargs: dict[str, Any], ctrl_steps_aggregate: int) -> int:
    """Translate NNI's ENAS arguments in ``kwargs`` (in place): ``log_prob_every_n_step`` as for
    every strategy, ``replay_buffer_size`` and ``penalty`` refused, and ``batches_per_update``
    returned as nasx's ``ctrl_steps_aggregate`` (else ``ctrl_steps_aggregate`` as given).

    >>> enas_nni_arguments({'batches_per_update': 3}, 1)
    3
    """
    apply_log_prob_every_n_step(kwargs.pop("log_prob_every_n_step", None), kwargs, "ENAS")
    unsupported = {k: kwargs.pop(k) for k in ("replay_buffer_size", "penalty") if k in kwargs}
    given = [name for name, value in unsupported.items() if value is not None]
    if given:
        raise TypeError(
            f"ENAS({', '.join(f'{n}=...' for n in given)}): NNI's ENAS trains a PPO controller "
            "from a replay buffer and may add a cost penalty; nasx's ENAS is the paper's "
            "REINFORCE with a moving-average baseline and has neither (for a cost-aware "
            "reward pass reward_fn=(model, batch) -> float)"
        )
    batches_per_update = kwargs.pop("batches_per_update", None)
    return ctrl_steps_aggregate if batches_per_update is None else batches_per_update
