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
