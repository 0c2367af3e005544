"""Result CSVs (compare.md §3): reading any version's, summarising (result_writer.py writes ours).

A finished name (`result_<stamp>.csv`) is a complete result; an interrupted run leaves a valid CSV
(`.partial`) that `vc --resume` continues. Readers find columns by header name, so msaccucmp CSVs of any
version read the same way.
"""

from __future__ import annotations

import csv
import io
import math
import operator
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from precision_tool.analysis.results.metric_names import METRIC_NAMES, NAN_TEXT
from precision_tool.analysis.results.result_ops import (
    NAN_DATA_TEXTS, OpFields, OpResult, OpSequence, TensorCosine, op_results,
)
from precision_tool.errors import FormatError
from precision_tool.gc_pause import without_gc, without_gc_keeping

if TYPE_CHECKING:
    from precision_tool.analysis.graphs.op_labels import OpLabels

PARTIAL_SUFFIX = ".partial"
OVERFLOW_COLUMN = "OverFlow"
"""msaccucmp -overflow_detection: YES/NO for fp16 NPU tensors, NaN otherwise; right after Shape."""
SEQUENCE_COLUMN = "OpSequence"
"""msaccucmp -r/-s: the graph op's id, right after Index."""


# --- reading ------------------------------------------------------------------------------------
@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class TensorRecord:
    """One row of a result CSV, whichever tool and version wrote it."""

    index: str
    op_type: str
    npu_op: str
    golden_op: str
    tensor_index: str
    shape: str
    cosine: float
    cells: list[str]
    """The row's cells as read; the metrics are picked from them when asked (see `values`)."""
    metric_columns: dict[str, int]
    """Metric name → its column, shared by every row of a table (a dict per row costs 20,000 dicts)."""
    reason: str
    overflow: str = ""
    """The OverFlow cell (YES/NO/NaN); empty when the CSV has no such column."""
    op_sequence: str = ""
    """The OpSequence cell (the graph op's id); empty when the CSV has no such column."""

    @property
    def values(self) -> dict[str, str]:
        """Metric name → its cell, for the metrics the CSV has."""
        cells = self.cells
        return {name: cells[col] for name, col in self.metric_columns.items()}

    def metric(self, name: str) -> str:
        """One metric's cell; '' when the CSV has no such column."""
        col = self.metric_columns.get(name)
        return "" if col is None else self.cells[col]

    @property
    def index_number(self) -> int:
        try:
            return int(self.index)
        except ValueError:
            return -1

    def __post_init__(self) -> None:
        # worked out once per row: summaries ask each row several times
        parts = self.tensor_index.rsplit(":", 2)
        self._parts = (
            parts[1] if len(parts) == 3 and parts[1] in ("input", "output") else "",
            parts[0] if len(parts) == 3 else self.npu_op)

    @property
    def kind(self) -> str:
        """'input', 'output', or '' for a row without a tensor."""
        return self._parts[0]  # type: ignore[attr-defined, no-any-return]

    @property
    def tensor_op(self) -> str:
        return self._parts[1]  # type: ignore[attr-defined, no-any-return]


@dataclass(frozen=True)
class ResultTable:
    path: Path
    header: tuple[str, ...]
    rows: tuple[TensorRecord, ...]
    problems: tuple[str, ...] = ()
    """One message per malformed row or value ('line 7: CosineSimilarity is 'abc', not a number'); such
    rows are kept with NaN values, and the summary warns instead of silently trusting them."""

    @property
    def complete(self) -> bool:
        return not self.path.name.endswith(PARTIAL_SUFFIX)


def _float(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


class ResultReader:
    """Reads a result CSV's text, whole or piece by piece; `table()` is then what read_result_text gives for
    the whole text. Line numbers in problems count from the first piece. `cells_only`: keep only what a
    summary reads of each row (`cells`, SummaryCells), not a TensorRecord per row (digest_cache.py)."""

    def __init__(self, path: Path, *, cells_only: bool = False) -> None:
        self.path = path
        self.header: tuple[str, ...] | None = None
        self.rows: list[TensorRecord] = []
        self.cells: list[SummaryCells] | None = [] if cells_only else None
        self.problems: list[str] = []
        self._lines = 0  # lines of the pieces read so far

    @without_gc
    def feed(self, text: str) -> None:
        reader = csv.reader(io.StringIO(text, newline=""))
        records: list[list[str]] = []
        lines: list[int] = []
        try:
            for record in reader:
                records.append(record)
                lines.append(reader.line_num + self._lines)
        except csv.Error as exc:
            raise FormatError(self.path, f"line {reader.line_num + self._lines}: not valid CSV ({exc})") from None
        self._lines += reader.line_num
        if self.header is None and records:
            self._read_header(records[0])
            records, lines = records[1:], lines[1:]
        if records:
            self._read_rows(records, lines)

    def table(self) -> ResultTable:
        if self.header is None:
            raise FormatError(self.path, "the file is empty; it is not a comparison result")
        return ResultTable(path=self.path, header=self.header, rows=tuple(self.rows), problems=tuple(self.problems))

    def _read_header(self, record: list[str]) -> None:
        header = tuple(h.strip() for h in record)
        positions: dict[str, list[int]] = {}
        for i, name in enumerate(header):
            positions.setdefault(name, []).append(i)

        def first(*names: str) -> int | None:
            for name in names:
                if name in positions:
                    return positions[name][0]
            return None

        tensor_col = first("TensorIndex")
        cosine_col = first("CosineSimilarity")
        if tensor_col is None or cosine_col is None:
            raise FormatError(
                self.path, "has no TensorIndex or CosineSimilarity column; it is not an msaccucmp/vc result CSV"
            )
        self.header = header
        self._metric_cols = {name: positions[name][0] for name in METRIC_NAMES if name in positions}
        self._numeric = [(n, c) for n, c in self._metric_cols.items() if n != "StandardDeviation"]
        self._numeric_cells = operator.itemgetter(*(c for _, c in self._numeric)) if len(self._numeric) > 1 \
            else None
        # (one column index per field of TensorRecord, "" where the CSV lacks the column)
        at = [first("Index"), first("OpType"), first("NPUDump", "LeftOp"), first("GroundTruth", "RightOp"),
              tensor_col, first("Shape"), cosine_col, first("CompareFailReason"), first(OVERFLOW_COLUMN),
              first(SEQUENCE_COLUMN)]
        self._fields = operator.itemgetter(*(len(header) if c is None else c for c in at))
        self._summary_cells = summary_cells_getter(header)

    def _read_rows(self, records: list[list[str]], lines: list[int]) -> None:
        assert self.header is not None
        rows, problems, numeric, numeric_cells = self.rows, self.problems, self._numeric, self._numeric_cells
        fields, metric_cols, width = self._fields, self._metric_cols, len(self.header)
        cells, summary_cells = self.cells, self._summary_cells
        for line, record in zip(lines, records):
            if not record:
                continue
            if len(record) != width:
                problems.append(f"line {line}: has {len(record)} fields but the header has {width} "
                                "(a cut or corrupt row)")
                record = record[:width] + [""] * (width - len(record))
            # the usual row (every metric a plain number or a nan/inf text) in one regex call, else cell by cell
            if numeric_cells is None or not _NUMBERS.fullmatch(",".join(numeric_cells(record))):
                for name, col in numeric:
                    value = record[col]
                    if value.strip() and math.isnan(_float(value)) and value.strip().lower() not in ("nan", "-nan"):
                        problems.append(f"line {line}: {name} is {value!r}, not a number")
            record.append("")  # the cell of each field whose column the CSV lacks
            if cells is not None:
                cells.append(summary_cells(record))
                continue
            index, op_type, npu, golden, tensor, shape, cosine, reason, overflow, sequence = fields(record)
            rows.append(TensorRecord(index, op_type, npu, golden, tensor, shape, _float(cosine), record,
                                     metric_cols, reason, overflow.strip(), sequence.strip()))


def read_result_text(text: str, path: Path) -> ResultTable:
    reader = ResultReader(path)
    reader.feed(text)
    return reader.table()


_NUMBERS = re.compile(r"(?:(?:-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|nan|-nan|inf|-inf)(?:,|$))*")
"""Comma-joined metric cells that are all numbers as the tools print them (anything else: checked one by
one with float(), which also takes forms this pattern does not)."""


def read_result_csv(path: str | os.PathLike[str]) -> ResultTable:
    """Read a result CSV of ours or of any msaccucmp version (columns found by header name)."""
    path = Path(path)
    return read_result_text(result_text(path), path)


def result_text(path: Path, data: bytes | None = None) -> str:
    """The CSV's text as a text-mode read gives it (universal newlines, undecodable bytes replaced); `data`:
    its bytes when the caller read them already (digest_cache.py hashes the same bytes)."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FormatError(path, f"cannot read ({exc.strerror})") from None
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


def result_files(folder: Path) -> list[Path]:
    """The result CSVs in a result folder: finished ones, then interrupted (.partial) ones, by name."""
    if not folder.is_dir():
        return []
    done = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".csv")
    partial = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(".csv" + PARTIAL_SUFFIX))
    return done + partial


# --- summaries ----------------------------------------------------------------------------------
def short_tensor(tensor_index: str, default: str | None = None) -> str:
    """`op:input:0` → `in0`, `op:output:2` → `out2`, as panels, answers and tables name an op's tensors;
    `default` (else the index itself) for a row without a tensor."""
    parts = tensor_index.rsplit(":", 2)
    if len(parts) == 3 and parts[1] in ("input", "output"):
        return ("in" if parts[1] == "input" else "out") + parts[2]
    return tensor_index if default is None else default


@dataclass(frozen=True)
class FirstFailure:
    """The first tensor (in graph order) whose cosine is at or below the threshold."""

    op: OpResult
    tensor: TensorCosine
    is_graph_input: bool
    """True when it is an op's input that no earlier failing output explains: the runs were fed
    different data (inconsistent inputs), not an NPU operator error."""


@dataclass(frozen=True)
class CompareSummary:
    """What `vcs` and `ac` show of one result CSV."""

    path: Path
    complete: bool
    threshold: float
    ops: Sequence[OpResult]
    """Every op, in graph order (an OpSequence: each made when first asked for)."""
    tensors_compared: int
    tensors_not_compared: int
    abnormal_ops: tuple[OpResult, ...] = field(default=())
    """Ops with an output cosine ≤ threshold or an output holding NaN/Inf, in graph order."""
    nan_data_outputs: int = 0
    """Outputs whose cosine is nan because the data holds NaN/Inf (counted as failing)."""
    first_divergent_op: OpResult | None = None
    """The first op whose outputs fail while its inputs pass: where the error is born."""
    first_failure: FirstFailure | None = None
    min_output_cosine: float = math.nan
    npu_vs_npu: bool = False
    """Both sides are NPU dumps (the header has two Address columns): the right side is not golden."""
    problems: tuple[str, ...] = ()
    """Malformed rows/values of the CSV (ResultTable.problems): the verdict may be wrong when there are any."""
    name_only: bool = False
    """NPU matched to golden by op name alone (no graph): fused ops cannot be matched, so no op is named
    as where the error is born (first_divergent_op and first_failure stay None)."""
    labelled: bool = False
    """Ops are named by their Build-graph id and name (op_labels.py), not the CSV's Index and spelling."""
    overflow_column: bool = False
    """The CSV has an OverFlow column (vc -overflow_detection, msaccucmp -overflow_detection)."""
    output_counts: tuple[int, int, int] | None = None
    """(outputs, compared, failing) of every op's outputs, as counts.counts_of counts them."""

    @property
    def overflow_ops(self) -> tuple[OpResult, ...]:
        """Ops with a tensor marked OverFlow YES, in graph order."""
        ops = self.ops
        if isinstance(ops, OpSequence):  # (the others are not made)
            return tuple([ops[at] for at, fields in enumerate(ops.fields) if fields[7]])
        return tuple(op for op in ops if op.overflowed)

    @property
    def tensors_total(self) -> int:
        return self.tensors_compared + self.tensors_not_compared


SummaryCells = tuple[str, str, str, str, str, str, str, str, str]
"""What a summary reads of one row, as written: Index, OpType, NPUDump, GroundTruth, TensorIndex,
CosineSimilarity, MaxAbsoluteError ('' without the column), CompareFailReason, OverFlow ('' likewise)."""
_SUMMARY_COLUMNS = (("Index",), ("OpType",), ("NPUDump", "LeftOp"), ("GroundTruth", "RightOp"), ("TensorIndex",),
                    ("CosineSimilarity",), ("MaxAbsoluteError",), ("CompareFailReason",), (OVERFLOW_COLUMN,))

@dataclass
class RowDigest:
    """What a summary needs of rows, worked out where the rows are: a worker sends it with the rows it
    encodes, so a comparison's parent never reads its own CSV back (digest_rows; summarize_digest)."""

    ops: list[OpFields] = field(default_factory=list)
    rows: int = 0
    compared: int = 0
    """Rows whose cosine is a number."""

    def extend(self, other: "RowDigest") -> None:
        """`other`'s rows after these (an op's rows never span two digests: a group is encoded whole)."""
        self.ops.extend(other.ops)
        self.rows += other.rows
        self.compared += other.compared


def summary_columns(header: Sequence[str]) -> tuple[int, ...]:
    """Where each of SummaryCells' cells is in a row under `header` (len(header): the header lacks it)."""
    at = {name: i for i, name in reversed(list(enumerate(header)))}  # (a name's first column)
    return tuple(next((at[n] for n in names if n in at), len(header)) for names in _SUMMARY_COLUMNS)


def summary_cells_getter(header: Sequence[str]) -> Callable[[list[str]], SummaryCells]:
    """Picks a row's SummaryCells by `header`'s column names; the row must end with one extra "" (the cell
    of each column the header lacks)."""
    return operator.itemgetter(*summary_columns(header))


def digest_rows(rows: Iterable[SummaryCells]) -> RowDigest:
    """Rows → ops, keeping file order (which is graph order for both tools): the rows of one (Index, op)
    make one op, whether they are next to each other or not."""
    ops: list[list] = []  # type: ignore[type-arg]
    current: dict[tuple[str, str], list] = {}  # type: ignore[type-arg]
    count = compared = 0
    for index, op_type, npu_op, golden_op, tensor_index, cosine_text, error_text, reason, overflow in rows:
        count += 1
        cosine = _float(cosine_text)
        if cosine == cosine:
            compared += 1
        parts = tensor_index.rsplit(":", 2)
        kind = parts[1] if len(parts) == 3 and parts[1] in ("input", "output") else ""
        tensor_op = parts[0] if len(parts) == 3 else npu_op
        entry = current.get((index, tensor_op))
        if entry is None:  # the op is named by its first row
            entry = current[(index, tensor_op)] = [index, tensor_op if kind else npu_op, golden_op, op_type,
                                                   [], [], [], []]
            ops.append(entry)
        if kind:
            stripped = cosine_text.strip()
            nan_data = stripped != NAN_TEXT and stripped.lower() in NAN_DATA_TEXTS
            entry[4 if kind == "input" else 5].append((tensor_index, cosine, nan_data, _float(error_text)))
        if reason:
            entry[6].append(reason)
        if overflow.strip().upper() == "YES":
            entry[7].append(tensor_index if kind else npu_op)
    return RowDigest([(e[0], e[1], e[2], e[3], tuple(e[4]), tuple(e[5]), tuple(e[6]), tuple(e[7])) for e in ops],
                     count, compared)


def _table_cells(table: ResultTable) -> Iterator[SummaryCells]:
    for row in table.rows:
        yield (row.index, row.op_type, row.npu_op, row.golden_op, row.tensor_index,
               row.metric("CosineSimilarity"), row.metric("MaxAbsoluteError"), row.reason, row.overflow)


def group_ops(table: ResultTable, labels: "OpLabels | None" = None) -> list[OpResult]:
    """Rows → ops (digest_rows). With `labels`, ops of the Build graph are named by their graph id and
    graph name (see op_labels.py)."""
    return op_results(digest_rows(_table_cells(table)).ops, labels)


@without_gc
def summarize(table: ResultTable, threshold: float = 0.98, *, name_only: bool = False,
              labels: "OpLabels | None" = None) -> CompareSummary:
    """Abnormal ops, the first divergent op and the first failing tensor of one result (not named when the
    match was by name only: an unsound match makes a confident wrong verdict). `labels`: show ops under
    their Build-graph id and name."""
    return summarize_digest(digest_rows(_table_cells(table)), table.path, threshold, name_only=name_only,
                            labels=labels, npu_vs_npu=table.header.count("Address") == 2,
                            overflow_column=OVERFLOW_COLUMN in table.header, problems=table.problems)


@without_gc_keeping  # (the summary lives on, acyclic: not rescanned by the collector's next pass)
def summarize_digest(digest: RowDigest, path: Path, threshold: float = 0.98, *, name_only: bool = False,
                     labels: "OpLabels | None" = None, npu_vs_npu: bool = False, overflow_column: bool = False,
                     problems: tuple[str, ...] = ()) -> CompareSummary:
    """summarize() of the rows `digest` was made of, written to `path` (npu_vs_npu: its header has two
    Address columns; overflow_column: an OverFlow column). Counted on the digest's plain fields: only the ops
    it names (abnormal, first failure) are made OpResults here, the others when asked for (OpSequence)."""
    ops = OpSequence(digest.ops, labels)
    abnormal_at: list[int] = []
    first_at = None
    outputs = compared = failing = nan_data = numbers = 0
    low = math.inf
    for at, fields in enumerate(digest.ops):
        bad = 0
        for _, cosine, holds_nan, _ in fields[5]:  # (TensorCosine.fails, on the plain fields)
            outputs += 1
            if cosine == cosine:
                compared += 1
                numbers += 1
                if cosine < low:
                    low = cosine
            elif holds_nan:
                compared += 1
            if holds_nan or cosine <= threshold:
                bad += 1
            nan_data += holds_nan
        if bad:
            abnormal_at.append(at)
            failing += bad
        if first_at is None and (bad or any(t[2] or t[1] <= threshold for t in fields[4])):
            first_at = at
    abnormal = tuple([ops[at] for at in abnormal_at])
    divergent = next((op for op in abnormal if not op.failing_inputs(threshold)), None)
    first_failure: FirstFailure | None = None
    if name_only:
        divergent = None
    elif first_at is not None:
        op = ops[first_at]
        bad_inputs = op.failing_inputs(threshold)
        if bad_inputs:
            first_failure = FirstFailure(op, bad_inputs[0], is_graph_input=True)
        else:
            first_failure = FirstFailure(op, op.failing_outputs(threshold)[0], is_graph_input=False)
    return CompareSummary(
        path=path, complete=not path.name.endswith(PARTIAL_SUFFIX), threshold=threshold, ops=ops,
        tensors_compared=digest.compared, tensors_not_compared=digest.rows - digest.compared,
        abnormal_ops=abnormal, first_divergent_op=divergent, first_failure=first_failure,
        nan_data_outputs=nan_data, min_output_cosine=low if numbers else math.nan,
        npu_vs_npu=npu_vs_npu, name_only=name_only, problems=problems,
        labelled=labels is not None, overflow_column=overflow_column, output_counts=(outputs, compared, failing),
    )
