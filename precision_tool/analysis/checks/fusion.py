"""The fusion check of `ac`: which fusion passes fired, per graph.

Why: when a fused op is the first to diverge, the pass that made it is what to switch off
(tf_config's fusion_off). The compiler writes fusion_result.json in the training's working folder, or
under $ASCEND_WORK_PATH/FE/<pid>/ when that is set (newer CANN); the check copies the newest one into
precision_data/fusion/ when it is newer than the copy there.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from precision_tool.atomic import atomic_path
from precision_tool.formats.ge.fusion_result import GraphFusion, PassCount, parse_fusion_result
from precision_tool.workspace import Workspace


@dataclass(frozen=True)
class FusionSummary:
    """Passes that fired (effect_times > 0) per graph, and where the file came from."""

    path: Path
    copied_from: Path | None
    graphs: tuple[GraphFusion, ...]

    def fired(self, graph: GraphFusion, ub: bool) -> tuple[PassCount, ...]:
        passes = graph.ub_fusion if ub else graph.graph_fusion
        return tuple(sorted((p for p in passes if p.effect_times > 0), key=lambda p: (-p.effect_times, p.name)))

    def matched_only(self, graph: GraphFusion, ub: bool) -> tuple[PassCount, ...]:
        """Passes that matched but did not fire (effect_times 0): "(none fired)" is only an all-clear
        when the renderer can also say how many passes were looked at."""
        passes = graph.ub_fusion if ub else graph.graph_fusion
        return tuple(sorted((p for p in passes if p.effect_times == 0), key=lambda p: (-p.match_times, p.name)))


def written_fusion_file(cwd: Path | None = None) -> Path | None:
    """Where the compiler wrote fusion_result.json: the newest of $ASCEND_WORK_PATH/FE/<pid>/ (newer CANN,
    when that variable is set) and ./ (the training's working folder)."""
    candidates = [(cwd or Path.cwd()) / "fusion_result.json"]
    work = os.environ.get("ASCEND_WORK_PATH")
    if work:
        candidates += Path(work).glob("FE/*/fusion_result.json")
    found = []
    for path in candidates:
        try:
            found.append((path.stat().st_mtime_ns, str(path), path))
        except OSError:
            continue
    return max(found)[2] if found else None


def find_fusion_file(workspace: Workspace, cwd: Path | None = None) -> tuple[Path | None, Path | None]:
    """(file to read, the written fusion_result.json it was copied from or None)."""
    target = workspace.fusion_file
    local = written_fusion_file(cwd)
    if local is not None and local.is_file() and (not target.is_file() or local.resolve() != target.resolve()):
        if not target.is_file() or local.stat().st_mtime_ns > target.stat().st_mtime_ns:
            with atomic_path(target) as temp:
                shutil.copyfile(local, temp)
            return target, local
    return (target, None) if target.is_file() else (None, None)


def fusion_summary(workspace: Workspace, cwd: Path | None = None) -> FusionSummary | None:
    """None when there is no fusion_result.json anywhere; FormatError when it is damaged."""
    path, copied_from = find_fusion_file(workspace, cwd)
    if path is None:
        return None
    return FusionSummary(path, copied_from, tuple(parse_fusion_result(path)))
