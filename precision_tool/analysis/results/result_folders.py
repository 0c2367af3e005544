"""What a result folder holds besides the CSVs and run.json: the whole list of files a run could not read.
(The folders themselves — `<root>/<YYYYmmddHHMMSS>/` under temp/vector_compare or `vc -o DIR` — are made
and listed by workspace.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from precision_tool.atomic import write_text_atomic

UNREADABLE_FILE = "unreadable_files.txt"
"""In a result folder: every NPU dump / golden .npy a run could not read, `file<TAB>reason` per line."""

RESULTS_WRITE_HINT = ("add `-o DIR` to write the results to another folder (`vcs -f DIR` reads them), or "
                      "choose another workspace with --data DIR")


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
