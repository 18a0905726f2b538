"""LatencyTable: block keys, sums, measuring once, meta models, files keyed by device."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from nasx.hardware.cost import build_on
from nasx.hardware.predictor import LatencyTable, MissingEntryError
from nasx.hardware.shapes import block_key
from nasx.hub.mnasnet import MNASNET_A1, MnasLayer, MnasNet


def fast_table(**kw):
    return LatencyTable(warmup=0, repeats=2, **kw)


def test_prediction_is_the_sum_of_the_entries_and_measures_once():
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
    table = fast_table()
    ms = table.predict(net, (8,))
    # relu at 16 and relu at 8 are different entries (different input shapes)
    assert len(table) == 4 and table.measured == 4
    assert ms == pytest.approx(sum(table.entries.values()))
    table.entries = {k: 1.0 for k in table.entries}  # a known table: the sum is exact
    assert table.predict(net, (8,)) == 4.0
    assert table.measured == 4  # nothing measured again


def test_shared_blocks_share_an_entry_and_repeated_calls_count():
    lin = nn.Linear(4, 4)
    net = nn.Sequential(lin, lin, nn.Linear(4, 4))  # the same block twice, an equal one after
    table = fast_table()
    table.predict(net, (4,))
    assert len(table) == 1  # one key: same class, config and input shape
    table.entries = {k: 2.0 for k in table.entries}
    assert table.predict(net, (4,)) == 6.0


def test_block_types_time_whole_blocks_and_keys_see_plain_attributes():
    space = MnasNet(num_classes=10)
    model = build_on(space, MNASNET_A1, "meta")
    table = fast_table(block_types=(MnasLayer,))
    blocks = table.blocks(model, (3, 32, 32))
    layers = [m for _, m, _ in blocks if isinstance(m, MnasLayer)]
    assert len(layers) == sum(MNASNET_A1[f"block{b}/repeats"] for b in range(1, 8))
    # stem conv/bn/relu, head conv/bn/relu, dropout, classifier outside the blocks
    assert len(blocks) - len(layers) == 8
    a = MnasLayer(16, 16, 1, "mbconv", 6, 3, 0.0, "identity")
    b = MnasLayer(16, 16, 1, "mbconv", 6, 3, 0.0, "none")  # same modules, no residual
    assert block_key(a, (1, 16, 8, 8)) != block_key(b, (1, 16, 8, 8))


def test_meta_model_blocks_are_materialised_to_be_measured():
    space = MnasNet(num_classes=10)
    table = fast_table(block_types=(MnasLayer,))
    ms = table.predict(build_on(space, MNASNET_A1, "meta"), (3, 32, 32))
    assert ms > 0 and table.measured == len(table)
    n = len(table)
    # the same arch built for real predicts from the table without measuring
    assert table.predict(space.freeze(MNASNET_A1), (3, 32, 32)) == pytest.approx(ms)
    assert len(table) == n


def test_save_and_load_keep_one_section_per_device(tmp_path):
    path = tmp_path / "lat.json"
    net = nn.Sequential(nn.Linear(4, 4))
    t1 = fast_table(threads=1)
    t1.predict(net, (4,))
    t1.save(path)
    t2 = fast_table(threads=2)
    t2.entries = {"Linear(x)@1x4": 9.0}
    t2.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "nasx-latency-table/1"
    assert sorted(data["devices"]) == sorted([t1.device_key, t2.device_key])
    loaded = LatencyTable(threads=1, measure_missing=False).load(path)
    assert loaded.entries == t1.entries
    assert loaded.predict(net, (4,)) == pytest.approx(sum(t1.entries.values()))
    with pytest.raises(MissingEntryError, match="has no entry 'Linear"):
        loaded.predict(nn.Sequential(nn.Linear(4, 5)), (4,))
    with pytest.raises(ValueError, match="measured at batch size 1, this table uses 8"):
        LatencyTable(threads=1, batch_size=8).load(path)
    with pytest.raises(MissingEntryError, match="has no table for"):
        LatencyTable(threads=3).load(path, missing_ok=False)
    assert len(LatencyTable().load(tmp_path / "absent.json")) == 0
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a nasx latency table"):
        LatencyTable().load(tmp_path / "bad.json")


def test_fill_measures_the_blocks_of_archs_once():
    space = MnasNet(num_classes=10)
    table = fast_table(block_types=(MnasLayer,))
    n = table.fill(space, [MNASNET_A1, MNASNET_A1], (3, 32, 32))
    assert n == len(table) > 0
    assert table.fill(space, [MNASNET_A1], (3, 32, 32)) == 0
    assert torch.get_num_threads() >= 1


class Stack:
    """A 'space' whose arch {'n': k} is k equal Linear layers (a known table sums exactly)."""

    def freeze(self, arch):
        return nn.Sequential(*[nn.Linear(4, 4) for _ in range(arch["n"])])


LINEAR_KEY = "Linear(in_features=4, out_features=4, bias=True)@1x4"


def test_calibration_fits_a_robust_line_and_is_saved(tmp_path):
    table = fast_table()
    table.entries = {LINEAR_KEY: 1.0}
    archs = [{"n": n} for n in (1, 2, 3, 4, 5)]
    # measured = 1.5 * sum + 2 ms, one arch hit by a burst of load (x3)
    measured = [1.5 * n + 2 for n in (1, 2, 3, 4, 5)]
    measured[2] *= 3
    scale, offset = table.calibrate(Stack(), archs, (4,), measured=measured)
    assert (scale, offset) == pytest.approx((1.5, 2.0))  # Theil-Sen ignores the outlier
    assert table.predict(Stack().freeze({"n": 10}), (4,)) == pytest.approx(17.0)
    assert table.block_sum(Stack().freeze({"n": 10}), (4,)) == pytest.approx(10.0)
    path = tmp_path / "lat.json"
    table.save(path)
    loaded = fast_table(measure_missing=False).load(path)
    assert (loaded.scale, loaded.offset_ms, loaded.calibrated_on) == (scale, offset, 5)
    # one arch, or archs with equal sums: a scale alone
    assert table.calibrate(Stack(), [{"n": 2}], (4,), measured=[3.0]) == (1.5, 0.0)
    assert table.calibrate(Stack(), [{"n": 2}] * 2, (4,), measured=[3.0, 5.0]) == (2.0, 0.0)
    with pytest.raises(ValueError, match="2 measured latencies for 1 archs"):
        table.calibrate(Stack(), [{"n": 2}], (4,), measured=[3.0, 5.0])


def test_a_negative_overhead_falls_back_to_a_line_through_the_origin():
    # three archs timed on a busy machine: Theil-Sen's line through them has a negative offset
    # (a loaded CI run fitted 3.8 * sum - 20.4 ms), which predicts negative latencies for smaller
    # archs, and the MnasNet reward refuses those
    table = fast_table()
    table.entries = {LINEAR_KEY: 1.0}
    archs = [{"n": n} for n in (2, 6, 7)]
    measured = [1.0, 2.4, 6.2]  # slopes 0.35, 1.04, 3.8: median 1.04, offset median -1.08
    scale, offset = table.calibrate(Stack(), archs, (4,), measured=measured)
    assert (scale, offset) == (pytest.approx(0.5), 0.0)  # median of 1/2, 2.4/6, 6.2/7
    assert table.predict(Stack().freeze({"n": 1}), (4,)) == pytest.approx(0.5)


def test_calibration_measures_whole_models_when_not_given():
    table = fast_table()
    table.entries = {LINEAR_KEY: 1e-6}  # far below any real call: the fit must raise it
    scale, offset = table.calibrate(Stack(), [{"n": 1}, {"n": 8}], (4,), rounds=1)
    assert table.predict(Stack().freeze({"n": 8}), (4,)) > 1e-3
    assert table.calibrated_on == 2 and scale > 0
