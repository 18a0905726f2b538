"""NNI's one-shot strategy arguments, mapped onto nasx's own (or refused, saying what to use).

- ``log_prob_every_n_step`` (DARTS, GumbelDARTS, Proxyless, ENAS) is nasx's ``log_arch_every``.
- ``penalty`` (DARTS family) takes an NNI profiler (``ExpectationProfilerPenalty``); nasx's
  differentiable cost term is ``cost_penalty=CostPenalty(...)`` (Proxyless: ``cost=``/``cost_fn=``).
- GumbelDARTS's temperature: NNI 3.0's ``temperature`` (a float, ``(init, min)``, ``{'init', 'min'}``
  or a scheduler with ``init``/``min``) and NNI 2.x's ``gumbel_temperature`` + ``use_temp_anneal``
  + ``min_temp`` all mean a temperature that falls linearly from ``init`` at the first epoch
  towards ``min`` at ``max_epochs``: :class:`LinearTemperature`.
"""

from __future__ import annotations

from typing import Any

from nasx._checks import check_int

__all__ = ["LinearTemperature", "apply_log_prob_every_n_step", "refuse_nni_penalty"]


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
        if not init >= min >= 0:
            raise ValueError(
                f"a Gumbel temperature schedule needs init >= min >= 0, got init={init}, min={min}"
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
