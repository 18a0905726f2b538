import json
import random

import pytest

from nasx.space import Categorical, CategoricalMultiple, InvalidArchError


def test_categorical_default_grid_and_validate():
    c = Categorical([16, 32, 64], label="w")
    assert c.default == 16
    assert c.grid() == [16, 32, 64]
    assert len(c) == 3
    assert c.validate(32) == 32
    assert Categorical([16, 32], label="w2", default=32).default == 32


def test_categorical_rejects_bad_values_with_label_and_allowed():
    c = Categorical([16, 32], label="width")
    with pytest.raises(
        InvalidArchError, match=r"invalid value 48 for label 'width': allowed one of \[16, 32\]"
    ):
        c.validate(48)
    # True == 1 in Python, but a flag is not a width.
    with pytest.raises(InvalidArchError):
        Categorical([0, 1], label="x").validate(True)


def test_categorical_accepts_json_forms():
    c = Categorical([(3, 3), (5, 5)], label="k")
    assert c.validate([5, 5]) == (5, 5)
    f = Categorical([0.5, 1.0], label="ratio")
    assert f.validate(1) == 1.0


def test_categorical_construction_errors():
    with pytest.raises(ValueError, match="at least one value"):
        Categorical([], label="a")
    with pytest.raises(ValueError, match="appears twice"):
        Categorical([1, 2, 1], label="a")
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        Categorical([object()], label="a")
    with pytest.raises(InvalidArchError):
        Categorical([1, 2], label="a", default=3)


def test_sampling_is_seeded_and_uniform():
    c = Categorical(list(range(5)), label="a")
    draws = [c.sample(random.Random(7)) for _ in range(3)]
    assert len(set(draws)) == 1
    rng = random.Random(0)
    counts = {v: 0 for v in range(5)}
    for _ in range(5000):
        counts[c.sample(rng)] += 1
    assert all(900 < n < 1100 for n in counts.values()), counts


def test_categorical_multiple():
    c = CategoricalMultiple([0, 1, 2, 3], n_chosen=2, label="in")
    assert c.default == [0, 1]
    assert len(c.grid()) == 6
    assert c.validate([3, 1]) == [1, 3]
    assert CategoricalMultiple([0, 1], n_chosen=1, label="one").validate(1) == [1]
    with pytest.raises(InvalidArchError, match="expected 2 chosen"):
        c.validate([1])
    with pytest.raises(InvalidArchError, match="repeated"):
        c.validate([1, 1])
    with pytest.raises(InvalidArchError, match="label 'in'"):
        c.validate([7, 1])
    rng = random.Random(3)
    for _ in range(50):
        v = c.sample(rng)
        assert v == sorted(v) and len(set(v)) == 2
    with pytest.raises(ValueError, match="n_chosen must be between 1 and 4"):
        CategoricalMultiple([0, 1, 2, 3], n_chosen=5, label="x")


def test_any_subset():
    c = CategoricalMultiple([0, 1, 2], n_chosen=None, label="any")
    assert len(c.grid()) == 8  # 2**3 subsets, the empty one included
    assert c.validate([]) == []


def test_values_round_trip_json():
    for c in (
        Categorical(["a", 1, 2.5, None, [1, 2]], label="mix"),
        CategoricalMultiple([0, 1, 2], n_chosen=2, label="m"),
    ):
        for v in c.grid():
            assert c.validate(json.loads(json.dumps(v))) == v
