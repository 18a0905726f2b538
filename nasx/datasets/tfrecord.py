"""TFRecord files and ``tf.train.Example`` records without TensorFlow.

A TFRecord file is a sequence of records, each framed as::

    uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)

(little-endian; ``masked(crc) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32``, CRC-32C is the
Castagnoli polynomial). The data of an image dataset is a serialised ``tf.train.Example``:
``Features{map<string, Feature>}`` with each ``Feature`` a list of bytes, floats or int64s. This
module reads and writes both with the standard library: the CRC is computed in Python, or by the
``crc32c`` package when it is installed (``pip install 'nasx[tfrecord]'``: about 100x faster on
large images).

Files may be GZIP-compressed as TensorFlow writes them with ``compression_type="GZIP"`` (one gzip
stream around the framed records): :func:`read_records` recognises them by themselves
(``compression='auto'``) and :func:`open_records` writes them.

    >>> import io
    >>> buf = io.BytesIO()
    >>> write_record(buf, encode_example({'image/class/label': [3], 'image/encoded': [b'...']}))
    >>> _ = buf.seek(0)
    >>> [decode_example(r) for r in iter_records(buf)]
    [{'image/class/label': [3], 'image/encoded': [b'...']}]
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, cast

from .._errors import NasxError

Feature = list[bytes] | list[float] | list[int]

# ----------------------------------------------------------------------------- CRC-32C
_POLY = 0x82F63B78  # Castagnoli, reflected


def _table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c_python(data: bytes, crc: int = 0) -> int:
    """CRC-32C of ``data`` in pure Python (a byte-wise table).

    >>> hex(crc32c_python(b'123456789'))   # the standard check value
    '0xe3069283'
    """
    c = crc ^ 0xFFFFFFFF
    table = _TABLE
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _fast_crc() -> Any:
    from nasx._optional import MissingExtraError, optional_import

    try:  # the crc32c package (nasx[tfrecord]): hardware CRC-32C; else the Python table
        return optional_import("crc32c", "tfrecord", "fast TFRecord CRCs").crc32c
    except MissingExtraError:
        return None


_FAST = _fast_crc()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (the ``crc32c`` package when installed, else Python).

    >>> hex(crc32c(b'123456789'))
    '0xe3069283'
    """
    return int(_FAST(data)) if _FAST is not None else crc32c_python(data)


def masked_crc(data: bytes) -> int:
    """The masked CRC-32C TFRecord stores (so that CRCs of CRCs do not collide).

    >>> hex(masked_crc(b''))
    '0xa282ead8'
    """
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ----------------------------------------------------------------------------- framing
class TFRecordError(NasxError, ValueError):
    """A TFRecord file is corrupt or truncated; the message names the file, record and offset."""


def write_record(f: IO[bytes], data: bytes) -> None:
    """Append one framed record to the binary file ``f``."""
    length = struct.pack("<Q", len(data))
    f.write(length)
    f.write(struct.pack("<I", masked_crc(length)))
    f.write(data)
    f.write(struct.pack("<I", masked_crc(data)))


MAX_RECORD_BYTES = 256 * 2**20
"""The default largest record a reader accepts (256 MiB): far above any real image (a
full-resolution ImageNet JPEG is under 20 MB), far below what a forged length may claim
(up to 2**64 - 1 bytes). Pass ``max_record_bytes=`` to change it (None: no limit)."""

_CHUNK = 16 * 2**20  # data is read in pieces: a forged length allocates only what the file holds


def _check_max_record_bytes(value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"max_record_bytes must be a positive integer or None, got {value!r}")


def _read_up_to(f: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes of ``f`` (fewer at the end of the file), read in pieces of ``_CHUNK``, so
    that memory follows the bytes really there, not the number asked for."""
    if n <= _CHUNK:
        return f.read(n)
    parts, left = [], n
    while left:
        part = f.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _skip(f: IO[bytes], n: int) -> int:
    """Move ``n`` bytes forward in ``f`` (or to its end); returns how many bytes were skipped."""
    if isinstance(f, gzip.GzipFile) or not f.seekable():  # decompressed (or read) either way
        skipped = 0
        while skipped < n:
            part = len(f.read(min(n - skipped, _CHUNK)))
            if not part:
                break
            skipped += part
        return skipped
    here = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(min(here + n, end))
    return min(n, end - here)


def _frames(
    f: IO[bytes], check_crc: bool, name: str, max_record_bytes: int | None, read_data: bool
) -> Iterator[bytes | None]:
    """The records of ``f`` (or, without ``read_data``, None per record, its data skipped)."""
    _check_max_record_bytes(max_record_bytes)
    index = 0
    while True:
        offset = f.tell()
        header = f.read(12)
        if not header:
            return
        where = f"{name}: record {index} at byte {offset}"
        if len(header) < 12:
            raise TFRecordError(
                f"{where} is truncated (header of {len(header)} bytes, expected 12)"
            )
        length_bytes = header[:8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", header[8:])
        if check_crc and masked_crc(length_bytes) != length_crc:
            raise TFRecordError(
                f"{where}: the length's CRC does not match (corrupt file, or not a TFRecord file)"
            )
        if max_record_bytes is not None and length > max_record_bytes:
            raise TFRecordError(
                f"{where} claims {length} bytes, more than max_record_bytes={max_record_bytes} "
                "(a corrupt or forged length); pass a larger max_record_bytes= (or None) if the "
                "file really holds records that big"
            )
        data = _read_up_to(f, length) if read_data else None
        got = len(data) if data is not None else _skip(f, length)
        footer = f.read(4)
        if got < length or len(footer) < 4:
            raise TFRecordError(f"{where} is truncated ({got} of {length} data bytes)")
        if check_crc and data is not None and masked_crc(data) != struct.unpack("<I", footer)[0]:
            raise TFRecordError(
                f"{where}: the data's CRC does not match (corrupt record); pass check_crc=False "
                "to read it anyway"
            )
        yield data
        index += 1


def iter_records(
    f: IO[bytes],
    check_crc: bool = True,
    name: str | None = None,
    max_record_bytes: int | None = MAX_RECORD_BYTES,
) -> Iterator[bytes]:
    """The records of the open binary file ``f``, in order.

    Raises :class:`TFRecordError` on a truncated record, a record longer than
    ``max_record_bytes`` (see :data:`MAX_RECORD_BYTES`) or, with ``check_crc``, a CRC mismatch.
    """
    label = name or str(getattr(f, "name", "<stream>"))
    for data in _frames(f, check_crc, label, max_record_bytes, read_data=True):
        assert data is not None
        yield data


COMPRESSIONS = ("auto", "none", "gzip")
"""``compression=`` values (case-insensitive; TF's ``""`` and None mean ``'none'``)."""

_GZIP_MAGIC = b"\x1f\x8b"


def compression_kind(value: str | None, writing: bool = False) -> str:
    """``value`` checked and in lower case (None and ``""`` -> ``'none'``).

    >>> compression_kind('GZIP'), compression_kind(''), compression_kind(None)
    ('gzip', 'none', 'none')
    """
    c = (value or "none").lower()
    allowed = COMPRESSIONS[1:] if writing else COMPRESSIONS
    if c not in allowed:
        raise ValueError(
            f"compression must be one of {', '.join(map(repr, allowed))} (or None), got {value!r}"
            + ("; ZLIB files are not supported" if c == "zlib" else "")
        )
    return c


def detect_compression(path: str | os.PathLike[str]) -> str:
    """``'gzip'`` or ``'none'``: what the file at ``path`` holds, from its first bytes.

    A plain TFRecord file starts with a record header whose length CRC checks; a GZIP one with the
    gzip magic number (``1f 8b``). The header is tried first, so a plain file whose first record
    length happens to begin with those two bytes is still read as plain.
    """
    with open(path, "rb") as f:
        head = f.read(12)
    if len(head) == 12 and masked_crc(head[:8]) == struct.unpack("<I", head[8:])[0]:
        return "none"
    return "gzip" if head.startswith(_GZIP_MAGIC) else "none"


def open_records(
    path: str | os.PathLike[str], mode: str = "rb", compression: str | None = None
) -> IO[bytes]:
    """Open a TFRecord file for :func:`write_record` (``mode='wb'``) or :func:`iter_records`.

    ``compression='gzip'`` wraps the file in a gzip stream, as TensorFlow's
    ``TFRecordOptions(compression_type="GZIP")`` does (the gzip header carries no time stamp,
    so the same records give the same bytes); reading accepts ``'auto'`` too.

        >>> import tempfile
        >>> path = tempfile.mkdtemp() + '/data.tfrecord.gz'
        >>> with open_records(path, 'wb', compression='GZIP') as f:
        ...     write_record(f, b'hello')
        >>> detect_compression(path), list(read_records(path))
        ('gzip', [b'hello'])
    """
    if mode not in ("rb", "wb"):
        raise ValueError(f"mode must be 'rb' or 'wb', got {mode!r}")
    c = compression_kind(compression, writing=mode == "wb")
    if c == "auto":
        c = detect_compression(path)
    if c == "none":
        return open(path, mode)  # noqa: SIM115 - the caller closes it
    # mtime fixed: the same records give the same bytes; the GzipFile closes the file it opens
    return cast(IO[bytes], gzip.GzipFile(os.fspath(path), mode, mtime=0))


def read_records(
    path: str | os.PathLike[str],
    check_crc: bool = True,
    compression: str | None = "auto",
    max_record_bytes: int | None = MAX_RECORD_BYTES,
) -> Iterator[bytes]:
    """The records of the TFRecord file at ``path``; ``compression``: ``'auto'`` (the default:
    plain or GZIP, see :func:`detect_compression`), ``'gzip'`` or ``'none'``. A record longer
    than ``max_record_bytes`` (:data:`MAX_RECORD_BYTES` by default; None: no limit) is refused.

    A damaged gzip stream raises :class:`TFRecordError` naming the file and the record.
    """
    name = os.fspath(path)
    with open_records(path, "rb", compression) as f:
        for data in _gzip_errors_named(_frames(f, check_crc, name, max_record_bytes, True), name):
            assert data is not None
            yield data


def count_records(
    path: str | os.PathLike[str],
    check_crc: bool = True,
    compression: str | None = "auto",
    max_record_bytes: int | None = MAX_RECORD_BYTES,
) -> int:
    """How many records the file at ``path`` holds, reading each header and skipping its data:
    the length's CRC is checked (with ``check_crc``) and the length capped as when reading, so a
    corrupt length raises :class:`TFRecordError` here too; the data's CRC is left to reading.

        >>> import tempfile
        >>> path = tempfile.mkdtemp() + '/data.tfrecord'
        >>> with open_records(path, 'wb') as f:
        ...     for r in (b'a', b'bb', b'ccc'):
        ...         write_record(f, r)
        >>> count_records(path)
        3
    """
    name = os.fspath(path)
    with open_records(path, "rb", compression) as f:
        frames = _frames(f, check_crc, name, max_record_bytes, read_data=False)
        return sum(1 for _ in _gzip_errors_named(frames, name))


def _gzip_errors_named(frames: Iterator[bytes | None], name: str) -> Iterator[bytes | None]:
    """``frames``, with gzip's own errors (a damaged stream) as :class:`TFRecordError`."""
    index = 0
    while True:
        try:
            data = next(frames)
        except StopIteration:
            return
        except (EOFError, OSError, zlib.error) as e:  # gzip's own errors
            raise TFRecordError(
                f"{name}: the gzip stream is damaged or truncated at record {index} ({e})"
            ) from e
        yield data
        index += 1


# ----------------------------------------------------------------------------- tf.train.Example
# Field numbers of example.proto / feature.proto.
_FEATURES, _FEATURE_MAP, _KEY, _VALUE = 1, 1, 1, 2
_BYTES_LIST, _FLOAT_LIST, _INT64_LIST = 1, 2, 3


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten-byte two's complement
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _encode_feature(name: str, values: Sequence[Any]) -> bytes:
    values = list(values)
    if all(isinstance(v, (bytes, bytearray)) for v in values) and values:
        body = b"".join(_field(1, bytes(v)) for v in values)
        kind = _BYTES_LIST
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        body = _field(1, b"".join(_varint(v) for v in values)) if values else b""
        kind = _INT64_LIST
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        body = _field(1, struct.pack(f"<{len(values)}f", *values))
        kind = _FLOAT_LIST
    else:
        types = sorted({type(v).__name__ for v in values})
        raise TypeError(
            f"feature {name!r}: values must be all bytes, all ints or all floats, got {types}"
        )
    return _field(kind, body)


def encode_example(features: Mapping[str, Sequence[Any] | bytes | int | float]) -> bytes:
    """Serialise ``{name: values}`` as a ``tf.train.Example`` (bytes -> BytesList, int ->
    Int64List, float -> FloatList; a single value may be given bare)."""
    entries = []
    for name, values in features.items():
        if isinstance(values, (bytes, bytearray, int, float)):
            values = [values]
        entry = _field(_KEY, name.encode()) + _field(_VALUE, _encode_feature(name, values))
        entries.append(_field(_FEATURE_MAP, entry))
    return _field(_FEATURES, b"".join(entries))


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise TFRecordError("a tf.train.Example is truncated inside a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TFRecordError("a tf.train.Example has a varint longer than 10 bytes")


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(field number, wire type, value)``: int for varints, bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            if pos + n > len(buf):
                raise TFRecordError("a tf.train.Example field runs past the end of the record")
            value, pos = buf[pos : pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        else:
            raise TFRecordError(f"unsupported protobuf wire type {wire} (not a tf.train.Example?)")
        yield number, wire, value


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _decode_feature(buf: bytes) -> Feature:
    for kind, _, body in _fields(buf):
        if kind == _BYTES_LIST:
            return [bytes(v) for n, _, v in _fields(body) if n == 1]
        if kind == _FLOAT_LIST:
            floats: list[float] = []
            for n, wire, v in _fields(body):
                if n == 1:  # packed (wire 2) or one float per field (wire 5)
                    floats.extend(
                        struct.unpack(f"<{len(v) // 4}f", v)
                        if wire == 2
                        else [struct.unpack("<f", v)[0]]
                    )
            return floats
        if kind == _INT64_LIST:
            ints: list[int] = []
            for n, wire, v in _fields(body):
                if n != 1:
                    continue
                if wire == 0:
                    ints.append(_signed(v))
                else:  # packed
                    pos = 0
                    while pos < len(v):
                        x, pos = _read_varint(v, pos)
                        ints.append(_signed(x))
            return ints
    return []


def decode_example(data: bytes) -> dict[str, Feature]:
    """Parse a serialised ``tf.train.Example`` into ``{name: list of values}``."""
    out: dict[str, Feature] = {}
    for number, _, features in _fields(data):
        if number != _FEATURES:
            continue
        for n, _, entry in _fields(features):
            if n != _FEATURE_MAP:
                continue
            key, value = "", b""
            for m, _, v in _fields(entry):
                if m == _KEY:
                    key = bytes(v).decode()
                elif m == _VALUE:
                    value = v
            out[key] = _decode_feature(value)
    return out
