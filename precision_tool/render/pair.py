"""Drawing `cp`'s comparison of two tensors: both tensors, allclose, the tolerances, items, the ten metrics."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.metrics import METRIC_NAMES, TensorMetrics
from precision_tool.shapes import shape_text


def metrics_table(metrics: TensorMetrics) -> Table:
    table = Table(show_header=True, show_edge=False, title="metrics (msaccucmp)", title_justify="left")
    table.add_column("metric", no_wrap=True)
    # numbers are never cut: the column is at least as wide as its widest value
    table.add_column("value", justify="right", no_wrap=True, min_width=max(map(len, metrics.values), default=5))
    for name, value in zip(METRIC_NAMES, metrics.values):
        table.add_row(name, value)
    if metrics.reasons:
        table.add_row("CompareFailReason", Text(",".join(metrics.reasons), overflow="fold"))
    return table


def _items_table(title: str, items: Sequence[tuple[int, float, float]], errors: Sequence[bool] = ()) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    rows = [[str(index), f"{a:.6g}", f"{b:.6g}", f"{abs(a - b):.6g}"] for index, a, b in items]
    for n, name in enumerate(("index", "A", "B", "|A-B|")):
        # numbers are never cut: each column is at least as wide as its widest value
        table.add_column(name, justify="right", no_wrap=True,
                         min_width=max((len(row[n]) for row in rows), default=len(name)))
    if errors:
        table.add_column("error", no_wrap=True)
    for n, row in enumerate(rows):
        cells: list[Any] = list(row)
        if errors:
            cells.append(Text("yes", style="bad") if errors[n] else Text("-", style="dim"))
        table.add_row(*cells)
    return table


def tolerance_line(report: Any) -> Text:
    """Which tolerances `cp` used and why: the dtype's defaults, or -al/-rl."""
    values = f"rtol {report.rtol:g}, atol {report.atol:g}"
    if report.tolerance_dtype is None:
        return Text(f"tolerances from -rl/-al: {values}", style="dim")
    rtol_given, atol_given = report.tolerances_given
    if rtol_given or atol_given:
        default = f"{report.tolerance_dtype}'s default"
        return Text(f"tolerances: rtol {report.rtol:g} ({'-rl' if rtol_given else default}), "
                    f"atol {report.atol:g} ({'-al' if atol_given else default})", style="dim")
    return Text(f"tolerances for {report.tolerance_dtype}: {values} (-rl/-al override)", style="dim")


def pair_view(report: Any) -> list[Any]:
    """`cp`: both tensors (name last and whole), allclose, cosine, error counts, the tolerances, the first
    items (marking errors; the first error items only when they are not among them), metrics."""
    parts: list[Any] = []
    for side, name, shape, dtype in (("A", report.left_name, report.left_shape, report.left_dtype),
                                     ("B", report.right_name, report.right_shape, report.right_dtype)):
        line = Text(f"{side}  ", style="bold")
        line.append(f"{dtype} {shape_text(shape)}  ")
        line.append(name, style="path")
        parts.append(line)
    for note in getattr(report, "conversions", ()):
        parts.append(Text("layout: " + note, style="dim"))
    head = Table.grid(padding=(0, 2))
    head.add_column(style="dim", no_wrap=True)
    head.add_column(no_wrap=True)
    head.add_row("allclose", Text(str(report.allclose), style="ok" if report.allclose else "bad"))
    head.add_row("cosine", report.metrics.values[0])
    share = 100.0 * report.error_count / report.size if report.size else 0.0
    head.add_row("errors", f"{report.error_count} of {report.size} elements ({share:.4f}%) have "
                           "|A-B| > atol + rtol·|B|")
    parts.append(head)
    parts.append(tolerance_line(report))
    shown = {index for index, _, _ in report.first_items}
    if any(index not in shown for index, _, _ in report.error_items):
        parts.append(_items_table("first error items", report.error_items))
    parts.append(_items_table("first items", report.first_items, getattr(report, "first_errors", ())))
    parts.append(metrics_table(report.metrics))
    if report.saved:
        parts.append(Text("saved:", style="dim"))
        parts.extend(Text(str(path), style="path") for path in report.saved)
    return parts
