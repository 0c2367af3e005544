"""The one way a comparison result is counted, in the terminal (vc, vcs, ac), the rank table and the HTML
report alike: ops, and op outputs compared / abnormal / not compared.

Outputs, not CSV rows: an op's input rows are its producers' outputs seen again (each tensor would count twice),
and an op is judged by its outputs (abnormal: an output at or below the cosine threshold, or holding NaN/Inf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from precision_tool.analysis.results.results import CompareSummary


@dataclass(frozen=True)
class Counts:
    ops: int
    abnormal_ops: int
    outputs: int
    """Output rows of the result (one per op output that was dumped)."""
    compared: int
    """Outputs with a cosine, or whose data holds NaN/Inf (compared, and failing)."""
    abnormal: int
    """Compared outputs at or below the threshold, or holding NaN/Inf."""
    nan_data: int
    """Of the abnormal outputs, those holding NaN/Inf."""

    @property
    def not_compared(self) -> int:
        """Outputs without a cosine: no golden tensor matched, or a reason in CompareFailReason."""
        return self.outputs - self.compared


def counts_of(summary: CompareSummary) -> Counts:
    if summary.output_counts is not None:  # counted as the summary was made, without making every op
        outputs, compared, abnormal = summary.output_counts
    else:
        tensors = [t for op in summary.ops for t in op.outputs]
        outputs = len(tensors)
        compared = sum(1 for t in tensors if t.nan_data or not math.isnan(t.cosine))
        abnormal = sum(1 for t in tensors if t.fails(summary.threshold))
    return Counts(ops=len(summary.ops), abnormal_ops=len(summary.abnormal_ops), outputs=outputs,
                  compared=compared, abnormal=abnormal, nan_data=summary.nan_data_outputs)


def counts_line(counts: Counts) -> str:
    """`94 ops (52 abnormal) · 86 outputs: 77 compared, 55 abnormal (4 NaN/Inf), 9 not compared`."""
    nan = f" ({counts.nan_data} NaN/Inf)" if counts.nan_data else ""
    return (f"{counts.ops} ops ({counts.abnormal_ops} abnormal) · {counts.outputs} outputs: {counts.compared} "
            f"compared, {counts.abnormal} abnormal{nan}, {counts.not_compared} not compared")


def abnormal_rule(threshold: float) -> str:
    """What 'abnormal' means, said once where counts are shown."""
    return f"abnormal: an output with cosine ≤ {threshold} or NaN/Inf data"
