"""tfdbg v2 dump folders (`tf.debugging.experimental.enable_dump_debug_info`), read without TensorFlow.

Files `tfdbg_events.<sec>.<host>.<kind>` are TFRecord streams of `DebugEvent` (formats.md §6.2). Only
`graph_execution_traces` in FULL_TENSOR mode carry whole tensors, named by their pre-optimisation op
names (nothing is fused away). A trace has no step number, so steps are told apart by occurrence: the
k-th time the same op output of the same graph appears belongs to step k.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from precision_tool.errors import FormatError

if TYPE_CHECKING:
    from precision_tool.formats.tf.op_sources import SourceRecord

EVENTS_PREFIX = "tfdbg_events."
TRACES_SUFFIX = ".graph_execution_traces"
METADATA_SUFFIX = ".metadata"
_HEADER = struct.Struct("<QI")

_CRC_TABLE: list[int] = []
_CHUNK = 1024  # bytes per lane of the vectorized CRC (big records are cut into lanes run side by side)


def _table() -> list[int]:
    if not _CRC_TABLE:
        for n in range(256):
            c = n
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC_TABLE.append(c)
    return _CRC_TABLE


def _crc_raw(data: bytes | memoryview, crc: int) -> int:
    """The reflected CRC-32C register after `data`, from register value `crc` (no final xor)."""
    table = _table()
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


@lru_cache(maxsize=1)
def _numpy_tables() -> tuple[Any, Any]:
    """(the four slicing-by-4 tables, 4 tables mapping a register to its value after _CHUNK zero bytes).

    The register update is linear over GF(2), so the effect of _CHUNK zero bytes on a register is the xor of
    its effect on each of the register's four bytes: four 256-entry tables.
    """
    import numpy as np

    base = np.array(_table(), dtype=np.uint32)
    sliced = [base]
    for _ in range(3):
        sliced.append((sliced[-1] >> 8) ^ base[sliced[-1] & 0xFF])
    states = (np.arange(256, dtype=np.uint32)[None, :] << (8 * np.arange(4, dtype=np.uint32))[:, None]).ravel()
    for _ in range(_CHUNK):
        states = base[states & 0xFF] ^ (states >> 8)
    return sliced, states.reshape(4, 256)


def _fast_crc32c() -> Any:
    """A compiled CRC-32C when one is installed (google-crc32c or crc32c), else None."""
    try:
        import google_crc32c

        return lambda data: google_crc32c.value(bytes(data))
    except ImportError:
        pass
    try:
        import crc32c

        return lambda data: crc32c.crc32c(bytes(data))
    except ImportError:
        return None


_FAST = _fast_crc32c()


def _crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli). Without a compiled one, long inputs are cut into _CHUNK-byte lanes whose
    registers numpy advances together 4 bytes a step, then chained (crc(A+B) = shift(crc(A), |B|) ^ crc0(B)):
    about 50 MB/s, so checking every record of a tfdbg file costs about as much as decoding it."""
    if _FAST is not None:
        return _FAST(data)
    size = len(data)
    if size < 8 * _CHUNK:
        return _crc_raw(data, 0xFFFFFFFF) ^ 0xFFFFFFFF
    import numpy as np

    (t0, t1, t2, t3), shift = _numpy_tables()
    lanes = size // _CHUNK
    words = np.frombuffer(data, dtype="<u4", count=lanes * _CHUNK // 4).reshape(lanes, _CHUNK // 4).T.copy()
    registers = np.zeros(lanes, dtype=np.uint32)
    for word in words:
        registers ^= word
        registers = t3[registers & 0xFF] ^ t2[(registers >> 8) & 0xFF] ^ t1[(registers >> 16) & 0xFF] \
            ^ t0[registers >> 24]
    s0, s1, s2, s3 = (row.tolist() for row in shift)
    crc = 0xFFFFFFFF
    for value in registers.tolist():
        crc = s0[crc & 0xFF] ^ s1[(crc >> 8) & 0xFF] ^ s2[(crc >> 16) & 0xFF] ^ s3[crc >> 24] ^ value
    return _crc_raw(memoryview(data)[lanes * _CHUNK:], crc) ^ 0xFFFFFFFF


def _masked_crc(data: bytes | memoryview) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@dataclass(frozen=True)
class RecordProblem:
    """Why reading a TFRecord file stopped early (the records before it are still good)."""

    offset: int
    problem: str


def iter_records(data: bytes) -> Iterator[tuple[int, bytes | RecordProblem]]:
    """(offset, record bytes) for each record; a RecordProblem as the last item when the stream breaks.

    Both checksums are checked, the length's and the data's: a record whose bytes were damaged must not
    become a golden tensor (formats.md §6.2).
    """
    offset, size = 0, len(data)
    view = memoryview(data)
    while offset < size:
        if size - offset < _HEADER.size:
            yield offset, RecordProblem(offset, f"record header cut short at byte {offset}")
            return
        length, length_crc = _HEADER.unpack_from(data, offset)
        if _masked_crc(view[offset:offset + 8]) != length_crc:
            yield offset, RecordProblem(offset, f"bad record length checksum at byte {offset}")
            return
        start = offset + _HEADER.size
        end = start + length + 4
        if end > size:
            yield offset, RecordProblem(offset, f"record at byte {offset} needs {length} bytes, "
                                                f"the file ends {size - start} bytes later (cut short)")
            return
        (data_crc,) = struct.unpack_from("<I", data, end - 4)
        if _masked_crc(view[start:start + length]) != data_crc:
            yield offset, RecordProblem(offset, f"the record at byte {offset} fails its data checksum "
                                                "(damaged bytes)")
            return
        yield offset, data[start:start + length]
        offset = end


def is_v2_dir(path: Path) -> bool:
    """A folder holding tfdbg_events.*.metadata (written first by every v2 dump)."""
    if not path.is_dir():
        return False
    with os.scandir(path) as entries:
        return any(e.name.startswith(EVENTS_PREFIX) and e.name.endswith(METADATA_SUFFIX) for e in entries)


def trace_files(folder: Path) -> list[Path]:
    """The graph_execution_traces files of one v2 dump folder (one per host), sorted."""
    return event_files(folder, TRACES_SUFFIX)


def event_files(folder: Path, suffix: str) -> list[Path]:
    """The folder's tfdbg_events.*<suffix> files (one per host), sorted."""
    with os.scandir(folder) as entries:
        return sorted(Path(e.path) for e in entries if e.name.startswith(EVENTS_PREFIX) and e.name.endswith(suffix))


@dataclass(frozen=True)
class V2Trace:
    """One graph execution trace: an op output seen at run time, with its tensor still encoded."""

    op_name: str
    output_slot: int
    graph_id: str  # tfdbg_context_id: the graph the op ran in
    step: int  # the k-th execution of this (graph, op, slot), 0 first
    timestamp_us: int
    tensor_debug_mode: int
    tensor_proto: Any  # the TensorProto message (decode with tf_protos.decode_tensor_proto)
    file: Path | None = None  # the traces file it was read from (named when its tensor cannot be decoded)


@dataclass(frozen=True)
class V2Traces:
    traces: tuple[V2Trace, ...]
    problems: tuple[tuple[Path, str], ...]  # (file, what went wrong) for files read only in part

    @property
    def steps(self) -> int:
        return 1 + max((t.step for t in self.traces), default=-1)


def read_traces(folder: Path) -> V2Traces:
    """Every graph execution trace in a v2 dump folder; cut or damaged files are read up to the damage."""
    files = trace_files(folder)
    if not files:
        raise FormatError(folder, "a tfdbg v2 dump without a *.graph_execution_traces file "
                                  "(was enable_dump_debug_info called before the model ran?)")
    traces: list[V2Trace] = []
    problems: list[tuple[Path, str]] = []
    seen: dict[tuple[str, str, int], int] = {}
    for path in files:
        for offset, event in _file_events(path, problems, empty="the file is empty (the run was interrupted "
                                                                "before it wrote a trace?)"):
            if not event.HasField("graph_execution_trace"):
                continue
            trace = event.graph_execution_trace
            if not math.isfinite(event.wall_time) or abs(event.wall_time) > 1e12:
                problems.append((path, f"record at byte {offset}: its wall_time {event.wall_time} is not a time; "
                                       "the record is damaged"))
                break
            key = (trace.tfdbg_context_id, trace.op_name, int(trace.output_slot))
            step = seen.get(key, 0)
            seen[key] = step + 1
            traces.append(V2Trace(trace.op_name, int(trace.output_slot), trace.tfdbg_context_id, step,
                                  int(round(event.wall_time * 1_000_000)), int(trace.tensor_debug_mode),
                                  trace.tensor_proto, path))
    return V2Traces(tuple(traces), tuple(problems))


def read_op_sources_v2(folder: Path) -> tuple[SourceRecord | None, tuple[tuple[Path, str], ...]]:
    """Where each graph op of a v2 dump was created: its *.graphs file names each op's stack frames
    (GraphOpCreation.code_location), *.stack_frames resolves them, *.source_files holds the files' lines as
    the run saw them. (record, problems); the record is None when the dump holds no op with a stack."""
    from precision_tool.formats.tf.op_sources import SourceRecord

    problems: list[tuple[Path, str]] = []
    files: list[tuple[str, list[str]]] = []  # in the order of *.source_files: FileLineCol.file_index
    for event in _events(folder, ".source_files", problems):
        if event.HasField("source_file"):
            files.append((event.source_file.file_path, list(event.source_file.lines)))
    frames: dict[str, tuple[str, int, str]] = {}
    for event in _events(folder, ".stack_frames", problems):
        if event.HasField("stack_frame_with_id"):
            where = event.stack_frame_with_id.file_line_col
            if 0 <= where.file_index < len(files):
                frames[event.stack_frame_with_id.id] = (files[where.file_index][0], int(where.line), where.func)
    lines = dict(files)
    record = SourceRecord(lines_of=lines.get)
    for event in _events(folder, ".graphs", problems):
        if event.HasField("graph_op_creation"):
            creation = event.graph_op_creation
            stack = [frames[i] for i in creation.code_location.stack_frame_ids if i in frames]
            if stack:
                record.add(creation.op_name, stack)
    return (record if record.ops else None), tuple(problems)


def _events(folder: Path, suffix: str, problems: list[tuple[Path, str]]) -> Iterator[Any]:
    """The DebugEvents of the folder's tfdbg_events.*<suffix> files, each read up to any damage."""
    for path in event_files(folder, suffix):
        for _offset, event in _file_events(path, problems):
            yield event


def _file_events(path: Path, problems: list[tuple[Path, str]], empty: str | None = None) -> Iterator[tuple[int, Any]]:
    """(offset, DebugEvent) of one events file, read up to any damage; what stopped it goes to `problems`
    (`empty`: the problem of an empty file, when that is one)."""
    from google.protobuf.message import DecodeError

    from precision_tool.formats.tf.tf_protos import parse_debug_event

    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append((path, f"cannot read: {exc.strerror or exc}"))
        return
    if not data and empty is not None:
        problems.append((path, empty))
        return
    for offset, record in iter_records(data):
        if isinstance(record, RecordProblem):
            problems.append((path, record.problem))
            return
        try:
            event = parse_debug_event(record)
        except (DecodeError, RuntimeError, ValueError):  # RuntimeError: protobuf's nesting limit
            problems.append((path, f"record at byte {offset} is not a DebugEvent"))
            return
        yield offset, event
