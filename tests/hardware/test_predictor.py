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
