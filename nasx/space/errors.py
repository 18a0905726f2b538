"""Errors raised by nasx.space; each message names the label, the value and what is allowed.

>>> from nasx.space import Categorical, InvalidArchError
>>> try:
...     Categorical([1, 2], label='k').validate(3)
... except InvalidArchError as error:
...     print(error)
invalid value 3 for label 'k': allowed one of [1, 2]
"""

from .._errors import NasxError


class InvalidArchError(NasxError, ValueError):
    """An arch dict does not fit a space: unknown or missing label, or a value not allowed."""


class LabelConflictError(NasxError, ValueError):
    """Two different decisions were given the same label."""


class SampleMissingError(InvalidArchError):
    """NNI's name: a sample (arch) has no value for a label it needs."""


class ConstraintViolation(InvalidArchError):
    """NNI's name: a sample breaks a constraint of the space."""


SampleValidationError = InvalidArchError
"""NNI's name for :class:`InvalidArchError`."""
