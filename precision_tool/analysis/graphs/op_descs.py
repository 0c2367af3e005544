"""The tensor descriptions of every op of a graph file (dtype, layout and shape of each data input and
output), kept in temp/cache/graphs/ beside the file's summary (graph_summary.py) while the file is unchanged.

Why: the report shows them for every charted op, and they are the one thing the summary lacks (it is made by
a light parse, without descriptors, so that `ls` and `ni` stay quick). Reading them from a whole parse took
about 2 s of a 6 s report at 20,000 ops; kept, they are read back in 0.1 s. The file's name carries the
graph's size and mtime, so a stale one is never read; JSON, never pickle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from precision_tool.analysis.graphs.graph_summary import summary_cache_path
from precision_tool.atomic import write_atomic
from precision_tool.formats.ge.ge_graph import Model, Op
from precision_tool.gc_pause import without_gc_keeping
from precision_tool.shapes import shape_text
from precision_tool.workspace import Workspace

DESCS_VERSION = 1

Desc = tuple[str, str, str]
"""(dtype without DT_, layout, shape text), as `ni` shows a tensor."""
OpDescs = tuple[tuple[Desc, ...], tuple[Desc, ...]]
"""(data inputs, outputs) of one op."""


def descs_of(op: Op) -> OpDescs:
    """The op's data inputs and outputs as its graph declares them."""
    def desc(d: Any) -> Desc:
        return str(d.dtype or "").replace("DT_", ""), str(d.layout or ""), shape_text(tuple(d.shape or ()))

    return (tuple(desc(d) for d in op.input_descs[:len(op.data_inputs)]),
            tuple(desc(d) for d in op.output_descs))


def _cache_path(workspace: Workspace, path: Path) -> Path | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    summary = summary_cache_path(workspace, path)
    return summary.with_name(f"{summary.stem}.descs{DESCS_VERSION}.{stat.st_size}.{stat.st_mtime_ns}.json")


def descs_kept(workspace: Workspace, path: Path) -> bool:
    """True when the descriptions of the graph file `path` are kept for its present size and mtime."""
    cache = _cache_path(workspace, path)
    return cache is not None and cache.is_file()


_READ: dict[str, dict[str, OpDescs]] = {}
"""The descriptions this process read or kept last, by their file's path (which names the graph's size and
mtime): a report of several runs over one graph reads them once."""


@without_gc_keeping  # (a tuple or three per op, kept by the caller)
def kept_descs(workspace: Workspace, path: Path) -> dict[str, OpDescs] | None:
    """name → descriptions of every op of the graph file `path` (the first op of a name wins, in file order),
    kept since the file last changed; None when there are none or they cannot be read."""
    cache = _cache_path(workspace, path)
    if cache is None:
        return None
    found = _READ.get(str(cache))
    if found is not None:
        return found
    try:
        tree = json.loads(cache.read_text(encoding="utf-8"))
        found = {str(name): (tuple((str(a), str(b), str(c)) for a, b, c in inputs),
                             tuple((str(a), str(b), str(c)) for a, b, c in outputs))
                 for name, inputs, outputs in tree["ops"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none kept, or a damaged file: the caller parses the graph
    _remember(str(cache), found)
    return found


def _remember(cache: str, found: dict[str, OpDescs]) -> None:
    if len(_READ) >= 4:
        _READ.clear()
    _READ[cache] = found


def keep_descs(workspace: Workspace, path: Path, model: Model) -> dict[str, OpDescs]:
    """The descriptions of every op of `model` (parsed from `path`), kept for kept_descs."""
    found: dict[str, OpDescs] = {}
    for _, op in model.iter_ops():
        if op.name not in found:
            found[op.name] = descs_of(op)
    cache = _cache_path(workspace, path)
    if cache is None:
        return found
    try:
        Workspace.ensure_dir(cache.parent)
        for stale in cache.parent.glob(f"{cache.name.split('.descs', 1)[0]}.descs*.json"):
            stale.unlink(missing_ok=True)  # (the same graph's earlier descriptions: never read again)
        text = json.dumps({"path": str(path), "ops": [[name, inputs, outputs] for name, (inputs, outputs)
                                                      in found.items()]}, separators=(",", ":"))
        write_atomic(cache, [text.encode("utf-8", errors="surrogateescape")])
    except OSError:
        return found  # a read-only workspace: the next report parses again
    _remember(str(cache), found)
    return found
