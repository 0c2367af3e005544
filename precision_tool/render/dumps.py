"""Drawing the NPU-dump results: decode reports (`dc`), dump listings (`ls dump`), `pt`, overflow findings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_tool.render.console import PlainBlock
from precision_tool.render.messages import error_line, note_line, warning_line
from precision_tool.shapes import shape_text

if TYPE_CHECKING:
    import numpy as np

    from precision_tool.analysis.dumps.decode import DecodeReport
    from precision_tool.analysis.dumps.origin_layout import LayoutStory
    from precision_tool.analysis.dumps.dump_files import DumpListing
    from precision_tool.analysis.checks.overflow import OverflowReport, TensorSummary
    from precision_tool.analysis.dumps.tensor_stats import TensorStats

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
                  runs: "dict[Path, str] | None" = None,
                  failure_list: "tuple[Path | None, list[str]] | None" = None) -> list[RenderableType]:
    """`graph_layout_files`: how many files had their tensors' origin layouts from the run's Build graph.
    `runs`: the debug run ('debug_0') of each dump file; when the files come from several runs the written
    names are listed under one heading per run (the same op's dumps differ only by timestamp).
    `failure_list`: (the file holding every failure or None, why each folder tried refused it)."""
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
    for problem in report.unconverted:
        by_reason.setdefault(problem.message, []).append(problem)
    for reason, problems in by_reason.items():
        files = {p.path for p in problems}
        example = problems[0]
        out.append(note_line(
            f"{len(problems)} tensor(s) of {len(files)} file(s) written in their own layout, not converted "
            f"({reason}), e.g. {example.path.name} {example.label or ''}".rstrip()))
    # converted, but worth a word: e.g. a short original shape ([1000]) read as NCHW [1,1000,1,1], padding cut
    by_note: dict[str, list[Any]] = {}
    for problem in getattr(report, "notes", ()):
        by_note.setdefault(problem.message, []).append(problem)
    for message, problems in by_note.items():
        example = problems[0]
        more = f" (and {len(problems) - 1} more tensor(s))" if len(problems) > 1 else ""
        out.append(note_line(f"{example.path.name} {example.label or ''}: {message}{more}".replace(" :", ":")))
    for problem in report.failed[:_SHOW_PROBLEMS]:
        out.append(error_line(problem.line()))
    if len(report.failed) > _SHOW_PROBLEMS:
        out.append(error_line(f"... and {len(report.failed) - _SHOW_PROBLEMS} more failures"))
    if failure_list is not None:
        written, refused = failure_list
        for reason in refused:
            out.append(warning_line(f"could not write the list of failures in {reason}"))
        if written is not None:
            out.append(Text.assemble((f"all {len(report.failed)} failure(s), one per line (file, tensor, reason; "
                                      "tab-separated): ", "dim"), (str(written), "path")))
    if any(p.ambiguous for p in report.failed):
        out.append(note_line("the graph's origin_format decides an ambiguous layout: decode the dumps from their "
                             "workspace (--data DIR, dumps under npu/debug_N/dump and the run's Build graph in "
                             "npu/debug_N/graph)"))
    return out


def _common_folder(paths: set[Path]) -> str:
    import os

    return os.path.commonpath([str(p.parent) for p in paths])


# --- ls dump ---------------------------------------------------------------------------------------
_LISTING_HEADER = ("in", "out", "dump file (pt, cp and dc take this name)")
_GAP = "  "
_NAME_BELOW = "↓"  # ends the counts of a row whose name is on the next line, at column 0


def dump_listing(rows: Sequence["DumpListing"], runs: Sequence[tuple[int, Path]],
                 width: int | None = None) -> list[RenderableType]:
    """Per run, a heading `debug_N: K dump file(s) in FOLDER`, then one line per dump: its input and output
    counts and its file name, whole and last on the line so it copies as it is. In a terminal `width` wide,
    a row whose counts and name do not fit puts the name at column 0 on a line of its own, so the terminal
    folds a name only when the name alone is longer than the line; in a pipe (`width` None) every row is
    one line. Plain text (a PlainBlock) rather than a rich Table or Text so that 20,000 rows print quickly;
    then the total, how to read a name, and the unreadable files. When statistics CSVs (dump_data="stats")
    are among the files a `data` column says `stats` or `tensors` for each row."""
    if not rows:
        where = ", ".join(f"debug_{n} ({folder})" for n, folder in runs) or "the workspace"
        return [note_line(f"no NPU dump files match in {where}")]
    with_stats = any(r.statistics for r in rows)
    cells = [("?" if r.input_count is None else str(r.input_count),
              "?" if r.output_count is None else str(r.output_count))
             + (("stats" if r.statistics else "tensors",) if with_stats else ()) for r in rows]
    heads = _LISTING_HEADER[:2] + (("data",) if with_stats else ())
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    template = _GAP.join([f"{{:>{widths[0]}}}", f"{{:>{widths[1]}}}"] + [f"{{:<{w}}}" for w in widths[2:]] + [""])
    name_head = "statistics CSV" if all(r.statistics for r in rows) else _LISTING_HEADER[2]
    header = template.format(*heads) + name_head
    # one heading per run, and per rank of a multi-device dump (its <device_id> folder)
    by_run: dict[tuple[str, int | None], list[str]] = {}
    stats_by_run: dict[tuple[str, int | None], int] = {}
    for row, row_cells in zip(rows, cells):
        prefix = template.format(*row_cells)
        key = (row.run, row.rank)
        if width is not None and len(prefix) + len(row.file_name) > width:
            by_run.setdefault(key, []).append(f"{prefix}{_NAME_BELOW}\n{row.file_name}")
        else:
            by_run.setdefault(key, []).append(prefix + row.file_name)
        stats_by_run[key] = stats_by_run.get(key, 0) + row.statistics
    out: list[RenderableType] = []
    folders = {f"debug_{n}": folder for n, folder in runs}
    for (run, rank), lines in by_run.items():
        stats_count = stats_by_run.get((run, rank), 0)
        what = f" ({stats_count} of them statistics CSVs)" if stats_count else ""
        folder = folders[run] if rank is None else folders[run] / str(rank)
        title = f"{run}:" if rank is None else f"{run} rank {rank}:"
        # The folder last on the heading: a path is never followed by punctuation, so it copies whole.
        out.append(Text.assemble((title, "bold"), f" {len(lines)} dump file(s){what} in ", (str(folder), "path")))
        out.append(PlainBlock(header + "\n" + "\n".join(lines), bold_head=len(header)))
    run_count = len({run for run, _ in by_run})
    rank_count = len({(run, rank) for run, rank in by_run if rank is not None})
    if rank_count:
        out.append(note_line(f"{len(rows)} dump file(s) in {rank_count} rank folder(s)"
                             + (f" of {run_count} runs" if run_count > 1 else "") + " (`ls dump -r N`: one rank)"))
    elif run_count > 1:
        out.append(note_line(f"{len(rows)} dump file(s) in {run_count} runs"))
    if any(not r.statistics for r in rows):
        out.append(note_line("a name reads OPTYPE.OPNAME.TASK.STREAM.TIMESTAMP_US; `pt NAME:output:0` prints a "
                             "tensor, `dc NAME` decodes the file"))
    if with_stats:
        out.append(note_line('stats: a statistics CSV (dump_data="stats"): max/min/mean and NaN/Inf counts per '
                             "input and output, no tensor data; `ni OP` shows them next to the golden tensor, "
                             "`vc` compares them"))
    for row in rows:
        if row.problem:
            out.append(error_line(f"{row.path}: {row.problem}"))
    return out


# --- pt --------------------------------------------------------------------------------------------
_VALUE_WIDTH = 12  # -1.23457e-05: the widest number() of a float, so fp16 and fp32 columns end alike


def tensor_print(title: str, stats: "TensorStats", array: "np.ndarray", *, notes: Sequence[str] = (),
                 preview: int = 20, saved_text: Path | None = None,
                 source: tuple[str, Path, str] | None = None,
                 layout: "LayoutStory | None" = None) -> list[RenderableType]:
    """Prose first, as `cp` prints it: notes (how the name was read), the file (`source`: (what, file,
    remark), the path last on its line so it copies whole), the layout shown; then the panel of numbers
    (nothing in it wraps: short labels, numbers kept whole) at the one panel width of every command, with
    the values right-aligned in a column of one width, so `pt` on an NPU tensor and on its golden file line
    up; then the .txt written (`saved_text`)."""
    shown: list[RenderableType] = [note_line(n) for n in notes]
    if source is not None:
        shown.append(Text.assemble((f"{source[0]} ", "dim"), (str(source[1]), "path"),
                                   (f" {source[2]}" if source[2] else "", "dim")))
    if layout is not None:
        shown.append(note_line(layout_line(layout)))
    if stats.magnitudes:
        shown.append(note_line("complex values: max/min/mean are of the magnitudes |x| (the values list shows "
                               "real+imag)"))
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold", no_wrap=True)
    summary.add_column(no_wrap=True, overflow="ignore")
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
    flat = array.flat[:preview]  # a copy of the first few only: reshape(-1) copies a Fortran-order memmap whole
    import numpy as np

    rows = []
    for position, value in zip(range(len(flat)), flat):
        index = np.unravel_index(position, array.shape) if array.ndim > 1 else (position,)
        rows.append((str(list(int(i) for i in index)), _value_text(value)))
    # Numbers are never cut (overflow "ignore"); rich does not justify such columns, so pad them here.
    indexes = right_aligned(["index"] + [index for index, _ in rows])
    numbers = right_aligned(["value"] + [value for _, value in rows], _VALUE_WIDTH)
    values.add_column(indexes[0], style="dim", no_wrap=True, overflow="ignore")
    values.add_column(numbers[0], no_wrap=True, overflow="ignore")
    for index_text, value_text in zip(indexes[1:], numbers[1:]):
        values.add_row(index_text, value_text)
    shown.append(SharedWidthPanel(Group(summary, values), Text(title, style="op")))
    if saved_text is not None:
        shown.append(Text.assemble(("values written to ", "dim"), (str(saved_text), "path")))
    return shown


class SharedWidthPanel:
    """A panel at the width every command's panels share (render/console.py's shared_width), so two `pt`
    panels are the same size whatever their titles; a title too long for it is cut (the file is named in
    full above the panel)."""

    def __init__(self, body: RenderableType, title: Text) -> None:
        self.body, self.title = body, title

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from precision_tool.render.console import shared_width

        yield Panel(self.body, title=self.title, title_align="left",
                    width=min(shared_width(console), options.max_width))


def right_aligned(cells: Sequence[str], width: int = 0) -> list[str]:
    """Cells padded on the left to one width, at least `width` (a column whose numbers rich must never cut
    nor pad)."""
    width = max(width, *(len(c) for c in cells)) if cells else width
    return [c.rjust(width) for c in cells]


def layout_line(story: "LayoutStory") -> str:
    """'layout NC1HWC0 [8,2,8,8,16] → NHWC [8,8,8,24] (origin layout from the Build graph)'."""

    if story.source == "dump":
        text = f"layout {story.device} {shape_text(story.device_shape)}, as dumped"
        return text + (f" with the device padding (no conversion: {story.problem})" if story.problem else "")
    why = ("origin layout from the Build graph" if story.source == "graph"
           else "the usual host layout: no Build graph names this tensor's origin layout")
    return f"layout {story.device} {shape_text(story.device_shape)} → {story.layout} {shape_text(story.shape)} ({why})"


def _value_text(value: Any) -> str:
    try:
        return number(float(value)) if not isinstance(value, complex) else str(value)
    except (TypeError, ValueError):
        return str(value)


# --- overflow --------------------------------------------------------------------------------------
def overflow_report(report: "OverflowReport") -> list[RenderableType]:
    """Prose lines (wrapped at words by the console), each dump path whole on a line of its own, and the
    tensors' statistics in a table whose numbers are never cut: at narrow widths its columns are split
    over two or more tables, each starting with the tensor's name."""
    title = Text("overflow: ", style="bold")
    if report.folder is None or report.total == 0:
        return [title + note_line(f"no overflow (Opdebug) files in {report.folder or 'overflow/dump'}")]
    parts: list[RenderableType] = [title + note_line(
        f"{report.total} overflow record file(s); showing the first {len(report.findings)} by time (the first "
        f"is where to look), from {report.folder}")]
    for n, finding in enumerate(report.findings, 1):
        heading = Text(f"#{n} ", style="bold")  # the order found, not an op id ([16] is one)
        name = finding.graph_name or finding.op_name
        if name:
            heading.append(f"{finding.op_type} ", style="bold")
            heading.append(name, style="op")
        else:
            heading.append("Opdebug file ")
            heading.append(str(finding.debug_file), style="path")
        heading.append(f" at timestamp_us {finding.timestamp_us}", style="dim")
        parts.append(heading)
        for record in finding.records:
            ids = f"task {record.task_id}, stream {record.stream_id}"
            if record.context_id:
                ids += f", context {record.context_id}"
            parts.append(Text(f"    {record.unit}: {'; '.join(record.describe())} ({ids}, "
                              f"status 0x{record.status:x})"))
        if finding.problem:
            parts.append(Text(f"    warning: {finding.problem}", style="warning"))
        if finding.op_dump is not None:
            parts.append(note_line("    its dump (pt, cp and dc take this path; `ni` the op name above):"))
            # under its label; never wrapped by us, so it copies whole (the terminal folds it if it must)
            parts.append(Text.assemble("      ", (str(finding.op_dump), "path"), no_wrap=True))
            parts.extend(_tensor_parts(finding.tensors))
    return parts


_TENSOR_COLUMNS = ("tensor", "layout", "dtype", "shape", "max", "min", "mean", "NaN", "Inf")
_NUMERIC = {"max", "min", "mean", "NaN", "Inf"}
_TABLE_INDENT = 4


def _tensor_parts(tensors: Sequence["TensorSummary"]) -> list[RenderableType]:
    """The statistics table of the readable tensors, then one prose line per tensor with a remark."""
    readable = [t for t in tensors if t.stats is not None]
    parts: list[RenderableType] = [TensorTables(readable)] if readable else []
    for t in tensors:
        if t.stats is None:
            parts.append(Text(f"    warning: {t.label} ({t.data_type}) could not be read: {t.note or 'unreadable'}",
                              style="warning"))
        elif t.note:
            parts.append(note_line(f"    {t.label}: {t.note}"))
    return parts


class TensorTables:
    """The overflow check's statistics: one table when it fits the width, else the columns split over
    several tables (each led by the tensor column); no cell is ever cut or wrapped."""

    def __init__(self, tensors: Sequence["TensorSummary"]) -> None:
        self.rows = [_tensor_cells(t) for t in tensors]

    def __rich_console__(self, console: Any, options: Any) -> Any:
        columns = [[name] + [row[i][0] for row in self.rows] for i, name in enumerate(_TENSOR_COLUMNS)]
        widths = [max(len(cell) for cell in column) for column in columns]
        room = options.max_width - _TABLE_INDENT
        groups = column_groups(widths, room, list(range(len(widths))))
        if len(groups) > 1:  # too wide for one table: what each tensor is, then its numbers
            groups = [g for subset in _SPLIT for g in column_groups(widths, room, list(subset))]
        for group in groups:
            yield self._table(group, columns)

    def _table(self, group: list[int], columns: list[list[str]]) -> RenderableType:
        from rich.padding import Padding

        table = Table(show_edge=False, padding=(0, 1))
        cells = {}
        for index in group:
            name = _TENSOR_COLUMNS[index]
            # Numbers are never cut (overflow "ignore"); rich does not justify such columns, so pad them here.
            cells[index] = right_aligned(columns[index]) if name in _NUMERIC else columns[index]
            table.add_column(cells[index][0], no_wrap=True, overflow="ignore")
        for n, row in enumerate(self.rows, 1):
            table.add_row(*(Text(cells[i][n], style=row[i][1]) for i in group))
        return Padding(table, (0, 0, 0, _TABLE_INDENT), expand=False)


_SPLIT = ((0, 1, 2, 3), (0, 4, 5, 6, 7, 8))


def column_groups(widths: Sequence[int], room: int, columns: list[int]) -> list[list[int]]:
    """`columns` (indexes into `widths`) packed left to right into tables no wider than `room`, each led by
    columns[0] (the name), so every table names the rows its numbers belong to. A column wider than the
    room still gets a table: cells are never cut."""
    def width_of(group: list[int]) -> int:  # padding 1 each side, one rule between columns
        return sum(widths[i] + 2 for i in group) + len(group) - 1

    groups: list[list[int]] = []
    current = columns[:1]
    for index in columns[1:]:
        if len(current) > 1 and width_of(current + [index]) > room:
            groups.append(current)
            current = columns[:1]
        current.append(index)
    groups.append(current)
    return groups


def _tensor_cells(t: "TensorSummary") -> list[tuple[str, str]]:
    """(text, style) per column of one readable tensor's row."""

    s = t.stats
    assert s is not None
    return [(t.label, ""), (t.layout, ""), (t.data_type, ""), (shape_text(s.shape), ""), (number(s.max), ""),
            (number(s.min), ""), (number(s.mean), ""), (str(s.nan_count), "bad" if s.nan_count else ""),
            (str(s.inf_count), "bad" if s.inf_count else "")]
