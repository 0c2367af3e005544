"""The report's loss-curves panel: both runs' loss by step, their difference, the first step where they part
(analysis/checks/loss_curves.py) and which step to dump. Plain JSON-ready data; report_assets/loss.js draws it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_POINTS = 20000
"""Points per curve on the page; a longer record keeps every k-th step, and always the parting and largest steps."""


@dataclass(frozen=True)
class LossPanel:
    data: dict[str, Any]  # what loss.js reads (JSON: no NaN or Inf; a non-finite loss is null, listed in `nonfinite`)
    summary: str  # the `ac` line
    advice: str | None


def loss_panel(workspace: Any, tolerance: float, notes: list[str]) -> LossPanel | None:
    """The panel, or None when the workspace has no loss record; a damaged record is a note."""
    from precision_tool.analysis.checks.loss_curves import compare_workspace, dump_advice
    from precision_tool.errors import FormatError

    try:
        records, comparison = compare_workspace(workspace, tolerance)
    except FormatError as exc:
        notes.append(f"loss curves: {exc}")
        return None
    if records.golden is None and records.npu is None:
        return None
    keep: set[int] = set()
    first = largest = None
    if comparison is not None:
        first, largest = comparison.first_parting, comparison.largest
        keep = {d.step for d in (first, largest) if d is not None}
    data: dict[str, Any] = {
        "golden": _series(records.golden, keep), "npu": _series(records.npu, keep),
        "golden_file": str(records.golden_file), "npu_file": str(records.npu_file), "tolerance": tolerance,
        "first_parting": first.step if first is not None else None,
        "nonfinite": [[side, p.step, str(p.loss)] for side, points in (("golden", records.golden), ("NPU", records.npu))
                      for p in points or () if not math.isfinite(p.loss)],
    }
    if comparison is None:
        side = "golden" if records.npu is None else "NPU"
        other = "NPU" if side == "golden" else "golden"
        return LossPanel(data, f"Only the {side} run's loss is recorded; record or import (`loss import LOG "
                               f"--side {other.lower()}`) the {other} run's to compare the curves.", None)
    data["difference"] = [[d.step, d.difference if math.isfinite(d.difference) else None] for d in
                          _thin(list(comparison.differences), keep)]
    steps = len(comparison.differences)
    if not steps:
        summary = "The two loss records share no step."
    elif first is None:
        summary = (f"The loss curves agree within LOSS_TOLERANCE {tolerance:g} at all {steps} steps both recorded"
                   + (f" (largest difference {_percent(largest.relative)} at step {largest.step})." if largest else "."))
    else:
        summary = (f"The loss curves part first at step {first.step}: golden {first.golden:.6g}, NPU {first.npu:.6g}, "
                   f"difference {_percent(first.relative)} (over LOSS_TOLERANCE {tolerance:g}); "
                   f"{comparison.parted_steps} of {steps} common steps apart.")
    return LossPanel(data, summary, dump_advice(comparison))


def _percent(relative: float) -> str:
    return "inf" if math.isinf(relative) else f"{relative * 100:.3g}%"


def _series(points: Any, keep: set[int]) -> list[list[Any]] | None:
    if points is None:
        return None
    return [[p.step, p.loss if math.isfinite(p.loss) else None] for p in _thin(list(points), keep)]


def _thin(items: list[Any], keep: set[int]) -> list[Any]:
    if len(items) <= MAX_POINTS:
        return items
    every = math.ceil(len(items) / MAX_POINTS)
    return [item for i, item in enumerate(items) if i % every == 0 or item.step in keep or i == len(items) - 1]
