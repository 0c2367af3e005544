"""What `infer DIR` shows: the parts it made, what it left out, and the commands to go on with.

Prose, not a table: source and target paths print whole at any width (a box would fold them).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from precision_tool.analysis.infer_import import InferImport


def render_import(imported: InferImport) -> list[Any]:
    text = Text()
    text.append("Imported msquickcmp output ", style="bold")
    text.append(str(imported.source), style="path")
    text.append(" into ", style="bold")
    text.append(str(imported.workspace), style="path")
    for part in imported.parts:
        how = "linked" if part.linked else "copied"
        files = f"{part.files} file{'s' if part.files != 1 else ''}"
        text.append(f"\n  {part.what} ({files}, {how}): ", style="bold")
        text.append(str(part.target), style="path")
        text.append(" ← ")
        text.append(str(part.source), style="path")
    for old, new in imported.moved_aside:
        text.append("\n  moved aside: ", style="warning")
        text.append(f"{old} → {new}", style="path")
    for line in imported.skipped:
        text.append(f"\n  not imported: {line}", style="dim")
    if imported.other_runs:
        text.append(f"\n  {len(imported.other_runs)} other run folder(s) left alone (import one by naming it): ",
                    style="dim")
        text.append(", ".join(str(p) for p in imported.other_runs), style="dim")
    steps = []
    if imported.part("comparison result"):
        steps.append("vcs  (msquickcmp's result)")
    if imported.part("Build graph"):
        steps.append("ni OP  (an op of the om model)")
    steps.append("ac")
    if imported.part("NPU dump") and imported.part("golden tensors"):
        steps.append("vc  (compare again, natively)")
    text.append("\nNext: ", style="bold")
    text.append(", ".join(steps), style="bold green")
    return [text]
