"""The step summary of a `vc --step all` comparison (vc, vcs, ac): which step diverges first and its first
divergent op, then one compact line per step (docs/steps.md)."""

from __future__ import annotations

import math

from rich.text import Text

from precision_tool.analysis.steps.step_overview import StepFinding, StepOverview
from precision_tool.render.compare.compare import op_ref


def _cosine(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.6f}"


def _graph(finding: StepFinding) -> str:
    """The run's label without its `step N: ` prefix, when a step has several graphs."""
    return finding.label.split(": ", 1)[1] if ": " in finding.label else finding.label


def verdict_line(overview: StepOverview) -> Text:
    """`steps 0-1: step 1 diverges first, at [13] conv2/Conv2D`, or that every step meets the threshold."""
    steps = overview.steps
    listed = ", ".join(map(str, steps))
    first = overview.first
    if first is None:
        return Text(f"steps {listed}: every step meets the threshold (no abnormal op)", style="green")
    line = Text(f"steps {listed}: ", style="bold")
    line.append(f"step {first.step} diverges first", style="bold red")
    op = first.first_op
    if op is not None:
        line.append(", first divergent op ")
        line.append(op_ref(op), style="op")
        if first.summary.first_divergent_op is None:
            line.append(" (its first failing tensor: the inputs already fail)", style="warning")
    if first.step != steps[0]:
        line.append("; the steps before it meet the threshold")
    return line


def step_lines(overview: StepOverview) -> list[Text]:
    """One line per step: step, abnormal ops, lowest output cosine, first divergent op."""
    several = len({f.step for f in overview.findings}) != len(overview.findings)
    lines = []
    for finding in overview.findings:
        marker = "▶" if finding is overview.first else " "
        line = Text(f"  {marker} step {finding.step:<4}", style="bold red" if finding is overview.first else "")
        line.append(f" {finding.abnormal:>4} abnormal", style="red" if finding.abnormal else "green")
        line.append(f"  min cosine {_cosine(finding.min_cosine):>9}  ")
        op = finding.first_op if finding.diverges else None
        line.append("first divergent op ")
        if op is None:
            line.append("none", style="dim")
        else:
            line.append(op_ref(op), style="op")
        if several:
            line.append(f"  ({_graph(finding)})", style="dim")
        lines.append(line)
    return lines


def steps_view(overview: StepOverview) -> list[Text]:
    return [verdict_line(overview), *step_lines(overview)]
