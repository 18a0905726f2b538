"""The NAS-Bench-201 table built from the benchmark's release format, offline: a small release
folder is written here in NATS-Bench's "simple" format (bz2-compressed pickles of per-seed runs),
converted, and read back by the evaluator."""

from __future__ import annotations

import bz2
import collections
import hashlib
import os
import pickle

import numpy as np
import pytest

from nasx.evaluator import NasBench201Evaluator
from nasx.evaluator.nasbench201 import default_table_path
from nasx.evaluator.nasbench201_release import COLUMNS, TABLE_MD5, convert_release, main
from nasx.hub.nasbench201 import nb201_string_to_arch

ARCHS = [
    "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
]
SPLITS = {"cifar10-valid": ("x-valid", "ori-test"), "cifar10": ("ori-test",)}
SPLITS |= {d: ("x-valid", "x-test", "ori-test") for d in ("cifar100", "ImageNet16-120")}


def _run(epochs: int, accuracy: float) -> dict:
    """One seed's run: accuracies per split and epoch; the last epoch's value is ``accuracy``
    plus an offset per split, earlier epochs lower (so reading the wrong epoch shows)."""
    offsets = {"x-valid": 0.0, "x-test": 1.0, "ori-test": 2.0}
    return {
        "epochs": epochs,
        "eval_acc1es": collections.OrderedDict(
            (f"{split}@{e}", np.float64(accuracy + offset - (epochs - 1 - e)))
            for split, offset in offsets.items()
            for e in range(epochs)
        ),
    }


def _schedule(index: int, epochs: int, seeds: dict[str, list[int]]) -> dict:
    # accuracy = 10 * index + 1000 / epochs + seed / 100 + dataset number: every source differs
    runs = {
        (dataset, seed): _run(epochs, 10 * index + 1000 / epochs + seed / 100 + number)
        for number, dataset in enumerate(SPLITS)
        for seed in seeds[dataset]
    }
    return {
        "arch_index": index,
        "arch_str": ARCHS[index],
        "all_results": runs,
        "dataset_seed": seeds,
    }


def write_release(folder, indexes=(0, 1)):
    """Files named and shaped as NATS-tss-v1_0-3ffb9-simple's (meta + one file per arch)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"meta_archs": ARCHS, "total_archs": len(ARCHS), "arch2infos": None}
    (folder / "meta.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(meta)))
    for i in indexes:
        arch = collections.OrderedDict(
            [
                ("12", _schedule(i, 12, {d: [111, 777] for d in SPLITS})),
                ("200", _schedule(i, 200, {d: [777, 888, 999] for d in SPLITS})),
            ]
        )
        (folder / f"{i:06d}.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(arch)))
    return folder


def _expected_row(index: int) -> list[str]:
    """By hand: the mean over seeds of the last epoch, where each column reads it."""

    def value(epochs, dataset, offset, seeds):
        base = 10 * index + 1000 / epochs + list(SPLITS).index(dataset) + offset
        return f"{base + sum(seeds) / len(seeds) / 100:.4f}"

    s12, s200 = [111, 777], [777, 888, 999]
    return [
        str(index),
        ARCHS[index],
        value(12, "cifar10-valid", 0.0, s12),  # cifar10_valid_12ep: x-valid of cifar10-valid
        value(12, "cifar10", 2.0, s12),  # cifar10_test_12ep: ori-test of cifar10
        value(12, "cifar100", 0.0, s12),
        value(12, "cifar100", 1.0, s12),  # x-test
        value(12, "ImageNet16-120", 0.0, s12),
        value(12, "ImageNet16-120", 1.0, s12),
        value(200, "cifar10", 2.0, s200),  # cifar10_test_200ep: ori-test of cifar10
        value(200, "cifar100", 1.0, s200),
        value(200, "ImageNet16-120", 1.0, s200),
    ]


def test_a_release_converts_to_the_columns_the_evaluator_reads(tmp_path):
    out = convert_release(
        write_release(tmp_path / "release"), tmp_path / "nb201.csv", allow_partial=True
    )
    lines = out.read_text().splitlines()
    assert lines[0].split(",") == list(COLUMNS)
    assert [line.split(",") for line in lines[1:]] == [_expected_row(0), _expected_row(1)]
    # the evaluator reads the converted table: 12-epoch validation is the metric
    ev = NasBench201Evaluator("cifar100", path=out)
    got = ev.evaluate(None, arch=nb201_string_to_arch(ARCHS[1]))
    assert got["default"] == pytest.approx(float(_expected_row(1)[4]))
    assert got["test_200ep"] == pytest.approx(float(_expected_row(1)[9]))


def test_an_incomplete_release_is_refused_unless_asked(tmp_path):
    release = write_release(tmp_path / "release", indexes=(1,))
    with pytest.raises(ValueError, match=r"holds 1 of the 15625 archs"):
        convert_release(release, tmp_path / "nb201.csv")
    assert not (tmp_path / "nb201.csv").exists()


def test_a_folder_that_is_not_a_release_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no meta.pickle.pbz2.*NATS-tss-v1_0-3ffb9-simple"):
        convert_release(tmp_path, tmp_path / "nb201.csv")


def test_a_release_file_with_code_in_it_is_refused(tmp_path):
    release = write_release(tmp_path / "release", indexes=(0,))
    # a pickle that would call os.getcwd when loaded by plain pickle.load
    (release / "000001.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(os.getcwd)))
    with pytest.raises(pickle.UnpicklingError, match=r"posix.getcwd|os.getcwd|nt.getcwd"):
        convert_release(release, tmp_path / "nb201.csv", allow_partial=True)


def test_an_arch_that_disagrees_with_the_meta_file_is_refused(tmp_path):
    release = write_release(tmp_path / "release", indexes=(0,))
    (release / "000000.pickle.pbz2").rename(release / "000001.pickle.pbz2")
    with pytest.raises(ValueError, match=r"is not entry 1 of"):
        convert_release(release, tmp_path / "nb201.csv", allow_partial=True)


def test_the_command_writes_into_the_cache_where_the_evaluator_finds_it(
    tmp_path, monkeypatch, capsys
):
    import nasx.evaluator.nasbench201_release as release_module

    monkeypatch.setenv("NASX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NASX_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setattr("nasx.datasets.locate._repo_root", lambda: tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(release_module, "NUM_ARCHS", 2)  # a full "release" of two archs
    assert main([str(write_release(tmp_path / "release"))]) == 0
    written = tmp_path / "cache" / "data" / "nb201" / "nb201.csv"
    digest = hashlib.md5(written.read_bytes()).hexdigest()
    assert f"wrote {written}: 2 archs, md5 {digest} (not {TABLE_MD5})" in capsys.readouterr().out
    assert default_table_path() == written
