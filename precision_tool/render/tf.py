"""How tf_dump's result looks: a short summary panel plus one line per damaged file."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.golden_extract import ExtractSummary
from precision_tool.render.messages import note_line, warning_line


def _size(num_bytes: int) -> str:
    value = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{num_bytes} B"


def _selected(summary: ExtractSummary) -> str:
    items = summary.selected
    if len(items) <= 3:
        return ", ".join(items)
    return f"{items[0]} ... {items[-1]} ({len(items)} in all)"


def render_extract_summary(summary: ExtractSummary) -> list[Any]:
    """The closing summary: tensors written, already there, skipped (by reason), bytes, seconds."""
    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    kind = "tfdbg v1" if summary.kind == "v1" else "tfdbg v2"
    table.add_row("source", Text(f"{summary.source} ({kind})", style="path"))
    table.add_row("run" if summary.kind == "v1" else "step", _selected(summary))
    table.add_row("golden folder", Text(str(summary.out_dir), style="path"))
    table.add_row("tensors", str(summary.tensors))
    table.add_row("written", Text(f"{summary.written} ({_size(summary.bytes_written)})", style="ok"))
    if summary.already_present:
        table.add_row("already there", f"{summary.already_present} (not rewritten; --force rewrites them)")
    for reason, count in summary.skipped:
        table.add_row("skipped", f"{count} {reason}")
    if summary.bad_files:
        table.add_row("damaged files", Text(f"{len(summary.bad_files)} (skipped, listed below)", style="bad"))
    table.add_row("seconds", f"{summary.seconds:.2f}")
    out: list[Any] = [table]
    for note in summary.notes:
        out.append(note_line(note))
    for path, problem in summary.bad_files[:20]:
        out.append(warning_line(f"{path}: {problem}; skipped"))
    if len(summary.bad_files) > 20:
        out.append(warning_line(f"... and {len(summary.bad_files) - 20} more damaged files"))
    if summary.stopped:
        out.append(warning_line(summary.stopped))
    return out
