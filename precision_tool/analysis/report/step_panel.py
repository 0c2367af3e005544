"""The report's step panel for a `vc --step all` result folder (docs/steps.md): the step that diverges
first and its first divergent op, and a step × op-position heat map of each op's output cosine (drawn by
report_assets/steps.js). Only when the folder holds several steps."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from precision_tool.analysis.steps.step_overview import StepOverview, op_cosines, step_overview


@dataclass(frozen=True)
class StepPanel:
    overview: StepOverview
    rows: tuple[str, ...]
    """One heat-map row per step comparison: 'step N' (with the graph when a step has several)."""
    ops: tuple[str, ...]
    """The op positions (columns): `[id] name`, in graph order."""
    cosines: tuple[tuple[float | None, ...], ...]
    """rows × ops: the op's lowest output cosine; None when it has no compared output."""

    def page_json(self, threshold: float) -> dict[str, Any]:
        first = self.overview.first
        op = first.first_op if first is not None else None
        return {"rows": list(self.rows), "ops": list(self.ops), "cosines": [list(r) for r in self.cosines],
                "steps": [f.step for f in self.overview.findings], "threshold": threshold,
                "first_step": first.step if first is not None else None,
                "first_op": f"[{op.index}] {op.npu_op}" if op is not None else None}


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
    column = {name: k for k, name in enumerate(names)}
    rows, cosines = [], []
    for finding in overview.findings:
        graph = f" ({finding.label.split(': ', 1)[-1]})" if several else ""
        rows.append(f"step {finding.step}{graph}")
        row: list[float | None] = [None] * len(names)
        for op, value in zip(finding.summary.ops, op_cosines(finding.summary)):
            row[column[op.npu_op]] = None if math.isnan(value) else round(value, 6)
        cosines.append(tuple(row))
    return StepPanel(overview, tuple(rows), tuple(names.values()), tuple(cosines))


def speaking_runs(runs: Sequence[Any], panel: StepPanel | None) -> list[Any]:
    """The runs the answer is drawn from: with several steps, the first diverging step's (as `ac` answers)."""
    if panel is None or panel.overview.first is None:
        return list(runs)
    step = panel.overview.first.step
    return [run for run in runs if run.spec is None or not run.spec.label.startswith("step ") or run.spec.step == step]
