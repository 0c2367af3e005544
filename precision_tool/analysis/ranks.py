"""The ranks of a multi-device dump: which ops must agree across them, and one summary (where their
folders are is workspace.py's: rank_dirs, golden_dir_for_rank).

A dump of a job on several devices holds one folder per device under the dump time:
`dump/<time>/<device_id>/<model_name>/...` (formats.md §2.1); each device folder is a rank. Each rank is
compared with its own golden tensors (`tf/dump/rank_<r>/`, else the shared `tf/dump/`), and with rank 0
(`vc --across-ranks`). HCCL ops (HcomAllReduce, HcomBroadcast, HcomSend, ...) are where an error travels from
one rank to the others: a corrupted input on one rank makes every rank's all-reduce output wrong, so the
rank that went wrong first is the one whose first failing tensor comes earliest in execution order, an
op's inputs before its outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from precision_tool.analysis.results.results import CompareSummary
from precision_tool.analysis.results.result_ops import OpResult, TensorCosine
from precision_tool.workspace import GOLDEN_RANK_PREFIX

HCCL_PREFIX = "Hcom"
"""GE's collective-communication op types all start with it (HcomAllReduce, HcomBroadcast, HcomAllGather,
HcomReduceScatter, HcomSend, HcomReceive, HcomAllToAllV, ...)."""
SHARING_HCCL = ("HcomAllReduce", "HcomBroadcast", "HcomAllGather")
"""Collectives whose output is the same on every rank of the group."""


def is_hccl(op_type: str) -> bool:
    return op_type.startswith(HCCL_PREFIX)


def ranks_text(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5, 6] → '0-2, 5, 6'."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in runs)


# --- ops that must agree on every rank --------------------------------------------------------------
def rank_invariant_ops(ops: Sequence[object]) -> set[str]:
    """Names of graph ops whose outputs must be identical on every rank of a data-parallel job: the outputs
    of sharing collectives (all-reduce, broadcast, all-gather) and of ops that read only such outputs,
    variables and constants (the weight update after an all-reduce). Ops that depend on the rank's own
    batch (Data inputs, everything computed from them) may differ."""
    by_name = {op.name: op for op in ops}  # type: ignore[attr-defined]
    per_rank: dict[str, bool] = {}

    def varies(name: str, seen: set[str]) -> bool:
        if name in per_rank:
            return per_rank[name]
        op = by_name.get(name)
        if op is None or name in seen:
            return False  # outside the graph (a variable of another graph) or a cycle: no batch reaches it
        seen.add(name)
        op_type = op.type  # type: ignore[attr-defined]
        if op_type in SHARING_HCCL:
            result = False
        elif op_type in ("Data", "GetNext", "IteratorGetNext", "DynamicGetNext", "QueueDequeue") or \
                is_hccl(op_type):
            result = True  # the rank's own batch, or a point-to-point/partial collective
        else:
            result = any(varies(_source(text), seen) for text in op.inputs)  # type: ignore[attr-defined]
        per_rank[name] = result
        return result

    invariant = set()
    for name, op in by_name.items():
        if op.type in ("Const", "Constant", "Variable", "VariableV2", "VarHandleOp", "NetOutput"):  # type: ignore[attr-defined]
            continue  # nothing computed: not worth naming
        if not varies(name, set()):
            invariant.add(name)
    return invariant


def _source(input_text: str) -> str:
    """'op:0' → 'op'; control inputs ('^op', 'op:-1') name their op too."""
    text = input_text.lstrip("^")
    return text.rsplit(":", 1)[0] if ":" in text else text


# --- the rank summary -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankFinding:
    """One rank's comparison with its golden."""

    rank: int
    summary: CompareSummary
    first_position: float
    """Where its first failing tensor is in execution order: the op's position, minus 0.5 for an input (an
    op's inputs come before its outputs); inf when nothing fails."""

    @property
    def first_op(self) -> OpResult | None:
        return self.summary.first_failure.op if self.summary.first_failure else None

    @property
    def first_is_input(self) -> bool:
        return bool(self.summary.first_failure and self.summary.first_failure.is_graph_input)


@dataclass(frozen=True)
class RankReport:
    """Every rank's finding, and which rank went wrong first."""

    findings: tuple[RankFinding, ...]
    first_ranks: tuple[int, ...]
    """The rank(s) whose first failing tensor comes earliest; () when no rank fails."""
    boundary: OpResult | None = None
    """The HCCL op where the first rank's error reached the other ranks (their first failure is its
    output), when there is one."""
    spread_to: tuple[int, ...] = ()
    """Ranks whose first failure is at that HCCL op's output (the error came to them through it)."""
    shared_golden: bool = False
    """Every rank was compared with the same golden tensors (no tf/dump/rank_<r>/)."""


def rank_report(findings: Iterable[tuple[int, CompareSummary]], shared_golden: bool = False) -> RankReport:
    """Order the ranks by where they first fail and name the HCCL op the error crossed, if any."""
    found = []
    for rank, summary in findings:
        found.append(RankFinding(rank, summary, _first_position(summary)))
    found.sort(key=lambda f: f.rank)
    failing = [f for f in found if not math.isinf(f.first_position)]
    if not failing:
        return RankReport(tuple(found), (), shared_golden=shared_golden)
    earliest = min(f.first_position for f in failing)
    first = tuple(f.rank for f in failing if f.first_position == earliest)
    boundary, spread = None, ()
    later = [f for f in failing if f.rank not in first]
    if later:
        # the others' common first failure: an HCCL op's output (the collective carried the error over)
        ops = {f.first_op.npu_op for f in later if f.first_op is not None and not f.first_is_input}
        if len(ops) == 1:
            op = later[0].first_op
            if op is not None and is_hccl(op.op_type):
                boundary = op
                spread = tuple(f.rank for f in later)
    return RankReport(tuple(found), first, boundary, spread, shared_golden)


def _first_position(summary: CompareSummary) -> float:
    failure = summary.first_failure
    if failure is None:
        return math.inf
    names = [op.npu_op for op in summary.ops]
    try:
        position = names.index(failure.op.npu_op)
    except ValueError:
        return math.inf
    return position - 0.5 if failure.is_graph_input else float(position)


# --- NPU vs NPU across ranks ------------------------------------------------------------------------
@dataclass(frozen=True)
class RankDisagreement:
    """Ops that must agree on every rank but differ between `rank` and rank 0."""

    rank: int
    summary: CompareSummary
    ops: tuple[OpResult, ...]
    """Rank-invariant ops whose outputs differ from rank 0's (any element), in execution order."""
    checked: int
    """Rank-invariant ops compared."""


def disagreements(rank: int, summary: CompareSummary, invariant: set[str]) -> RankDisagreement:
    """Rank-invariant ops of an NPU-vs-NPU result (rank vs rank 0) whose outputs differ at all: after an
    all-reduce the ranks hold the same numbers bit for bit, so any difference is a bad device or a broken
    collective."""
    differing = []
    checked = 0
    for op in summary.ops:
        if _plain(op.npu_op) not in invariant or not op.outputs:
            continue
        checked += 1
        if any(_differs(t) for t in op.outputs):
            differing.append(op)
    return RankDisagreement(rank, summary, tuple(differing), checked)


def _differs(tensor: TensorCosine) -> bool:
    if tensor.nan_data:
        return True
    if not math.isnan(tensor.max_abs_error):
        return tensor.max_abs_error > 0
    return not math.isnan(tensor.cosine) and tensor.cosine < 1.0


# --- one overview of a result folder ----------------------------------------------------------------
@dataclass(frozen=True)
class RankOverview:
    """What the ranks of one comparison say together (vc, vcs and ac show it)."""

    ranks: tuple[int, ...]
    report: RankReport | None
    """Each rank against its golden; None when no rank was compared with golden tensors."""
    disagreements: tuple[RankDisagreement, ...] = ()
    """Each rank against rank 0 (vc --across-ranks); () when not compared."""

    @property
    def first_rank(self) -> int | None:
        """The rank that went wrong first (the lowest of a tie); None when none went wrong against golden."""
        return self.report.first_ranks[0] if self.report is not None and self.report.first_ranks else None


def rank_overview(items: Sequence[tuple[object, CompareSummary]], graph_ops: Sequence[object] = (),
                  shared_golden: bool = False) -> RankOverview | None:
    """The overview of runs (spec, summary) of a multi-rank comparison; None when no run has a rank.
    `graph_ops`: the Build graph's ops (for which ops must agree across ranks)."""
    golden: dict[int, CompareSummary] = {}
    across: list[tuple[int, CompareSummary]] = []
    for spec, summary in items:
        rank = getattr(spec, "rank", None)
        if rank is None:
            continue
        if getattr(spec, "across_ranks", False):
            across.append((rank, summary))
        elif not getattr(spec, "npu_vs_npu", False):
            current = golden.get(rank)
            # several graphs of one rank: the run where something fails speaks for the rank
            if current is None or (current.first_failure is None and summary.first_failure is not None):
                golden[rank] = summary
    if not golden and not across:
        return None
    ranks = sorted(set(golden) | {r for r, _ in across} | ({0} if across else set()))
    report = rank_report(golden.items(), shared_golden) if golden else None
    found: tuple[RankDisagreement, ...] = ()
    if across:
        invariant = {_plain(name) for name in rank_invariant_ops(graph_ops)}
        found = tuple(disagreements(rank, summary, invariant) for rank, summary in sorted(across, key=lambda x: x[0]))
    return RankOverview(tuple(ranks), report, found)


def _plain(name: str) -> str:
    """Op names as dump files spell them ('/' and '.' → '_'), so graph and NPU-vs-NPU names meet."""
    return name.replace("/", "_").replace(".", "_")


def workspace_graph_ops(workspace: object, debug_id: int = 0) -> list[object]:
    """The ops of a run's Build graphs (for rank_invariant_ops); [] when it has none or they cannot be read."""
    from precision_tool.errors import PrecisionToolError
    from precision_tool.formats.ge.ge_graph import load_graph

    ops: list[object] = []
    for path in workspace.build_graph_files(debug_id):  # type: ignore[attr-defined]
        if path.suffix == ".txt" and path.with_suffix(".json").is_file():
            continue
        try:
            ops.extend(op for _graph, op in load_graph(path).iter_ops())
        except PrecisionToolError:
            continue  # vc already said what is wrong with the graph
    return ops


def overview_of(items: Sequence[tuple[object, CompareSummary]], workspace: object) -> RankOverview | None:
    """rank_overview of (spec, summary) pairs from a workspace: reads its Build graph only when ranks were
    compared with each other; the golden is shared when a rank's golden folder is not its own rank_<r>/."""
    ranked = [(spec, summary) for spec, summary in items if getattr(spec, "rank", None) is not None]
    if not ranked:
        return None
    across = any(getattr(spec, "across_ranks", False) for spec, _ in ranked)
    shared = any(getattr(spec, "golden_dir", None) and not Path(getattr(spec, "golden_dir")).name.startswith(
        GOLDEN_RANK_PREFIX) for spec, _ in ranked)
    ops = workspace_graph_ops(workspace) if across else []
    return rank_overview(ranked, ops, shared_golden=shared)
