"""Progress bars with ETA for long runs (compare, tf_dump, dc on folders)."""

from __future__ import annotations

import time
from typing import Any, Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def make_progress(console: Console, transient: bool = True) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=transient,
        disable=not console.is_terminal,
    )


def run_updater(bar: Progress, every_seconds: float = 0.05) -> Callable[[str, int, int], None]:
    """progress(label, done, total) for comparison runs: a bar per label, redrawn at most every `every_seconds`
    (one update per group cost 0.16 s of a 20,000-op comparison) and at the end of each run."""
    tasks: dict[str, Any] = {}
    shown = [0.0]

    def update(label: str, done: int, total: int) -> None:
        if label in tasks and done < total and time.monotonic() - shown[0] < every_seconds:
            return
        shown[0] = time.monotonic()
        if label not in tasks:
            if label.startswith(("rank ", "step ")):
                # a multi-device dump runs one comparison per rank (vc --step all: per step): one bar at a
                # time, not 64
                for old in [name for name in tasks if name.startswith(("rank ", "step "))]:
                    bar.remove_task(tasks.pop(old))
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done)

    return update
