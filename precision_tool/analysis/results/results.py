"""Result CSVs (compare.md §3): reading any version's, summarising (result_writer.py writes ours).

A finished name (`result_<stamp>.csv`) is a complete result; an interrupted run leaves a valid CSV
(`.partial`) that `vc --resume` continues. Readers find columns by header name, so msaccucmp CSVs of any
version read the same way.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import operator
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from precision_tool.analysis.results.metrics import METRIC_NAMES, NAN_TEXT
from precision_tool.errors import FormatError
from precision_tool.gc_pause import without_gc

if TYPE_CHECKING:
    from precision_tool.analysis.graphs.op_labels import OpLabel, OpLabels

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
    """Reads a result CSV's text piece by piece (a comparison's groups as they are written, so the rows are
    read while later groups are still compared); `table()` is then what read_result_text gives for the
    whole text. Line numbers in problems count from the first piece."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: tuple[str, ...] | None = None
        self.rows: list[TensorRecord] = []
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

    def _read_rows(self, records: list[list[str]], lines: list[int]) -> None:
        assert self.header is not None
        rows, problems, numeric, numeric_cells = self.rows, self.problems, self._numeric, self._numeric_cells
        fields, metric_cols, width = self._fields, self._metric_cols, len(self.header)
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
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror})") from None
    return read_result_text(text, path)


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


NAN_DATA_TEXTS = ("nan", "-nan", "inf", "-inf")
"""How a metric computed over NaN/Inf data is printed (not computed at all is 'NaN')."""


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class TensorCosine:
    tensor_index: str
    cosine: float
    """NaN when not computed, or when the data holds NaN/Inf (then `nan_data`)."""
    nan_data: bool = False
    """The cosine is nan because the tensors hold NaN/Inf: it fails the threshold, it is not 'unknown'."""
    max_abs_error: float = math.nan
    """MaxAbsoluteError (0 when the two sides hold the same numbers); NaN when not computed."""

    def fails(self, threshold: float) -> bool:
        return self.nan_data or (not math.isnan(self.cosine) and self.cosine <= threshold)


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class OpResult:
    """One op (or fusion group) of a result, in graph order."""

    index: str
    npu_op: str
    golden_op: str
    op_type: str
    inputs: tuple[TensorCosine, ...]
    outputs: tuple[TensorCosine, ...]
    reasons: tuple[str, ...] = ()
    overflowed: tuple[str, ...] = ()
    """TensorIndex of each row whose OverFlow is YES ('<op>' for the op's row without a tensor)."""

    def failing_outputs(self, threshold: float) -> list[TensorCosine]:
        """Outputs at or below the threshold, and outputs whose data holds NaN/Inf."""
        return [t for t in self.outputs if t.fails(threshold)]

    def failing_inputs(self, threshold: float) -> list[TensorCosine]:
        return [t for t in self.inputs if t.fails(threshold)]

    @property
    def nan_data_outputs(self) -> list[TensorCosine]:
        return [t for t in self.outputs if t.nan_data]


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
    ops: tuple[OpResult, ...]
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

    @property
    def overflow_ops(self) -> tuple[OpResult, ...]:
        """Ops with a tensor marked OverFlow YES, in graph order."""
        return tuple(op for op in self.ops if op.overflowed)

    @property
    def tensors_total(self) -> int:
        return self.tensors_compared + self.tensors_not_compared


def group_ops(table: ResultTable, labels: "OpLabels | None" = None) -> list[OpResult]:
    """Rows → ops, keeping file order (which is graph order for both tools). With `labels`, ops of the
    Build graph are named by their graph id and graph name (see op_labels.py)."""
    ops: list[OpResult] = []
    current: dict[tuple[str, str], dict] = {}  # type: ignore[type-arg]
    order: list[tuple[str, str]] = []
    for row in table.rows:
        key = (row.index, row.tensor_op)
        if key not in current:
            current[key] = {"row": row, "inputs": [], "outputs": [], "reasons": []}
            order.append(key)
        entry = current[key]
        cosine_text = row.metric("CosineSimilarity").strip()
        nan_data = cosine_text != NAN_TEXT and cosine_text.lower() in NAN_DATA_TEXTS
        if row.kind:
            error = _float(row.metric("MaxAbsoluteError"))
            entry["inputs" if row.kind == "input" else "outputs"].append(
                TensorCosine(row.tensor_index, row.cosine, nan_data, error))
        if row.reason:
            entry["reasons"].append(row.reason)
        if row.overflow.upper() == "YES":
            entry.setdefault("overflowed", []).append(row.tensor_index if row.kind else row.npu_op)
    for key in order:
        entry = current[key]
        row = entry["row"]
        op = OpResult(
            index=row.index, npu_op=row.tensor_op if row.kind else row.npu_op, golden_op=row.golden_op,
            op_type=row.op_type, inputs=tuple(entry["inputs"]), outputs=tuple(entry["outputs"]),
            reasons=tuple(entry["reasons"]), overflowed=tuple(entry.get("overflowed", ())),
        )
        label = labels.get(op.npu_op) if labels is not None else None
        if label is not None:
            op = _relabelled(op, label)
        elif labels is not None:
            # not a graph op (a group's NaN row naming several ops): its number is the CSV's, not a graph id
            op = dataclasses.replace(op, index=f"Index {op.index}")
        ops.append(op)
    return ops


def _relabelled(op: OpResult, label: "OpLabel") -> OpResult:
    """`op` under its graph id and name; the other side keeps its name unless it is the same op (NPU vs NPU)."""
    # built directly, not with dataclasses.replace: a 20,000-op result relabels every op and tensor
    prefix = op.npu_op + ":"

    def tensor(t: TensorCosine) -> TensorCosine:
        if t.tensor_index.startswith(prefix):
            return TensorCosine(label.name + t.tensor_index[len(op.npu_op):], t.cosine, t.nan_data, t.max_abs_error)
        return t

    return OpResult(label.index, label.name, label.name if op.golden_op == op.npu_op else op.golden_op,
                    op.op_type, tuple(map(tensor, op.inputs)), tuple(map(tensor, op.outputs)), op.reasons,
                    op.overflowed)


@without_gc
def summarize(table: ResultTable, threshold: float = 0.98, *, name_only: bool = False,
              labels: "OpLabels | None" = None) -> CompareSummary:
    """Abnormal ops, the first divergent op and the first failing tensor of one result (not named when the
    match was by name only: an unsound match makes a confident wrong verdict). `labels`: show ops under
    their Build-graph id and name."""
    ops = group_ops(table, labels)
    compared = sum(1 for r in table.rows if not math.isnan(r.cosine))
    abnormal = tuple(op for op in ops if op.failing_outputs(threshold))
    divergent = next((op for op in abnormal if not op.failing_inputs(threshold)), None)
    first_failure: FirstFailure | None = None
    if name_only:
        divergent = None
    for op in () if name_only else ops:
        bad_inputs = op.failing_inputs(threshold)
        if bad_inputs:
            first_failure = FirstFailure(op, bad_inputs[0], is_graph_input=True)
            break
        bad_outputs = op.failing_outputs(threshold)
        if bad_outputs:
            first_failure = FirstFailure(op, bad_outputs[0], is_graph_input=False)
            break
    outputs = [t.cosine for op in ops for t in op.outputs if not math.isnan(t.cosine)]
    return CompareSummary(
        path=table.path, complete=table.complete, threshold=threshold, ops=tuple(ops),
        tensors_compared=compared, tensors_not_compared=len(table.rows) - compared,
        abnormal_ops=abnormal, first_divergent_op=divergent, first_failure=first_failure,
        nan_data_outputs=sum(len(op.nan_data_outputs) for op in ops),
        min_output_cosine=min(outputs) if outputs else math.nan,
        npu_vs_npu=table.header.count("Address") == 2, name_only=name_only, problems=table.problems,
        labelled=labels is not None, overflow_column=OVERFLOW_COLUMN in table.header,
    )
