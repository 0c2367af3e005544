"""The newer TLV ("nano") NPU dump variant (formats.md §2.2): header layout, parser and encoder.

A nano dump is `[u64 LE N][N bytes TLV header][input blocks][output blocks]` with no buffer or space
blocks, and the file must be exactly `8 + N + sum(sizes)` bytes. The header (all little-endian) is

    u32 magic 0x5A5A5A5A, u32 version
    TLV tag 4 (inputs):  u32 tag, u32 length, u32 count, then per input
        i32 data_type, i32 format, i32 address_type, u64 address, u64 offset, u64 size,
        u32 list_length, then `list_length` bytes of items [u32 tag, u32 length, value]:
        tag 0 shape (u64 each), tag 1 original shape (u64 each)
    TLV tag 5 (outputs): u32 tag, u32 length, u32 count, then per output
        i32 data_type, i32 format, i32 address_type, i32 original_index, i32 original_data_type,
        i32 original_format, u64 address, u64 offset, u64 size, u32 list_length, items:
        tag 0 shape, tag 1 original shape, tag 2 original op name (UTF-8)

Data types are GE's `ge::DataType` numbers (DT_FLOAT = 0, DT_FLOAT16 = 1, ...), not the protobuf
dump's; they are translated here so the rest of the tool sees the usual `DataType` numbers. Blocks are
read in order, input 0 first (the `offset` field is kept but not trusted, as the reference does).
There is no op name or dump time in the header: both come from the file name. Learned from
msaccucmp's `dump_parse/nano_dump_data.py` and `cmp_utils/tlv_parse.py`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

NANO_MAGIC = 0x5A5A5A5A
TAG_INPUTS = 4
TAG_OUTPUTS = 5
ITEM_SHAPE = 0
ITEM_ORIGINAL_SHAPE = 1
ITEM_ORIGIN_NAME = 2

# ge::DataType number in a nano header → DataType number of the protobuf dump (formats.md §2.3).
NANO_TO_PROTO_TYPE: dict[int, int] = {
    0: 1,    # FLOAT
    1: 2,    # FLOAT16
    2: 3,    # INT8
    3: 7,    # INT32
    4: 4,    # UINT8
    6: 5,    # INT16
    7: 6,    # UINT16
    8: 9,    # UINT32
    9: 8,    # INT64
    10: 10,  # UINT64
    11: 12,  # DOUBLE
    12: 11,  # BOOL
    13: 13,  # STRING
    14: 14,  # DUAL_SUB_INT8
    15: 15,  # DUAL_SUB_UINT8
    16: 16,  # COMPLEX64
    17: 17,  # COMPLEX128
    18: 18,  # QINT8
    19: 19,  # QINT16
    20: 20,  # QINT32
    21: 21,  # QUINT8
    22: 22,  # QUINT16
    23: 23,  # RESOURCE
    24: 24,  # STRING_REF
    25: 25,  # DUAL
    27: 27,  # BF16
    28: 0,   # UNDEFINED
    30: 29,  # UINT1
}
PROTO_TO_NANO_TYPE: dict[int, int] = {proto: nano for nano, proto in NANO_TO_PROTO_TYPE.items()}
# Nano types with no element decoder in this tool (named so the message says which).
NANO_UNSUPPORTED_TYPES = {26: "VARIANT", 29: "INT4", 31: "INT2", 32: "UINT2"}


class NanoHeaderError(ValueError):
    """The TLV header does not parse; the message says where (the caller adds the file name)."""


@dataclass(frozen=True)
class NanoTensor:
    """One tensor description from a nano header; `data_type` is already a protobuf DataType number."""

    kind: str  # "input" | "output"
    index: int
    data_type: int
    format: int  # as stored (low byte is the format)
    address_type: int
    address: int
    offset: int  # as stored; blocks are located by order and size
    size: int  # bytes
    shape: tuple[int, ...] | None  # None when the header has no shape item
    original_shape: tuple[int, ...] | None
    origin_name: str | None = None
    origin_output_index: int | None = None


@dataclass(frozen=True)
class NanoHeader:
    version: int
    inputs: tuple[NanoTensor, ...]
    outputs: tuple[NanoTensor, ...]
    warnings: tuple[str, ...]


class _Reader:
    """A cursor over the header bytes that says what it was reading when the bytes run out."""

    def __init__(self, data: bytes, start: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end

    def take(self, fmt: str, what: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > self.end:
            raise NanoHeaderError(f"the TLV header ends inside {what} (byte {self.pos + 8} of the file)")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values


def parse_nano_header(data: bytes) -> NanoHeader:
    """Parse the TLV header (the N bytes after the u64 length). NanoHeaderError when it does not add up."""
    reader = _Reader(data)
    magic, version = reader.take("<II", "the magic number and version")
    if magic != NANO_MAGIC:
        raise NanoHeaderError(f"magic number {magic:#x} is not {NANO_MAGIC:#x}")
    warnings: list[str] = []
    inputs: tuple[NanoTensor, ...] = ()
    outputs: tuple[NanoTensor, ...] = ()
    while reader.pos < reader.end:
        tag, length = reader.take("<II", "a TLV tag and length")
        if reader.pos + length > reader.end:
            raise NanoHeaderError(f"TLV tag {tag} claims {length} bytes but only {reader.end - reader.pos} remain")
        body = _Reader(data, reader.pos, reader.pos + length)
        if tag == TAG_INPUTS:
            inputs = _tensor_list(body, "input")
        elif tag == TAG_OUTPUTS:
            outputs = _tensor_list(body, "output")
        else:
            warnings.append(f"unknown TLV tag {tag} ({length} bytes) in the nano header is ignored")
        if tag in (TAG_INPUTS, TAG_OUTPUTS) and body.pos != body.end:
            raise NanoHeaderError(f"the {'input' if tag == TAG_INPUTS else 'output'} descriptions use "
                                  f"{body.pos - (reader.pos)} of the {length} bytes their TLV declares")
        reader.pos += length
    return NanoHeader(version, inputs, outputs, tuple(warnings))


def _tensor_list(body: _Reader, kind: str) -> tuple[NanoTensor, ...]:
    (count,) = body.take("<I", f"the {kind} count")
    return tuple(_tensor(body, kind, index) for index in range(count))


def _tensor(body: _Reader, kind: str, index: int) -> NanoTensor:
    what = f"{kind} {index}"
    origin_index: int | None = None
    if kind == "input":
        data_type, fmt, address_type, address, offset, size, list_length = body.take("<iiiQQQI", what)
    else:
        (data_type, fmt, address_type, origin_index, _origin_type, _origin_format,
         address, offset, size, list_length) = body.take("<iiiiiiQQQI", what)
    if body.pos + list_length > body.end:
        raise NanoHeaderError(f"{what}: its item list claims {list_length} bytes but only "
                              f"{body.end - body.pos} remain")
    items = _Reader(body.data, body.pos, body.pos + list_length)
    body.pos += list_length
    shape = original_shape = None
    origin_name: str | None = None
    while items.pos < items.end:
        tag, length = items.take("<II", f"{what}: an item tag and length")
        if items.pos + length > items.end:
            raise NanoHeaderError(f"{what}: item {tag} claims {length} bytes past the end of its list")
        raw = items.data[items.pos:items.pos + length]
        items.pos += length
        if tag in (ITEM_SHAPE, ITEM_ORIGINAL_SHAPE):
            if length % 8:
                raise NanoHeaderError(f"{what}: a shape item of {length} bytes is not a whole number of u64 dims")
            dims = struct.unpack(f"<{length // 8}Q", raw)
            if tag == ITEM_SHAPE:
                shape = dims
            else:
                original_shape = dims
        elif tag == ITEM_ORIGIN_NAME and kind == "output":
            origin_name = raw.decode("utf-8", errors="replace")
    if data_type in NANO_TO_PROTO_TYPE:
        proto_type = NANO_TO_PROTO_TYPE[data_type]
    elif data_type in NANO_UNSUPPORTED_TYPES:
        raise NanoHeaderError(f"{what} has nano data type {data_type} ({NANO_UNSUPPORTED_TYPES[data_type]}), "
                              "which this tool cannot decode")
    else:
        raise NanoHeaderError(f"{what} has unknown nano data type number {data_type}; "
                              "the file is damaged or newer than this tool")
    return NanoTensor(kind, index, proto_type, fmt, address_type, address, offset, size, shape,
                      original_shape, origin_name or None, origin_index if kind == "output" else None)


@dataclass(frozen=True)
class NanoTensorSpec:
    """What the encoder needs for one tensor (the writer fills it from a TensorSpec)."""

    data_type: int  # protobuf DataType number
    format: int
    shape: tuple[int, ...]
    original_shape: tuple[int, ...] | None
    size: int
    address: int = 0
    origin_name: str | None = None
    origin_output_index: int | None = None


def encode_nano_header(inputs: list[NanoTensorSpec], outputs: list[NanoTensorSpec], version: int = 1) -> bytes:
    """The TLV header bytes for these tensors (blocks follow in order; `offset` counts from the first block)."""
    offset = 0
    input_body = [struct.pack("<I", len(inputs))]
    for spec in inputs:
        items = _items(spec, with_name=False)
        input_body.append(struct.pack("<iiiQQQI", _nano_type(spec.data_type), spec.format, 0, spec.address,
                                      offset, spec.size, len(items)) + items)
        offset += spec.size
    output_body = [struct.pack("<I", len(outputs))]
    for spec in outputs:
        items = _items(spec, with_name=True)
        nano_type = _nano_type(spec.data_type)
        output_body.append(struct.pack(
            "<iiiiiiQQQI", nano_type, spec.format, 0, spec.origin_output_index or 0, nano_type,
            spec.format & 0xFF, spec.address, offset, spec.size, len(items)) + items)
        offset += spec.size
    inputs_bytes = b"".join(input_body)
    outputs_bytes = b"".join(output_body)
    return (struct.pack("<II", NANO_MAGIC, version)
            + struct.pack("<II", TAG_INPUTS, len(inputs_bytes)) + inputs_bytes
            + struct.pack("<II", TAG_OUTPUTS, len(outputs_bytes)) + outputs_bytes)


def _nano_type(data_type: int) -> int:
    if data_type not in PROTO_TO_NANO_TYPE:
        raise ValueError(f"data type {data_type} has no nano dump number (nano dumps carry GE's older types only)")
    return PROTO_TO_NANO_TYPE[data_type]


def _items(spec: NanoTensorSpec, *, with_name: bool) -> bytes:
    parts = [_item(ITEM_SHAPE, struct.pack(f"<{len(spec.shape)}Q", *spec.shape))]
    if spec.original_shape is not None:
        parts.append(_item(ITEM_ORIGINAL_SHAPE, struct.pack(f"<{len(spec.original_shape)}Q", *spec.original_shape)))
    if with_name and spec.origin_name:
        if spec.original_shape is None:  # the reference reads items in order: keep tag 1 before tag 2
            parts.append(_item(ITEM_ORIGINAL_SHAPE, b""))
        parts.append(_item(ITEM_ORIGIN_NAME, spec.origin_name.encode("utf-8")))
    return b"".join(parts)


def _item(tag: int, value: bytes) -> bytes:
    return struct.pack("<II", tag, len(value)) + value
