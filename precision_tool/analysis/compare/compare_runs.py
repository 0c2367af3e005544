"""Comparison runs: what `vc` compares (RunSpec), planning each run, running it into a result folder
(run.json records the runs so `vc --resume` can finish them), and the same runs through CANN's msaccucmp."""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from precision_tool.analysis.results.result_columns import Columns
from precision_tool.analysis.compare.graph_plan import plan_graph_compare
from precision_tool.analysis.compare.listing_cache import cached_dump_index, cached_golden_paths, stats_only
from precision_tool.analysis.compare.plan_cache import graph_plans
from precision_tool.analysis.results.digest_cache import summarize_result_csv
from precision_tool.analysis.compare.matching import DumpIndex, MatchPlan, plan_name_compare, plan_npu_compare
from precision_tool.analysis.results.results import PARTIAL_SUFFIX, CompareSummary, RowDigest, summarize_digest
from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError, PrecisionToolError, WorkspaceError
from precision_tool.gc_pause import without_gc, without_gc_keeping
from precision_tool.workspace import result_dirs

if TYPE_CHECKING:
    from precision_tool.analysis.compare.engine.compare_engine import Progress, StartedPlan
    from precision_tool.analysis.compare.engine.compare_executors import GroupExecutor
    from precision_tool.analysis.graphs.op_labels import OpLabels

RUN_FILE = "run.json"


@dataclass(frozen=True)
class RunSpec:
    """One comparison to run: which dumps against which golden tensors (or which other NPU run)."""

    label: str
    npu_dir: str
    csv_name: str
    golden_dir: str | None = None
    right_dir: str | None = None
    graph_path: str | None = None
    graph_name: str | None = None
    step: int | None = None
    """Only this dump iteration (the `<iteration>` folder); None: every dump file under npu_dir."""
    overflow_detection: bool = False
    """Write the OverFlow column (msaccucmp -overflow_detection)."""
    overflow_dir: str | None = None
    """The run's Opdebug records (overflow/dump): ops they name are OverFlow YES."""
    op_range: str | None = None
    """Compare only graph ops START,END,STEP by id (msaccucmp -r); writes OpSequence."""
    op_select: str | None = None
    """Compare only the graph ops of these ids (msaccucmp -s); writes OpSequence."""
    rank: int | None = None
    """The rank (device folder) of a multi-device dump this run compares; None for a single-device dump."""
    across_ranks: bool = False
    """NPU vs NPU of `rank` against rank 0 of the same dump (`vc --across-ranks`)."""

    @property
    def npu_vs_npu(self) -> bool:
        return self.right_dir is not None

    @property
    def name_only(self) -> bool:
        """NPU vs golden without a graph: matched by op name alone."""
        return self.right_dir is None and self.graph_path is None


def result_spec(csv_path: Path) -> RunSpec | None:
    """The run (from the run.json next to it) that wrote `csv_path`; None for a CSV without one."""
    name = csv_path.name.removesuffix(PARTIAL_SUFFIX)
    if not (csv_path.parent / RUN_FILE).is_file():
        return None
    try:
        specs = read_run_file(csv_path.parent)
    except FormatError:
        return None
    return next((spec for spec in specs if spec.csv_name == name), None)


Labeller = Callable[["RunSpec"], "OpLabels | None"]
"""labels(spec): how a run's summary names its ops (op_labels.py), or None for the CSV's own names."""


def workspace_labeller(workspace: Any) -> Labeller:
    """Labels from the workspace's Build graphs for runs over its own dumps (not for name-only runs); a run
    through a graph takes them from that graph's plan (plan_cache.py), already read to plan the run."""
    from precision_tool.analysis.graphs.op_labels import labels_for_run, labels_of_ops

    @without_gc  # (labels of 20,000 ops: the collector would rescan the graph's plan as they are made)
    def labels(spec: RunSpec) -> "OpLabels | None":
        if spec.name_only:
            return None
        if spec.graph_path is not None and spec.right_dir is None:
            if workspace.run_of(workspace.relocate(spec.npu_dir)) is None:
                return None  # dumps from outside the workspace: the CSV's own names and numbers
            graph = workspace.relocate(spec.graph_path)  # a copied workspace: its own graph
            try:
                ops = graph_plans(graph, workspace.cache_dir).ops(spec.graph_name)
            except (PrecisionToolError, OSError):
                return None  # no usable graph: the CSV's own names and numbers are shown
            return labels_of_ops(Path(graph).name, ops)
        return labels_for_run(workspace, spec.npu_dir, spec.graph_path, spec.graph_name)

    return labels


@dataclass(frozen=True)
class CompareRun:
    """A finished (or interrupted) comparison: where its CSV is and what it found."""

    spec: RunSpec
    csv_path: Path
    summary: CompareSummary
    warnings: tuple[str, ...]
    groups: int
    elapsed_s: float
    bytes_read: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()
    """(file, problem) for each NPU dump or golden .npy that could not be read; their rows say why in
    CompareFailReason."""

    @property
    def label(self) -> str:
        return self.spec.label


# --- planning runs ----------------------------------------------------------------------------------
def has_golden_files(folder: Path) -> bool:
    """Whether `folder` holds a golden .npy (stops at the first: the run's planning lists them all)."""
    from precision_tool.formats.tf.golden import has_golden_files as holds_golden

    return holds_golden(folder)


@without_gc_keeping
def plan_run(spec: RunSpec, model: Any = None, only: set[str] | None = None,
             cache_dir: Path | None = None) -> tuple[MatchPlan, dict[str, str]]:
    """Build the plan of one run (reads graph and folder listings, no tensor data); `model`: the run's graph
    when the caller has parsed it already; `only`: plan just the graph ops of these names (the report reads
    a few outputs again; from the kept plan when there is `cache_dir` and no `model`); `cache_dir`: where the
    graph's side of the plan is kept between runs (plan_cache.py)."""
    npu_dir = Path(spec.npu_dir)
    if not npu_dir.is_dir():
        raise WorkspaceError(f"NPU dump folder {npu_dir} does not exist; pass one with -lt DIR")
    dumps = cached_dump_index(npu_dir, cache_dir, with_graph=spec.graph_path is not None, step=spec.step)
    if not dumps.plan_paths():  # (not by_op: an index read back from the cache keeps its paths as text)
        raise WorkspaceError(f"no NPU dump files in {npu_dir}; is it the dump folder of an NPU run?")
    plan, golden = _plan_with(spec, dumps, model, only, cache_dir)
    if dumps.stats_files:  # a folder of both kinds: the tensors are compared, say what is not
        plan = dataclasses.replace(plan, warnings=(
            *plan.warnings, f"{dumps.stats_files} statistics CSV(s) beside the tensor dumps are not compared (vc "
                            "compares statistics when a run dumped statistics only; `ni OP` shows them)"))
    return plan, golden


def _plan_with(spec: RunSpec, dumps: DumpIndex, model: Any, only: set[str] | None,
               cache_dir: Path | None) -> tuple[MatchPlan, dict[str, str]]:
    if spec.right_dir is not None:
        right = cached_dump_index(Path(spec.right_dir), cache_dir, with_graph=False, step=spec.step)
        if not right.by_op:
            raise WorkspaceError(f"no NPU dump files in {spec.right_dir}")
        return plan_npu_compare(dumps, right), {}
    golden_dir = Path(spec.golden_dir or "")
    golden = cached_golden_paths(golden_dir, cache_dir)
    if not golden:
        raise WorkspaceError(f"no golden .npy tensors (<op>.<slot>.<timestamp>.npy) in {golden_dir}; "
                             "run `tf_dump` first")
    if spec.graph_path is None:
        return plan_name_compare(dumps, golden), golden
    if model is None and (only is None or cache_dir is not None):  # (`only` from the kept plan: no parse)
        plan = graph_plans(spec.graph_path, cache_dir).plan(spec.graph_name, dumps, only)
        return (plan if only is None else dataclasses.replace(plan, groups=tuple(
            dataclasses.replace(g, ops=tuple(op for op in g.ops if op.name in only))
            for g in plan.groups if any(op.name in only for op in g.ops)))), golden
    if model is None:
        from precision_tool.formats.ge.ge_graph import shared_graph

        model = shared_graph(spec.graph_path)
    all_ops = [op for _, op in model.iter_ops()]
    graphs = [g for g in model.graphs if spec.graph_name in (None, g.name)]
    ops = [op for g in graphs for op in g.ops if only is None or op.name in only]
    return plan_graph_compare(ops, dumps, all_ops=all_ops), golden


def run_specs(
    specs: Sequence[RunSpec],
    result_dir: Path,
    *,
    workers: int,
    threshold: float,
    progress: Progress | None = None,
    resume: bool = False,
    on_warning: Callable[[str], None] | None = None,
    labels: Labeller | None = None,
    executor: "GroupExecutor | None" = None,
    cache_dir: Path | None = None,
) -> list[CompareRun]:
    """Run each spec into `result_dir` (its run.json records them so `--resume` can continue); `executor`:
    where the groups run (default: a local pool of `workers` processes; a DaskExecutor for a cluster);
    `cache_dir`: where graphs' plans are kept between runs (the workspace's temp/cache).

    A fresh run that fails before any result CSV exists leaves no folder behind (discard_empty_result_dir),
    so a failed `vc` never becomes the newest result that `vcs`/`ac` would read. Ctrl-C raises
    CompareInterrupted naming what was kept (complete CSVs, the .partial one, runs not started)."""
    specs = [absolute_spec(spec) for spec in specs]
    if not resume:
        write_run_file(result_dir, specs)
    shared = None
    if executor is None and workers > 1 and len(specs) > 1:
        from precision_tool.analysis.compare.engine.compare_executors import PoolExecutor

        executor = shared = PoolExecutor(workers)  # one pool for all the runs (a 64-rank dump: 64 runs)
    try:
        return _run_specs(specs, result_dir, workers=workers, threshold=threshold, progress=progress,
                          resume=resume, on_warning=on_warning, labels=labels, executor=executor,
                          cache_dir=cache_dir)
    except BaseException:
        if not resume:
            discard_empty_result_dir(result_dir)
        raise
    finally:
        if shared is not None:
            shared.close()


def discard_empty_result_dir(result_dir: Path) -> bool:
    """Remove `result_dir` when it holds no result CSV (not even a .partial one); True when removed."""
    if not result_dir.is_dir():
        return False
    entries = list(result_dir.iterdir())
    if any(".csv" in p.name for p in entries):
        return False
    for entry in entries:
        if entry.is_file():
            entry.unlink()
    try:
        result_dir.rmdir()
    except OSError:
        return False
    return True


def _run_specs(
    specs: Sequence[RunSpec],
    result_dir: Path,
    *,
    workers: int,
    threshold: float,
    progress: Progress | None,
    resume: bool,
    on_warning: Callable[[str], None] | None,
    labels: Labeller | None = None,
    executor: "GroupExecutor | None" = None,
    cache_dir: Path | None = None,
) -> list[CompareRun]:
    # (the engine here, not at the top: summarising a result, as `vcs` does, needs neither it nor numpy)
    from precision_tool.analysis.compare.engine.compare_engine import CompareInterrupted, start_plan
    runs: list[CompareRun] = []
    flight: _Flight | None = None  # the run whose groups the workers compare while the next one is planned

    def land() -> None:
        nonlocal flight
        if flight is not None:
            landing, flight = flight, None
            runs.append(_land(landing, threshold, progress, labels))

    try:
        for spec in specs:
            started = time.perf_counter()
            csv_path = result_dir / spec.csv_name
            try:
                left_stats = stats_only(spec.npu_dir)
                if spec.npu_vs_npu and left_stats != stats_only(spec.right_dir):
                    # statistics against tensors: nothing to pair; the other runs still go ahead
                    kinds = ("statistics CSVs", "tensors") if left_stats else ("tensors", "statistics CSVs")
                    why = (f"{spec.label}: not compared: {spec.npu_dir} holds {kinds[0]} and {spec.right_dir} "
                           f"{kinds[1]} (dump_data differs between the runs)")
                    if len(specs) == 1:
                        raise WorkspaceError(why)
                    if on_warning:
                        on_warning(why)
                    continue
                if left_stats:
                    land()
                    runs.append(_stats_run(spec, csv_path, started, on_warning))
                    continue
                plan, golden = plan_run(spec, cache_dir=cache_dir)
                plan, columns, notes = _selected(spec, plan)
                for note in notes:
                    if on_warning:
                        on_warning(f"{spec.label}: {note}")
                for warning in plan.warnings:
                    if on_warning:
                        on_warning(f"{spec.label}: {warning}")
                if not getattr(executor, "keeps_workers", lambda groups: False)(len(plan.groups)):
                    land()  # this run needs workers of its own: the one in flight finishes first
                compare = None
                if not (resume and csv_path.exists()):
                    compare = start_plan(plan, golden, csv_path, workers=workers, resume=resume,
                                         columns=columns, executor=executor)
            except Exception:
                land()  # the run in flight is written before this run's problem is raised
                raise
            land()  # the previous run's rows, written while this run's groups are compared
            flight = _Flight(spec, csv_path, plan, compare, started)
        land()
    except (CompareInterrupted, KeyboardInterrupt) as exc:
        raise _what_was_kept(result_dir, specs, exc) from None
    return runs


@dataclass
class _Flight:
    """A run handed to the executor; _land writes its rows and summarises it."""

    spec: RunSpec
    csv_path: Path
    plan: MatchPlan
    compare: StartedPlan | None
    """None when `--resume` found its CSV complete."""
    started: float


def _land(flight: _Flight, threshold: float, progress: Progress | None, labels: Labeller | None) -> CompareRun:
    from precision_tool.analysis.compare.engine.compare_engine import finish_plan
    spec = flight.spec
    nbytes = 0
    unreadable: dict[str, str] = {}
    digest = _LabelledDigest(lambda: labels(spec) if labels is not None else None)
    started = flight.compare
    if started is not None:
        nbytes = finish_plan(started, progress=progress, label=spec.label, unreadable=unreadable, digest=digest)
    op_labels = digest.labels
    if started is not None and not started.resume:
        # the workers digested the rows they wrote: the CSV is not read back
        summary = summarize_digest(digest, flight.csv_path, threshold, name_only=spec.name_only,
                                   labels=op_labels, npu_vs_npu=started.plan.npu_vs_npu,
                                   overflow_column=started.columns.overflow)
    else:  # a resumed run: its earlier rows are only in the CSV
        summary = summarize_result_csv(flight.csv_path, threshold, name_only=spec.name_only, labels=op_labels)
    return CompareRun(spec, flight.csv_path, summary, flight.plan.warnings, len(flight.plan.groups),
                      time.perf_counter() - flight.started, nbytes, tuple(sorted(unreadable.items())))


class _LabelledDigest(RowDigest):
    """A run's digest whose labels are made with the first batch of rows, inside finish_plan: while the workers
    compare (0.02-0.04 s at 20,000 ops), and Ctrl-C then still leaves the rows so far in the .partial."""

    def __init__(self, make_labels: Callable[[], "OpLabels | None"]) -> None:
        super().__init__()
        self._make_labels = make_labels

    @functools.cached_property
    def labels(self) -> "OpLabels | None":
        return self._make_labels()

    def extend(self, other: RowDigest) -> None:
        _ = self.labels  # made with the first batch (see above)
        super().extend(other)


def _stats_run(spec: RunSpec, csv_path: Path, started: float,
               on_warning: Callable[[str], None] | None) -> CompareRun:
    """A run whose NPU side dumped statistics CSVs only (dump_data="stats"): statistics are compared
    instead of tensors, into a result CSV of their own header (stats_results.STATS_RESULT_HEADER)."""
    from precision_tool.analysis.compare.stats_compare import compare_statistics, compare_statistics_npu

    if spec.npu_vs_npu:
        summary = compare_statistics_npu(spec.npu_dir, spec.right_dir, csv_path, step=spec.step)
    else:
        summary = compare_statistics(spec.npu_dir, spec.golden_dir, spec.graph_path, csv_path,
                                     graph_name=spec.graph_name, step=spec.step)
    notes = list(summary.notes)
    if spec.overflow_detection or spec.op_range is not None or spec.op_select is not None:
        notes.append("-overflow_detection, -r and -s need tensors; they are ignored for a statistics dump")
    for note in notes:
        if on_warning:
            on_warning(f"{spec.label}: {note}")
    return CompareRun(spec, csv_path, summary, tuple(notes), summary.total, time.perf_counter() - started, 0,
                      tuple(summary.unreadable_files))


def _selected(spec: RunSpec, plan: MatchPlan) -> tuple[MatchPlan, Columns, list[str]]:
    """The plan cut to the op range/selection of `spec`, and the optional columns its CSV gets."""
    notes: list[str] = []
    selection = None
    if spec.op_range is not None or spec.op_select is not None:
        from precision_tool.analysis.compare.op_selection import OpSelection, select_groups

        if spec.graph_path is None:
            raise WorkspaceError("-r/-s pick graph ops by their id: give the compiled graph with -g (or compare "
                                 "a workspace dump, whose Build graph is found)")
        selection = OpSelection(spec.op_range if spec.op_range is not None else spec.op_select or "",
                                is_range=spec.op_range is not None)
        try:
            plan = select_groups(plan, selection)
        except ValueError as exc:
            raise WorkspaceError(str(exc)) from None
        if not plan.groups:
            raise WorkspaceError(f"{'-r' if selection.is_range else '-s'} {selection.text}: no graph op has such "
                                 "an id (`ni` shows an op's id)")
    flagged: frozenset[str] = frozenset()
    if spec.overflow_detection and spec.overflow_dir:
        from precision_tool.analysis.checks.overflow import opdebug_overflow_ops

        flagged, notes = opdebug_overflow_ops(Path(spec.overflow_dir))
    columns = Columns(overflow=spec.overflow_detection, sequence=selection is not None, overflow_ops=flagged)
    return plan, columns, notes


def _what_was_kept(result_dir: Path, specs: Sequence[RunSpec], exc: BaseException) -> BaseException:
    """Ctrl-C: a CompareInterrupted naming every complete CSV, the .partial one and the runs not started;
    the KeyboardInterrupt itself when nothing at all was kept."""
    from precision_tool.analysis.compare.engine.compare_engine import CompareInterrupted
    complete = tuple(result_dir / s.csv_name for s in specs if (result_dir / s.csv_name).is_file())
    partial = getattr(exc, "partial", None)
    done, total = getattr(exc, "done", 0), getattr(exc, "total", 0)
    if partial is None:  # stopped between runs (planning the next one): a .partial of an earlier Ctrl-C may exist
        partial = next((result_dir / (s.csv_name + PARTIAL_SUFFIX) for s in specs
                        if (result_dir / (s.csv_name + PARTIAL_SUFFIX)).is_file()), None)
    partial_name = partial.name.removesuffix(PARTIAL_SUFFIX) if partial is not None else None
    not_started = tuple(s.label for s in specs if s.csv_name != partial_name
                        and not (result_dir / s.csv_name).is_file())
    if not complete and partial is None:
        return exc if isinstance(exc, KeyboardInterrupt) else KeyboardInterrupt()
    where = f" after {done} of {total} ops" if partial is not None and total else ""
    return CompareInterrupted(f"interrupted{where}; the rows so far are kept in {result_dir} "
                              "(`vc --resume` finishes the run)", partial=partial, done=done, total=total,
                              complete=complete, not_started=not_started)


PATH_FIELDS = ("npu_dir", "golden_dir", "right_dir", "graph_path", "overflow_dir")
"""RunSpec fields that are paths: stored absolute in run.json so `vc --resume` works from any folder."""


def absolute_spec(spec: RunSpec, base: Path | None = None) -> RunSpec:
    """`spec` with absolute paths; relative ones are taken relative to `base` (default: the current folder)."""
    import os

    changes = {}
    for name in PATH_FIELDS:
        value = getattr(spec, name)
        if value is not None and not os.path.isabs(value):
            changes[name] = os.path.abspath(os.path.join(base, value) if base is not None else value)
    return RunSpec(**{**spec.__dict__, **changes}) if changes else spec


def relocated_spec(spec: RunSpec, workspace: Any) -> RunSpec:
    """run.json paths as this workspace has them. Ours are absolute: in a copy of the workspace (another
    folder, another machine) the same places in the copy. Older versions wrote paths relative to where `vc`
    ran: usually the folder holding precision_data, or precision_data itself; take the first base under
    which the NPU folder exists."""
    import os

    root = Path(workspace.root).resolve()
    if os.path.isabs(spec.npu_dir):  # written by this version: the same places in a copied workspace
        moved = {name: str(workspace.relocate(getattr(spec, name))) for name in PATH_FIELDS
                 if getattr(spec, name) is not None}
        return RunSpec(**{**spec.__dict__, **moved})
    for base in (root.parent, root, Path.cwd()):
        candidate = absolute_spec(spec, base)
        if Path(candidate.npu_dir).is_dir():
            return candidate
    return absolute_spec(spec, root.parent)


def write_run_file(result_dir: Path, specs: Sequence[RunSpec]) -> None:
    data = {"runs": [spec.__dict__ for spec in specs]}
    write_text_atomic(result_dir / RUN_FILE, json.dumps(data, indent=1))


def read_run_file(result_dir: Path) -> list[RunSpec]:
    path = result_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [RunSpec(**item) for item in data["runs"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FormatError(path, f"cannot read the run description ({exc}); start a new run with `vc`") from None


def interrupted_result_dir(workspace: Any, root: Path | None = None) -> Path | None:
    """The newest result folder (of the workspace, or under `root`) with an unfinished run (a .partial CSV
    or a run not yet started)."""
    for folder in reversed(result_dirs(root if root is not None else workspace.vector_compare_dir)):
        if not (folder / RUN_FILE).is_file():
            continue
        try:
            specs = read_run_file(folder)
        except FormatError:
            continue
        if any(not (folder / s.csv_name).exists() for s in specs):
            return folder
    return None
