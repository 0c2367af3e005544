"""Result CSVs written as msaccucmp writes its (compare.md §3): the header, one CompareRow per tensor, and
the ResultWriter that streams row groups into `result_<stamp>.csv.partial` (each group one write, flushed
every FLUSH_SECONDS), renaming it to `result_<stamp>.csv` only when every group is done. results.py reads
them back and summarises them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from precision_tool.analysis.results.metrics import METRIC_NAMES, NAN_TEXT, TensorMetrics
from precision_tool.analysis.results.results import (
    OVERFLOW_COLUMN, PARTIAL_SUFFIX, SEQUENCE_COLUMN, RowDigest, digest_rows, read_result_text,
    summary_cells_getter, summary_columns,
)

FLUSH_SECONDS = 0.2
"""A .partial CSV reaches the disk at least this often (Ctrl-C flushes it; a hard kill loses at most this
much, and `vc --resume` redoes a group cut in half)."""
GOLDEN_HEADER: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex", "Shape",
    *METRIC_NAMES, "CompareFailReason",
)
NPU_VS_NPU_HEADER: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "Address", "TensorIndex",
    "Shape", *METRIC_NAMES, "CompareFailReason",
)


def header_for(npu_vs_npu: bool, overflow: bool = False, sequence: bool = False) -> tuple[str, ...]:
    """The header msaccucmp writes, with its optional columns where it puts them."""
    header = list(NPU_VS_NPU_HEADER if npu_vs_npu else GOLDEN_HEADER)
    if overflow:
        header.insert(header.index("Shape") + 1, OVERFLOW_COLUMN)
    if sequence:
        header.insert(1, SEQUENCE_COLUMN)
    return tuple(header)


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class CompareRow:
    """One CSV row: one tensor of one op (or one NaN row for an op that could not be compared)."""

    index: int
    """Fusion-group number in graph order (msaccucmp's Index)."""
    op_type: str
    npu_dump: str
    npu_dtype: str
    npu_address: str
    ground_truth: str
    golden_dtype: str
    tensor_index: str
    """'<npu op>:input:0' / '<npu op>:output:1'; 'NaN' on a row for an op without dump."""
    shape: str
    metrics: TensorMetrics
    golden_address: str = NAN_TEXT
    """Only written in NPU-vs-NPU results."""
    overflow: str = NAN_TEXT
    """YES/NO/NaN, written when the run detects overflow (OVERFLOW_COLUMN)."""
    op_sequence: str = "0"
    """The graph op's id, written when the run compares a range or selection of ops (SEQUENCE_COLUMN)."""

    def cells(self, npu_vs_npu: bool, overflow: bool = False, sequence: bool = False) -> list[str]:
        metrics = self.metrics
        if not (npu_vs_npu or overflow or sequence):  # (the usual row: one list, no concatenations)
            return [str(self.index), self.op_type, self.npu_dump, self.npu_dtype, self.npu_address, self.ground_truth,
                    self.golden_dtype, self.tensor_index, self.shape, *metrics.values, metrics.reason_text]
        head = [str(self.index)] + ([self.op_sequence] if sequence else []) + [
            self.op_type, self.npu_dump, self.npu_dtype, self.npu_address, self.ground_truth, self.golden_dtype]
        if npu_vs_npu:
            head.append(self.golden_address)
        return head + [self.tensor_index, self.shape] + ([self.overflow] if overflow else []) + [
            *metrics.values, metrics.reason_text]


def _encode_rows(rows: Iterable[Sequence[str]]) -> str:
    return "".join([csv_line(row) for row in rows])


def csv_line(cells: Sequence[str]) -> str:
    """One row of string cells as csv.writer's excel dialect writes it (minimal quoting, CRLF), as msaccucmp
    writes its CSVs: a third faster than the writer on rows of short cells, which it scans character by
    character (tests/analysis/results/test_result_writer_quoting.py holds it to the writer on hostile cells)."""
    if len(cells) == 1 and not cells[0]:
        return '""\r\n'  # (the writer's one quoted empty cell: a bare CRLF would read back as no row at all)
    line = ",".join(cells)
    if '"' not in line and "\n" not in line and "\r" not in line:  # (three scans in C, not three tests per cell)
        if line.count(",") == len(cells) - 1:
            return line + "\r\n"  # nothing to quote
        return ",".join([('"' + cell + '"') if "," in cell else cell for cell in cells]) + "\r\n"
    # (the test inline: a function call per cell costs a fifth of the row)
    return ",".join([
        ('"' + cell.replace('"', '""') + '"') if ("," in cell or '"' in cell or "\n" in cell or "\r" in cell) else cell
        for cell in cells]) + "\r\n"


def encode_rows(rows: Iterable[CompareRow], npu_vs_npu: bool, overflow: bool = False, sequence: bool = False) -> str:
    """Rows as the CSV text ResultWriter.write_text appends."""
    return _encode_rows(row.cells(npu_vs_npu, overflow, sequence) for row in rows)


def encode_groups(groups: Sequence[Sequence[CompareRow]], npu_vs_npu: bool, overflow: bool = False,
                  sequence: bool = False) -> tuple[str, RowDigest]:
    """The CSV text of the groups' rows, in order (what encode_rows writes for each group in turn), and the
    digest of all their rows taken from the very cells written: what reading the text back would give a
    summary."""
    cells = [row.cells(npu_vs_npu, overflow, sequence) for rows in groups for row in rows]
    if not cells:
        return "", digest_rows(())
    header = header_for(npu_vs_npu, overflow, sequence)
    if set(map(len, cells)) != {len(header)}:  # (never, for CompareRows: zip would cut the longer rows)
        pick = summary_cells_getter(header)
        return "".join([csv_line(row) for row in cells]), digest_rows([pick([*row, ""]) for row in cells])
    columns = list(zip(*cells))
    blank = ("",) * len(cells)  # the cell of each summary column the header lacks
    picked = zip(*[columns[at] if at < len(columns) else blank for at in summary_columns(header)])
    return _encode_columns(columns, cells), digest_rows(picked)


def _encode_columns(columns: list[tuple[str, ...]], rows: list[list[str]]) -> str:
    """csv_line of every row, worked out column by column: a column none of whose cells holds a comma (most
    of them) is joined as it is, and only the cells of the others are tested: half the time of a line at a
    time, where nearly every row has a comma in its StandardDeviation cell (and its Shape)."""
    quoted = list(columns)
    for at, column in enumerate(columns):
        joined = "".join(column)
        if '"' in joined or "\n" in joined or "\r" in joined:
            return "".join([csv_line(row) for row in rows])  # (rare: quotes doubled, line breaks)
        if "," in joined:
            quoted[at] = [('"' + cell + '"') if "," in cell else cell for cell in column]
    if len(quoted) == 1:
        return "".join([csv_line(row) for row in rows])  # (csv_line's rule for a lone empty cell)
    return "\r\n".join(map(",".join, zip(*quoted))) + "\r\n"


class ResultWriter:
    """Streams row groups to `<final>.partial` (mode 0600); `finish()` renames it to the final name."""

    def __init__(self, final_path: Path, npu_vs_npu: bool, *, resume: bool = False, overflow: bool = False,
                 sequence: bool = False) -> None:
        self.final_path = Path(final_path)
        self.partial_path = self.final_path.with_name(self.final_path.name + PARTIAL_SUFFIX)
        self.npu_vs_npu = npu_vs_npu
        self.columns = {"overflow": overflow, "sequence": sequence}
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if resume else os.O_TRUNC)
        fd = os.open(self.partial_path, flags, 0o600)
        os.fchmod(fd, 0o600)
        empty = os.fstat(fd).st_size == 0
        self._file = os.fdopen(fd, "w", encoding="utf-8", newline="", buffering=1 << 16)
        self._flushed = 0.0
        self._size = 0
        self._sha1 = None if resume else hashlib.sha1()  # (an appended file's earlier bytes are not here)
        if empty:
            self._write(_encode_rows([header_for(npu_vs_npu, overflow, sequence)]))

    def _write(self, text: str) -> None:
        self._file.write(text)
        if self._sha1 is not None:
            data = text.encode("utf-8")  # (the file's own encoding, no newline translation: its very bytes)
            self._size += len(data)
            self._sha1.update(data)
        now = time.monotonic()
        if now - self._flushed >= FLUSH_SECONDS:  # not per group: 20,000 groups would be 20,000 syscalls
            self._file.flush()
            self._flushed = now

    def write_group(self, rows: Sequence[CompareRow]) -> None:
        """All rows of one group in one write, so an interruption never splits a group (but see resume)."""
        self._write(encode_rows(rows, self.npu_vs_npu, **self.columns))

    def write_text(self, text: str) -> None:
        """Whole groups' rows already encoded (encode_groups, in a worker: a batch of them), in one write."""
        self._write(text)

    @property
    def stamp(self) -> list[object] | None:
        """[size, SHA-1] of everything written (digest_cache's stamp of a CSV); None for an appended file."""
        return None if self._sha1 is None else [self._size, self._sha1.hexdigest()]

    def finish(self) -> Path:
        # closed, then renamed: no process ever sees a half-written result under the final name. No fsync,
        # as no other file the tool writes has one: it cost 20-50 ms per CSV, a second on 64 ranks.
        self._file.close()
        os.replace(self.partial_path, self.final_path)
        return self.final_path

    def close(self) -> None:
        """Stop without completing (interrupted): the .partial stays, valid, for --resume."""
        if not self._file.closed:
            self._file.flush()
            self._file.close()


def prepare_resume(partial_path: Path) -> set[int]:
    """Make an interrupted `.partial` end on a whole group and return the group Indexes it holds.

    A hard kill can leave half a line, or half of a group's rows: both are cut, and that group is redone.
    """
    data = partial_path.read_bytes()
    end = data.rfind(b"\r\n")
    data = data[: end + 2] if end >= 0 else b""
    lines = data.split(b"\r\n")[:-1] if data else []
    if len(lines) <= 1:
        keep = data if lines else b""
        done: set[int] = set()
    else:
        table = read_result_text(data.decode("utf-8"), partial_path)
        indexes = [r.index_number for r in table.rows]
        last = indexes[-1] if indexes else None
        kept_rows = [i for i, value in enumerate(indexes) if value != last]
        # rows are CSV records; re-encode header + kept rows exactly as they were written
        records = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        keep = _encode_rows([records[0]] + [records[i + 1] for i in kept_rows]).encode("utf-8")
        done = {indexes[i] for i in kept_rows}
    fd = os.open(partial_path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, keep)
    finally:
        os.close(fd)
    return done
