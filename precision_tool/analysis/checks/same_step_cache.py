"""The same-step check's answer kept under temp/cache/same_step, for `vc`, which asks it on every run.

The check itself reads only a few dozen tensors, but to find them it loads the Build graph's op index and
walks the dump folder: 0.4 s of a 20,000-op `vc` that the answer does not need when nothing it depends on
changed. What it depends on, each stamped by size and modification time: the run's Build graphs, the
captured golden graph (tf/checkpoints/model.meta), every dump and golden file it read, and the folders it
looked in (a file added to or removed from a folder changes the folder's time).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from precision_tool.analysis.checks.same_step import SameStepReport, SourceCheck, same_step_check

if TYPE_CHECKING:
    from precision_tool.workspace import Workspace

CACHE_VERSION = 1


def cached_same_step_check(workspace: "Workspace", debug_id: int, dump_dir: Path) -> SameStepReport | None:
    """same_step_check(workspace, debug_id, dump_dir), from the cache while nothing it read has changed."""
    inputs = _fixed_inputs(workspace, debug_id, dump_dir)
    key = hashlib.sha1(json.dumps([CACHE_VERSION, debug_id, str(dump_dir), str(workspace.golden_dir)])
                       .encode()).hexdigest()[:20]
    path = workspace.cache_dir / "same_step" / f"{key}.json"
    kept = _read(path)
    if kept is not None and kept.get("stamps") == _stamps(kept.get("read", []) + inputs):
        return _report_from(kept["report"])
    read: set[str] = set()
    report = same_step_check(workspace, debug_id, dump_dir, read_files=read)
    files = sorted(read) + _folders(read, (str(dump_dir), str(workspace.golden_dir)))
    _write(path, {"read": files, "stamps": _stamps(files + inputs), "report": _report_to(report)})
    return report


def _fixed_inputs(workspace: "Workspace", debug_id: int, dump_dir: Path) -> list[str]:
    """What the check reads whatever the answer: the Build graphs, the golden graph, the two top folders."""
    graphs = [str(path) for path in workspace.build_graph_files(debug_id)]
    return graphs + [str(workspace.checkpoint_dir / "model.meta"), str(dump_dir), str(workspace.golden_dir)]


def _folders(files: set[str], roots: tuple[str, ...]) -> list[str]:
    """The folders holding the files read, and theirs up to `roots`: where a new file would change the answer."""
    folders: set[str] = set()
    for name in files:
        parent = os.path.dirname(name)
        while parent not in folders and any(parent.startswith(root + os.sep) for root in roots):
            folders.add(parent)
            parent = os.path.dirname(parent)
    return sorted(folders)


def _stamps(paths: list[str]) -> list[list[int]]:
    """(size, modification time in ns) of each path; [-1, -1] for one that is not there."""
    out = []
    for name in paths:
        try:
            info = os.stat(name)
            out.append([info.st_size, info.st_mtime_ns])
        except OSError:
            out.append([-1, -1])
    return out


def _report_to(report: SameStepReport | None) -> dict | None:  # type: ignore[type-arg]
    if report is None:
        return None
    return {"checks": [dataclasses.asdict(check) for check in report.checks],
            "unchecked": [list(pair) for pair in report.unchecked]}


def _report_from(data: dict | None) -> SameStepReport | None:  # type: ignore[type-arg]
    if data is None:
        return None
    return SameStepReport(tuple(SourceCheck(**check) for check in data["checks"]),
                          tuple((source, why) for source, why in data["unchecked"]))


def _read(path: Path) -> dict | None:  # type: ignore[type-arg]
    """The kept answer; None when there is none or it cannot be used (it is then made again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        _report_from(data["report"])  # a damaged entry is made again, never trusted
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, data: dict) -> None:  # type: ignore[type-arg]
    from precision_tool.atomic import write_text_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(data))
    except OSError:
        pass  # a read-only workspace: the check is simply made again next time
