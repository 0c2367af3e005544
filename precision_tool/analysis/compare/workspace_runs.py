"""What `vc` compares in a workspace: the newest debug_0 dump against the golden tensors through its
Build graphs (each graph against its own dump subfolder; each rank of a multi-device dump against its own
golden), debug_0 against debug_1, and every rank against rank 0 (`vc --across-ranks`); one dump iteration
each. The runs themselves are compare_runs.run_specs'."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from precision_tool.analysis.compare.engine.compare_engine import Progress
from precision_tool.analysis.compare.compare_runs import (
    CompareRun,
    RunSpec,
    relocated_spec,
    has_golden_files,
    interrupted_result_dir,
    read_run_file,
    run_specs,
    workspace_labeller,
)
from precision_tool.analysis.compare.listing_cache import cached_dump_iterations, cached_step_folders
from precision_tool.analysis.compare.matching import dump_iterations, find_graph_dump_dir
from precision_tool.analysis.compare.plan_cache import graph_plans
from precision_tool.analysis.ranks import ranks_text
from precision_tool.errors import PrecisionToolError, WorkspaceError
from precision_tool.workspace import (
    RankDir, golden_dir_for_rank, golden_dir_for_step, has_rank_goldens, new_result_dir, rank_dirs,
)

if TYPE_CHECKING:
    from precision_tool.analysis.compare.engine.compare_executors import GroupExecutor


def _kept_parse(graph_file: Path) -> Any:
    """ge_graph.kept_graph(graph_file), without importing the graph parser when it never ran in this process
    (then nothing was parsed; its modules cost every `vc` with a kept plan 15 ms of start-up)."""
    parser = sys.modules.get("precision_tool.formats.ge.ge_graph")
    return None if parser is None else parser.kept_graph(graph_file)


def choose_step(folders: Sequence[Path], step: int | None, notes: list[str], what: str,
                cache_dir: Path | None = None) -> int | None:
    """The one dump iteration to compare in `folders`: `step`, else the lowest; a note when others exist.
    `cache_dir`: where the folders' iterations are kept between runs (listing_cache.py).

    Returns None when the folders hold a single iteration (or none: flat folders), so nothing is filtered.
    """
    found: set[int] = set()
    for folder in folders:
        found.update(cached_dump_iterations(folder, cache_dir))
    if step is not None:
        if found and step not in found:
            raise WorkspaceError(f"{what} has no dump iteration {step}; it holds iterations "
                                 f"{', '.join(map(str, sorted(found)))} (vc --step N)")
        return step if found else None
    if len(found) <= 1:
        return None
    chosen = min(found)
    notes.append(f"{what} holds dump iterations {', '.join(map(str, sorted(found)))}: comparing iteration "
                 f"{chosen} only (`vc --step N` picks another, `vc --step all` compares each; iterations are "
                 "never mixed)")
    return chosen


def graph_specs(workspace: Any, debug_id: int, npu_dir: Path, golden_dir: Path, stamp: str, notes: list[str],
                step: int | None = None) -> list[RunSpec]:
    """NPU-vs-golden runs of dump folder `npu_dir` (of npu/debug_<debug_id>) through that run's Build graphs,
    each graph against its own dump subfolder; [] when the run has no Build graph."""
    specs: list[RunSpec] = []
    graph_files = workspace.build_graph_files(debug_id)
    jsons = {p.stem for p in graph_files if p.suffix == ".json"}
    graph_files = [p for p in graph_files if not (p.suffix == ".txt" and p.stem in jsons)]
    first = True
    for graph_file in graph_files:
        names = graph_plans(graph_file, workspace.cache_dir).graph_names
        model = _kept_parse(graph_file)
        if model is not None:
            # parsed just now (no plan kept yet): the graph index's summary and the ops' descriptions the report
            # shows are written from the same parse before the plan drops it (a second parse of a 20,000-op
            # graph: about two seconds)
            from precision_tool.analysis.graphs.graph_summary import index_from_kept
            from precision_tool.analysis.graphs.op_descs import descs_kept, keep_descs

            index_from_kept(workspace, graph_file, debug_id)
            if not descs_kept(workspace, graph_file):
                try:
                    keep_descs(workspace, graph_file, model)
                except (PrecisionToolError, ValueError, TypeError, AttributeError):
                    pass  # (only the report's shortcut: it parses the graph itself, and says what is wrong)
        for graph_name in names:
            folder = npu_dir if graph_name in npu_dir.parts else find_graph_dump_dir(npu_dir, graph_name)
            if folder is None:
                if len(graph_files) == 1 and len(names) == 1:
                    folder = npu_dir
                else:
                    notes.append(f"graph {graph_name} ({graph_file.name}) has no dump folder in {npu_dir}; skipped")
                    continue
            try:
                chosen = choose_step([folder], step, notes, f"the dump of graph {graph_name}", workspace.cache_dir)
            except WorkspaceError as exc:
                notes.append(f"{exc}; graph {graph_name} skipped")
                continue
            name = f"result_{stamp}.csv" if first else f"result_{stamp}_{_safe(graph_name)}.csv"
            first = False
            simulated = " (SIMULATED NPU run)" if workspace.is_simulated(debug_id) else ""
            specs.append(RunSpec(f"{graph_name}{simulated} vs golden", str(folder), name, golden_dir=str(golden_dir),
                                 graph_path=str(graph_file), graph_name=graph_name, step=chosen))
    return specs


def workspace_specs(workspace: Any, stamp: str, notes: list[str] | None = None,
                    step: int | None = None, across_ranks: bool | str = False) -> list[RunSpec]:
    """What `vc` with no arguments compares (see the module doc of the command); one dump iteration each.
    A dump with one folder per device compares every rank (rank_specs); `across_ranks`: every rank against
    rank 0 instead; "also": both (what `ac -c` runs on such a dump)."""
    notes = notes if notes is not None else []
    npu_dir = workspace.newest_dump_dir(0)
    if npu_dir is None:
        raise WorkspaceError(f"no NPU dumps in {workspace.dump_root(0)}; {workspace.npu_dump_hint()} (or pass "
                             "a dump folder with -lt DIR)")
    ranks = rank_dirs(npu_dir)
    if across_ranks == "also":
        return (rank_specs(workspace, npu_dir, ranks, stamp, notes, step)
                + across_rank_specs(ranks, stamp, notes, step)) if ranks else workspace_specs(workspace, stamp, notes,
                                                                                            step)
    if across_ranks:
        if not ranks:
            raise WorkspaceError(f"--across-ranks: {npu_dir} holds the dump of one device; it needs one folder per "
                                 "device (dump/<time>/<device_id>/...), as a multi-device job writes")
        return across_rank_specs(ranks, stamp, notes, step)
    if ranks:
        return rank_specs(workspace, npu_dir, ranks, stamp, notes, step)
    specs: list[RunSpec] = []
    golden_dir = golden_for_iteration(workspace.golden_dir, [npu_dir], step, workspace.cache_dir)
    if has_golden_files(golden_dir):
        specs.extend(graph_specs(workspace, 0, npu_dir, golden_dir, stamp, notes, step))
        if not specs:
            chosen = choose_step([npu_dir], step, notes, f"the dump {npu_dir}", workspace.cache_dir)
            specs.append(RunSpec("NPU vs golden (by name)", str(npu_dir), f"result_{stamp}.csv",
                                 golden_dir=str(golden_dir), step=chosen))
    else:
        notes.append(f"no golden tensors in {golden_dir}: NPU-vs-golden skipped ({workspace.golden_hint()})")
    if 1 in workspace.debug_ids():
        right = workspace.newest_dump_dir(1)
        if right is not None:
            chosen = common_step(npu_dir, right, step, notes)
            specs.append(RunSpec("debug_0 vs debug_1", str(npu_dir), f"result_{stamp}_npu_vs_npu.csv",
                                 right_dir=str(right), step=chosen))
    if not specs:
        raise WorkspaceError(f"nothing to compare: no golden tensors in {golden_dir} and no second NPU run "
                             f"(npu/debug_1); {workspace.golden_hint()}")
    return specs


def rank_specs(workspace: Any, npu_dir: Path, ranks: Sequence[RankDir], stamp: str, notes: list[str],
               step: int | None = None) -> list[RunSpec]:
    """Every rank of a multi-device dump against its golden (tf/dump/rank_<r>/, else the shared tf/dump/)
    through debug_0's Build graphs, into result_<stamp>_rank<r>.csv; and against the same rank of debug_1
    when that run has it."""
    golden_root = workspace.golden_dir
    own_goldens = has_rank_goldens(golden_root)
    if not own_goldens and has_golden_files(golden_root):
        notes.append(f"{len(ranks)} ranks and no {golden_root}/rank_<r>/ folders: every rank is compared with the "
                     f"same golden tensors in {golden_root} (right when every rank was fed the same batch)")
    specs: list[RunSpec] = []
    skipped: list[int] = []
    for rank in ranks:
        golden, _own = golden_dir_for_rank(golden_root, rank.rank)
        if not has_golden_files(golden):
            skipped.append(rank.rank)
            continue
        found = graph_specs(workspace, 0, rank.path, golden, f"{stamp}_rank{rank.rank}", notes, step)
        if not found:
            chosen = choose_step([rank.path], step, notes, f"the dump of rank {rank.rank}", workspace.cache_dir)
            found = [RunSpec("NPU vs golden (by name)", str(rank.path), f"result_{stamp}_rank{rank.rank}.csv",
                             golden_dir=str(golden), step=chosen)]
        specs.extend(dataclasses.replace(s, label=f"rank {rank.rank}: {s.label}", rank=rank.rank) for s in found)
    if skipped:
        notes.append(f"no golden tensors for rank(s) {ranks_text(skipped)} in {golden_root} (nor rank_<r>/ "
                     f"folders): NPU-vs-golden skipped for them ({workspace.golden_hint()})")
    right_dir = workspace.newest_dump_dir(1) if 1 in workspace.debug_ids() else None
    right_ranks = {r.rank: r for r in rank_dirs(right_dir)} if right_dir is not None else {}
    for rank in ranks:
        other = right_ranks.get(rank.rank)
        if other is not None:
            chosen = common_step(rank.path, other.path, step, notes)
            specs.append(RunSpec(f"rank {rank.rank}: debug_0 vs debug_1", str(rank.path),
                                 f"result_{stamp}_rank{rank.rank}_npu_vs_npu.csv", right_dir=str(other.path),
                                 step=chosen, rank=rank.rank))
    if not specs:
        raise WorkspaceError(f"nothing to compare: no golden tensors in {golden_root} for any of the "
                             f"{len(ranks)} ranks and no second NPU run (npu/debug_1); {workspace.golden_hint()}, "
                             "or `vc --across-ranks` to compare the ranks with each other")
    return specs


def across_rank_specs(ranks: Sequence[RankDir], stamp: str, notes: list[str],
                      step: int | None = None) -> list[RunSpec]:
    """Every rank against the first (rank 0), NPU vs NPU: after an all-reduce every rank holds the same
    numbers, so ops that must agree and do not point at a bad device or a broken collective."""
    base = ranks[0]
    specs = []
    for rank in ranks[1:]:
        chosen = common_step(rank.path, base.path, step, notes)
        specs.append(RunSpec(f"rank {rank.rank} vs rank {base.rank}", str(rank.path),
                             f"result_{stamp}_rank{rank.rank}_vs_rank{base.rank}.csv", right_dir=str(base.path),
                             step=chosen, rank=rank.rank, across_ranks=True))
    return specs


def common_step(left: Path, right: Path, step: int | None, notes: list[str]) -> int | None:
    """NPU vs NPU: one iteration present in both runs (`step`, else the lowest common one); None when each
    run holds a single iteration (they are compared whatever their numbers)."""
    ours, theirs = set(dump_iterations(left)), set(dump_iterations(right))
    both = (ours & theirs) if ours and theirs else (ours or theirs)
    listed = f"(left: {', '.join(map(str, sorted(ours))) or '-'}; right: {', '.join(map(str, sorted(theirs))) or '-'})"
    if step is not None:
        if step not in both:
            raise WorkspaceError(f"dump iteration {step} is not in both NPU runs {listed}")
        return step
    if len(ours) <= 1 and len(theirs) <= 1:
        return None
    if not both:
        raise WorkspaceError(f"the NPU runs share no dump iteration {listed}; pick the folders with -lt/-rt")
    chosen = min(both)
    notes.append(f"the NPU runs hold several dump iterations {listed}: comparing iteration {chosen} only "
                 "(`vc --step N` picks another; iterations are never mixed)")
    return chosen


def golden_for_iteration(golden_root: Path, npu_dirs: Sequence[Path], step: int | None,
                         cache_dir: Path | None = None) -> Path:
    """Plain `vc` / `vc --step N` on a workspace whose golden folder holds step_<N>/ folders: the golden
    folder of the iteration compared (`step`, else the lowest one); the flat folder when
    there is no such step folder (docs/steps.md). `cache_dir`: as choose_step's."""
    if not cached_step_folders(golden_root, cache_dir):
        return golden_root
    if step is None:
        found: set[int] = set()
        for folder in npu_dirs:
            found.update(cached_dump_iterations(folder, cache_dir))
        step = min(found) if found else None
    return golden_dir_for_step(golden_root, step)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def compare_workspace(
    workspace: Any, settings: Any, *, progress: Progress | None = None,
    on_warning: Callable[[str], None] | None = None, step: int | None = None,
) -> list[CompareRun]:
    """`vc` with no arguments: newest debug_0 dump vs golden through debug_0's Build graphs (each graph
    against its own dump subfolder), and debug_0 vs debug_1 when both exist."""
    notes: list[str] = []
    specs = workspace_specs(workspace, "{stamp}", notes, step)  # plan first: no result folder for a failed start
    for note in notes:
        if on_warning:
            on_warning(note)
    result_dir = new_result_dir(workspace.vector_compare_dir)
    specs = [RunSpec(**{**s.__dict__, "csv_name": s.csv_name.replace("{stamp}", result_dir.name)}) for s in specs]
    return run_specs(specs, result_dir, workers=settings.workers, threshold=settings.COSINE_THRESHOLD,
                     progress=progress, on_warning=on_warning, labels=workspace_labeller(workspace),
                     cache_dir=workspace.cache_dir)


def resume_workspace(
    workspace: Any, settings: Any, *, workers: int | None = None, progress: Progress | None = None,
    on_warning: Callable[[str], None] | None = None, root: Path | None = None,
    executor: "GroupExecutor | None" = None,
) -> list[CompareRun]:
    """Finish the newest interrupted run in the workspace's result folders (or in `root`, `vc -o DIR`)."""
    folder = interrupted_result_dir(workspace, root)
    if folder is None:
        raise WorkspaceError("no interrupted comparison to resume in " + str(root or workspace.vector_compare_dir))
    specs = [relocated_spec(spec, workspace) for spec in read_run_file(folder)]
    return run_specs(specs, folder, workers=workers or settings.workers, threshold=settings.COSINE_THRESHOLD,
                     progress=progress, resume=True, on_warning=on_warning, labels=workspace_labeller(workspace),
                     executor=executor, cache_dir=workspace.cache_dir)

