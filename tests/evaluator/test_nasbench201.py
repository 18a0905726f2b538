"""NasBench201Evaluator: table lookups against the published values, errors, and an experiment."""

from __future__ import annotations

import pytest

from nasx.datasets.locate import DataNotFoundError
from nasx.evaluator.nasbench201 import (
    NasBench201Evaluator,
    NasBench201Table,
    default_table_path,
    nb201_arch,
)
from nasx.hub.nasbench201 import nb201_string_to_arch

ALL_SKIP = "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|"


def _real_table():
    try:
        return default_table_path()
    except DataNotFoundError as e:
        pytest.skip(f"NAS-Bench-201 table not available: {e}")


def test_real_table_matches_the_published_values():
    path = _real_table()
    table = NasBench201Table(path)
    assert len(table) == 15625
    # The published optima of the 200-epoch test accuracy (Dong & Yang 2020, table 5).
    for dataset, best in [("cifar10", 94.37), ("cifar100", 73.51), ("imagenet16", 47.31)]:
        assert round(float(table.column(f"{dataset}_test_200ep").max()), 2) == best
    # DARTS's collapse in the paper: the all-skip cell, 54.30 on CIFAR-10.
    ev = NasBench201Evaluator(path=path)
    assert round(ev.query(nb201_string_to_arch(ALL_SKIP))["test_200ep"], 2) == 54.30
    # Row 0 of the file, read by hand.
    assert ev.evaluate(None, arch=nb201_arch(0, path)) == {
        "default": 63.364,
        "test_12ep": 69.55,
        "test_200ep": 85.8633,
    }
    c100 = NasBench201Evaluator("cifar100", path=path).query(nb201_arch(0, path))
    assert c100 == {"default": 31.84, "test_12ep": 31.26, "test_200ep": 52.9133}


def _write(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


HEADER = "index,arch,cifar10_valid_12ep,cifar10_test_12ep,cifar10_test_200ep"


def test_time_column_and_clear_errors(tmp_path):
    path = _write(
        tmp_path, HEADER + ",cifar10_train_seconds\n0," + ALL_SKIP + ",50.0,51.0,54.3,12.5\n"
    )
    arch = nb201_string_to_arch(ALL_SKIP)
    ev = NasBench201Evaluator(path=path, time_column="cifar10_train_seconds")
    assert ev.query(arch) == {
        "default": 50.0,
        "test_12ep": 51.0,
        "test_200ep": 54.3,
        "train_seconds": 12.5,
    }
    with pytest.raises(KeyError, match="no column 'cifar10_time'.*cifar10_test_200ep"):
        NasBench201Evaluator(path=path, time_column="cifar10_time")
    with pytest.raises(KeyError, match="no column 'cifar100_valid_12ep'"):
        NasBench201Evaluator("cifar100", path=path)
    with pytest.raises(ValueError, match="dataset must be one of"):
        NasBench201Evaluator("mnist", path=path)
    with pytest.raises(TypeError, match="evaluate\\(model, arch="):
        ev.evaluate(None)
    other = dict(arch, **{"cell/0_1": "conv_3x3"})
    with pytest.raises(KeyError, match="is not in the NAS-Bench-201 table"):
        ev.query(other)
    with pytest.raises(ValueError, match="invalid value 'conv_5x5' for label 'cell/0_1'"):
        ev.query(dict(arch, **{"cell/0_1": "conv_5x5"}))


def test_missing_table_names_where_it_looked(tmp_path, monkeypatch):
    import nasx.datasets.locate as locate

    monkeypatch.setattr(locate, "_data_dir_candidates", lambda: [tmp_path / "nowhere"])
    with pytest.raises(DataNotFoundError, match="(?s)nowhere.*NASX_DATA_DIR"):
        NasBench201Evaluator()


def test_experiment_records_the_table_and_builds_no_model(tmp_path):
    from nasx.experiment import NasExperiment
    from nasx.hub import NasBench201
    from nasx.strategy import Random

    path = _real_table()
    ev = NasBench201Evaluator(path=path)
    space = NasBench201(stem_out_channels=2, num_modules_per_stack=1)
    exp = NasExperiment(space, ev, Random(seed=0), max_trials=20, workdir=tmp_path)
    exp.run()
    assert exp.build_model is False
    trials = exp.trials("succeeded")
    assert len(trials) == 20
    for t in trials:
        assert t.metrics == ev.query(t.arch) and t.metric == t.metrics["default"]
