"""Errors raised by nasx.space; each message names the label, the value and what is allowed."""


class InvalidArchError(ValueError):
    """An arch dict does not fit a space: unknown or missing label, or a value not allowed."""


class LabelConflictError(ValueError):
    """Two different decisions were given the same label."""
