"""tfdbg v2 dump folders (`tf.debugging.experimental.enable_dump_debug_info`), read without TensorFlow.

Files `tfdbg_events.<sec>.<host>.<kind>` are TFRecord streams of `DebugEvent` (formats.md §6.2). Only
`graph_execution_traces` in FULL_TENSOR mode carry whole tensors, named by their pre-optimisation op
names (nothing is fused away). A trace has no step number, so steps are told apart by occurrence: the
k-th time the same op output of the same graph appears belongs to step k.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from precision_tool.errors import FormatError

EVENTS_PREFIX = "tfdbg_events."
TRACES_SUFFIX = ".graph_execution_traces"
METADATA_SUFFIX = ".metadata"
_HEADER = struct.Struct("<QI")

_CRC_TABLE: list[int] = []


def _crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), used only on the 8-byte record lengths, so pure Python is fast enough."""
    if not _CRC_TABLE:
        for n in range(256):
            c = n
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC_TABLE.append(c)
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@dataclass(frozen=True)
class RecordProblem:
    """Why reading a TFRecord file stopped early (the records before it are still good)."""

    offset: int
    problem: str


def iter_records(data: bytes) -> Iterator[tuple[int, bytes | RecordProblem]]:
    """(offset, record bytes) for each record; a RecordProblem as the last item when the stream breaks.

    The length's CRC is checked (it catches garbage); the data CRC is not (pure-Python CRC over
    megabytes would dominate the run time), but a cut record is always caught by its length.
    """
    offset, size = 0, len(data)
    while offset < size:
        if size - offset < _HEADER.size:
            yield offset, RecordProblem(offset, f"record header cut short at byte {offset}")
            return
        length, length_crc = _HEADER.unpack_from(data, offset)
        if _masked_crc(data[offset:offset + 8]) != length_crc:
            yield offset, RecordProblem(offset, f"bad record length checksum at byte {offset}")
            return
        start = offset + _HEADER.size
        end = start + length + 4
        if end > size:
            yield offset, RecordProblem(offset, f"record at byte {offset} needs {length} bytes, "
                                                f"the file ends {size - start} bytes later (cut short)")
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
    with os.scandir(folder) as entries:
        return sorted(Path(e.path) for e in entries
                      if e.name.startswith(EVENTS_PREFIX) and e.name.endswith(TRACES_SUFFIX))


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


@dataclass(frozen=True)
class V2Traces:
    traces: tuple[V2Trace, ...]
    problems: tuple[tuple[Path, str], ...]  # (file, what went wrong) for files read only in part

    @property
    def steps(self) -> int:
        return 1 + max((t.step for t in self.traces), default=-1)


def read_traces(folder: Path) -> V2Traces:
    """Every graph execution trace in a v2 dump folder; cut or damaged files are read up to the damage."""
    from google.protobuf.message import DecodeError

    from precision_tool.formats.tf_protos import parse_debug_event

    files = trace_files(folder)
    if not files:
        raise FormatError(folder, "a tfdbg v2 dump without a *.graph_execution_traces file "
                                  "(was enable_dump_debug_info called before the model ran?)")
    traces: list[V2Trace] = []
    problems: list[tuple[Path, str]] = []
    seen: dict[tuple[str, str, int], int] = {}
    for path in files:
        data = path.read_bytes()
        for offset, record in iter_records(data):
            if isinstance(record, RecordProblem):
                problems.append((path, record.problem))
                break
            try:
                event = parse_debug_event(record)
            except DecodeError:
                problems.append((path, f"record at byte {offset} is not a DebugEvent"))
                break
            if not event.HasField("graph_execution_trace"):
                continue
            trace = event.graph_execution_trace
            key = (trace.tfdbg_context_id, trace.op_name, int(trace.output_slot))
            step = seen.get(key, 0)
            seen[key] = step + 1
            traces.append(V2Trace(trace.op_name, int(trace.output_slot), trace.tfdbg_context_id, step,
                                  int(round(event.wall_time * 1_000_000)), int(trace.tensor_debug_mode),
                                  trace.tensor_proto))
    return V2Traces(tuple(traces), tuple(problems))
