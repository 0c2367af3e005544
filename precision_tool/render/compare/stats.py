"""Drawing statistics compares (dump_data="stats" dumps against golden tensors): the summary `vc`/`ac` show,
and the table `vcs` shows. Plain text lines, so 100-character op names are never cut mid-name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.console import RenderableType
from rich.text import Text

from precision_tool.render.messages import note_line, warning_line

if TYPE_CHECKING:
    from precision_tool.analysis.compare.stats_compare import StatsResultRow, StatsSummary

_STYLE = {"pass": "ok", "warning": "warning", "error": "error"}


def stats_counts_text(summary: "StatsSummary") -> str:
    """'183 tensors: 78 pass, 95 warning, 10 error, 9 without golden' (zero counts left out)."""
    parts = [f"{summary.passed} pass", f"{summary.warnings} warning", f"{summary.errors} error"]
    for count, what in ((summary.no_golden, "without golden"), (summary.not_computed, "without statistics"),
                        (summary.unreadable, "unreadable")):
        if count:
            parts.append(f"{count} {what}")
    return f"{summary.total} tensor(s): " + ", ".join(parts)


def _row_ref(row: "StatsResultRow", right_label: str) -> str:
    if right_label != "golden":  # NPU vs NPU: the same op in the other run
        return f"[{row.index}] {row.tensor_index} ({row.op_type})"
    return f"[{row.index}] {row.tensor_index} ({row.op_type}; golden {row.ground_truth})"


def stats_summary(summary: "StatsSummary", label: str | None = None,
                  right_label: str = "golden") -> list[RenderableType]:
    """What `vc` / `ac` print after a statistics compare: the counts, the first divergent tensor in graph order
    (and the first error when it comes later), the notes, the unreadable files, and the result CSV.
    `right_label`: what the NPU is compared with ("golden", or "other run" for compare_statistics_npu)."""
    out: list[RenderableType] = []
    head = f"{label}: " if label else ""
    out.append(Text.assemble((f"{head}statistics compare", "bold"),
                             " (the NPU dumped statistics CSVs, no tensors): ", stats_counts_text(summary)))
    first = summary.first_failing
    if first is None:
        if summary.compared:
            out.append(Text(f"no tensor's statistics differ from the {right_label}'s beyond 1% "
                            "(statistics cannot prove a match: a tensor compare can)", style="ok"))
        elif summary.unreadable:
            out.append(warning_line(f"no tensor could be compared: {summary.unreadable} row(s) name a statistics "
                                    f"CSV or {right_label} file that could not be read"))
        else:
            out.append(warning_line(f"no tensor could be compared: no {right_label} tensor matched any statistics "
                                    "row"))
    else:
        style = _STYLE.get(first.result, "")
        out.append(Text.assemble(("first divergent tensor: ", "bold"), (_row_ref(first, right_label), style)))
        out.append(Text(f"  {first.result}: {first.reason}", style=style))
        error = summary.first_error
        if error is not None and error is not first:
            out.append(Text.assemble(("first error: ", "bold"), (_row_ref(error, right_label), "error")))
            out.append(Text(f"  {error.reason}", style="error"))
    for note in summary.notes:
        out.append(warning_line(note))
    out.append(note_line("warning: max, min or mean differ by more than 1% of their magnitude; error: by more "
                         "than 50%, or NaN/Inf/element counts differ"))
    if summary.csv_path is not None:
        out.append(Text.assemble(("result: ", "dim"), (str(summary.csv_path), "path")))
    return out


_NUMBERS = ("max", "min", "mean", "nan", "inf")


def _pair(row: "StatsResultRow", npu: str, golden: str) -> str:
    return f"{_short(row.cells.get(npu, 'NaN'))}/{_short(row.cells.get(golden, 'NaN'))}"


def _short(text: str) -> str:
    try:
        value = float(text)
    except ValueError:
        return text
    return f"{value:.6g}"


def stats_table(rows: Sequence["StatsResultRow"], limit: int | None = None,
                right_label: str = "golden") -> list[RenderableType]:
    """`vcs` on a statistics result: per tensor one line of numbers (result, NPU/golden max, min, mean,
    NaN and Inf counts) and the tensor's name last so it copies whole; then the reasons of the rows shown."""
    right = "golden" if right_label == "golden" else "other"
    columns = ("result", *(f"{n} npu/{right}" for n in _NUMBERS[:3]), *_NUMBERS[3:])
    if not rows:
        return [note_line("no rows match")]
    shown = list(rows if limit is None else rows[:limit])
    cells = [(r.result, _pair(r, "NPUMax", "GoldenMax"), _pair(r, "NPUMin", "GoldenMin"),
              _pair(r, "NPUMean", "GoldenMean"), _pair(r, "NPUNaN", "GoldenNaN"), _pair(r, "NPUInf", "GoldenInf"))
             for r in shown]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(columns)]
    text = Text("  ".join(h.ljust(w) for h, w in zip(columns, widths)) + f"  tensor ({right})\n", style="bold")
    for row, row_cells in zip(shown, cells):
        line = "  ".join(c.ljust(w) for c, w in zip(row_cells, widths))
        text.append(line[: widths[0]], style=_STYLE.get(row.result))
        text.append(line[widths[0]:] + f"  [{row.index}] {row.tensor_index} ({row.ground_truth})\n")
    out: list[RenderableType] = [text]
    reasons = [(r, r.reason) for r in shown if r.reason and r.result != "pass"]
    for row, reason in reasons:
        out.append(Text.assemble((f"[{row.index}] {row.tensor_index}: ", "bold"),
                                 (reason, _STYLE.get(row.result, ""))))
    if limit is not None and len(rows) > limit:
        out.append(note_line(f"... {len(rows) - limit} more row(s)"))
    return out
