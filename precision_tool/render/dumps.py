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
def decode_report(report: "DecodeReport", graph_layout_files: int = 0,
                  runs: "dict[Path, str] | None" = None) -> list[RenderableType]:
    """`graph_layout_files`: how many files had their tensors' origin layouts from the run's Build graph.
    `runs`: the debug run ('debug_0') of each dump file; when the files come from several runs the written
    names are listed under one heading per run (the same op's dumps differ only by timestamp)."""
    out: list[RenderableType] = []
    what = f" as {report.target_format}" if report.target_format else ""
    out.append(Text.assemble(
        ("decoded ", ""), (f"{report.file_count - len({p.path for p in report.failed if p.label is None})}", "ok"),
        (f" of {report.file_count} dump file(s){what}: {len(report.written)} .npy in ", ""),
        (str(report.out_dir), "path"),
    ))
    groups: dict[str, list[tuple[Path, Path]]] = {}
    for source, written in report.written_from:
        groups.setdefault((runs or {}).get(source, "outside the workspace's debug runs"), []).append((source, written))
    if len(groups) > 1:
        for label in sorted(groups):
            pairs = groups[label]
            sources = {source for source, _ in pairs}
            out.append(Text(f"{label}: {len(pairs)} .npy from {len(sources)} dump file(s) in "
                            f"{_common_folder(sources)}", style="bold"))
            for _, written in pairs[:5] if len(pairs) <= 5 else ():
                out.append(note_line(f"  {written.name}"))
    else:
        for written in report.written[:5] if len(report.written) <= 5 else ():
            out.append(note_line(f"  {written.name}"))
    if graph_layout_files:
        out.append(note_line(f"origin layouts (origin_format) of {graph_layout_files} file(s) taken from their "
                             "run's Build graph"))
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
    if any(p.ambiguous for p in report.failed):
        out.append(note_line("the graph's origin_format decides an ambiguous layout: decode the dumps from their "
                             "workspace (--data DIR, dumps under npu/debug_N/dump and the run's Build graph in "
                             "npu/debug_N/graph)"))
    return out


def _common_folder(paths: set[Path]) -> str:
    import os

    return os.path.commonpath([str(p.parent) for p in paths])


# --- ls dump ---------------------------------------------------------------------------------------
_LISTING_HEADER = ("op type", "op name", "task", "stream", "timestamp_us", "in", "out")
_GAP = "  "
_MIN_NAME_WIDTH = 12  # below this the name column is useless: each dump takes two lines instead


def dump_listing(rows: Sequence["DumpListing"], folders: Sequence[Path]) -> RenderableType:
    """A column-aligned listing laid out for the console width; plain text rather than a rich Table so that
    20,000 rows print quickly. The numbers are never dropped: long op names fold inside their column."""
    if not rows:
        where = ", ".join(str(f) for f in folders) or "the workspace"
        return note_line(f"no NPU dump files match in {where}")
    cells = [
        (r.op_type, r.op_name, str(r.task_id), "-" if r.stream_id is None else str(r.stream_id),
         str(r.timestamp_us), "?" if r.input_count is None else str(r.input_count),
         "?" if r.output_count is None else str(r.output_count))
        for r in rows
    ]
    footer = (f"{len(rows)} dump file(s) in", [str(f) for f in folders])
    problems = [(r.path, r.problem) for r in rows if r.problem]
    return DumpListingView(cells, footer, problems)


def middle_ellipsis(text: str, width: int) -> str:
    """`text` cut to `width` characters by replacing its middle with '…' (both ends stay readable)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    keep = width - 1
    return text[:(keep + 1) // 2] + "…" + text[len(text) - keep // 2:]


def fold(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width` characters (every character kept, for copying)."""
    width = max(1, width)
    return [text[i:i + width] for i in range(0, len(text), width)] or [""]


def wrap_words(text: str, width: int, indent: str = "") -> list[str]:
    """Word-wrapped lines (long words folded, nothing cut); continuation lines get `indent`."""
    import textwrap

    return textwrap.wrap(text, width=max(len(indent) + 8, width), subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=True) or [""]


class DumpListingView:
    """`ls dump` rows, laid out when the console width is known."""

    def __init__(self, cells: Sequence[tuple[str, ...]], footer: tuple[str, list[str]], problems: Sequence[tuple[str, str]]) -> None:
        self.cells = list(cells)
        self.footer = footer
        self.problems = list(problems)

    def lines(self, width: int) -> list[tuple[str, str]]:
        """(text, style) lines, none longer than `width` (unless one character per line would not fit)."""
        widths = [max(len(h), *(len(c[i]) for c in self.cells)) for i, h in enumerate(_LISTING_HEADER)]
        numbers_width = sum(widths[2:]) + len(_GAP) * 6
        room = width - numbers_width  # for op type + op name
        type_width = widths[0]
        if type_width + widths[1] > room:  # shrink the type column first (types are short and ellipsize well)
            type_width = min(widths[0], max(room - widths[1], min(room // 3, 16), len(_LISTING_HEADER[0])))
        name_width = min(widths[1], room - type_width)
        out: list[tuple[str, str]] = []
        if name_width < min(_MIN_NAME_WIDTH, widths[1]):
            out.extend(self._stacked(width))
        else:
            out.extend(self._columns([type_width, name_width, *widths[2:]]))
        out.extend((line, "dim") for line in self._footer_lines(width))
        for path, problem in self.problems:
            out.extend((line, "error") for line in fold(f"{path}:", width))
            out.extend(("    " + line, "error") for line in wrap_words(problem, width - 4))
        return out

    def _footer_lines(self, width: int) -> list[str]:
        if len(self.footer[0]) + 2 + sum(len(f) + 2 for f in self.footer[1]) <= width:
            return [f"{self.footer[0]} {', '.join(self.footer[1])}"]
        return [self.footer[0]] + [line for folder in self.footer[1] for line in fold("    " + folder, width)]

    def _columns(self, widths: list[int]) -> list[tuple[str, str]]:
        right = {2, 3, 4, 5, 6}
        template = _GAP.join(f"{{:{'>' if i in right else '<'}{w}}}" for i, w in enumerate(widths))
        blank = ("",) * 5
        lines = [(template.format(*_LISTING_HEADER).rstrip(), "bold")]
        type_width, name_width = widths[0], widths[1]
        for cell in self.cells:
            op_type = middle_ellipsis(cell[0], type_width)
            if len(cell[1]) <= name_width:
                lines.append((template.format(op_type, cell[1], *cell[2:]), ""))
                continue
            pieces = fold(cell[1], name_width)
            lines.append((template.format(op_type, pieces[0], *cell[2:]), ""))
            lines.extend((template.format("", piece, *blank).rstrip(), "") for piece in pieces[1:])
        return lines

    def _stacked(self, width: int) -> list[tuple[str, str]]:
        """Too narrow for columns: the op on one line, its numbers on the next."""
        lines: list[tuple[str, str]] = []
        for cell in self.cells:
            lines.extend((line, "bold") for line in fold(f"{cell[0]} {cell[1]}", width))
            line = "   "
            for label, value in zip(_LISTING_HEADER[2:], cell[2:]):
                pair = f" {label} {value}"
                if len(line) + len(pair) > width and line.strip():
                    lines.append((line, ""))
                    line = "   "
                line += pair
            lines.append((line, ""))
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        newline = Segment.line()
        styles: dict[str, Style | None] = {}
        for text, style_name in self.lines(options.max_width):
            if style_name not in styles:
                styles[style_name] = console.get_style(style_name) if style_name else None
            yield Segment(text, styles[style_name])
            yield newline

    def __str__(self) -> str:
        return "\n".join(text for text, _ in self.lines(10_000))


# --- pt --------------------------------------------------------------------------------------------
def tensor_print(title: str, stats: "TensorStats", array: "np.ndarray", *, notes: Sequence[str] = (),
                 preview: int = 20, saved_text: Path | None = None,
                 source: tuple[str, Path, str] | None = None) -> list[RenderableType]:
    """The panel of numbers, then the paths (`source`: (what, file, remark) the tensor came from; `saved_text`)
    each on a line of its own below it: a line the console does not wrap, so a path copies whole."""
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
    shown: list[RenderableType] = [Panel(Group(*parts), title=Text(title, style="op"), title_align="left",
                                         expand=False)]
    if source is not None:
        shown.append(Text.assemble((f"{source[0]} ", "dim"), (str(source[1]), "path"),
                                   (f" {source[2]}" if source[2] else "", "dim")))
    if saved_text is not None:
        shown.append(Text.assemble(("values written to ", "dim"), (str(saved_text), "path")))
    return shown


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
