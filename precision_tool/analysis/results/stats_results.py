"""Statistics compare results: the result CSV's header, reading it back (`vcs`, `ac`), summarising and filtering.

Split from stats_compare (which computes the rows) so each module stays small; stats_compare re-exports
these names.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from precision_tool.errors import FormatError

PASS, WARNING, ERROR = "pass", "warning", "error"
NO_GOLDEN, NOT_COMPUTED, UNREADABLE = "no golden", "not computed", "unreadable"
NAN_TEXT = "NaN"
STATS_RESULT_HEADER: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "DataType", "Format", "Shape",
    "NPUCount", "GoldenCount",
    "NPUMax", "GoldenMax", "MaxDiff", "MaxRelativeErr",
    "NPUMin", "GoldenMin", "MinDiff", "MinRelativeErr",
    "NPUMean", "GoldenMean", "MeanDiff", "MeanRelativeErr",
    "NPUNaN", "GoldenNaN", "NPUInf", "GoldenInf",
    "Result", "Reason", "StatsFile", "GoldenFile",
)
"""The result CSV of a statistics compare. Diff = NPU − golden; RelativeErr = |Diff| / |golden| (NaN when the
golden is 0 or either side is missing/non-finite); Result one of pass/warning/error/no golden/not computed/
unreadable; Reason says why (empty on pass)."""


# --- rows and summaries ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StatsResultRow:
    """One row of a statistics result CSV, as read back (numbers kept as written)."""

    index: int
    op_type: str
    npu_dump: str
    ground_truth: str
    tensor_index: str
    result: str
    reason: str
    cells: dict[str, str]

    @property
    def failed(self) -> bool:
        return self.result == ERROR

    @property
    def op_name(self) -> str:
        return self.tensor_index.split(":", 1)[0] if ":" in self.tensor_index else self.npu_dump


@dataclass(frozen=True)
class StatsSummary:
    """What a statistics compare found: counts per result, the first error (and first warning) in graph order."""

    csv_path: Path | None
    total: int
    passed: int
    warnings: int
    errors: int
    no_golden: int
    not_computed: int
    unreadable: int
    first_error: StatsResultRow | None
    first_warning: StatsResultRow | None
    first_failing: StatsResultRow | None = None
    """The first row (graph order) that is a warning or an error."""
    notes: tuple[str, ...] = ()
    unreadable_files: tuple[tuple[str, str], ...] = ()
    """(file, problem) of each statistics CSV or golden .npy that could not be read."""

    @property
    def compared(self) -> int:
        return self.passed + self.warnings + self.errors

    @property
    def first_divergent(self) -> StatsResultRow | None:
        """The first tensor in graph order whose statistics differ (a warning or an error)."""
        return self.first_failing


def cell_text(value: float | int | None) -> str:
    if value is None:
        return NAN_TEXT
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return NAN_TEXT
    return repr(float(value)) if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def encode_rows(rows: Sequence[Sequence[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # excel dialect, CRLF, as the tensor result CSVs
    writer.writerows(rows)
    return buffer.getvalue()


# --- reading results back (vcs, ac) -----------------------------------------------------------------
_RESULTS = (PASS, WARNING, ERROR, NO_GOLDEN, NOT_COMPUTED, UNREADABLE)


def is_stats_result(path: str | os.PathLike[str]) -> bool:
    """True when the CSV at `path` starts with the statistics result header (not a tensor compare's)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            first = handle.readline(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return next(csv.reader([first]), []) == list(STATS_RESULT_HEADER)


def read_stats_result(path: str | os.PathLike[str]) -> tuple[StatsResultRow, ...]:
    """The rows of a statistics result CSV (columns found by name). FormatError when it is not one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"cannot be read as a statistics result CSV ({exc})") from None
    return rows_from_text(text, path)


def rows_from_text(text: str, path: Path) -> tuple[StatsResultRow, ...]:
    try:
        records = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise FormatError(path, f"is not valid CSV ({exc})") from None
    if not records:
        raise FormatError(path, "is empty; not a statistics result CSV")
    header = records[0]
    needed = ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "Result", "Reason")
    missing = [name for name in needed if name not in header]
    if missing:
        raise FormatError(path, f"has no column {', '.join(missing)}; not a statistics result CSV (vc writes one "
                                "for statistics dumps)")
    at = {name: header.index(name) for name in header}
    rows = []
    for number, record in enumerate(records[1:], 2):
        if not record:
            continue
        if len(record) != len(header):
            raise FormatError(path, f"line {number}: {len(record)} fields, the header has {len(header)}")
        cells = dict(zip(header, record))
        index_text = record[at["Index"]]
        if not (index_text.isascii() and index_text.isdigit() and len(index_text) <= 18):
            raise FormatError(path, f"line {number}, column 'Index': {index_text[:40]!r} is not a number")
        result = record[at["Result"]]
        if result not in _RESULTS:
            raise FormatError(path, f"line {number}, column 'Result': {result[:40]!r} is not one of "
                                    f"{', '.join(_RESULTS)}")
        rows.append(StatsResultRow(int(index_text), record[at["OpType"]], record[at["NPUDump"]],
                                   record[at["GroundTruth"]], record[at["TensorIndex"]], result,
                                   record[at["Reason"]], cells))
    return tuple(rows)


def summarize_stats(rows: Sequence[StatsResultRow], csv_path: Path | None = None, *, notes: Sequence[str] = (),
                    unreadable: Sequence[tuple[str, str]] = ()) -> StatsSummary:
    """Counts per result and the first error / warning in graph order (rows are written in graph order)."""
    count = {name: sum(1 for r in rows if r.result == name) for name in _RESULTS}
    return StatsSummary(
        csv_path=csv_path, total=len(rows), passed=count[PASS], warnings=count[WARNING], errors=count[ERROR],
        no_golden=count[NO_GOLDEN], not_computed=count[NOT_COMPUTED], unreadable=count[UNREADABLE],
        first_error=next((r for r in rows if r.result == ERROR), None),
        first_warning=next((r for r in rows if r.result == WARNING), None),
        first_failing=next((r for r in rows if r.result in (WARNING, ERROR)), None),
        notes=tuple(notes), unreadable_files=tuple(unreadable),
    )


def filter_stats_rows(rows: Sequence[StatsResultRow], *, results: Sequence[str] | None = None,
                      name: str | None = None) -> list[StatsResultRow]:
    """Rows whose Result is one of `results` (all when None) and whose op or golden name contains `name`."""
    chosen = [r for r in rows if results is None or r.result in results]
    if name:
        needle = name.lower()
        chosen = [r for r in chosen if needle in r.npu_dump.lower() or needle in r.ground_truth.lower()]
    return chosen
