"""The loss record: one training run's loss (and, where the script exposes them, the global gradient norm
and the loss scale) at every step it ran. Both capture sides write one beside their dumps, so `ac` and the
report can put the two curves side by side and name the step where they part (docs/steps.md).

    tf/loss.csv              the golden (CPU/GPU) run
    npu/debug_N/loss.csv     an NPU run (a simulated one too)

A plain CSV a user can write by hand or from a log: the header `step,loss,grad_norm,loss_scale` (the last two
may be left out, or empty in a row), one row per step, steps increasing. Steps are the training loop's own
global step numbers, the numbers `TF_DUMP_STEP` and the NPU dump's iteration folders use.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError

LOSS_FILE = "loss.csv"
COLUMNS = ("step", "loss", "grad_norm", "loss_scale")
MAX_BYTES = 256 * 1024 * 1024
"""A loss record past this is not one (a million steps take about 40 MB)."""


@dataclass(frozen=True)
class LossPoint:
    step: int
    loss: float  # may be inf or nan: a run whose loss overflowed says so
    grad_norm: float | None = None
    loss_scale: float | None = None


def write_loss(path: Path, points: Iterable[LossPoint]) -> Path:
    """Write `points` (sorted by step; a later point of the same step wins) as the loss record at `path`."""
    by_step = {p.step: p for p in points}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for step in sorted(by_step):
        p = by_step[step]
        writer.writerow([step, _number(p.loss), _number(p.grad_norm), _number(p.loss_scale)])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, out.getvalue())
    return path


def read_loss(path: Path) -> list[LossPoint]:
    """The points of the loss record at `path`, by step. FormatError names what is wrong and where."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise FormatError(path, f"{size} bytes is too big for a loss record (at most {MAX_BYTES}); "
                                    "is this the right file?")
        text = path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise FormatError(path, f"not UTF-8 text at byte {exc.start}; a loss record is a CSV file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None:
        raise FormatError(path, "is empty; a loss record starts with the header step,loss[,grad_norm,loss_scale]")
    header = [h.strip() for h in header]
    if header[:2] != ["step", "loss"] or any(h not in COLUMNS for h in header):
        raise FormatError(path, f"header {','.join(header)!r} is not step,loss[,grad_norm,loss_scale]")
    points: dict[int, LossPoint] = {}
    for line, row in enumerate(rows, 2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise FormatError(path, f"line {line} has {len(row)} values for {len(header)} columns")
        values = dict(zip(header, (cell.strip() for cell in row)))
        try:
            step = int(values["step"])
            loss = _parse(values.get("loss", ""))
        except ValueError:
            raise FormatError(path, f"line {line}: step {values.get('step')!r} and loss {values.get('loss')!r} "
                                    "must be an integer and a number") from None
        if loss is None:
            raise FormatError(path, f"line {line}: step {step} has no loss")
        if step < 0:
            raise FormatError(path, f"line {line}: step {step} is negative")
        if step in points:
            raise FormatError(path, f"line {line}: step {step} appears twice")
        try:
            grad_norm, loss_scale = _parse(values.get("grad_norm", "")), _parse(values.get("loss_scale", ""))
        except ValueError:
            raise FormatError(path, f"line {line}: grad_norm and loss_scale must be numbers or empty") from None
        points[step] = LossPoint(step, loss, grad_norm, loss_scale)
    return [points[s] for s in sorted(points)]


def _parse(cell: str) -> float | None:
    return float(cell) if cell else None


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if math.isnan(value) or math.isinf(value):
        return str(float(value))  # nan, inf, -inf: float() reads them back
    return repr(float(value))


# --- a user's training log or CSV, imported by `loss import` -----------------------------------------------
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
_STEP = r"\b(?:global[_ ]?)?step\b[\s:=#]*(?P<step>\d+)"
_LOSS = rf"\b(?:(?:train|training|total)[_ ]?)?loss\b[\s:=]*(?P<loss>{_NUMBER})"
DEFAULT_LOG_PATTERNS = (
    rf"(?i){_STEP}.*?{_LOSS}",  # `step 12 loss 0.53`, `Step 12/1000: train_loss=0.53`, `global_step: 12, loss: ...`
    rf"(?i){_LOSS}.*?{_STEP}",  # `loss = 0.53, step = 12` (TensorFlow's LoggingTensorHook / Estimator)
)
"""Two patterns, tried in order on each line: a regular expression cannot name a group twice."""
LOG_GROUPS = ("step", "loss")


def loss_pattern(text: str) -> re.Pattern[str]:
    """A user's regular expression for loss lines, checked: ValueError says what is wrong with it."""
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise ValueError(f"--regex {text!r} is not a regular expression: {exc}") from None
    missing = [name for name in LOG_GROUPS if name not in pattern.groupindex]
    if missing:
        raise ValueError(f"--regex {text!r} has no named group {', '.join(f'(?P<{m}>...)' for m in missing)}; "
                         r"name the step and the loss, e.g. 'iter (?P<step>\d+).*?cost (?P<loss>[-+.\deE]+)'")
    return pattern


def read_training_log(path: Path, pattern: str | None = None) -> list[LossPoint]:
    """The loss points of a training log: each line the pattern (default: DEFAULT_LOG_PATTERNS) matches
    gives one (groups step and loss; grad_norm and loss_scale when the pattern names them). A step logged
    twice (a restarted training) keeps its last line. FormatError when nothing matches."""
    patterns = [loss_pattern(pattern)] if pattern else [re.compile(p) for p in DEFAULT_LOG_PATTERNS]
    points: dict[int, LossPoint] = {}
    for line_number, line in enumerate(_text_of(path, "a training log").splitlines(), 1):
        match = next((m for m in (p.search(line) for p in patterns) if m), None)
        if match is None:
            continue
        found = match.groupdict()
        try:
            step, loss = int(found["step"]), float(found["loss"])
            extra = [_parse((found.get(name) or "").strip()) for name in ("grad_norm", "loss_scale")]
        except (TypeError, ValueError):
            raise FormatError(path, f"line {line_number}: step {found.get('step')!r} and loss "
                                    f"{found.get('loss')!r} must be an integer and a number") from None
        points[step] = LossPoint(step, loss, *extra)
    if not points:
        shown = pattern or "the default (`step N ... loss X` or `loss X ... step N`)"
        raise FormatError(path, f"no line matches {shown}; give --regex with named groups step and loss "
                                "(e.g. --regex 'it (?P<step>\\d+) .*cost=(?P<loss>\\S+)')")
    return [points[s] for s in sorted(points)]


def read_loss_table(path: Path) -> list[LossPoint]:
    """The loss points of a user's CSV with (among others) the columns step and loss — any case, any order;
    grad_norm and loss_scale are taken when present. Rows without a loss are skipped (an evaluation row)."""
    text = _text_of(path, "a CSV file")
    rows = csv.reader(io.StringIO(text))
    header = [h.strip().lower() for h in next(rows, [])]
    if "step" not in header or "loss" not in header:
        raise FormatError(path, f"header {','.join(header)!r} has no step and loss columns; a loss CSV names "
                                "them in its first line (step,loss,...)")
    where = {name: header.index(name) for name in COLUMNS if name in header}
    points: dict[int, LossPoint] = {}
    for line, row in enumerate(rows, 2):
        cells = {name: row[i].strip() if i < len(row) else "" for name, i in where.items()}
        if not cells["loss"]:
            continue
        try:
            step, loss = int(float(cells["step"])), float(cells["loss"])
            extra = [_parse(cells.get(name, "")) for name in ("grad_norm", "loss_scale")]
        except ValueError:
            raise FormatError(path, f"line {line}: step {cells['step']!r} and loss {cells['loss']!r} must be "
                                    "an integer and a number") from None
        if step < 0:
            raise FormatError(path, f"line {line}: step {step} is negative")
        points[step] = LossPoint(step, loss, *extra)
    if not points:
        raise FormatError(path, "has a step and a loss column but no row with a loss")
    return [points[s] for s in sorted(points)]


def looks_like_csv(path: Path) -> bool:
    """A .csv file, or one whose first line names step and loss between commas."""
    if path.suffix.lower() == ".csv":
        return True
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096).lower()
    except OSError:
        return False
    names = [cell.strip() for cell in first.split(",")]
    return "step" in names and "loss" in names


def _text_of(path: Path, what: str) -> str:
    try:
        if not path.is_file():
            raise FormatError(path, f"does not exist or is not a file; give {what} with the loss of each step")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise FormatError(path, f"{size} bytes is more than the {MAX_BYTES} a loss import reads")
        return path.read_text(encoding="utf-8", errors="replace")  # logs mix encodings: a bad byte is not a loss
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from None
