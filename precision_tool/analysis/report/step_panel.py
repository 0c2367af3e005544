"""The report's step panel for a `vc --step all` result folder (docs/steps.md): the step that diverges
first and its first divergent op, and a step × op-position heat map of each op's output cosine (drawn by
report_assets/steps.js). Only when the folder holds several steps."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from precision_tool.analysis.steps.step_overview import StepOverview, op_cosines, step_overview


MAX_COLUMNS = 1500
"""More ops than this share columns (each column the lowest cosine of its ops): a page of 100 steps of a
20,000-op network stays a few MB, and a column stays at least a pixel wide."""


@dataclass(frozen=True)
class StepPanel:
    overview: StepOverview
    rows: tuple[str, ...]
    """One heat-map row per step comparison: 'step N' (with the graph when a step has several)."""
    ops: tuple[str, ...]
    """The columns: `[id] name` of each op in graph order (`[a] first … [b] last` when ops share columns)."""
    cosines: tuple[tuple[float | None, ...], ...]
    """rows × columns: the lowest output cosine of the column's op(s); None when none was compared."""
    first_column: int | None = None
    """The column of the first diverging step's first divergent op."""

    def page_json(self, threshold: float) -> dict[str, Any]:
        first = self.overview.first
        op = first.first_op if first is not None else None
        return {"rows": list(self.rows), "ops": list(self.ops), "cosines": [list(r) for r in self.cosines],
                "steps": [f.step for f in self.overview.findings], "threshold": threshold,
                "first_step": first.step if first is not None else None,
                "first_op": f"[{op.index}] {op.npu_op}" if op is not None else None,
                "first_column": self.first_column}


def step_panel(runs: Sequence[Any]) -> StepPanel | None:
    """The panel of the report's runs (RunReport); None unless they compared several steps."""
    overview = step_overview([(run.spec, run.summary) for run in runs if not run.stats_rows])
    if overview is None:
        return None
    several = len({f.step for f in overview.findings}) != len(overview.findings)
    names: dict[str, str] = {}  # op name → column label, in first-seen graph order
    for finding in overview.findings:
        for op in finding.summary.ops:
            names.setdefault(op.npu_op, f"[{op.index}] {op.npu_op}")
    share = max(1, math.ceil(len(names) / MAX_COLUMNS))  # ops per column
    labels = list(names.values())
    columns = labels if share == 1 else [
        labels[k] if k + 1 == min(k + share, len(labels)) else f"{labels[k]} … {labels[min(k + share, len(labels)) - 1]}"
        for k in range(0, len(labels), share)]
    column = {name: k // share for k, name in enumerate(names)}
    rows, cosines = [], []
    for finding in overview.findings:
        graph = f" ({finding.label.split(': ', 1)[-1]})" if several else ""
        rows.append(f"step {finding.step}{graph}")
        row: list[float | None] = [None] * len(columns)
        for op, value in zip(finding.summary.ops, op_cosines(finding.summary)):
            k = column[op.npu_op]
            if not math.isnan(value) and (row[k] is None or value < row[k]):  # type: ignore[operator]
                row[k] = round(value, 6)
        cosines.append(tuple(row))
    first_op = overview.first.first_op if overview.first is not None else None
    first_column = column.get(first_op.npu_op) if first_op is not None else None
    return StepPanel(overview, tuple(rows), tuple(columns), tuple(cosines), first_column)


def speaking_runs(runs: Sequence[Any], panel: StepPanel | None) -> list[Any]:
    """The runs the answer is drawn from: with several steps, the first diverging step's (as `ac` answers)."""
    if panel is None or panel.overview.first is None:
        return list(runs)
    step = panel.overview.first.step
    return [run for run in runs if run.spec is None or not run.spec.label.startswith("step ") or run.spec.step == step]
