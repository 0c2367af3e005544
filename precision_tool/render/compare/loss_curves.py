"""The two loss curves in the terminal: where they part, the largest difference, which step to dump; a table
of the steps that matter (`loss`), one or two lines in `ac`.

Plain Text cells: record paths are never read as markup.
"""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table
from rich.text import Text

AROUND = 3
"""Steps shown on each side of the parting step in the table."""


def number(value: float | None) -> str:
    if value is None:
        return ""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.6g}"


def percent(relative: float) -> str:
    return "inf" if math.isinf(relative) else f"{relative * 100:.3g}%"


def parting_line(comparison: Any) -> Text:
    """'the loss curves part first at step S (golden x, NPU y, difference d = r%)', or that they never do."""
    first = comparison.first_parting
    steps = len(comparison.differences)
    tolerance = f"LOSS_TOLERANCE {comparison.tolerance:g}"
    if first is None:
        largest = comparison.largest
        worst = f"; largest difference {percent(largest.relative)} at step {largest.step}" if largest else ""
        where = "the one step" if steps == 1 else f"all {steps} steps"
        return Text(f"loss curves: golden and NPU agree within {tolerance} at {where} both recorded{worst}",
                    style="green")
    agree = comparison.last_agreeing_before
    still = f"; they still agree at step {agree.step}" if agree else ""
    return Text(f"loss curves part first at step {first.step}: golden {number(first.golden)}, NPU {number(first.npu)}, "
                f"difference {number(first.difference)} ({percent(first.relative)} > {tolerance}){still}; "
                f"{comparison.parted_steps} of {steps} common steps apart", style="bold yellow")


def advice_line(advice: str) -> Text:
    return Text(f"to see why: {advice}")


def missing_side_line(records: Any) -> Text | None:
    """What to do when only one side has a loss record (None when both or neither have one)."""
    if (records.golden is None) == (records.npu is None):
        return None
    if records.golden is None:
        return Text(f"loss curves: only the NPU run's ({records.npu_file}) is recorded; record the golden run's "
                    "(PrecisionTfSession, sess_dump, npu_tf_config.loss_hook() or PrecisionLossRecord in the GPU/CPU "
                    "training) or import its log: `loss import LOG --side golden`", style="dim")
    return Text(f"loss curves: only the golden run's ({records.golden_file}) is recorded; record the NPU run's "
                "(the same hooks on the NPU machine) or import its log: `loss import LOG --side npu`", style="dim")


def no_common_steps_line(comparison: Any) -> Text:
    return Text(f"loss curves: {comparison.golden_file} and {comparison.npu_file} share no step (golden steps "
                f"{_span(comparison.golden)}, NPU steps {_span(comparison.npu)}); record both over the same steps",
                style="yellow")


def _span(points: Any) -> str:
    return f"{points[0].step}..{points[-1].step}" if points else "none"


def curves_table(comparison: Any, rows: int) -> Table:
    """The steps that say most: the first ones, those around the parting, the largest difference, the last."""
    differences = comparison.differences
    first = comparison.first_parting
    chosen: set[int] = set(range(min(rows, len(differences)))) if first is None else set(range(min(2, len(differences))))
    index = {d.step: i for i, d in enumerate(differences)}
    if first is not None:
        at = index[first.step]
        chosen |= set(range(max(0, at - AROUND), min(len(differences), at + AROUND + 1)))
    largest = comparison.largest
    if largest is not None:
        chosen.add(index[largest.step])
    chosen.add(len(differences) - 1)
    table = Table(title=Text(f"loss by step ({len(chosen)} of {len(differences)} common steps; `loss --all` shows "
                             "every one)" if len(chosen) < len(differences) else "loss by step"), title_justify="left")
    for name in ("step", "golden", "NPU", "NPU - golden", "relative"):
        table.add_column(name, justify="right")
    table.add_column("", style="yellow")
    previous = None
    for i in sorted(chosen):
        if previous is not None and i > previous + 1:
            table.add_row("…", "", "", "", "", "")
        d = differences[i]
        mark = "first parting" if first is not None and d.step == first.step else ("parted" if comparison.parts(d) else "")
        table.add_row(str(d.step), number(d.golden), number(d.npu), number(d.difference), percent(d.relative), mark)
        previous = i
    return table


def all_steps_table(comparison: Any) -> Table:
    table = Table(title=Text(f"loss at all {len(comparison.differences)} common steps"), title_justify="left")
    for name in ("step", "golden", "NPU", "NPU - golden", "relative"):
        table.add_column(name, justify="right")
    table.add_column("", style="yellow")
    first = comparison.first_parting
    for d in comparison.differences:
        mark = "first parting" if first is not None and d.step == first.step else ("parted" if comparison.parts(d) else "")
        table.add_row(str(d.step), number(d.golden), number(d.npu), number(d.difference), percent(d.relative), mark)
    return table


def sources_line(records: Any) -> Text:
    def one(name: str, path: Any, points: Any) -> str:
        count = f"{len(points)} step" + ("" if len(points) == 1 else "s") if points is not None else ""
        return f"{name} {path} ({count})" if points is not None else f"{name} {path} (none)"

    return Text(f"records: {one('golden', records.golden_file, records.golden)}; "
                f"{one('NPU', records.npu_file, records.npu)}", style="dim")
