"""Drawing comparison results: run summaries, `vcs` panels, the first divergent op, `cp` tables."""

from __future__ import annotations

import math
from typing import Any, Sequence

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_tool.analysis.metrics import METRIC_NAMES, TensorMetrics
from precision_tool.analysis.results import CompareSummary, OpResult, TensorCosine


def cosine_text(value: float, threshold: float, nan_data: bool = False) -> Text:
    if nan_data:
        return Text("nan (NaN/Inf data)", style="bad")
    if math.isnan(value):
        return Text("NaN", style="dim")
    return Text(f"{value:.6f}", style="bad" if value <= threshold else "ok")


def _tensor_line(tensors: Sequence[TensorCosine], threshold: float) -> Text:
    line = Text()
    for i, tensor in enumerate(tensors):
        if i:
            line.append("  ")
        parts = tensor.tensor_index.rsplit(":", 2)
        label = ("in" if parts[-2] == "input" else "out") + parts[-1] if len(parts) == 3 else "?"
        line.append(label + " ", style="dim")
        line.append_text(cosine_text(tensor.cosine, threshold, tensor.nan_data))
    return line if tensors else Text("-", style="dim")


def op_panel(op: OpResult, threshold: float, right_label: str = "golden") -> Panel:
    body = Table.grid(padding=(0, 1))
    body.add_column(style="dim")
    body.add_column()
    body.add_row("NPU", Text(op.npu_op, style="op"))
    body.add_row(right_label, op.golden_op)
    body.add_row("type", op.op_type)
    body.add_row("inputs", _tensor_line(op.inputs, threshold))
    body.add_row("outputs", _tensor_line(op.outputs, threshold))
    return Panel(body, title=f"[{op.index}] {op.npu_op}", title_align="left", expand=False)


def divergence_lines(summary: CompareSummary) -> list[Text]:
    """The verdict: where the error is born, and whether the inputs already disagreed."""
    lines: list[Text] = []
    thr = summary.threshold
    op = summary.first_divergent_op
    if op is not None:
        line = Text("first divergent op: ", style="bold")
        line.append(f"[{op.index}] {op.npu_op}", style="op")
        worst = min((t.cosine for t in op.failing_outputs(thr) if not t.nan_data), default=math.nan)
        right = "other NPU run" if summary.npu_vs_npu else "golden"
        how = f"cosine {worst:.6f} ≤ {thr}" if not math.isnan(worst) else "NaN/Inf data"
        line.append(f" ({op.op_type}; {right} {op.golden_op}) — its outputs fail ({how}) "
                    "while its inputs pass: the error is born here; later failures may only inherit it")
        lines.append(line)
    failure = summary.first_failure
    if failure is not None and failure.is_graph_input:
        lines.append(Text(
            f"the first failing tensor is {failure.tensor.tensor_index} (cosine {failure.tensor.cosine:.6f}), an "
            f"input that no earlier op's output explains: a graph input — the NPU and golden runs were fed "
            f"different data (inconsistent inputs); check the input pipeline before the operators",
            style="warning"))
    if summary.nan_data_outputs:
        lines.append(Text(f"{summary.nan_data_outputs} outputs could not be compared (NaN/Inf data): counted as "
                          "failing", style="bad"))
    if summary.name_only and summary.abnormal_ops:
        lines.append(Text("name-only matching: fused ops cannot be matched, so no op is named as the first "
                          "divergent one; pass -g GRAPH (the run's *_Build.txt) for a sound match", style="warning"))
    if not summary.abnormal_ops:
        lines.append(Text(f"no op output has cosine ≤ {thr}: every compared output meets the threshold", style="ok"))
    return lines


PROBLEMS_SHOWN = 10
"""How many malformed CSV rows/values a summary names before counting the rest."""


def summary_view(summary: CompareSummary, limit: int, title: str | None = None) -> list[Any]:
    """`vcs`'s view of one result. Lines of text are top-level items, so `show` prints them unwrapped: a
    CSV path is never cut mid-name and copies whole."""
    parts: list[Any] = []
    head = Text(title or str(summary.path), style="bold")
    if not summary.complete:
        head.append("  (interrupted: `vc --resume` finishes it)", style="warning")
    parts.append(head)
    for problem in summary.problems[:PROBLEMS_SHOWN]:
        parts.append(Text(f"warning: {summary.path}: {problem}", style="warning"))
    if len(summary.problems) > PROBLEMS_SHOWN:
        parts.append(Text(f"warning: {summary.path}: ... and {len(summary.problems) - PROBLEMS_SHOWN} more "
                          "malformed rows or values", style="warning"))
    if not summary.ops:
        parts.append(Text(f"{summary.path} holds no rows (only a header): nothing was compared", style="warning"))
        return parts
    parts.append(Text(
        f"{len(summary.ops)} ops, {summary.tensors_compared} tensors compared, "
        f"{summary.tensors_not_compared} not compared; {len(summary.abnormal_ops)} ops with output cosine ≤ "
        f"{summary.threshold}" + (" or NaN/Inf data" if summary.nan_data_outputs else ""), style="dim"))
    for op in summary.abnormal_ops[:limit]:
        parts.append(op_panel(op, summary.threshold, "NPU (other)" if summary.npu_vs_npu else "golden"))
    if len(summary.abnormal_ops) > limit:
        parts.append(Text(f"... {len(summary.abnormal_ops) - limit} more (vcs -l N shows more)", style="dim"))
    if summary.problems:
        # a malformed value can hide the real first divergent op: name none rather than a wrong one
        parts.append(Text(f"{len(summary.problems)} malformed rows or values in this CSV were read as NaN, so no "
                          "first divergent op is named; re-run `vc` to rewrite the CSV", style="warning"))
        return parts
    parts.extend(divergence_lines(summary))
    return parts


def run_lines(runs: Sequence[Any]) -> list[Text]:
    """The short summary `vc` ends with: one line per run, the result path last and never cut."""
    lines = [Text("comparison runs:", style="bold")]
    for run in runs:
        s = run.summary
        op = s.first_divergent_op
        line = Text(f"  {run.label}: {len(s.ops)} ops, {s.tensors_compared}/"
                    f"{s.tensors_compared + s.tensors_not_compared} tensors compared, ")
        line.append(f"{len(s.abnormal_ops)} abnormal", style="bad" if s.abnormal_ops else "ok")
        line.append(", first divergent op ")
        if op is not None:
            line.append(f"[{op.index}] {op.npu_op}", style="op")
        elif s.name_only and s.abnormal_ops:
            line.append("not named (name-only matching; pass -g GRAPH)", style="warning")
        else:
            line.append("-", style="dim")
        line.append(f", {run.elapsed_s:.1f}s: ")
        line.append(str(run.csv_path), style="path")
        lines.append(line)
    return lines


UNREADABLE_SHOWN = 10
"""How many unreadable files `vc` lists one per line before counting the rest."""


def unreadable_lines(runs: Sequence[Any], limit: int = UNREADABLE_SHOWN) -> list[Text]:
    """One warning line per NPU dump / golden .npy that could not be read (the first `limit`, then a count)."""
    found: dict[str, str] = {}
    for run in runs:
        for name, problem in getattr(run, "unreadable", ()):
            found.setdefault(name, problem)
    lines: list[Text] = []
    for name, problem in list(found.items())[:limit]:
        line = Text("warning: could not read ", style="warning")
        line.append(name, style="path")
        line.append(f": {problem}")
        lines.append(line)
    if len(found) > limit:
        lines.append(Text(f"warning: ... and {len(found) - limit} more unreadable files", style="warning"))
    if found:
        lines.append(Text(f"{len(found)} file(s) could not be read; their rows have NaN metrics (see "
                          "CompareFailReason in the CSV)", style="warning"))
    return lines


def metrics_table(metrics: TensorMetrics) -> Table:
    table = Table(show_header=True, show_edge=False, title="metrics (msaccucmp)", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in zip(METRIC_NAMES, metrics.values):
        table.add_row(name, value)
    if metrics.reasons:
        table.add_row("CompareFailReason", ",".join(metrics.reasons))
    return table


def pair_view(report: Any) -> Group:
    """`cp`: shapes, allclose, cosine, error counts, first error items, first items, metrics."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="dim")
    head.add_column()
    head.add_row("A", f"{report.left_name}  shape {list(report.left_shape)}  {report.left_dtype}")
    head.add_row("B", f"{report.right_name}  shape {list(report.right_shape)}  {report.right_dtype}")
    head.add_row("allclose", Text(str(report.allclose), style="ok" if report.allclose else "bad"))
    head.add_row("cosine", report.metrics.values[0])
    share = 100.0 * report.error_count / report.size if report.size else 0.0
    head.add_row(f"|a-b| > {report.atol} + {report.rtol}·|b|", f"{report.error_count} of {report.size} ({share:.4f}%)")
    parts: list[Any] = [head]
    for note in getattr(report, "conversions", ()):
        parts.append(Text("layout: " + note, style="dim"))
    for title, items in (("first error items", report.error_items), ("first items", report.first_items)):
        table = Table(title=title, title_justify="left", show_edge=False)
        for name in ("index", "A", "B", "|A-B|"):
            table.add_column(name, justify="right")
        for index, a, b in items:
            table.add_row(str(index), f"{a:.6g}", f"{b:.6g}", f"{abs(a - b):.6g}")
        parts.append(table)
    parts.append(metrics_table(report.metrics))
    if report.saved:
        parts.append(Text("saved: " + ", ".join(str(p) for p in report.saved), style="dim"))
    return Group(*parts)
