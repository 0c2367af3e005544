"""Drawing `cp`'s comparison of two tensors: both tensors, allclose, the tolerances, the worst elements,
the ten metrics."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.results.metrics import METRIC_NAMES, TensorMetrics
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


def _index_text(index: tuple[int, ...]) -> str:
    return shape_text(index) if index else "scalar"


def worst_table(report: Any) -> list[Any]:
    """The elements that differ most, worst first, each at its index in A's shape ([3,0,7,12]): a heading
    line (prose, so it never wraps to the table's width) and the table."""
    items = report.worst_items
    # worst first: NaN/Inf mismatches, then the largest |A-B|, then the largest |A-B|/|B| (analysis orders them)
    title = (f"worst {len(items)} of {report.size} elements, by |A-B| (NaN/Inf first)" if len(items) < report.size
             else f"all {report.size} elements, worst first")
    table = Table(show_edge=False)
    rows = [[_index_text(item.index), f"{item.a:.6g}", f"{item.b:.6g}", f"{item.abs_error:.6g}",
             f"{item.rel_error:.6g}"] for item in items]
    for n, name in enumerate(("index", "A", "B", "|A-B|", "|A-B|/|B|")):
        # numbers are never cut: each column is at least as wide as its widest value
        table.add_column(name, justify="right", no_wrap=True,
                         min_width=max((len(row[n]) for row in rows), default=len(name)))
    table.add_column("error", no_wrap=True)
    for row, item in zip(rows, items):
        table.add_row(*row, Text("yes", style="bad") if item.error else Text("-", style="dim"))
    return [Text(title, style="table.title"), table]  # styled as rich styles a table title


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
    """`cp`: both tensors (name last and whole), allclose, cosine, error counts and where the first error is,
    the tolerances, the elements that differ most (marking errors), metrics."""
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
    # labels whole; a value too long for a narrow terminal wraps at words rather than being cut
    head.add_column(style="dim", no_wrap=True, min_width=len("first error"))
    head.add_column()
    head.add_row("allclose", Text(str(report.allclose), style="ok" if report.allclose else "bad"))
    head.add_row("cosine", report.metrics.values[0])
    share = 100.0 * report.error_count / report.size if report.size else 0.0
    head.add_row("errors", f"{report.error_count} of {report.size} elements ({share:.4f}%) have "
                           "|A-B| > atol + rtol·|B|")
    if report.first_error is not None:  # where the errors start (a shifted or half-written tensor shows here)
        head.add_row("first error", _index_text(report.first_error))
    parts.append(head)
    parts.append(tolerance_line(report))
    # No table of the first items: `pt A` and `pt B` show those, in the same columns; here the worst.
    if report.worst_items:
        parts.extend(worst_table(report))
    parts.append(metrics_table(report.metrics))
    if report.saved:
        parts.append(Text("saved:", style="dim"))
        parts.extend(Text(str(path), style="path") for path in report.saved)
    return parts
