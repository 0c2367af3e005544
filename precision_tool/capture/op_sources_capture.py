"""Record where each op of a TF1 graph was created (formats/tf/op_sources.py) while the graph is alive.

A GraphDef carries no Python stacks; only the live graph's ops do (`op.traceback`). So the tfdbg wrappers
of tf_config record them: the session wrapper before each `run` whose graph has grown since the last
record (a training loop records once), the Estimator hook when its session is created. Recording never
breaks the user's training: a failure is said once and the run goes on.
"""

from __future__ import annotations

import os
from typing import Any

from precision_tool.formats.tf.op_sources import SourceRecord


def record_graph_sources(graph: Any, path: str | os.PathLike[str]) -> int:
    """Write the record of every op of `graph` to `path`; the number of ops."""
    record = SourceRecord()
    for op in graph.get_operations():
        record.add(op.name, ((frame.filename, frame.lineno, frame.name) for frame in op.traceback))
    record.write(path)
    return len(record.ops)


class SourceRecorder:
    """Records a graph again only when it has grown (graph.version counts the ops added)."""

    def __init__(self, path: str | os.PathLike[str], say: Any) -> None:
        self.path = path
        self.say = say
        self._recorded: tuple[int, int] | None = None
        self._failed = False

    def record(self, graph: Any) -> None:
        key = (id(graph), graph.version)
        if key == self._recorded or self._failed:
            return
        try:
            record_graph_sources(graph, self.path)
            self._recorded = key
        except Exception as exc:  # noqa: BLE001 (the user's training matters more than the record)
            self._failed = True
            self.say(f"the source lines of the graph's ops were not recorded ({type(exc).__name__}: {exc}); "
                     "`ni` will not show where each op was created")
