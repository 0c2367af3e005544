"""`replay --all` and `ac -c --precheck`: replay every compute op of an NPU run on CPU from its own NPU
inputs, and rank the ops by their own error (replay_rank.py), free of the error accumulated upstream.

The ops are planned here (their dumped tensors saved as the child reads them), replayed by a pool of
TensorFlow children (replay_pool.py: local processes, or Dask tasks), judged as `replay` judges one op, then
ranked. Data, variables and constants are not computed by the NPU: they are left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.graphs.graph_summary import OpEntry
from precision_tool.analysis.replay.replay import ChildRun, ReplayRun, replay_ops
from precision_tool.analysis.replay.replay_plan import ReplayCase
from precision_tool.analysis.replay.replay_rank import (
    Explained, LocalError, explain_abnormal, ranked, save_ranked,
)
from precision_tool.analysis.replay.replay_verdict import CANNOT, Verdict
from precision_tool.errors import WorkspaceError
from precision_tool.workspace import Workspace

if TYPE_CHECKING:
    from precision_tool.analysis.results.results import CompareSummary
    from precision_tool.config import Settings

NOT_COMPUTED = frozenset({"Data", "Variable", "VariableV2", "VarHandleOp", "Const", "Constant", "RefData",
                          "AippData", "NetOutput", "NoOp"})
"""Op types the NPU does not compute: there is nothing of theirs to replay."""
Progress = Callable[[str, int, int], None]
"""(stage, done, total): "plan", "replay" (cases done in TensorFlow), "judge"."""


@dataclass(frozen=True)
class ReplayAllRun:
    run: ReplayRun
    ranked: tuple[LocalError, ...]
    cannot: tuple[Verdict, ...]
    not_computed: int  # data, variables, constants left out
    where: str  # which processes replayed: "2 TensorFlow processes on this machine", a Dask cluster
    ranked_csv: Path
    explained: tuple[Explained, ...] = ()  # the comparison's abnormal ops, own error or inherited
    debug_id: int = 0
    step: int | None = None  # the dump iteration replayed (None: each op's newest dump)


def compute_ops(index: GraphIndex, debug_id: int, graph_filter: str | None = None) -> tuple[list[OpEntry], int]:
    """The compute ops of npu/debug_<debug_id>'s Build graphs in execution order, and how many were left
    out as data, variables and constants."""
    entries = [e for e in index.entries(graph_filter) if e.debug_id == debug_id]
    if not entries:
        have = sorted({e.debug_id for e in index.entries(graph_filter)})
        where = f" (graphs with {graph_filter!r})" if graph_filter else ""
        runs = ", ".join(f"debug_{d}" for d in have) or "none"
        raise WorkspaceError(f"npu/debug_{debug_id} has no Build graph ops to replay{where}; runs with ops: {runs}")
    keep = [e for e in entries if e.type not in NOT_COMPUTED]
    keep.sort(key=lambda e: (str(e.file), e.graph, e.id))
    return keep, len(entries) - len(keep)


def pool_runner(workers: int, scheduler: str | None, on_case: Callable[[int], None] | None,
                where: list[str]) -> Callable[..., ChildRun]:
    """A replay_ops runner that spreads the cases over the pool (replay_pool.py); `where` receives its
    description once it ran."""
    from precision_tool.analysis.replay import replay_pool
    from precision_tool.child_env import tf_child_env

    def run(workspace: Workspace, cases: list[ReplayCase], python: str | None, log: Path) -> ChildRun:
        folders = [c.folder for c in cases]
        cwd = str(workspace.root) if workspace.root.is_dir() else None
        if scheduler:
            pool = replay_pool.run_dask(folders, scheduler, log.parent, cwd, on_case)
        else:
            pool = replay_pool.run_local(folders, workers, log.parent, cwd, tf_child_env(workspace.root), python,
                                         on_case)
        where.append(pool.where)
        return ChildRun(None, pool.logs[0] if len(pool.logs) == 1 else log.parent, None, dict(pool.failures))

    return run


def replay_all(index: GraphIndex, debug_id: int, folder: Path, settings: "Settings", *,
               graph_filter: str | None = None, summary: "CompareSummary | None" = None,
               python: str | None = None, workers: int = 2, scheduler: str | None = None,
               progress: Progress | None = None, step: int | None = None) -> ReplayAllRun:
    """Replay every compute op of npu/debug_<debug_id> into `folder`, judge and rank them (`step`: from that
    dump iteration and golden step, docs/steps.md)."""
    entries, left_out = compute_ops(index, debug_id, graph_filter)
    import threading

    where: list[str] = []
    done = [0]
    tf_total = [0]
    lock = threading.Lock()  # the children's watcher threads count at once

    def on_case(count: int) -> None:
        with lock:
            done[0] += count
            if progress is not None:
                progress("replay", done[0], tf_total[0])

    runner = pool_runner(workers, scheduler, on_case, where)

    def counted(workspace: Workspace, cases: list[ReplayCase], py: str | None, log: Path) -> ChildRun:
        tf_total[0] = len(cases)
        if progress is not None:
            progress("replay", 0, len(cases))
        return runner(workspace, cases, py, log)

    run = replay_ops(index, entries, folder, settings, summary=summary, python=python, runner=counted,
                     progress=progress, step=step)
    errors = ranked(run.verdicts, settings)
    cannot = tuple(v for v in run.verdicts if v.verdict == CANNOT)
    csv_path = save_ranked(run.folder, errors, cannot)
    explained = tuple(explain_abnormal(summary.abnormal_ops, run.verdicts)) if summary is not None else ()
    return ReplayAllRun(run, tuple(errors), cannot, left_out, where[0] if where else "no TensorFlow process",
                        csv_path, explained, debug_id, step)


def cannot_reasons(cannot: Sequence[Verdict]) -> list[tuple[str, list[Verdict]]]:
    """The ops that could not be replayed, grouped by the kind of reason (the reason with the op's own
    names and the paths taken out: "no dump of OP in …"), most frequent first."""
    import re

    groups: dict[str, list[Verdict]] = {}
    for verdict in cannot:
        reason = verdict.line.removeprefix("cannot replay: ")
        for name in sorted({verdict.case.op_name, *verdict.case.tf_nodes}, key=len, reverse=True):
            if name:
                reason = reason.replace(name, "OP")
        reason = re.sub(r"(?<![\w.])/[^\s;:,()]+", "…", reason)
        groups.setdefault(reason, []).append(verdict)
    return sorted(groups.items(), key=lambda item: -len(item[1]))


def newest_ranking(workspace: Workspace, result_dir: Path | None) -> Path | None:
    """The ranked.csv the report shows: the comparison's own precheck, else the newest `replay --all`."""
    from precision_tool.analysis.replay.replay_rank import RANKED_CSV

    if result_dir is not None and (result_dir / "precheck" / RANKED_CSV).is_file():
        return result_dir / "precheck" / RANKED_CSV
    root = workspace.temp_dir / "replay"
    found = sorted(root.glob(f"*/{RANKED_CSV}")) if root.is_dir() else []
    return found[-1] if found else None


def describe_abnormal(explained: Sequence[Explained]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in explained:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return counts

