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
