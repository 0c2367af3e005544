"""Drawing the NPU-dump results: decode reports (`dc`), dump listings (`ls dump`), `pt`, overflow findings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_tool.render.messages import error_line, note_line, warning_line

if TYPE_CHECKING:
    import numpy as np

    from precision_tool.analysis.decode import DecodeReport, DumpListing
    from precision_tool.analysis.overflow import OverflowReport, TensorSummary
    from precision_tool.analysis.tensor_stats import TensorStats

_SHOW_PROBLEMS = 50  # lines of skipped/failed files shown before "... and N more"


def number(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


# --- dc --------------------------------------------------------------------------------------------
def decode_report(report: "DecodeReport") -> list[RenderableType]:
    out: list[RenderableType] = []
    what = f" as {report.target_format}" if report.target_format else ""
    out.append(Text.assemble(
        ("decoded ", ""), (f"{report.file_count - len({p.path for p in report.failed if p.label is None})}", "ok"),
        (f" of {report.file_count} dump file(s){what}: {len(report.written)} .npy in ", ""),
        (str(report.out_dir), "path"),
    ))
    for written in report.written[:5] if len(report.written) <= 5 else ():
        out.append(note_line(f"  {written.name}"))
    if report.renamed:
        out.append(note_line(f"{len(report.renamed)} decoded name(s) reached 255 characters: saved under hashed "
                             f"names, listed with their real names in {report.out_dir / 'mapping.csv'}"))
    if report.ignored:
        out.append(note_line(f"ignored {len(report.ignored)} file(s) that are not dumps (by suffix), "
                             f"e.g. {report.ignored[0].name}"))
    # One line per reason: a folder of ops holds many ND tensors that have no axes to convert.
    by_reason: dict[str, list[Any]] = {}
    for problem in report.skipped:
        by_reason.setdefault(problem.message, []).append(problem)
    for reason, problems in by_reason.items():
        files = {p.path for p in problems}
        example = problems[0]
        out.append(warning_line(
            f"not converted ({reason}): {len(problems)} tensor(s) in {len(files)} file(s), "
            f"e.g. {example.path.name} {example.label or ''}".rstrip()))
    for problem in report.failed[:_SHOW_PROBLEMS]:
        out.append(error_line(problem.line()))
    if len(report.failed) > _SHOW_PROBLEMS:
        out.append(error_line(f"... and {len(report.failed) - _SHOW_PROBLEMS} more failures"))
    return out


# --- ls dump ---------------------------------------------------------------------------------------
_LISTING_HEADER = ("op type", "op name", "task", "stream", "timestamp_us", "in", "out")


def dump_listing(rows: Sequence["DumpListing"], folders: Sequence[Path]) -> RenderableType:
    """A column-aligned listing; plain text rather than a rich Table so that 20,000 rows print quickly."""
    if not rows:
        where = ", ".join(str(f) for f in folders) or "the workspace"
        return note_line(f"no NPU dump files match in {where}")
    cells = [
        (r.op_type, r.op_name, str(r.task_id), "-" if r.stream_id is None else str(r.stream_id),
         str(r.timestamp_us), "?" if r.input_count is None else str(r.input_count),
         "?" if r.output_count is None else str(r.output_count))
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(_LISTING_HEADER)]
    right = {2, 3, 4, 5, 6}
    template = "  ".join(f"{{:{'>' if i in right else '<'}{w}}}" for i, w in enumerate(widths))

    def line(values: Sequence[str]) -> str:
        return template.format(*values).rstrip()

    lines = [(line(_LISTING_HEADER), "bold")]
    lines.extend([(template.format(*c), "") for c in cells])
    lines.append((f"{len(rows)} dump file(s) in {', '.join(str(f) for f in folders)}", "dim"))
    lines.extend((f"{r.path}: {r.problem}", "error") for r in [r for r in rows if r.problem][:_SHOW_PROBLEMS])
    return PlainLines(lines)


class PlainLines:
    """Pre-formatted lines, each with one style: no wrapping or markup work, so 20,000 lines print fast."""

    def __init__(self, lines: Sequence[tuple[str, str]]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        newline = Segment.line()
        styles: dict[str, Style | None] = {}
        for text, style_name in self.lines:
            if style_name not in styles:
                styles[style_name] = console.get_style(style_name) if style_name else None
            yield Segment(text, styles[style_name])
            yield newline

    def __str__(self) -> str:
        return "\n".join(text for text, _ in self.lines)


# --- pt --------------------------------------------------------------------------------------------
def tensor_print(title: str, stats: "TensorStats", array: "np.ndarray", *, notes: Sequence[str] = (),
                 preview: int = 20, saved_text: Path | None = None) -> RenderableType:
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("shape", str(list(stats.shape)))
    summary.add_row("dtype", stats.dtype)
    of = " |x|" if stats.magnitudes else ""
    summary.add_row(f"max{of}", number(stats.max))
    summary.add_row(f"min{of}", number(stats.min))
    summary.add_row(f"mean{of}", number(stats.mean))
    summary.add_row("NaN", str(stats.nan_count))
    summary.add_row("Inf", str(stats.inf_count))
    summary.add_row("zeros", f"{stats.zero_count} of {stats.count}")
    values = Table(title=f"first {min(preview, stats.count)} values", title_justify="left", show_edge=False)
    values.add_column("index", justify="right", style="dim")
    values.add_column("value", justify="right")
    flat = array.reshape(-1)[:preview]
    import numpy as np

    for position, value in zip(range(len(flat)), flat):
        index = np.unravel_index(position, array.shape) if array.ndim > 1 else (position,)
        values.add_row(str(list(int(i) for i in index)), _value_text(value))
    parts: list[RenderableType] = [summary, values]
    if stats.magnitudes:
        parts.append(note_line("complex values: max/min/mean are of the magnitudes |x| (the values list shows "
                               "real+imag)"))
    parts.extend(note_line(n) for n in notes)
    if saved_text is not None:
        parts.append(note_line(f"values written to {saved_text}"))
    return Panel(Group(*parts), title=Text(title, style="op"), title_align="left", expand=False)


def _value_text(value: Any) -> str:
    try:
        return number(float(value)) if not isinstance(value, complex) else str(value)
    except (TypeError, ValueError):
        return str(value)


# --- overflow --------------------------------------------------------------------------------------
def overflow_report(report: "OverflowReport") -> RenderableType:
    from precision_tool.analysis.overflow import relative

    if report.folder is None or report.total == 0:
        where = report.folder or "overflow/dump"
        return Panel(note_line(f"no overflow (Opdebug) files in {where}"), title="overflow", title_align="left",
                     expand=False)
    parts: list[RenderableType] = [Text(
        f"{report.total} overflow record file(s) in {report.folder}; showing the first {len(report.findings)} "
        "by time (the first is where to look)", style="dim")]
    for n, finding in enumerate(report.findings, 1):
        heading = Text(f"[{n}] ", style="bold")
        if finding.op_name:
            heading.append(f"{finding.op_type} ", style="bold")
            heading.append(finding.op_name, style="op")
        else:
            heading.append(relative(finding.debug_file, report.folder), style="path")
        heading.append(f"  timestamp_us {finding.timestamp_us}", style="dim")
        parts.append(heading)
        for record in finding.records:
            ids = f"task {record.task_id}, stream {record.stream_id}"
            if record.context_id:
                ids += f", context {record.context_id}"
            parts.append(Text(f"    {record.unit}: {'; '.join(record.describe())} ({ids}, "
                              f"status 0x{record.status:x})"))
        if finding.problem:
            parts.append(warning_line(f"    {finding.problem}"))
        if finding.op_dump is not None:
            parts.append(note_line(f"    dump: {relative(finding.op_dump, report.folder)}"))
            parts.append(_tensor_table(finding.tensors))
    return Panel(Group(*parts), title="overflow", title_align="left", expand=False)


def _tensor_table(tensors: Sequence["TensorSummary"]) -> Table:
    table = Table(show_edge=False, padding=(0, 1))
    for column in ("tensor", "layout", "dtype", "shape", "max", "min", "mean", "NaN", "Inf"):
        table.add_column(column, justify="right" if column in ("max", "min", "mean", "NaN", "Inf") else "left")
    for t in tensors:
        s = t.stats
        if s is None:
            table.add_row(t.label, t.layout, t.data_type, Text(t.note or "unreadable", style="error"), "", "", "", "", "")
            continue
        nan = Text(str(s.nan_count), style="bad" if s.nan_count else "")
        inf = Text(str(s.inf_count), style="bad" if s.inf_count else "")
        table.add_row(t.label, t.layout, t.data_type, str(list(s.shape)), number(s.max), number(s.min),
                      number(s.mean), nan, inf)
    return table
