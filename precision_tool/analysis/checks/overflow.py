"""Which operators overflowed: Opdebug records matched to the overflowing op's own dump (formats.md §4).

The task and stream ids come from the status record (not from the Opdebug file name); the op's dump is
the one in the same folder with the same ids (and context/thread ids when the record has them), the
earliest if several match. Overflows are ordered by the Opdebug file's timestamp: the first is the
one to look at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.analysis.dumps.origin_layout import shown_tensor
from precision_tool.analysis.dumps.dump_files import DumpEntry, scan_dump_folder
from precision_tool.analysis.dumps.tensor_stats import TensorStats, tensor_stats
from precision_tool.errors import FormatError
from precision_tool.formats.npu.dump_types import data_type_name
from precision_tool.formats.npu.npu_dump import read_dump_header
from precision_tool.formats.npu.opdebug import OverflowRecord, parse_opdebug_payload


@dataclass(frozen=True)
class TensorSummary:
    """One input/output of the overflowing op, as shown by the overflow check."""

    label: str  # "input:0"
    layout: str  # the layout the statistics were taken in (NCHW, ND, or the device layout)
    data_type: str
    stats: TensorStats | None
    note: str | None = None  # why the tensor is shown in device layout, or why it could not be read


@dataclass(frozen=True)
class OverflowFinding:
    debug_file: Path
    timestamp_us: int
    records: tuple[OverflowRecord, ...]
    op_dump: Path | None
    op_type: str | None
    op_name: str | None
    tensors: tuple[TensorSummary, ...]
    problem: str | None = None  # why the op or the record could not be shown
    unreadable: bool = False  # the Opdebug record itself could not be read (the check failed, not the op)
    graph_name: str | None = None  # the op's name as the graph (and `ni`) spell it, from the dump's header


@dataclass(frozen=True)
class OverflowReport:
    folder: Path | None
    total: int  # Opdebug files found
    findings: tuple[OverflowFinding, ...]  # the first `limit` of them, by timestamp

    @property
    def unreadable(self) -> tuple[OverflowFinding, ...]:
        """Findings whose Opdebug record could not be read: the check could not say whether the op overflowed."""
        return tuple(f for f in self.findings if f.unreadable)


def find_overflows(folder: Path | None, limit: int = 3) -> OverflowReport:
    """Analyse the first `limit` overflows (by Opdebug timestamp) found below `folder`."""
    if folder is None or not folder.is_dir():
        return OverflowReport(folder, 0, ())
    entries = scan_dump_folder(folder)
    debug_entries = sorted((e for e in entries if e.name.is_opdebug), key=lambda e: (e.name.timestamp_us, e.file_name))
    by_folder: dict[str, list[DumpEntry]] = {}
    for entry in entries:
        if not entry.name.is_opdebug:
            by_folder.setdefault(entry.folder, []).append(entry)
    findings = tuple(_analyse(entry, by_folder.get(entry.folder, [])) for entry in debug_entries[:limit])
    return OverflowReport(folder, len(debug_entries), findings)


def _analyse(debug: DumpEntry, neighbours: list[DumpEntry]) -> OverflowFinding:
    try:
        records = tuple(read_overflow_records(debug.path))
    except FormatError as exc:
        return OverflowFinding(debug.path, debug.name.timestamp_us, (), None, None, None, (), str(exc),
                               unreadable=True)
    if not records:
        return OverflowFinding(debug.path, debug.name.timestamp_us, (), None, None, None, (),
                               "the Opdebug file holds no non-zero status")
    record = records[0]
    matches = [e for e in neighbours if _same_task(e, record)]
    if not matches:
        return OverflowFinding(
            debug.path, debug.name.timestamp_us, records, None, None, None, (),
            f"no dump with task id {record.task_id} and stream id {record.stream_id} in {debug.path.parent}",
        )
    op = min(matches, key=lambda e: (e.name.timestamp_us, e.file_name))
    try:
        graph_name = read_dump_header(op.path).op_name or None
    except FormatError:
        graph_name = None  # summarize_tensors says why
    return OverflowFinding(debug.path, debug.name.timestamp_us, records, op.path, op.name.op_type,
                           op.name.op_name, summarize_tensors(op.path), graph_name=graph_name)


def _same_task(entry: DumpEntry, record: OverflowRecord) -> bool:
    name = entry.name
    if name.task_id != record.task_id or (name.stream_id is not None and name.stream_id != record.stream_id):
        return False
    if record.context_id and name.context_id is not None and name.context_id != record.context_id:
        return False
    if record.thread_id and name.thread_id is not None and name.thread_id != record.thread_id:
        return False
    return True


def read_overflow_records(path: Path) -> list[OverflowRecord]:
    """The overflow records of an Opdebug file (output 0 holds the status record)."""
    dump = read_dump_header(path)
    if not dump.outputs:
        raise FormatError(path, "the Opdebug file has no output holding the overflow record")
    tensor = dump.outputs[0]
    if tensor.size > 1 << 20:  # a record is 2 KB (old) or under 200 bytes (new)
        raise FormatError(path, f"the overflow record claims {tensor.size} bytes; no Opdebug record is that big "
                                "(the file is damaged)")
    try:
        with open(path, "rb") as handle:
            handle.seek(tensor.offset)
            payload = handle.read(tensor.size)
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
    return parse_opdebug_payload(payload, path)


def summarize_tensors(path: Path) -> tuple[TensorSummary, ...]:
    """Statistics of every input and output of a dump, in its host layout with the device padding cut when
    that can be determined (as `pt` shows it; an overflow dump has no Build graph to name origin layouts)."""
    try:
        dump = read_dump_header(path)
    except FormatError as exc:
        return (TensorSummary("-", "-", "-", None, exc.problem),)
    out = []
    for tensor in dump.tensors:
        try:
            array, story = shown_tensor(dump, tensor, None)
            note = f"shown in device layout {story.device}: {story.problem}" if story.problem else None
            out.append(TensorSummary(tensor.label, story.layout, data_type_name(tensor.data_type),
                                     tensor_stats(array), note))
        except FormatError as exc:
            out.append(TensorSummary(tensor.label, "-", data_type_name(tensor.data_type), None, exc.problem))
    return tuple(out)


def relative(path: Path, base: Path | None) -> str:
    """`path` relative to `base` when below it (shorter lines in reports)."""
    if base is None:
        return str(path)
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def opdebug_overflow_ops(folder: Any) -> tuple[frozenset[str], list[str]]:
    """Graph op names (and dump-name spellings) of the ops the Opdebug records below `folder` say overflowed,
    and a warning per record that could not be read (their ops cannot be marked)."""
    if folder is None or not Path(folder).is_dir():
        return frozenset(), []
    first = find_overflows(Path(folder), limit=0)
    report = find_overflows(Path(folder), limit=first.total)
    names: set[str] = set()
    warnings = []
    for finding in report.findings:
        if finding.unreadable:
            warnings.append(f"overflow records: {finding.problem}; its op is not marked in the OverFlow column")
            continue
        for name in (finding.graph_name, finding.op_name):
            if name:
                names.add(name)
    return frozenset(names), warnings
