"""Which step of a `vc --step all` comparison diverges first (docs/steps.md), and the per-step numbers
`vc`, `vcs`, `ac` and the report show.

A step diverges when its comparison has an abnormal op (an output with cosine ≤ threshold or NaN/Inf
data), the rule `ac` applies to one run; the first diverging step is the lowest such step, and its op is
the run's first divergent op (outputs fail while inputs pass), else its first failing tensor's op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from precision_tool.analysis.results.results import CompareSummary
from precision_tool.analysis.results.result_ops import OpResult


@dataclass(frozen=True)
class StepFinding:
    """One step's comparison (one per Build graph when a step has several)."""

    step: int
    label: str
    summary: CompareSummary

    @property
    def abnormal(self) -> int:
        return len(self.summary.abnormal_ops)

    @property
    def min_cosine(self) -> float:
        return self.summary.min_output_cosine

    @property
    def diverges(self) -> bool:
        return bool(self.summary.abnormal_ops) or self.summary.first_failure is not None

    @property
    def first_op(self) -> OpResult | None:
        """Where the step's error is born: the first divergent op, else the op of the first failing tensor,
        else the first abnormal op."""
        summary = self.summary
        if summary.first_divergent_op is not None:
            return summary.first_divergent_op
        if summary.first_failure is not None:
            return summary.first_failure.op
        return summary.abnormal_ops[0] if summary.abnormal_ops else None


@dataclass(frozen=True)
class StepOverview:
    findings: tuple[StepFinding, ...]
    """By step, then in the comparison's order."""
    first: StepFinding | None
    """The lowest step that diverges; None when every step meets the threshold."""

    @property
    def steps(self) -> list[int]:
        return sorted({f.step for f in self.findings})


def step_overview(pairs: Iterable[tuple[Any, Any]]) -> StepOverview | None:
    """(RunSpec, summary) of a result folder → its step overview; None unless it compared NPU against golden
    at two or more steps (vc --step all). Statistics results and NPU-vs-NPU runs are left out."""
    findings = [StepFinding(spec.step, spec.label, summary) for spec, summary in pairs
                if spec is not None and spec.step is not None and not spec.npu_vs_npu
                and spec.label.startswith("step ") and isinstance(summary, CompareSummary)]
    if len({f.step for f in findings}) < 2:
        return None
    findings.sort(key=lambda f: f.step)  # stable: a step's graphs keep their order
    first = next((f for f in findings if f.diverges), None)
    return StepOverview(tuple(findings), first)


def op_cosines(summary: CompareSummary) -> list[float]:
    """Each op's output cosine in graph order (the lowest of its outputs; NaN data counts as -1, an op with
    no compared output is NaN): one row of the step × op-position heat map."""
    values = []
    for op in summary.ops:
        cosines = [-1.0 if t.nan_data else t.cosine for t in op.outputs]
        cosines = [c for c in cosines if not math.isnan(c)]
        values.append(min(cosines) if cosines else math.nan)
    return values
