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
