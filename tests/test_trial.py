"""Trial: statuses, JSON round trip, canonical arch keys."""

from __future__ import annotations

import json

import pytest

from nasx.trial import Trial, arch_key


def test_json_round_trip():
    t = Trial(
        3,
        {"a": [0, 1], "b": "x"},
        "succeeded",
        metric=1.0,
        metrics={"default": 1.0},
        intermediates=[0.5],
    )
    assert Trial.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="'done'"):
        Trial(0, {}, "done")


def test_finished_statuses():
    assert [
        Trial(0, {}, s).finished for s in ("waiting", "running", "succeeded", "failed", "rejected")
    ] == [False, False, True, True, True]


def test_arch_key_ignores_key_order():
    assert (
        arch_key({"a": 1, "b": [2]}) == arch_key({"b": [2], "a": 1}) != arch_key({"a": 2, "b": [2]})
    )


def test_best_trials_ranks_succeeded_by_direction_and_refuses_a_bad_one():
    from nasx.trial import best_trials, status_counts

    ts = [
        Trial(0, {}, "succeeded", metric=2.0),
        Trial(1, {}, "succeeded", metric=1.0),
        Trial(2, {}, "failed"),
        Trial(3, {}, "succeeded", metric=1.0),
    ]
    assert [t.id for t in best_trials(ts, "minimize")] == [1, 3, 0]
    assert [t.id for t in best_trials(ts, "maximize", top_k=2)] == [0, 1]
    assert status_counts(ts) == {
        "waiting": 0,
        "running": 0,
        "succeeded": 3,
        "failed": 1,
        "rejected": 0,
        "pruned": 0,
        "paused": 0,
    }
    with pytest.raises(ValueError, match="direction must be 'maximize' or 'minimize'"):
        best_trials(ts, "max")
