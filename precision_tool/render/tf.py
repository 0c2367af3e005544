"""How tf_dump's result looks: a short summary panel plus one line per damaged file."""

from __future__ import annotations

from typing import Any

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
    """The closing summary: tensors written, already there, skipped (by reason), bytes, seconds.

    One prose line per field (not a table) so the folders print whole at any width: a path is one
    word, which the console never splits or cuts.
    """
    kind = "tfdbg v1" if summary.kind == "v1" else "tfdbg v2"
    rows: list[tuple[str, Text]] = [
        ("source", Text.assemble((str(summary.source), "path"), f" ({kind})")),
        ("run" if summary.kind == "v1" else "step", Text(_selected(summary))),
        ("golden folder", Text(str(summary.out_dir), style="path")),
        ("tensors", Text(str(summary.tensors))),
        ("written", Text(f"{summary.written} ({_size(summary.bytes_written)})", style="ok")),
    ]
    if summary.already_present:
        rows.append(("already there",
                     Text(f"{summary.already_present} (not rewritten; --force rewrites them)")))
    for reason, count in summary.skipped:
        rows.append(("skipped", Text(f"{count} {reason}")))
    if summary.bad_files:
        rows.append(("damaged files", Text(f"{len(summary.bad_files)} (skipped, listed below)", style="bad")))
    rows.append(("seconds", Text(f"{summary.seconds:.2f}")))
    width = max(len(label) for label, _ in rows)
    lines = [Text.assemble("  ", (label.ljust(width), "bold"), "    ", value) for label, value in rows]
    out: list[Any] = [Text("\n").join(lines)]
    for note in summary.notes:
        out.append(note_line(note))
    for path, problem in summary.bad_files[:20]:
        out.append(warning_line(f"{path}: {problem}; skipped"))
    if len(summary.bad_files) > 20:
        out.append(warning_line(f"... and {len(summary.bad_files) - 20} more damaged files"))
    if summary.stopped:
        out.append(warning_line(summary.stopped))
    return out
