"""Statistics dumps (`dump_data="stats"`, capture.md §8, formats.md §5): instead of a tensor dump, one CSV per
op dump at the dump file's path plus `.csv`, one row per input/output tensor.

Written by the AICPU dump task (RT `dump_task.cpp` ProcessDumpStats) with the header
`Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,
Negative Inf Count,Positive Inf Count`, and by host-side adump (RT `adx_dump_record.cpp`), whose header
depends on the statistics selected: `Count` may follow `Shape`, columns may be missing, `l2norm` may be
added. So columns are found by header name. Facts from the writers kept here:
- numbers are C++ `ostream <<` output (6 significant digits, `nan`, `-nan`, `inf`, `-inf`);
- a tensor without a data address gets empty statistics (`,,,,,,`); adump writes `NA` for statistics it
  could not compute and for a shape it could not print, and `-` for a tensor without a shape;
- an unknown data type or format is written `-` (or `UNKNOW`).
Nothing here prints; a bad file raises one FormatError naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from precision_tool.errors import FormatError
from precision_tool.formats.npu.npu_dump import DumpName, parse_dump_name

if TYPE_CHECKING:
    import numpy as np

STATS_SUFFIX = ".csv"
MAX_STATS_BYTES = 8 << 20
"""A statistics CSV holds one line per tensor of one op (a few hundred bytes); 8 MiB is far past any real one,
and refusing bigger files up front keeps a 50 MB one-line file from being parsed at all."""
_MAX_FIELD = 64  # the longest number a C++ ostream writes is ~25 characters

# Header names as the writers spell them (matched case-insensitively, spaces trimmed).
COL_IO, COL_INDEX, COL_SIZE, COL_DTYPE, COL_FORMAT, COL_SHAPE = (
    "Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape")
COL_MAX, COL_MIN, COL_AVG, COL_COUNT = "Max Value", "Min Value", "Avg Value", "Count"
COL_NAN, COL_NEG_INF, COL_POS_INF, COL_L2NORM = "Nan Count", "Negative Inf Count", "Positive Inf Count", "l2norm"
DEVICE_HEADER: tuple[str, ...] = (COL_IO, COL_INDEX, COL_SIZE, COL_DTYPE, COL_FORMAT, COL_SHAPE, COL_MAX, COL_MIN,
                                  COL_AVG, COL_COUNT, COL_NAN, COL_NEG_INF, COL_POS_INF)
"""The header of the device-side writer (and of adump's default selection)."""
_KNOWN = DEVICE_HEADER + (COL_L2NORM, "L2Norm Value")
_STAT_COLUMNS = (COL_MAX, COL_MIN, COL_AVG, COL_NAN, COL_NEG_INF, COL_POS_INF, COL_L2NORM)
_NOT_COMPUTED = ("", "NA", "N/A", "-")

_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"nan": math.nan, "-nan": math.nan, "+nan": math.nan, "inf": math.inf, "+inf": math.inf,
            "-inf": -math.inf, "infinity": math.inf, "-infinity": -math.inf}
_UINT = re.compile(r"[0-9]{1,20}")


@dataclass(frozen=True)
class StatsRow:
    """One tensor's statistics. None: the column is absent or the writer left it empty / `NA`."""

    kind: str  # "input" or "output"
    index: int
    data_size: int | None
    data_type: str  # "DT_FLOAT", "-" when the writer did not know it, "" when the column is absent
    layout: str
    shape: tuple[int, ...] | None  # () a scalar; None: absent, `-` or `NA`
    max: float | None
    min: float | None
    mean: float | None
    count: int | None
    nan_count: int | None
    neg_inf_count: int | None
    pos_inf_count: int | None
    l2norm: float | None = None
    line: int = 0  # the line of the file (1 = header), for messages

    @property
    def label(self) -> str:
        return f"{self.kind} {self.index}"

    @property
    def inf_count(self) -> int | None:
        if self.neg_inf_count is None and self.pos_inf_count is None:
            return None
        return (self.neg_inf_count or 0) + (self.pos_inf_count or 0)

    @property
    def computed(self) -> bool:
        """False for a row whose statistics were all left empty (a tensor without data address)."""
        return any(v is not None for v in (self.max, self.min, self.mean, self.nan_count, self.l2norm))


@dataclass(frozen=True)
class StatsFile:
    """A statistics CSV: its rows in file order, the dump name read from the file name (None if the name is
    not a dump name) and the header as written."""

    path: Path
    name: DumpName | None
    columns: tuple[str, ...]
    rows: tuple[StatsRow, ...]

    @property
    def inputs(self) -> tuple[StatsRow, ...]:
        return tuple(r for r in self.rows if r.kind == "input")

    @property
    def outputs(self) -> tuple[StatsRow, ...]:
        return tuple(r for r in self.rows if r.kind == "output")

    def row(self, kind: str, index: int) -> StatsRow | None:
        """The row of one tensor; the last one when a writer appended the same tensor twice."""
        found = [r for r in self.rows if r.kind == kind and r.index == index]
        return found[-1] if found else None


# --- names ----------------------------------------------------------------------------------------
def stats_dump_name(file_name: str) -> DumpName | None:
    """`Conv2D.conv1_Conv2D.5.12.1700000000000000.csv` → the dump name; None when it is not one."""
    if not file_name.lower().endswith(STATS_SUFFIX):
        return None
    return parse_dump_name(file_name[: -len(STATS_SUFFIX)])


def is_stats_file_name(file_name: str) -> bool:
    return stats_dump_name(file_name) is not None


def stats_name_of(path: str | os.PathLike[str]) -> tuple[DumpName | None, str]:
    """(dump name, real file name) of a statistics CSV. A name too long for the file system is written under
    a numbered name (`<digits>.csv`) listed in the folder's mapping.csv (msprobe's acl dumper does so), as
    numbered tensor dumps are; the real name is then the one mapping.csv gives."""
    from precision_tool.formats.npu.npu_dump import folder_mapping

    base = os.path.basename(path)
    name = stats_dump_name(base)
    if name is not None or not base.lower().endswith(STATS_SUFFIX):
        return name, base
    real = folder_mapping(os.path.dirname(os.path.abspath(path))).get(base, "")
    name = stats_dump_name(real) if real else None
    return name, (real if name is not None else base)


# --- reading --------------------------------------------------------------------------------------
def read_stats_csv(path: str | os.PathLike[str]) -> StatsFile:
    """Read one statistics CSV; FormatError (file, line, column, what is wrong) on anything else."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block the read
            raise FormatError(path, "is not a regular file; a statistics CSV is")
        size = info.st_size
        if size > MAX_STATS_BYTES:
            raise FormatError(path, f"is {size / 2**20:.1f} MiB; a statistics CSV of one op holds a few lines "
                                    "(not a statistics dump?)")
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not data.strip():
        raise FormatError(path, "is empty; a statistics CSV starts with the header "
                                f"{','.join(DEVICE_HEADER[:3])},...")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(path, f"line {line}: not UTF-8 text (byte {exc.start}); not a statistics CSV") from None
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        raise FormatError(path, "holds NUL bytes; not a statistics CSV")
    if not text.strip():  # a byte-order mark or blank lines only
        raise FormatError(path, "holds no header; a statistics CSV starts with the header "
                                f"{','.join(DEVICE_HEADER[:3])},...")
    lines = text.splitlines()
    try:
        records = list(csv.reader(lines))
    except csv.Error as exc:
        raise FormatError(path, f"is not valid CSV ({exc})") from None
    columns = _columns(path, records[0])
    rows = []
    for number, record in enumerate(records[1:], 2):
        if not record or all(not cell.strip() for cell in record):
            continue  # a blank line (the writers end with a newline)
        rows.append(_row(path, number, record, columns))
    if not rows:
        raise FormatError(path, "holds the header but no tensor rows; the dump was cut short")
    return StatsFile(path, stats_name_of(path)[0], tuple(c for c, _ in sorted(columns.items(),
                                                                                    key=lambda kv: kv[1])), tuple(rows))


def _columns(path: Path, header: list[str]) -> dict[str, int]:
    """Known column name → position. Unknown columns are kept in place but not read."""
    found: dict[str, int] = {}
    canonical = {name.lower(): name for name in _KNOWN}
    for position, cell in enumerate(header):
        name = canonical.get(cell.strip().lower())
        if name == "L2Norm Value":
            name = COL_L2NORM
        if name is None:
            continue
        if name in found:
            raise FormatError(path, f"line 1: column {name!r} appears twice in the header")
        found[name] = position
    missing = [c for c in (COL_IO, COL_INDEX) if c not in found]
    if missing or not any(c in found for c in _STAT_COLUMNS):
        shown = ",".join(c.strip() for c in header[:6])[:120]
        what = f"no {' or '.join(repr(c) for c in missing)} column" if missing else "no statistics column"
        raise FormatError(path, f"line 1: {what} in the header ({shown!r}); a statistics CSV starts with "
                                f"{','.join(DEVICE_HEADER[:4])},...")
    return found


def _row(path: Path, line: int, record: list[str], columns: dict[str, int]) -> StatsRow:
    width = max(columns.values()) + 1
    if len(record) < width:
        raise FormatError(path, f"line {line}: {len(record)} fields, the header has {width} or more; "
                                "the line is cut short")

    def cell(name: str) -> str | None:
        position = columns.get(name)
        return None if position is None else record[position].strip()

    def fail(name: str, value: str, what: str) -> FormatError:
        shown = value if len(value) <= 40 else f"{value[:20]}...({len(value)} characters)"
        return FormatError(path, f"line {line}, column {name!r}: {shown!r} is not {what}")

    def count(name: str) -> int | None:
        value = cell(name)
        if value is None or value in _NOT_COMPUTED:
            return None
        if not _UINT.fullmatch(value):
            raise fail(name, value, "a count (a whole number ≥ 0)")
        return int(value)

    def real(name: str) -> float | None:
        value = cell(name)
        if value is None or value in _NOT_COMPUTED:
            return None
        special = _SPECIAL.get(value.lower())
        if special is not None:
            return special
        if len(value) > _MAX_FIELD or not _FLOAT.fullmatch(value):
            raise fail(name, value, "a number")
        return float(value)  # out of float range reads as ±inf, as a C++ stream would print it

    io_text = cell(COL_IO) or ""
    kind = io_text.lower()
    if kind not in ("input", "output"):
        raise fail(COL_IO, io_text, "Input or Output")
    index_text = cell(COL_INDEX) or ""
    if not _UINT.fullmatch(index_text) or int(index_text) > 1 << 20:
        raise fail(COL_INDEX, index_text, "a tensor index")
    shape_text = cell(COL_SHAPE)
    shape: tuple[int, ...] | None
    if shape_text is None or shape_text in ("-", "NA"):
        shape = None
    elif shape_text == "":
        shape = ()
    else:
        dims = shape_text.split("x")
        if len(dims) > 64 or not all(_UINT.fullmatch(d) for d in dims):
            raise fail(COL_SHAPE, shape_text, "a shape (dims joined by 'x', e.g. 1x64x56x56)")
        shape = tuple(int(d) for d in dims)
    for name in (COL_DTYPE, COL_FORMAT):
        value = cell(name)
        if value is not None and (len(value) > _MAX_FIELD or not value.isprintable()):
            raise fail(name, value, "a data type or format name")
    return StatsRow(
        kind=kind, index=int(index_text), data_size=count(COL_SIZE), data_type=cell(COL_DTYPE) or "",
        layout=cell(COL_FORMAT) or "", shape=shape, max=real(COL_MAX), min=real(COL_MIN), mean=real(COL_AVG),
        count=count(COL_COUNT), nan_count=count(COL_NAN), neg_inf_count=count(COL_NEG_INF),
        pos_inf_count=count(COL_POS_INF), l2norm=real(COL_L2NORM), line=line,
    )


def count_stats_tensors(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(inputs, outputs) of a statistics CSV, as `ls dump` shows them."""
    stats = read_stats_csv(path)
    return len(stats.inputs), len(stats.outputs)


# --- computing statistics as the device does (for the golden side, and for the test writer) ------------
@dataclass(frozen=True)
class ArrayStats:
    """Statistics of an array with the device writer's rules: max/min over every non-NaN value (Inf
    included), mean over the finite values and NaN when a NaN (or both Infs) occur, ±Inf when one Inf sign
    occurs; count of every element."""

    max: float | None
    min: float | None
    mean: float | None
    count: int
    nan_count: int
    neg_inf_count: int
    pos_inf_count: int

    @property
    def inf_count(self) -> int:
        return self.neg_inf_count + self.pos_inf_count


def array_stats(array: "np.ndarray", padding: int = 0) -> ArrayStats:
    """Device-rule statistics of `array` (bool/ml_dtypes widened); `padding` zeros are added, as a padded
    device layout (NC1HWC0, FRACTAL_Z ...) holds them and the device counts them."""
    import numpy as np

    values = np.asarray(array)
    if values.dtype == np.bool_:
        values = values.astype(np.uint8)
    elif values.dtype.fields is None and values.dtype.type.__module__.startswith("ml_dtypes"):
        values = values.astype(np.float32)  # bf16, fp8
    if values.dtype.kind not in "biufc":
        raise ValueError(f"dtype {np.asarray(array).dtype} is not numeric")
    values = values.reshape(-1)
    if values.dtype.kind == "c":
        values = np.abs(values)
    count = int(values.size) + padding
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        nan_count = int(nan.sum())
        pos_inf = int(np.isposinf(values).sum())
        neg_inf = int(np.isneginf(values).sum())
        kept = values[~nan] if nan_count else values
        finite = kept[np.isfinite(kept)] if (pos_inf or neg_inf) else kept
    else:
        nan_count = pos_inf = neg_inf = 0
        kept = finite = values
    maximum = float(np.max(kept)) if kept.size else None
    minimum = float(np.min(kept)) if kept.size else None
    if padding:
        maximum = 0.0 if maximum is None else max(maximum, 0.0)
        minimum = 0.0 if minimum is None else min(minimum, 0.0)
    finite_count = int(finite.size) + padding
    if nan_count or (pos_inf and neg_inf):
        mean: float | None = math.nan
    elif pos_inf:
        mean = math.inf
    elif neg_inf:
        mean = -math.inf
    elif finite_count:
        mean = float(np.sum(finite, dtype=np.float64)) / finite_count
    else:
        mean = None
    return ArrayStats(maximum, minimum, mean, count, nan_count, neg_inf, pos_inf)


# --- writing (tests and demos: statistics of real arrays) ---------------------------------------------
@dataclass(frozen=True)
class StatsTensor:
    """One tensor to write: its data (statistics are computed from it) and how the device described it."""

    array: Any
    data_type: str = ""  # "DT_FLOAT"; derived from the array when empty
    layout: str = "ND"
    shape: tuple[int, ...] | None = None  # the array's shape when None


_DT_OF = {"float32": "DT_FLOAT", "float16": "DT_FLOAT16", "float64": "DT_DOUBLE", "int8": "DT_INT8",
          "uint8": "DT_UINT8", "int16": "DT_INT16", "uint16": "DT_UINT16", "int32": "DT_INT32",
          "uint32": "DT_UINT32", "int64": "DT_INT64", "uint64": "DT_UINT64", "bool": "DT_BOOL",
          "bfloat16": "DT_BF16"}


def _number(value: float | None, integral: bool) -> str:
    """A C++ ostream's default output: 6 significant digits, `nan`, `inf`, `-inf`."""
    if value is None:
        return ""
    if integral and math.isfinite(value):
        return str(int(value))
    return f"{value:g}"


def stats_csv_text(inputs: Sequence[StatsTensor], outputs: Sequence[StatsTensor],
                   header: Sequence[str] = DEVICE_HEADER) -> str:
    """The CSV the device writes for these tensors (`header`: another column order, as adump writes)."""
    import numpy as np

    lines = [",".join(header)]
    for kind, tensors in (("Input", inputs), ("Output", outputs)):
        for index, tensor in enumerate(tensors):
            array = np.asarray(tensor.array)
            stats = array_stats(array)
            integral = array.dtype.kind in "biu"
            shape = tensor.shape if tensor.shape is not None else tuple(array.shape)
            cells = {
                COL_IO: kind, COL_INDEX: str(index), COL_SIZE: str(array.nbytes),
                COL_DTYPE: tensor.data_type or _DT_OF.get(array.dtype.name, "-"), COL_FORMAT: tensor.layout,
                COL_SHAPE: "x".join(str(d) for d in shape), COL_MAX: _number(stats.max, integral),
                COL_MIN: _number(stats.min, integral), COL_AVG: _number(stats.mean, False),
                COL_COUNT: str(stats.count), COL_NAN: str(stats.nan_count),
                COL_NEG_INF: str(stats.neg_inf_count), COL_POS_INF: str(stats.pos_inf_count),
                COL_L2NORM: _number(float(np.sqrt(np.sum(np.square(array.astype(np.float64))))), False),
            }
            lines.append(",".join(cells[c] for c in header))
    return "\n".join(lines) + "\n"


def write_stats_csv(path: str | os.PathLike[str], inputs: Iterable[StatsTensor], outputs: Iterable[StatsTensor],
                    header: Sequence[str] = DEVICE_HEADER) -> Path:
    """Write a statistics CSV atomically; `path` is the dump file name plus `.csv`."""
    from precision_tool.atomic import write_text_atomic

    path = Path(path)
    write_text_atomic(path, stats_csv_text(list(inputs), list(outputs), header))
    return path
