"""How comparison output names an op: its id and name in the Build graph, the ones `ni` shows.

A result CSV names ops as its run saw them: NPU-vs-golden rows carry the graph name and msaccucmp's
Index (a fusion-group counter), NPU-vs-NPU rows the dump-file spelling (`bn2_FusedBatchNormV3`) and
their own counter. Shown as they are, one op gets two numbers and two spellings in one `ac`. When the
run's dumps belong to a workspace run whose Build graph is known, every panel and line uses the op's
graph id and graph name instead; otherwise the CSV's own Index and name are kept.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from precision_tool.errors import PrecisionToolError


@dataclass(unsafe_hash=True)  # hashable and never changed, not frozen: a run makes one per op (20,000 and more)
class OpLabel:
    index: str
    """The op's id in the Build graph (`ni` shows it as Id)."""
    name: str
    """The op's name in the Build graph."""


@dataclass
class OpLabels:
    """Graph id and name of each op of one run, found by graph name or by dump-file spelling."""

    source: str
    """Which graph file(s) the labels come from (for notes)."""
    by_name: dict[str, OpLabel] = field(default_factory=dict)

    def get(self, name: str) -> OpLabel | None:
        return self.by_name.get(name)


def labels_for_run(workspace: Any, npu_dir: str | None, graph_path: str | None = None,
                   graph_name: str | None = None) -> OpLabels | None:
    """Labels for a run over the dump folder `npu_dir`, when it lies in the workspace's npu/debug_N/dump and
    that run has a Build graph (restricted to `graph_path`/`graph_name` when the run used one); else None."""
    from precision_tool.analysis.graphs.graph_index import index_for

    if not npu_dir:
        return None
    debug_id = workspace.run_of(workspace.relocate(npu_dir))  # a copied workspace: its own dumps
    if debug_id is None:
        return None
    try:
        index = index_for(workspace)
        entries = [e for e in index.entries() if e.debug_id == debug_id]
    except (PrecisionToolError, OSError):
        return None  # no usable graph: the CSV's own names and numbers are shown
    if graph_path is not None:
        wanted = _resolved(str(workspace.relocate(graph_path)))
        entries = [e for e in entries if _resolved(str(e.file)) == wanted]
    if graph_name is not None:
        entries = [e for e in entries if e.graph == graph_name]
    if not entries:
        return None
    return labels_of_ops(", ".join(sorted({e.file.name for e in entries})), ((e.id, e.name) for e in entries))


def labels_of_ops(source: str, ops: Iterable[tuple[int, str]]) -> OpLabels:
    """Labels of (graph id, graph name) pairs, found by name and by dump-file spelling; a name two graphs
    hold gets none (no single id to show)."""
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    labels = OpLabels(source)
    by_name = labels.by_name
    clashes: set[str] = set()
    for op_id, name in ops:
        label = OpLabel(str(op_id), name)
        spelled = sanitize_op_name(name)
        for key in (name, spelled) if spelled != name else (name,):
            seen = by_name.setdefault(key, label)
            if seen is not label and seen != label:
                clashes.add(key)
    for key in clashes:
        del labels.by_name[key]
    return labels


@functools.lru_cache(maxsize=256)
def _resolved(path: str) -> str:
    """Cached: a run's 20,000 ops live in a handful of files."""
    try:
        return str(Path(path).resolve())
    except OSError:
        return path
