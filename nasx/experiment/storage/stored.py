"""Trials read from the database with their JSON fields decoded on first use.

A trial table of 100,000 trials shows every row's id, status, metric and duration, but a program
reading it rarely looks at every arch; decoding all the JSON up front was most of the time to
open such a table. A :class:`StoredTrial` keeps ``arch``, ``metrics``, ``intermediates`` and
``hparams`` as the JSON text SQLite returned and decodes one the first time it is read; after
that it is an ordinary attribute (change it, and the change is what is read and rendered). It
is a :class:`~nasx.trial.Trial` in every other way: it compares equal to the same plain
``Trial``, prints as one, and pickles and copies as one.

The text tables and CSV export write a field that was never decoded straight from its JSON text
(:func:`json_text`): nasx wrote it with ``json.dumps``, whose output reads back and encodes again
to the same text, so what a user sees is unchanged.

    >>> t = stored_trial(0, 'succeeded', 0.5, None, None, 1.0, None, '{"k": 3}', '{}', '[]', '{}')
    >>> json_text(t, 'arch'), 'arch' in vars(t)
    ('{"k": 3}', False)
    >>> t.arch, t == Trial(0, {'k': 3}, 'succeeded', metric=0.5, duration=1.0)
    ({'k': 3}, True)
    >>> repr(t)[:40]
    "Trial(id=0, arch={'k': 3}, status='succe"
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
from collections.abc import Iterable, Iterator
from typing import Any

from nasx._errors import NasxError
from nasx.trial import STATUSES, Trial

# The JSON fields, each with what a NULL column reads as (older or hand-made databases).
JSON_FIELDS = {"arch": dict, "metrics": dict, "intermediates": list, "hparams": dict}
_FIELDS = tuple(f.name for f in dataclasses.fields(Trial))
_RAW = {name: f"_{name}_json" for name in JSON_FIELDS}


class DamagedTrialError(NasxError, ValueError):
    """A stored trial's JSON field does not decode: its database row was damaged (a hand edit,
    a disk error). Raised when the field is first read, naming the trial and the field."""


def _loads(text: str, trial_id: int, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DamagedTrialError(
            f"trial {trial_id}'s stored {name} is not valid JSON ({e}): its database row is "
            f"damaged; the other trials read as usual"
        ) from None


class _Decoded:
    """A JSON field read from its text the first time it is used, then kept as an ordinary
    instance attribute (a non-data descriptor: the instance's value wins once it is set)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.raw, self.empty = name, _RAW[name], JSON_FIELDS[name]

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        text = d.pop(self.raw, None)
        value = self.empty() if text is None else _loads(text, obj.id, self.name)
        d[self.name] = value
        return value


class StoredTrial(Trial):
    """A :class:`~nasx.trial.Trial` from the database whose JSON fields are decoded when first
    read. The trial store builds them (:func:`~nasx.experiment.load_trials`,
    ``TrialStore.trials(lazy=True)``); ``Trial``'s constructor builds an eager one."""

    arch = _Decoded()  # lazily filled dataclass fields
    metrics = _Decoded()
    intermediates = _Decoded()
    hparams = _Decoded()
    # the JSON texts not decoded yet (instance attributes only; the class is no dataclass)
    _arch_json: str | None
    _metrics_json: str | None
    _intermediates_json: str | None
    _hparams_json: str | None

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        # Trial's dataclass __eq__ compares only objects of the very same class; Python asks a
        # subclass first, so both `stored == trial` and `trial == stored` land here.
        if not isinstance(other, Trial):
            return NotImplemented
        return self._values() == tuple(getattr(other, name) for name in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # as Trial's (a mutable dataclass)

    def __repr__(self) -> str:
        return Trial.__repr__(self).replace(type(self).__qualname__, "Trial", 1)

    def __reduce__(self) -> tuple[Any, ...]:
        return Trial, self._values()  # pickled and copied as a plain Trial


_new = object.__new__


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a table of trials is read or rendered: it would
    walk every live object again and again while hundreds of thousands of new strings, dicts and
    trials are made, none of which can form a cycle (a third of the time and more)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def stored_trial(
    id: int,
    status: str,
    metric: float | None,
    start_time: float | None,
    end_time: float | None,
    duration: float | None,
    error: str | None,
    arch: str | None,
    metrics: str | None,
    intermediates: str | None,
    hparams: str | None,
    budget: int | float | None = None,
) -> StoredTrial:
    """A :class:`StoredTrial` from a row: the scalar columns, then the four JSON texts, then
    the budget."""
    if status not in STATUSES:
        raise ValueError(f"trial status must be one of {STATUSES}, got {status!r}")
    t = _new(StoredTrial)
    t.id, t.status, t.metric, t.error = id, status, metric, error
    t.start_time, t.end_time, t.duration = start_time, end_time, duration
    t.budget = budget
    t._arch_json, t._metrics_json = arch, metrics
    t._intermediates_json, t._hparams_json = intermediates, hparams
    return t


def json_text(trial: Trial, name: str) -> str:
    """The JSON text of ``trial``'s field ``name`` (one of :data:`JSON_FIELDS`): as stored when it
    was never decoded, else ``json.dumps`` of its value (the same text for a stored value).

    >>> json_text(Trial(0, {'k': 3}), 'arch')
    '{"k": 3}'
    """
    d = trial.__dict__
    raw = d.get(_RAW[name])
    if raw is None or name in d:  # a plain Trial, a NULL column, or decoded (or set) since
        return json.dumps(getattr(trial, name))
    return str(raw)


def has_value(trial: Trial, name: str) -> bool:
    """Whether ``trial``'s JSON field ``name`` is not empty, read without decoding it.

    >>> has_value(stored_trial(0, 'failed', *[None] * 5, '{}', '{}', '[]', '{}'), 'hparams')
    False
    """
    d = trial.__dict__
    if name not in d and d.get(_RAW[name]) in ("{}", "[]"):
        return False  # what nasx writes for an empty field: no need to decode it
    return bool(getattr(trial, name))


def decode(trials: Iterable[Trial], names: Iterable[str]) -> None:
    """Decode the fields ``names`` of every stored trial in ``trials`` not decoded yet, with one
    ``json.loads`` per field (a DataFrame of 100k archs: faster than one call per trial).

    >>> ts = [stored_trial(i, 'failed', *[None] * 5, '{"k": %d}' % i, '{}', '[]', '{}') for i in range(3)]
    >>> decode(ts, ['arch']); [vars(t)['arch'] for t in ts]
    [{'k': 0}, {'k': 1}, {'k': 2}]
    """
    with gc_paused():
        _decode(list(trials), names)


def _decode(trials: list[Trial], names: Iterable[str]) -> None:
    for name in names:
        raw = _RAW[name]
        todo = [t for t in trials if name not in t.__dict__ and t.__dict__.get(raw) is not None]
        if not todo:
            continue
        texts = [t.__dict__[raw] for t in todo]
        try:
            values = json.loads("[" + ",".join(texts) + "]")
        except json.JSONDecodeError:
            values = [_loads(text, t.id, name) for t, text in zip(todo, texts, strict=True)]
        for t, value in zip(todo, values, strict=True):
            del t.__dict__[raw]
            t.__dict__[name] = value
