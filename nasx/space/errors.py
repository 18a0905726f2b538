"""Errors raised by nasx.space; each message names the label, the value and what is allowed.

>>> from nasx.space import Categorical, InvalidArchError
>>> try:
...     Categorical([1, 2], label='k').validate(3)
... except InvalidArchError as error:
...     print(error)
invalid value 3 for label 'k': allowed one of [1, 2]
"""

from __future__ import annotations

from .._errors import NasxError


class InvalidArchError(NasxError, ValueError):
    """An arch dict does not fit a space: unknown or missing label, or a value not allowed.

    As NNI's ``SampleValidationError``: ``msg`` is the message, ``paths`` where in the space the
    check failed (outermost first; empty when not known), shown after the message.

    >>> error = InvalidArchError('bad width', paths=['stem', 'conv'])
    >>> error.msg, str(error)
    ('bad width', 'bad width (path: stem -> conv)')
    """

    def __init__(self, msg: str = "", paths: list[str] | None = None):
        super().__init__(msg)
        self.msg = msg
        self.paths: list[str] = list(paths or [])

    def __str__(self) -> str:
        if self.paths:
            return f"{self.msg} (path: {' -> '.join(map(str, self.paths))})"
        return self.msg

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled into worker processes and back: keep msg and paths, not just args.
        return (_rebuild, (type(self), self.msg, self.paths))


def _rebuild(cls: type[InvalidArchError], msg: str, paths: list[str]) -> InvalidArchError:
    error = cls.__new__(cls)
    InvalidArchError.__init__(error, msg, paths)
    return error


class LabelConflictError(NasxError, ValueError):
    """Two different decisions were given the same label."""


class SampleMissingError(InvalidArchError):
    """NNI's name: a sample (arch) has no value for a label it needs.

    NNI's two forms: ``SampleMissingError(message)`` or ``SampleMissingError(label, keys)``.

    >>> str(SampleMissingError('width', ['depth']))
    "Label width is missing from sample. Existing keys are: ['depth']"
    """

    def __init__(
        self, label_or_msg: str = "", keys: list[str] | None = None, paths: list[str] | None = None
    ):
        if keys is not None:
            label_or_msg = f"Label {label_or_msg} is missing from sample. Existing keys are: {keys}"
        super().__init__(label_or_msg, paths)


class ConstraintViolation(InvalidArchError):
    """NNI's name: a sample breaks a constraint of the space."""


SampleValidationError = InvalidArchError
"""NNI's name for :class:`InvalidArchError`."""
