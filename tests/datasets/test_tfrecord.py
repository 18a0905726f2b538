"""TFRecord framing and tf.train.Example encoding: check values, a protobuf reference, corruption."""

from __future__ import annotations

import io
import os
import random
import struct

import pytest

from nasx.datasets import tfrecord
from nasx.datasets.tfrecord import (
    TFRecordError,
    crc32c_python,
    decode_example,
    encode_example,
    iter_records,
    masked_crc,
    read_records,
    write_record,
)


def test_crc32c_check_values_and_the_fast_path_agree():
    assert crc32c_python(b"123456789") == 0xE3069283  # RFC 3720 check value
    assert crc32c_python(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4: 32 bytes of zeros
    assert crc32c_python(b"\xff" * 32) == 0x62A8AB43  # RFC 3720 B.4: 32 bytes of ones
    assert crc32c_python(b"The quick brown fox jumps over the lazy dog") == 0x22620404
    rng = random.Random(0)
    data = bytes(rng.randrange(256) for _ in range(5000))
    assert tfrecord.crc32c(data) == crc32c_python(data)


def test_masked_crc_and_framing():
    # the masked CRC of a published test vector (the tfrecord_slow package's test suite)
    assert masked_crc(b"1234567890asdfghjkl") == 4134599430
    assert masked_crc(b"") == 0xA282EAD8  # crc 0, so only the mask's constant
    length = struct.pack("<Q", 5)
    framed = length + struct.pack("<I", masked_crc(length)) + b"hello"
    framed += struct.pack("<I", masked_crc(b"hello"))
    buf = io.BytesIO()
    write_record(buf, b"hello")
    assert buf.getvalue() == framed
    assert list(iter_records(io.BytesIO(framed))) == [b"hello"]


def _reference_example_class():
    """tf.train.Example built from its .proto definition with the protobuf runtime."""
    pytest.importorskip("google.protobuf", reason="protobuf is not installed")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="nasx_example_ref.proto", package="nasxref")
    F = descriptor_pb2.FieldDescriptorProto

    def msg(name, fields, nested=()):
        m = fdp.message_type.add(name=name) if not nested else nested
        for num, fname, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
        return m

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("BytesList", [(1, "value", F.TYPE_BYTES, rep, None)])
    fl = msg("FloatList", [(1, "value", F.TYPE_FLOAT, rep, None)])
    fl.field[0].options.packed = True
    il = msg("Int64List", [(1, "value", F.TYPE_INT64, rep, None)])
    il.field[0].options.packed = True
    feat = msg(
        "Feature",
        [
            (1, "bytes_list", F.TYPE_MESSAGE, opt, ".nasxref.BytesList"),
            (2, "float_list", F.TYPE_MESSAGE, opt, ".nasxref.FloatList"),
            (3, "int64_list", F.TYPE_MESSAGE, opt, ".nasxref.Int64List"),
        ],
    )
    feat.oneof_decl.add(name="kind")
    for f in feat.field:
        f.oneof_index = 0
    feats = fdp.message_type.add(name="Features")
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(
        name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".nasxref.Feature"
    )
    feats.field.add(
        name="feature",
        number=1,
        type=F.TYPE_MESSAGE,
        label=rep,
        type_name=".nasxref.Features.FeatureEntry",
    )
    msg("Example", [(1, "features", F.TYPE_MESSAGE, opt, ".nasxref.Features")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("nasxref.Example"))


def test_example_encoding_matches_the_protobuf_runtime_both_ways():
    Example = _reference_example_class()
    values = {
        "image/encoded": [b"\xff\xd8jpeg", b""],
        "image/class/label": [3, -5, 2**40],
        "image/object/bbox/xmin": [0.25, 0.5],
        "empty": [],
    }
    ref = Example.FromString(encode_example(values))
    assert list(ref.features.feature["image/encoded"].bytes_list.value) == values["image/encoded"]
    assert list(ref.features.feature["image/class/label"].int64_list.value) == [3, -5, 2**40]
    assert list(ref.features.feature["image/object/bbox/xmin"].float_list.value) == [0.25, 0.5]
    assert decode_example(ref.SerializeToString()) == values
    # unpacked repeated scalars (allowed on the wire) decode too
    ex = Example()
    ex.features.feature["f"].float_list.value.extend([1.5])
    assert decode_example(ex.SerializeToString()) == {"f": [1.5]}


def test_bad_feature_values_are_refused():
    with pytest.raises(TypeError, match="feature 'x': values must be all bytes, all ints"):
        encode_example({"x": [1, b"a"]})


def write(path, records):
    with open(path, "wb") as f:
        for r in records:
            write_record(f, r)


def test_corrupted_and_truncated_records_raise_clear_errors(tmp_path):
    path = tmp_path / "data.tfrecord"
    write(path, [b"first record", b"second record"])
    assert list(read_records(path)) == [b"first record", b"second record"]
    raw = bytearray(path.read_bytes())
    second = 8 + 4 + len(b"first record") + 4
    raw[second + 12 + 3] ^= 0xFF  # flip a data byte of record 1
    path.write_bytes(bytes(raw))
    with pytest.raises(
        TFRecordError, match=rf"data.tfrecord: record 1 at byte {second}: the data's CRC"
    ):
        list(read_records(path))
    assert len(list(read_records(path, check_crc=False))) == 2
    raw[0] ^= 0x01  # corrupt the first length
    path.write_bytes(bytes(raw))
    with pytest.raises(TFRecordError, match="record 0 at byte 0: the length's CRC"):
        list(read_records(path))
    write(path, [b"abc"])
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(TFRecordError, match="record 0 at byte 0 is truncated"):
        list(read_records(path))
    assert os.path.getsize(path) > 0


def gzip_by_hand(payload: bytes) -> bytes:
    """A gzip member built from RFC 1952 directly: header, raw deflate, CRC-32, size."""
    import zlib

    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(payload) + deflate.flush()
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00\xff"  # no name, mtime 0, OS unknown
    return header + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def test_gzip_files_read_like_tensorflow_writes_them_and_round_trip(tmp_path):
    from nasx.datasets.tfrecord import detect_compression, open_records

    records = [b"first record", b"", encode_example({"image/class/label": [7]})]
    plain = io.BytesIO()
    for r in records:
        write_record(plain, r)
    # TF's GZIP option: the whole framed stream inside one gzip stream
    hand = tmp_path / "hand.tfrecord"
    hand.write_bytes(gzip_by_hand(plain.getvalue()))
    assert detect_compression(hand) == "gzip"
    assert list(read_records(hand)) == records  # 'auto'
    assert list(read_records(hand, compression="GZIP")) == records
    with pytest.raises(TFRecordError, match="the length's CRC"):
        list(read_records(hand, compression=None))  # read as plain: not a TFRecord file
    # our writer, read back; the bytes are reproducible (no time stamp in the header)
    ours = tmp_path / "ours.tfrecord.gz"
    written = []
    for _ in range(2):
        with open_records(ours, "wb", compression="gzip") as f:
            for r in records:
                write_record(f, r)
        written.append(ours.read_bytes())
    first = written[0]
    assert written[1] == first and first[:2] == b"\x1f\x8b"
    assert list(read_records(ours)) == records
    assert __import__("gzip").decompress(first) == plain.getvalue()
    # a plain file is still read as plain, and its detection does not guess gzip
    plain_path = tmp_path / "plain.tfrecord"
    plain_path.write_bytes(plain.getvalue())
    assert detect_compression(plain_path) == "none"
    assert list(read_records(plain_path)) == records


def test_plain_file_whose_first_length_looks_like_gzip_magic_is_read_as_plain(tmp_path):
    record = bytes(0x8B1F)  # little-endian length 1f 8b 00 ..: the gzip magic number
    path = tmp_path / "plain.tfrecord"
    write(path, [record])
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert list(read_records(path)) == [record]


def test_damaged_gzip_and_bad_compression_names(tmp_path):
    from nasx.datasets.tfrecord import open_records

    path = tmp_path / "data.tfrecord.gz"
    with open_records(path, "wb", compression="GZIP") as f:
        for i in range(50):
            write_record(f, bytes([i]) * 200)
    path.write_bytes(path.read_bytes()[:-30])  # cut the end of the deflate stream
    with pytest.raises(TFRecordError, match=r"data.tfrecord.gz: the gzip stream is damaged"):
        list(read_records(path))
    with pytest.raises(ValueError, match="ZLIB files are not supported"):
        list(read_records(path, compression="ZLIB"))
    with pytest.raises(ValueError, match="compression must be one of 'none', 'gzip'"):
        open_records(tmp_path / "x", "wb", compression="auto")


# ----------------------------------------------------------------------------- forged lengths
def forged_header(length: int) -> bytes:
    """A record header claiming ``length`` data bytes, with a valid length CRC (as a forger
    would write it: the CRC protects against accidents, not against intent)."""
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", masked_crc(raw))


def peak_and_error(fn):
    """(peak bytes allocated while ``fn`` ran, the TFRecordError it raised)."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
    except TFRecordError as e:
        error = e
    else:
        raise AssertionError("no TFRecordError")
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, str(error)


def test_a_small_gzip_file_claiming_a_2_gib_record_allocates_nothing(tmp_path):
    import gzip

    path = tmp_path / "forged.tfrecord.gz"
    body = forged_header(2**31) + random.Random(0).randbytes(2 * 2**20)  # 2 MB of real data
    path.write_bytes(gzip.compress(body, mtime=0))
    assert os.path.getsize(path) < 3 * 2**20
    peak, error = peak_and_error(lambda: list(read_records(path)))
    assert peak < 2**20  # refused from the header alone
    assert error.startswith(f"{path}: record 0 at byte 0 claims 2147483648 bytes")
    assert f"max_record_bytes={tfrecord.MAX_RECORD_BYTES}" in error
    # without a limit the reader still allocates only about what the file really holds
    peak, error = peak_and_error(lambda: list(read_records(path, max_record_bytes=None)))
    assert peak < 64 * 2**20
    assert "record 0 at byte 0 is truncated (2097152 of 2147483648 data bytes)" in error


@pytest.mark.parametrize("length", [2**36, 2**50, 2**63, 2**64 - 1])
@pytest.mark.parametrize("limit", [tfrecord.MAX_RECORD_BYTES, None], ids=["default", "no-limit"])
def test_huge_lengths_give_nasx_error_with_the_file_name(tmp_path, length, limit):
    path = tmp_path / "huge.tfrecord"
    with open(path, "wb") as f:
        write_record(f, b"a good first record")
        f.write(forged_header(length) + b"only a few bytes")
    expected = "claims" if limit else "is truncated"
    with pytest.raises(TFRecordError, match=rf"huge.tfrecord: record 1 at byte 35 {expected}"):
        list(read_records(path, max_record_bytes=limit))
    with pytest.raises(TFRecordError, match=rf"huge.tfrecord: record 1 at byte 35 {expected}"):
        tfrecord.count_records(path, max_record_bytes=limit)
    # check_crc=False reads garbage lengths as lengths: the limit still stops them
    with pytest.raises(TFRecordError, match="claims"):
        list(read_records(path, check_crc=False))


def test_the_limit_is_configurable_and_checked(tmp_path):
    path = tmp_path / "data.tfrecord"
    write(path, [b"x" * 100, b"y" * 1000])
    assert [len(r) for r in read_records(path, max_record_bytes=1000)] == [100, 1000]
    with pytest.raises(
        TFRecordError,
        match="record 1 at byte 116 claims 1000 bytes, more than max_record_bytes=999",
    ):
        list(read_records(path, max_record_bytes=999))
    for bad in (0, -5, 1.5, "1MB", True):
        with pytest.raises(
            ValueError, match=r"max_record_bytes must be a positive integer or None"
        ):
            list(read_records(path, max_record_bytes=bad))


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_count_records_checks_each_length_crc_and_skips_the_data(tmp_path, gz):
    from nasx.datasets.tfrecord import count_records, open_records

    path = tmp_path / ("data.tfrecord.gz" if gz else "data.tfrecord")
    records = [bytes([i]) * (i * 1000 + 1) for i in range(5)]
    with open_records(path, "wb", compression="gzip" if gz else None) as f:
        for r in records:
            write_record(f, r)
    assert count_records(path) == 5
    if gz:
        return
    raw = bytearray(path.read_bytes())
    third = sum(16 + len(r) for r in records[:2])
    raw[third + 2] ^= 0x01  # one flipped bit in record 2's length
    path.write_bytes(bytes(raw))
    with pytest.raises(
        TFRecordError, match=rf"data.tfrecord: record 2 at byte {third}: the length's CRC"
    ):
        count_records(path)
    raw[third + 2] ^= 0x01
    path.write_bytes(bytes(raw[:-3]))  # the last record's data CRC cut short
    with pytest.raises(TFRecordError, match=r"record 4 at byte \d+ is truncated"):
        count_records(path)
