"""TFRecord image datasets: round trips (tensors, image folder), shuffling, workers, detection."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from nasx.datasets.tfrecord import TFRecordError, decode_example, read_records, write_record
from nasx.datasets.tfrecord_images import (
    TFRecordImageDataset,
    encode_image,
    image_example,
    write_image_folder,
    write_shards,
)


def samples(n=12, size=6):
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n, 3, size, size), generator=g, dtype=torch.uint8)
    return [(images[i], i % 4) for i in range(n)]


def test_round_trip_png_is_exact_and_shards_split_the_records(tmp_path):
    src = samples()
    paths = write_shards(src, tmp_path / "train", num_shards=3, image_format="png")
    assert [p.name for p in paths] == [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert [len(list(read_records(p))) for p in paths] == [4, 4, 4]
    ds = TFRecordImageDataset(tmp_path / "train-*.tfrecord")
    assert len(ds) == 12
    got = sorted(((y, (x * 255).round().to(torch.uint8)) for x, y in ds), key=lambda t: t[1].sum())
    want = sorted(((y, x) for x, y in src), key=lambda t: t[1].sum())
    for (gy, gx), (wy, wx) in zip(got, want):
        assert gy == wy and torch.equal(gx, wx)
    example = decode_example(next(read_records(paths[0])))
    assert example["image/format"] == [b"png"] and example["image/height"] == [6]


def test_jpeg_round_trip_is_close_and_class_text_is_written(tmp_path):
    smooth = torch.linspace(0, 1, 16).repeat(3, 16, 1)  # a gradient survives JPEG well
    write_shards([(smooth, 1)], tmp_path / "j", class_names=["cat", "dog"])
    ((x, y),) = list(TFRecordImageDataset(str(tmp_path / "j-00000-of-00001.tfrecord")))
    assert y == 1 and (x - smooth).abs().mean() < 0.02
    example = decode_example(next(read_records(tmp_path / "j-00000-of-00001.tfrecord")))
    assert example["image/class/text"] == [b"dog"]


def test_shuffle_buffer_permutes_and_changes_with_the_epoch(tmp_path):
    src = [(torch.full((3, 2, 2), i, dtype=torch.uint8), i) for i in range(40)]
    write_shards(src, tmp_path / "s", num_shards=4, image_format="png")
    plain = [y for _, y in TFRecordImageDataset(tmp_path / "s-*")]
    assert plain == [i for shard in range(4) for i in range(shard, 40, 4)]  # file order
    ds = TFRecordImageDataset(tmp_path / "s-*", shuffle_buffer=8, seed=1)
    first = [y for _, y in ds]
    assert sorted(first) == list(range(40)) and first != plain
    assert [y for _, y in ds] == first  # same seed and epoch: same order
    ds.set_epoch(1)
    assert [y for _, y in ds] != first


def test_dataloader_workers_read_each_record_once(tmp_path, monkeypatch):
    write_shards(samples(8), tmp_path / "w", num_shards=4, image_format="png")
    ds = TFRecordImageDataset(tmp_path / "w-*", shuffle_buffer=4)
    loader = DataLoader(ds, batch_size=2, num_workers=2)
    labels = torch.cat([y for _, y in loader]).tolist()
    assert sorted(labels) == sorted(y for _, y in samples(8))
    # Fewer shards than readers: each reader checks, here as worker 0 of 2 in this process. Real
    # workers raise the same error to the caller, but torch then takes 10 s to shut down the
    # failed workers (5 s join timeout each), which once stalled this suite's worker.
    worker = SimpleNamespace(id=0, num_workers=2)
    monkeypatch.setattr("nasx.datasets.tfrecord_images.get_worker_info", lambda: worker)
    with pytest.raises(ValueError, match="1 TFRecord shard.s. cannot be split over 2 readers"):
        list(TFRecordImageDataset(tmp_path / "w-00000-of-00004.tfrecord"))


def test_detection_fields(tmp_path):
    data, h, w = encode_image(torch.zeros(3, 10, 20), "png")
    record = image_example(
        data, h, w, boxes=[(0.1, 0.2, 0.5, 1.0), (0.0, 0.0, 1.0, 0.5)], box_labels=[3, 7]
    )
    with open(tmp_path / "det.tfrecord", "wb") as f:
        write_record(f, record)
        write_record(f, image_example(data, h, w, boxes=[], box_labels=[]))
    ds = TFRecordImageDataset(tmp_path / "det.tfrecord", task="detection")
    (image, target), (_, empty) = list(ds)
    assert image.shape == (3, 10, 20)
    torch.testing.assert_close(
        target["boxes"], torch.tensor([[2.0, 2.0, 10.0, 10.0], [0.0, 0.0, 20.0, 5.0]])
    )
    assert target["labels"].tolist() == [3, 7]
    assert empty["boxes"].shape == (0, 4) and empty["labels"].shape == (0,)


def test_image_folder_writer_keeps_jpeg_bytes(tmp_path):
    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    originals = {}
    for cls in ("b_dog", "a_cat"):
        (root / cls).mkdir(parents=True)
        for i, fmt in enumerate(("JPEG", "PNG")):
            img = Image.fromarray(rng.integers(0, 255, (5, 7, 3), dtype=np.uint8))
            path = root / cls / f"{i}.{fmt.lower()}"
            img.save(path, format=fmt)
            originals[(cls, path.name)] = path.read_bytes()
    (root / "notes.txt").write_text("not a class folder")
    paths = write_image_folder(root, tmp_path / "out" / "train", num_shards=2)
    examples = [decode_example(r) for p in paths for r in read_records(p)]
    assert len(examples) == 4
    for ex in examples:
        cls = ex["image/class/text"][0].decode()
        name = ex["image/filename"][0].decode()
        assert ex["image/class/label"] == [["a_cat", "b_dog"].index(cls)]
        if name.endswith(".jpeg"):
            assert ex["image/encoded"][0] == originals[(cls, name)]  # stored as it is
        else:  # PNG: re-encoded losslessly
            a = np.asarray(Image.open(io.BytesIO(ex["image/encoded"][0])))
            assert np.array_equal(a, np.asarray(Image.open(io.BytesIO(originals[(cls, name)]))))
        assert (ex["image/height"], ex["image/width"]) == ([5], [7])
    labels = sorted(y for _, y in TFRecordImageDataset(tmp_path / "out"))
    assert labels == [0, 0, 1, 1]


def test_corrupt_shard_and_bad_arguments(tmp_path):
    write_shards(samples(2), tmp_path / "c", image_format="png")
    path = tmp_path / "c-00000-of-00001.tfrecord"
    raw = bytearray(path.read_bytes())
    raw[40] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(TFRecordError, match="c-00000-of-00001.tfrecord: record 0 at byte 0"):
        list(TFRecordImageDataset(path))
    with pytest.raises(FileNotFoundError, match="no TFRecord files match"):
        TFRecordImageDataset(tmp_path / "nothing-*")
    with pytest.raises(ValueError, match="task must be one of"):
        TFRecordImageDataset(path, task="keypoints")


def test_gzip_shards_round_trip_and_mix_with_plain_ones(tmp_path):
    src = samples(8)
    gz = write_shards(
        src, tmp_path / "gz" / "train", num_shards=2, image_format="png", compression="GZIP"
    )
    assert [p.name for p in gz] == [f"train-0000{i}-of-00002.tfrecord.gz" for i in range(2)]
    assert all(p.read_bytes()[:2] == b"\x1f\x8b" for p in gz)
    plain = write_shards(src, tmp_path / "plain" / "train", image_format="png")
    ds = TFRecordImageDataset([*gz, *plain])  # 'auto' tells them apart file by file
    assert len(ds) == 16
    got = sorted(((y, (x * 255).round().to(torch.uint8)) for x, y in ds), key=lambda t: t[1].sum())
    want = sorted(((y, x) for x, y in src * 2), key=lambda t: t[1].sum())
    for (gy, gx), (wy, wx) in zip(got, want):
        assert gy == wy and torch.equal(gx, wx)
    assert len(TFRecordImageDataset(gz, compression="gzip")) == 8
    with pytest.raises(ValueError, match="compression must be one of"):
        TFRecordImageDataset(gz, compression="zip")


def test_len_checks_the_length_crc_as_iterating_does(tmp_path):
    """One flipped length bit: len(ds) and len(DataLoader) raise nasx's error, as iterating does."""
    write_shards(samples(4), tmp_path / "s", image_format="png")
    path = tmp_path / "s-00000-of-00001.tfrecord"
    assert len(TFRecordImageDataset(path)) == 4
    raw = bytearray(path.read_bytes())
    second = 16 + int.from_bytes(raw[:8], "little")
    raw[second + 1] ^= 0x04  # record 1's length, one bit
    path.write_bytes(bytes(raw))
    match = rf"s-00000-of-00001.tfrecord: record 1 at byte {second}: the length's CRC"
    with pytest.raises(TFRecordError, match=match):
        list(TFRecordImageDataset(path))
    with pytest.raises(TFRecordError, match=match):
        len(TFRecordImageDataset(path))
    with pytest.raises(TFRecordError, match=match):
        len(DataLoader(TFRecordImageDataset(path), batch_size=2))


def test_max_record_bytes_reaches_the_reader_and_len(tmp_path):
    write_shards(samples(3, size=16), tmp_path / "m", image_format="png")
    path = tmp_path / "m-00000-of-00001.tfrecord"
    small = TFRecordImageDataset(path, max_record_bytes=64)
    with pytest.raises(TFRecordError, match=r"claims \d+ bytes, more than max_record_bytes=64"):
        next(iter(small))
    with pytest.raises(TFRecordError, match="more than max_record_bytes=64"):
        len(small)
    assert len(TFRecordImageDataset(path, max_record_bytes=None)) == 3
    with pytest.raises(ValueError, match="max_record_bytes must be a positive integer or None"):
        TFRecordImageDataset(path, max_record_bytes=0)
