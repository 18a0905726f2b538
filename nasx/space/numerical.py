"""Numerical choices: a number from a range or a distribution (NNI's ``Numerical``).

``uniform``, ``loguniform`` and ``normal``, each optionally quantised (``quniform``, ...), with
NNI's semantics: a quantised value is ``clip(round(x / q) * q, low, high)``; the default is the
distribution's median, quantised and clipped. Strategies that sample (Random, evolution's
mutation, TPE) draw from the distribution itself.

A quantised choice with both bounds has finitely many values, and :meth:`~Numerical.grid` lists
them, so grid search and the strategies that learn over a list of values work on it too. A
continuous one has no list of values: ``grid()`` raises, naming the label, unless given NNI's
``granularity`` (``2 ** granularity - 1`` quantile points of the distribution).

    >>> from nasx.space import Numerical
    >>> x = Numerical(0, 10, quantize=2.5, label='x')
    >>> x.grid()
    [0.0, 2.5, 5.0, 7.5, 10.0]
    >>> x.default, x.validate(7.5)
    (5.0, 7.5)
    >>> Numerical(0, 1, label='y').grid(granularity=2)
    [0.25, 0.5, 0.75]
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist
from typing import Any, cast

from .choice import Choice
from .labels import make_label
from .registry import register

# A quantised range with more values than this is treated as continuous by ``grid()``.
MAX_GRID = 10_000


class Numerical(Choice):
    """A number drawn from ``[low, high]`` (uniform or log-uniform) or from a normal distribution.

    Args:
        low, high: the bounds; a normal distribution is clipped to them (it is not truncated).
        mu, sigma: give both for a normal distribution (``log_distributed`` makes it log-normal).
        log_distributed: sample ``exp(uniform(log low, log high))`` (bounds must be > 0).
        quantize: round every value to a multiple of ``quantize``, then clip to the bounds.
        default: the default value (the distribution's median, quantised, when omitted).
        label: the decision's name.

    Values are floats; ``MutableExpression.to_int(x)`` gives an int (e.g. a width).

    Example:
        >>> import random
        >>> lr = Numerical(1e-4, 1e-1, log_distributed=True, label='lr')
        >>> lr
        Numerical(0.0001, 0.1, log_distributed=True, label='lr')
        >>> 1e-4 <= lr.sample(random.Random(0)) <= 1e-1
        True
        >>> lr.validate(1.0)
        Traceback (most recent call last):
        ...
        nasx.space.errors.InvalidArchError: invalid value 1.0 for label 'lr': allowed a number in [0.0001, 0.1]
    """

    def __init__(
        self,
        low: float = -math.inf,
        high: float = math.inf,
        *,
        mu: float | None = None,
        sigma: float | None = None,
        log_distributed: bool = False,
        quantize: float | None = None,
        default: float | None = None,
        label: str | None = None,
    ):
        for name, v in (("low", low), ("high", high), ("mu", mu), ("sigma", sigma)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise TypeError(f"Numerical {label!r}: {name} must be a number, got {v!r}")
        if (mu is None) != (sigma is None):
            raise ValueError(f"Numerical {label!r}: give both mu and sigma, or neither")
        if sigma is not None and sigma <= 0:
            raise ValueError(f"Numerical {label!r}: sigma must be > 0, got {sigma}")
        if not low < high:
            raise ValueError(f"Numerical {label!r}: low must be < high, got {low} and {high}")
        if mu is None and not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(
                f"Numerical {label!r}: a uniform range needs finite low and high, got {low}, {high}"
            )
        if log_distributed and mu is None and low <= 0:
            raise ValueError(
                f"Numerical {label!r}: a log-uniform range needs low > 0, got low={low}"
            )
        if quantize is not None and not (isinstance(quantize, (int, float)) and quantize > 0):
            raise ValueError(f"Numerical {label!r}: quantize must be > 0, got {quantize!r}")
        self.low, self.high = float(low), float(high)
        self._given = (low, high)  # for the repr, as NNI prints them (0, not 0.0)
        self.mu, self.sigma = mu, sigma
        self.log_distributed = log_distributed
        self.quantize = quantize
        self.label = make_label(label, "numerical")
        self.finite = quantize is not None and self._n_quantized() <= MAX_GRID
        self.default = self.validate(self.qclip(self._ppf(0.5)) if default is None else default)
        register(self)

    # -- the distribution --------------------------------------------------------------------

    def _ppf(self, p: float) -> float:
        """The ``p``-quantile of the distribution before quantisation and clipping."""
        if self.mu is not None and self.sigma is not None:
            x = NormalDist(self.mu, self.sigma).inv_cdf(p)
            return math.exp(x) if self.log_distributed else x
        if self.log_distributed:
            return math.exp(math.log(self.low) + p * (math.log(self.high) - math.log(self.low)))
        return self.low + p * (self.high - self.low)

    def qclip(self, x: float) -> float:
        """Round ``x`` to a multiple of ``quantize`` (if any), then clip it to ``[low, high]``."""
        if self.quantize is not None:
            x = round(x / self.quantize) * self.quantize
        return float(min(max(x, self.low), self.high))

    def sample(self, rng: random.Random) -> float:
        if self.mu is not None and self.sigma is not None:
            x = rng.gauss(self.mu, self.sigma)
            x = math.exp(x) if self.log_distributed else x
        elif self.log_distributed:
            x = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            x = rng.uniform(self.low, self.high)
        return self.qclip(x)

    # -- values --------------------------------------------------------------------------------

    def _n_quantized(self) -> float:
        if self.quantize is None or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return math.inf
        return math.floor(self.high / self.quantize) - math.ceil(self.low / self.quantize) + 1

    def _quantized_values(self) -> list[float]:
        q = self.quantize
        assert q is not None
        inner = [k * q for k in range(math.ceil(self.low / q), math.floor(self.high / q) + 1)]
        values = [self.qclip(v) for v in [self.low, *inner, self.high]]
        return sorted(set(values))

    def _grid(self, granularity: int | None) -> list[Any]:
        if granularity is None:
            if self.finite:
                return self._quantized_values()
            raise ValueError(
                f"Numerical {self.label!r} is continuous, so it has no list of values for grid "
                "search or for strategies that choose among listed values. Give it quantize= "
                "(with finite bounds: nasx.quniform, Numerical(..., quantize=q)) or list the "
                "values (Categorical), use a sampling strategy (Random, RegularizedEvolution, "
                "TPE), or call grid(granularity=n) for 2**n - 1 quantile points"
            )
        if granularity < 1:
            raise ValueError(f"granularity must be >= 1, got {granularity}")
        points = [self.qclip(self._ppf(i / 2**granularity)) for i in range(1, 2**granularity)]
        return list(dict.fromkeys(points))

    def __len__(self) -> int:
        if not self.finite:
            raise TypeError(
                f"Numerical {self.label!r} is continuous: it has no finite number of values"
            )
        return len(self._quantized_values())

    def validate(self, value: Any) -> float:
        allowed = self._allowed()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._invalid(value, allowed)
        if not self.low <= value <= self.high or math.isnan(value):
            raise self._invalid(value, allowed)
        # A quantised value is one qclip can produce: a multiple of quantize, or a bound that
        # values near it round past (so clipping lands on it). A bound qclip rounds away from
        # (0.94 when quantize is 0.1: 0.94 rounds to 0.9) is never sampled, nor in grid().
        if self.quantize is not None and not math.isclose(
            self.qclip(value), value, rel_tol=1e-9, abs_tol=1e-6 * self.quantize
        ):
            raise self._invalid(value, allowed)
        return float(value)

    def _allowed(self) -> str:
        text = f"a number in [{self.low:g}, {self.high:g}]"
        if self.quantize is not None:
            text += f", a multiple of {self.quantize:g}"
            q = self.quantize
            ends = [b for b in (self.low, self.high) if math.isfinite(b)]
            bounds = [b for b in ends if b == self.qclip(b) and b % q]
            if bounds:  # reachable bounds that are not multiples
                text += " or " + " or ".join(f"{b:g}" for b in bounds)
        return text

    def _signature(self) -> Any:
        return (self.low, self.high, self.mu, self.sigma, self.log_distributed, self.quantize)

    def __repr__(self) -> str:
        parts = [repr(v) for v in self.__dict__.get("_given", (self.low, self.high))]
        if self.mu is not None:
            parts += [f"mu={self.mu!r}", f"sigma={self.sigma!r}"]
        if self.quantize is not None:
            parts.append(f"q={self.quantize!r}")
        if self.log_distributed:
            parts.append("log_distributed=True")
        return f"Numerical({', '.join(parts)}, label={self.label!r})"


# NNI's shortcuts (``nni.uniform``, ...). Like :func:`~nasx.space.choice`, each declares the choice
# in the space being built and returns its value: the arch's under ``model_context``, else the
# default. ``Numerical(...)`` gives the choice object itself (to build expressions from).


def _declare(choice: Numerical) -> float:
    from .choice import outside_any_space
    from .context import resolve

    if outside_any_space():  # NNI's object at a script's top level (see nasx.space.choice)
        return cast(float, choice)  # the object stands in for the value until it is frozen
    value: float = resolve(choice)
    return value


def uniform(label: str, low: float, high: float) -> float:
    """A float drawn uniformly from ``[low, high]``; returns its value (see :func:`choice`).

    Inside a space it is the default (the middle of the range) until an arch decides it; at a
    script's top level it is NNI's ``Numerical``:

    >>> uniform('dropout', 0, 0.5)
    Numerical(0, 0.5, label='dropout')
    >>> from nasx.space import ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.p = uniform('dropout', 0.0, 0.5)
    >>> Net().p
    0.25
    """
    return _declare(Numerical(low, high, label=label))


def quniform(label: str, low: float, high: float, quantize: float) -> float:
    """``clip(round(uniform(low, high) / quantize) * quantize, low, high)``; returns its value.

    >>> quniform('x', 2.5, 5.5, 2.0)
    Numerical(2.5, 5.5, q=2.0, label='x')
    >>> quniform('x', 2.5, 5.5, 2.0).default
    4.0
    """
    return _declare(Numerical(low, high, quantize=quantize, label=label))


def loguniform(label: str, low: float, high: float) -> float:
    """A float whose logarithm is uniform in ``[log low, log high]``; returns its value.

    >>> loguniform('lr', 1e-4, 1e-2)
    Numerical(0.0001, 0.01, log_distributed=True, label='lr')
    >>> round(loguniform('lr', 1e-4, 1e-2).default, 6)
    0.001
    """
    return _declare(Numerical(low, high, log_distributed=True, label=label))


def qloguniform(label: str, low: float, high: float, quantize: float) -> float:
    """:func:`loguniform`, then quantised like :func:`quniform`; returns its value.

    >>> qloguniform('x', 1e-5, 1e-3, 1e-4)
    Numerical(1e-05, 0.001, q=0.0001, log_distributed=True, label='x')
    >>> qloguniform('x', 1.0, 100.0, 5.0).default
    10.0
    """
    return _declare(Numerical(low, high, log_distributed=True, quantize=quantize, label=label))


def normal(label: str, mu: float, sigma: float) -> float:
    """A float from a normal distribution (unbounded); returns its value (the default is ``mu``).

    >>> normal('x', 0, 1)
    Numerical(-inf, inf, mu=0, sigma=1, label='x')
    >>> normal('x', 0, 1).default
    0.0
    """
    return _declare(Numerical(mu=mu, sigma=sigma, label=label))


def qnormal(label: str, mu: float, sigma: float, quantize: float) -> float:
    """:func:`normal`, then rounded to a multiple of ``quantize``; returns its value.

    >>> qnormal('x', 1.2, 1.0, 0.5).default
    1.0
    """
    return _declare(Numerical(mu=mu, sigma=sigma, quantize=quantize, label=label))
