"""Ascend NPU dump files: names, headers and tensors (formats.md §2); the writer is npu_dump_write.py, the
data-type and layout numbers are in dump_types.py.

A dump file is `[u64 LE header length N][N bytes protobuf DumpData][input blocks][output blocks]
[buffer blocks][space blocks]`, each block as long as its `size` field. Headers are read without
touching tensor data, so listing thousands of dumps is cheap; a tensor is read on request by offset.
"""

from __future__ import annotations

import csv
import os
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_tool.errors import FormatError
from precision_tool.formats.small_files import read_start
from precision_tool.formats.npu.dump_types import (
    DataType, data_type_name, is_known_format, numpy_dtype_of, stored_bytes,
)

if TYPE_CHECKING:
    import numpy as np

NANO_MAGIC = 0x5A5A5A5A
MAPPING_FILE = "mapping.csv"
_MAX_HEADER_BYTES = 1 << 30
_MAX_RANK = 32  # numpy stops at 64; no NPU layout has more than 6 dimensions


# --- file names ---------------------------------------------------------------------------------
@dataclass(unsafe_hash=True)  # hashable and never changed, but not frozen: made per dump file (a frozen one costs
class DumpName:  # four times as much to make)
    """What a dump file's name says. `extra` holds FFTS+ names' four trailing fields, else ()."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp_us: int
    extra: tuple[int, ...] = ()

    @property
    def task_type(self) -> int | None:
        """FFTS+ names' task type (0 AICORE, 1 AICPU, 2 DEBUG, 3 HCCL, 4 FFTSPLUS)."""
        return self.extra[0] if self.extra else None

    @property
    def context_id(self) -> int | None:
        return self.extra[1] if len(self.extra) > 1 else None

    @property
    def thread_id(self) -> int | None:
        return self.extra[2] if len(self.extra) > 2 else None

    @property
    def is_opdebug(self) -> bool:
        return self.op_type == "Opdebug"


def parse_dump_name(file_name: str) -> DumpName | None:
    """Parse `{OpType}.{op_name}.{task}[.{stream}].{timestamp}[.{4 FFTS+ fields}]`; None if it is not one."""
    parts = file_name.split(".")
    count = len(parts)
    if count not in (4, 5, 9) or not parts[0] or not parts[1]:
        return None
    try:
        values = [int(p) for p in parts[2:] if p.isdigit() and p.isascii()]
    except ValueError:
        return None
    if len(values) != count - 2:
        return None
    if count == 4:
        return DumpName(parts[0], parts[1], values[0], None, values[1])
    if count == 5:
        return DumpName(parts[0], parts[1], values[0], values[1], values[2])
    return DumpName(parts[0], parts[1], values[0], values[1], values[2], tuple(values[3:]))


def sanitize_op_name(op_name: str) -> str:
    """The op-name part of a dump file name: '/' and '.' become '_'."""
    return op_name.replace("/", "_").replace(".", "_")


def dump_file_name(op_type: str, op_name: str, task_id: int, stream_id: int, timestamp_us: int) -> str:
    return f"{op_type}.{sanitize_op_name(op_name)}.{task_id}.{stream_id}.{timestamp_us}"


def read_mapping(folder: str | os.PathLike[str]) -> dict[str, str]:
    """`mapping.csv` of a dump folder: numbered file name → real dump name ({} when there is none)."""
    path = Path(folder) / MAPPING_FILE
    if not path.is_file():
        return {}
    mapping: dict[str, str] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for line_number, row in enumerate(csv.reader(handle), 1):
                if not row:
                    continue
                if len(row) != 2:
                    raise FormatError(path, f"line {line_number}: expected `file_name,real_name`, got {row!r}")
                mapping[row[0].strip()] = row[1].strip()
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise FormatError(path, f"cannot read the mapping file ({exc})") from None
    return mapping


def dump_name_of(path: str | os.PathLike[str], mapping: dict[str, str] | None = None) -> DumpName | None:
    """The DumpName of a file, resolving numbered names through `mapping` (or the folder's mapping.csv)."""
    base = os.path.basename(path)
    name = parse_dump_name(base)
    if name is not None:
        return name
    if mapping is None:
        mapping = folder_mapping(os.path.dirname(os.path.abspath(path)))
    real = mapping.get(base)
    return parse_dump_name(real) if real else None


def real_file_name(path: str | os.PathLike[str]) -> str:
    """The dump's real file name: its own name, or the name mapping.csv gives a numbered file."""
    base = os.path.basename(path)
    if parse_dump_name(base) is not None:
        return base
    return folder_mapping(os.path.dirname(os.path.abspath(path))).get(base, base)


def folder_mapping(folder: str) -> dict[str, str]:
    """A folder's mapping.csv ({} when absent or unreadable), re-read when the file changes."""
    try:
        stat = os.stat(os.path.join(folder, MAPPING_FILE))
    except OSError:
        return {}
    return _cached_mapping(folder, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _cached_mapping(folder: str, _mtime_ns: int, _size: int) -> dict[str, str]:
    try:
        return read_mapping(folder)
    except FormatError:
        return {}


# --- headers ------------------------------------------------------------------------------------
@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class TensorHeader:
    """One input or output as the header describes it; `offset` is absolute in the file (bytes)."""

    kind: str  # "input" | "output"
    index: int
    data_type: int
    format: int  # already & 0xFF
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    size: int  # bytes
    offset: int  # bytes from the start of the file
    address: int = 0
    sub_format: int = 0
    origin_name: str | None = None
    origin_output_index: int | None = None
    raw_format: int = 0  # the format field as stored (C0 format / sub-format may sit above the low byte)

    @property
    def numpy_dtype(self) -> "np.dtype[Any]":
        return numpy_dtype_of(self.data_type)

    @property
    def element_count(self) -> int:
        """Elements the tensor holds: product of the shape, or what `size` holds when the shape is empty."""
        if not self.shape:
            if self.data_type == DataType.UINT1:
                return self.size * 8
            per = stored_bytes(self.data_type, 1)
            return self.size // per if per else 0
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def array_shape(self) -> tuple[int, ...]:
        """The shape `read_tensor` returns (an empty header shape means a flat array of `size`)."""
        return self.shape if self.shape else (self.element_count,)

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.index}"


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class DumpFile:
    """A dump file's header: what it holds and where, without the tensor bytes."""

    path: Path  # (or text, from read_dump_start given text: the comparison's workers only print it)
    name: DumpName | None
    op_name: str
    version: str
    dump_time: int  # microseconds, as the runtime wrote it
    inputs: tuple[TensorHeader, ...]
    outputs: tuple[TensorHeader, ...]
    warnings: tuple[str, ...] = ()
    file_size: int = 0  # bytes
    attrs: tuple[tuple[str, str], ...] = field(default=())

    def tensor(self, kind: str, index: int) -> TensorHeader:
        """The input or output `index`; FormatError naming what exists when it is not there."""
        if kind not in ("input", "output"):
            raise FormatError(self.path, f"tensor kind must be input or output, not {kind!r}")
        tensors = self.inputs if kind == "input" else self.outputs
        if not 0 <= index < len(tensors):
            raise FormatError(
                self.path, f"has no {kind} {index} (it has {len(self.inputs)} inputs, {len(self.outputs)} outputs)"
            )
        return tensors[index]

    @property
    def tensors(self) -> tuple[TensorHeader, ...]:
        return self.inputs + self.outputs

    @property
    def real_name(self) -> str:
        """The file's real dump name (mapping.csv resolves numbered names), for output names and titles."""
        return real_file_name(self.path)


_PARSER: tuple[Any, Any] | None = None  # (DumpData class, DecodeError), set on first use; protobuf loads lazily


def _parse_header(path: str | os.PathLike[str], data: bytes) -> Any:
    global _PARSER
    if _PARSER is None:
        from google.protobuf.message import DecodeError

        from precision_tool.formats.npu.dump_proto import dump_data_class

        _PARSER = (dump_data_class(), DecodeError)  # one assignment: safe when threads race here
    message_class, decode_error = _PARSER
    try:
        return message_class.FromString(data)
    except (decode_error, RuntimeError, ValueError) as exc:
        raise FormatError(path, f"the dump header is not a valid DumpData message ({exc}); is this an NPU dump file?") from None


def read_dump_header(path: str | os.PathLike[str], name: DumpName | None = None) -> DumpFile:
    """Read a dump file's header (no tensor data). FormatError on anything that does not add up."""
    return read_dump_start(path if isinstance(path, Path) else Path(path), name)[0]


def read_dump_start(path: str | os.PathLike[str], name: DumpName | None = None,
                    whole_below: int = 0, parse_name: bool = True) -> tuple[DumpFile, bytes | None]:
    """The dump's header and, for a file of at most `whole_below` bytes, the whole file, read in one call
    with the header (`read_tensor(dump, tensor, data)` then slices it: one read per small dump); else None.
    `parse_name=False`: the DumpFile's name is left None unless given (the comparison never asks for it).
    The DumpFile keeps `path` as given (text from a plan: a Path per dump would cost the comparison more than
    the header's parse); read_dump_header always gives a Path."""
    file_size, header_length, header_bytes, is_nano, whole = _read_header_bytes(path, whole_below)
    if name is None and parse_name:
        name = dump_name_of(path)
    return _dump_file(path, name, file_size, header_length, header_bytes, is_nano), whole


def _dump_file(path: Path, name: DumpName | None, file_size: int, header_length: int, header_bytes: bytes,
               is_nano: bool) -> DumpFile:
    if is_nano:
        return _nano_dump_file(path, name, file_size, header_length, header_bytes)
    message = _parse_header(path, header_bytes)
    offset = 8 + header_length
    inputs: list[TensorHeader] = []
    outputs: list[TensorHeader] = []
    for index, item in enumerate(message.input):
        header = _tensor_header(path, "input", index, item, offset, None, None)
        inputs.append(header)
        offset += header.size
    for index, item in enumerate(message.output):
        origin = item.original_op if item.HasField("original_op") else None
        header = _tensor_header(
            path, "output", index, item, offset,
            origin.name if origin is not None and origin.name else None,
            int(origin.output_index) if origin is not None else None,
        )
        outputs.append(header)
        offset += header.size
    if message.buffer or message.space:  # (mostly absent; iterating an empty field still costs)
        offset += sum(int(item.size) for item in message.buffer) + sum(int(item.size) for item in message.space)
    warnings: list[str] = []
    if offset > file_size:
        raise FormatError(
            path,
            f"the header's block sizes need {offset} bytes but the file has {file_size}; the file is truncated",
        )
    if offset < file_size:
        warnings.append(f"{file_size - offset} bytes after the last data block are ignored")
    attrs = tuple((a.name, a.value) for a in message.attr) if message.attr else ()
    # positional: made per dump file, where keywords cost a third more
    return DumpFile(path, name, message.op_name, message.version, message.dump_time, tuple(inputs), tuple(outputs),
                    tuple(warnings), file_size, attrs)


def count_dump_tensors(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(inputs, outputs) of a dump, checking only that the blocks fit the file: the cheap read `ls dump` needs
    (data types and formats are checked when tensors are read)."""
    file_size, header_length, header_bytes, is_nano, _ = _read_header_bytes(path)
    if is_nano:
        dump = _nano_dump_file(Path(path), None, file_size, header_length, header_bytes)
        return len(dump.inputs), len(dump.outputs)
    message = _parse_header(path, header_bytes)
    inputs, outputs = message.input, message.output
    needed = 8 + header_length + sum([item.size for item in inputs]) + sum([item.size for item in outputs])
    if message.buffer or message.space:
        needed += sum([item.size for item in message.buffer]) + sum([item.size for item in message.space])
    if needed > file_size:
        raise FormatError(path, f"the header's block sizes need {needed} bytes but the file has {file_size}; "
                                "the file is truncated")
    return len(inputs), len(outputs)


def _read_header_bytes(path: str | os.PathLike[str], whole_below: int = 0) -> tuple[int, int, bytes, bool, bytes | None]:
    """(file size, header length, header bytes, is nano, the whole file when it has at most `whole_below`
    bytes), checking the 8-byte length against the file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise FormatError(path, f"cannot open ({exc.strerror})") from None
    try:
        file_size, head, whole = read_start(fd, whole_below)
        if whole is not None and len(whole) != file_size:
            raise FormatError(path, f"the file changed while it was read ({len(whole)} of {file_size} bytes came)")
        if file_size == 0:
            raise FormatError(path, "the file is empty; it is not an NPU dump (was the dump interrupted?)")
        if len(head) < 8:
            raise FormatError(path, f"only {file_size} bytes, shorter than the 8-byte header length; not an NPU dump")
        is_nano = len(head) >= 12 and struct.unpack_from("<I", head, 8)[0] == NANO_MAGIC
        (header_length,) = struct.unpack_from("<Q", head, 0)
        if header_length > file_size - 8 or header_length > _MAX_HEADER_BYTES:
            raise FormatError(
                path,
                f"header length {header_length} runs past the end of the {file_size}-byte file; "
                "the file is truncated or not an NPU dump",
            )
        if header_length == 0 and file_size > 8 and not is_nano:
            # an empty header lists no tensor, so the bytes after it would silently read as nothing
            raise FormatError(path, f"header length 0: the dump has no header, so the {file_size - 8} byte(s) "
                                    "after it cannot be read as tensors; the file is damaged or not an NPU dump")
        header_bytes = whole[8:8 + header_length] if whole is not None else os.pread(fd, header_length, 8)
    finally:
        os.close(fd)
    return file_size, header_length, header_bytes, is_nano, whole


def _nano_dump_file(path: Path, name: DumpName | None, file_size: int, header_length: int,
                    header_bytes: bytes) -> DumpFile:
    """A DumpFile from a nano (TLV) header; its blocks must fill the file exactly (formats.md §2.2)."""
    from precision_tool.formats.npu.nano_dump import NanoHeaderError, parse_nano_header

    try:
        header = parse_nano_header(header_bytes)
    except NanoHeaderError as exc:
        raise FormatError(path, f"nano (TLV) dump: {exc}") from None
    offset = 8 + header_length
    tensors: dict[str, list[TensorHeader]] = {"input": [], "output": []}
    for item in header.inputs + header.outputs:
        fmt = item.format & 0xFF
        if not is_known_format(fmt):
            raise FormatError(path, f"{item.kind} {item.index} has unknown format number {fmt}; "
                                    "the file is damaged or newer than this tool")
        tensors[item.kind].append(TensorHeader(
            kind=item.kind, index=item.index, data_type=item.data_type, format=fmt,
            shape=item.shape or (), original_shape=item.original_shape or (), size=item.size, offset=offset,
            address=item.address, origin_name=item.origin_name, origin_output_index=item.origin_output_index,
            raw_format=item.format,
        ))
        offset += item.size
    if offset != file_size:
        problem = "is truncated" if offset > file_size else f"has {file_size - offset} bytes after the last block"
        raise FormatError(path, f"nano (TLV) dump: the header's block sizes need {offset} bytes but the file has "
                                f"{file_size}; it {problem} (nano dumps must match exactly)")
    return DumpFile(
        path=path, name=name, op_name=name.op_name if name else "", version=f"nano {header.version}",
        dump_time=name.timestamp_us if name else 0, inputs=tuple(tensors["input"]),
        outputs=tuple(tensors["output"]), warnings=header.warnings, file_size=file_size,
    )


def _tensor_header(
    path: Path, kind: str, index: int, item: Any, offset: int,
    origin_name: str | None, origin_output_index: int | None,
) -> TensorHeader:
    data_type = item.data_type  # (protobuf's integers: no int() needed)
    raw_format = item.format
    if (data_type, raw_format) not in _KNOWN_KINDS:  # checked once per pair (a network has a handful)
        if data_type not in DataType._value2member_map_:
            raise FormatError(path, f"{kind} {index} has unknown data type number {data_type}; the file is damaged "
                                    "or newer than this tool")
        if not is_known_format(raw_format & 0xFF):
            raise FormatError(path, f"{kind} {index} has unknown format number {raw_format & 0xFF}; the file is "
                                    "damaged or newer than this tool")
        if len(_KNOWN_KINDS) < 4096:
            _KNOWN_KINDS.add((data_type, raw_format))
    # positional: a dataclass made per tensor, where keywords cost a third more
    return TensorHeader(kind, index, data_type, raw_format & 0xFF, _dims(item.shape),
                        _dims(item.original_shape), item.size, offset, item.address, item.sub_format,
                        origin_name, origin_output_index, raw_format)


_KNOWN_KINDS: set[tuple[int, int]] = set()
"""(data type, raw format) pairs already found known."""
_SHAPES: dict[bytes, tuple[int, ...]] = {}
"""A Shape message's bytes → its dims: a network has a few hundred shapes, and reading protobuf's repeated
field costs three times serializing the small message again (1.1 µs against 0.4 per shape)."""


def _dims(shape: Any) -> tuple[int, ...]:
    key = shape.SerializeToString()
    dims = _SHAPES.get(key)
    if dims is None:
        dims = tuple(shape.dim)
        if len(_SHAPES) >= 4096:
            _SHAPES.clear()
        _SHAPES[key] = dims
    return dims


def read_tensor(dump: DumpFile, tensor: TensorHeader, data: bytes | None = None) -> "np.ndarray":
    """The tensor's values in its device layout, shaped by `tensor.shape` (read by offset, nothing else);
    `data`: the whole file when read_dump_start kept it (sliced, not read again)."""
    import numpy as np

    try:
        dtype = numpy_dtype_of(tensor.data_type)
    except ValueError as exc:
        raise FormatError(dump.path, f"{tensor.label}: cannot decode {exc}") from None
    if len(tensor.shape) > _MAX_RANK or min(tensor.shape, default=0) < 0:
        raise FormatError(dump.path, f"{tensor.label}: shape {list(tensor.shape)[:8]}"
                                     f"{' ...' if len(tensor.shape) > 8 else ''} is impossible (rank "
                                     f"{len(tensor.shape)}, or a negative dimension); the header is damaged")
    count = tensor.element_count
    needed = stored_bytes(tensor.data_type, count)
    if needed > tensor.size:
        raise FormatError(
            dump.path,
            f"{tensor.label}: shape {list(tensor.shape)} of {data_type_name(tensor.data_type)} needs {needed} bytes "
            f"but the block holds {tensor.size}",
        )
    shape = tensor.array_shape
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    raw = memoryview(data)[tensor.offset:tensor.offset + needed] if data is not None else \
        _read_bytes(dump.path, tensor.offset, needed)
    if tensor.data_type == DataType.UINT1:
        bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[:count]
        return bits.reshape(shape)
    if tensor.data_type == DataType.COMPLEX32:
        halves = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
        return halves.view(np.complex64).reshape(shape)
    if tensor.data_type == DataType.HIFLOAT8:
        from precision_tool.formats.npu.hifloat8 import decode_hifloat8

        return decode_hifloat8(np.frombuffer(raw, dtype=np.uint8)).reshape(shape)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _read_bytes(path: Path, offset: int, length: int) -> bytearray:
    buffer = bytearray(length)
    try:
        with open(path, "rb", buffering=0) as handle:
            handle.seek(offset)
            got = handle.readinto(buffer)
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror})") from None
    if got != length:
        raise FormatError(path, f"the file ended after {got} of {length} bytes at offset {offset}; it changed or is truncated")
    return buffer
