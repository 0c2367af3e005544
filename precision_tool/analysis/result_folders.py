"""Result folders: `<root>/<YYYYmmddHHMMSS>/` holding a run's result CSVs, run.json and, when some
files could not be read, the whole list of them. The root is the workspace's temp/vector_compare, or
the folder `vc -o DIR` names (for a workspace that cannot be written)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from precision_tool.atomic import write_text_atomic
from precision_tool.workspace import Workspace

UNREADABLE_FILE = "unreadable_files.txt"
"""In a result folder: every NPU dump / golden .npy a run could not read, `file<TAB>reason` per line."""

WRITE_HINT = "add `-o DIR` to write the results to another folder (`vcs -f DIR` reads them), or choose " \
             "another workspace with --data DIR"


def new_result_dir(root: Path, hint: str = WRITE_HINT) -> Path:
    """A fresh `<root>/<YYYYmmddHHMMSS>` folder (a suffix avoids collisions). A root that cannot be written
    is one WorkspaceError line naming it and how to choose another (`hint`)."""
    Workspace.ensure_dir(root, "comparison results folder", hint=hint)
    stamp = time.strftime("%Y%m%d%H%M%S")
    folder = root / stamp
    n = 1
    while folder.exists():
        folder = root / f"{stamp}_{n}"
        n += 1
    Workspace.ensure_dir(folder, "comparison results folder", hint=hint)
    return folder


def result_dirs(root: Path) -> list[Path]:
    """The result folders directly under `root`, oldest first (their names are times)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def write_unreadable_list(result_dir: Path, runs: Sequence[Any]) -> Path | None:
    """Write every file the runs could not read (file and reason) to the result folder; None when there
    were none, or when the list could not be written there."""
    found: dict[str, str] = {}
    for run in runs:
        for name, problem in getattr(run, "unreadable", ()):
            found.setdefault(name, problem)
    if not found:
        return None
    target = result_dir / UNREADABLE_FILE
    text = "".join(f"{name}\t{' '.join(problem.split())}\n" for name, problem in found.items())
    try:
        write_text_atomic(target, text)
    except OSError:
        return None
    return target
