"""Everything the HTML report shows, gathered in one place: the comparison runs of one result folder (with
their points, ops and statistics), the replay verdicts written beside them, and what the `ac` checks find
(overflows, fusion passes, lossy casts, graph differences). No drawing here: render/report/report_html.py turns
a ReportData into the page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.report.report_runs import (
    OpFacts,
    RunReport,
    chosen_outputs,
    graph_facts,
    output_points,
    read_output_stats,
)
from precision_tool.errors import PrecisionToolError

OVERFLOW_LIMIT = 200
"""Overflow records analysed for the page (each reads its op's dump); the page says how many there were."""


@dataclass(frozen=True)
class Subgraph:
    """The ops within `depth` edges of the first divergent op (the `ni -s` picture)."""

    center: Any
    ops: tuple[Any, ...]
    depth: int


@dataclass(frozen=True)
class ReportData:
    """One page's worth: the runs of a result folder and everything `ac` knows about the workspace."""

    workspace: Path
    result_dir: Path | None
    created: str
    threshold: float
    thresholds: dict[str, float]
    """The replay tolerances by dtype (REPLAY_* settings)."""
    runs: tuple[RunReport, ...]
    ops: dict[str, OpFacts]
    replay: tuple[dict[str, Any], ...] = ()
    replay_file: Path | None = None
    overflows: Any = None
    """OverflowReport (analysis/checks/overflow.py)."""
    fusion: Any = None
    """FusionSummary, or None when there is no fusion_result.json."""
    casts: tuple[Any, ...] = ()
    similarity: tuple[Any, ...] | None = None
    subgraph: Subgraph | None = None
    notes: tuple[str, ...] = field(default=())
    """Checks that could not run, and why (shown on the page, never silently left out)."""
    answer: Any = None
    """The Answer (analysis/report/answer.py): what `ac` ends with, the page shows under its headline."""
    sources: SourcePlaces | None = None
    """Where the ops were made in the user's code, from the golden run's record; None when there is none."""
    ranking: tuple[dict[str, str], ...] = ()
    """Every replayed op's own error (`ac -c --precheck` / `replay --all`: ranked.csv rows), worst first."""
    ranking_file: Path | None = None
    loss: Any = None
    """LossPanel (analysis/report/loss_data.py): both runs' loss curves; None when neither side recorded one."""
    steps: Any = None
    """StepPanel (step_panel.py) of a `vc --step all` result folder; None for one step."""
    explore_dir: Path | None = None
    """The newest `explore` folder (the graphs as Model Explorer files, docs/explore.md), if any."""

    @property
    def first_divergent(self) -> tuple[RunReport, Any] | None:
        """The first NPU-vs-golden run that names a first divergent op, and that op (OpResult)."""
        for run in self.runs:
            op = getattr(run.summary, "first_divergent_op", None)
            if op is not None and not run.npu_vs_npu:
                return run, op
        return None

    def verdict_of(self, op_name: str) -> dict[str, Any] | None:
        return next((v for v in self.replay if v.get("op") == op_name), None)


@dataclass(frozen=True)
class SourcePlaces:
    """The user's lines that made the page's ops: each place once, with the code around it."""

    places: tuple[tuple[str, int, int, tuple[str, ...]], ...]
    """(place 'network.py:91 in build_model()', its line number, the first kept line's number, the kept lines)."""
    of_op: dict[str, tuple[int, ...]]
    """op name → the places of its original TF ops (in `places`)."""


def source_places(record: Any, ops: dict[str, OpFacts]) -> SourcePlaces:
    """The places of `ops`' original TF ops in the golden run's `record` (formats/tf/op_sources.py)."""
    from precision_tool.formats.tf.op_sources import user_frame

    places: list[tuple[str, int, int, tuple[str, ...]]] = []
    number: dict[tuple[str, int], int] = {}
    of_op: dict[str, tuple[int, ...]] = {}
    for name, facts in ops.items():
        found: list[int] = []
        for original in facts.original or (name,):
            stack = record.stack(original)
            frame = user_frame(stack) if stack else None
            if frame is None:
                continue
            key = (frame.path, frame.line)
            if key not in number:
                context = record.context(frame)
                number[key] = len(places)
                places.append((frame.place, frame.line, context[0][0] if context else frame.line,
                               tuple(text for _, text in context)))
            if number[key] not in found:
                found.append(number[key])
        if found:
            of_op[name] = tuple(found)
    return SourcePlaces(tuple(places), of_op)


def _sources(workspace: Any, ops: dict[str, OpFacts], notes: list[str]) -> SourcePlaces | None:
    from precision_tool.errors import FormatError
    from precision_tool.formats.tf.op_sources import read_op_sources

    try:
        record = read_op_sources(workspace.op_sources_file)
    except FormatError as exc:
        notes.append(f"source lines: not shown: {exc}")
        return None
    return source_places(record, ops) if record is not None else None


def _run_report(path: Path, workspace: Any, index: Any, settings: Any, labeller: Any,
                ops: dict[str, OpFacts], background: Any) -> tuple[RunReport, Any]:
    """One run of the page, and the pending read of its outputs' statistics (a future, or None): started in
    `background` (another process) as soon as the CSV says which outputs, so the tensors are read on the
    other core while this one reads the ops' kept descriptions (or parses the graph) and summarises."""
    from precision_tool.analysis.compare.compare_runs import result_spec
    from precision_tool.analysis.checks.graph_checks import other_run_of
    from precision_tool.analysis.results.results import read_result_csv, summarize
    from precision_tool.analysis.compare.stats_compare import is_stats_result, read_stats_result, summarize_stats

    spec = result_spec(path)
    label = spec.label if spec is not None else path.name
    if is_stats_result(path):
        rows = read_stats_result(path)
        npu_vs_npu = spec.npu_vs_npu if spec is not None else False
        return RunReport(label, path, npu_vs_npu, summarize_stats(rows, path), stats_rows=tuple(rows),
                         stats_note="a statistics compare (dump_data=\"stats\"): no tensors, so no cosine to chart"), None
    labels = labeller(spec) if spec is not None else None
    table = read_result_csv(path)
    threshold = settings.COSINE_THRESHOLD
    points, skipped = output_points(table.rows, labels, threshold)
    debug_id = workspace.run_of(workspace.relocate(spec.npu_dir)) if spec is not None else None
    facts, graph_file, model = graph_facts(index, debug_id, {point.op for point in points})
    pending = None
    note = "no tensor statistics: the CSV has no run.json beside it saying which files it compared"
    if spec is not None:
        wanted = chosen_outputs(points, settings.REPORT_TENSOR_LIMIT)
        note = None
        if len(wanted) < len(points):
            note = (f"statistics for {len(wanted)} of {len(points)} outputs (REPORT_TENSOR_LIMIT: the abnormal ones "
                    "first); `ni OP` shows any op's")
        if graph_file is not None and model is not None:
            _PARSED[str(graph_file.resolve())] = model  # the forked process inherits it: no second parse
        pending = background.submit(_read_stats, _relocated(spec, workspace), wanted, workspace.cache_dir)
    summary = summarize(table, threshold, name_only=spec is not None and spec.name_only, labels=labels)
    for point in points:
        found = facts.get(point.op)
        if found is not None and point.op not in ops:
            ops[point.op] = found
    npu_vs_npu = spec is not None and spec.npu_vs_npu
    return RunReport(label, path, npu_vs_npu, summary, tuple(points), skipped, stats_note=note,
                     graph_file=graph_file, debug_id=debug_id, spec=spec,
                     about=other_run_of(workspace, index, spec) if npu_vs_npu else None), pending


_PARSED: dict[str, Any] = {}
"""Build graphs parsed for the report being collected, by resolved path (emptied when it is done)."""


def _read_stats(spec: Any, wanted: set[str], cache_dir: Path) -> tuple[dict[str, Any], str | None]:
    """In the background process: the run's graph as the parent parsed it (inherited through fork) when it
    is the run's own graph, else the run's kept plan (or read_output_stats parses it)."""
    model = _PARSED.get(str(Path(spec.graph_path).resolve())) if spec.graph_path is not None else None
    return read_output_stats(spec, model, wanted, cache_dir)


def _with_stats(run: RunReport, pending: Any) -> RunReport:
    if pending is None:
        return run
    stats, problem = pending.result()
    note = "; ".join(n for n in (run.stats_note, problem) if n) or None
    return replace(run, stats=stats, stats_note=note)


class _Inline:
    """An executor that runs at once (no fork on this system): same results, one core."""

    def submit(self, fn: Any, *args: Any) -> Any:
        from concurrent.futures import Future

        future: Future = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def _background() -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    except ValueError:
        return _Inline()


def _relocated(spec: Any, workspace: Any) -> Any:
    """run.json holds absolute paths: in a copied workspace, its own files."""
    from precision_tool.analysis.compare.compare_runs import PATH_FIELDS

    changes = {name: str(workspace.relocate(getattr(spec, name))) for name in PATH_FIELDS
               if getattr(spec, name) is not None}
    return replace(spec, **changes)


def _checks(workspace: Any, index: Any) -> tuple[dict[str, Any], list[str]]:
    """What the `ac` checks find; a check that cannot run leaves a note, the others still run."""
    from precision_tool.analysis.checks.fusion import fusion_summary
    from precision_tool.analysis.checks.graph_checks import graph_similarity, lossy_casts
    from precision_tool.analysis.checks.overflow import find_overflows

    found: dict[str, Any] = {}
    notes: list[str] = []
    checks = (("overflows", lambda: find_overflows(workspace.newest_overflow_dir(), limit=OVERFLOW_LIMIT)),
              ("fusion", lambda: fusion_summary(workspace)),
              ("casts", lambda: tuple(lossy_casts(index))),
              ("similarity", lambda: _tuple_or_none(graph_similarity(workspace))))
    for name, check in checks:
        try:
            found[name] = check()
        except (PrecisionToolError, OSError) as exc:
            notes.append(f"{name}: not checked: {exc}")
    return found, notes


def _tuple_or_none(value: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return tuple(value) if value is not None else None


def _answer(runs: Sequence[RunReport], workspace: Any) -> Any:
    """The same answer `ac` ends with, from the same files (the runs' CSVs and the newest replay verdicts)."""
    from precision_tool.analysis.report.answer import RunResult, answer_for
    from precision_tool.analysis.ranks import overview_of

    def rank(run: RunReport) -> int | None:
        return getattr(run.spec, "rank", None)

    # which rank went wrong first, and (with `vc --across-ranks` runs) whether the ranks agree after the
    # collectives: the rank verdict the terminal's answer gives
    overview = overview_of([(r.spec, r.summary) for r in runs if rank(r) is not None and not r.stats_rows],
                           workspace)
    debug_ids = {r.debug_id for r in runs if r.debug_id is not None and not r.npu_vs_npu}
    return answer_for(workspace, [RunResult(r.label, r.summary, r.npu_vs_npu, rank(r)) for r in runs],
                      runs[0].csv_path.parent if runs else None, debug_ids, overview)


def _subgraph(index: Any, data_runs: Sequence[RunReport], depth: int) -> Subgraph | None:
    from precision_tool.analysis.ops.op_report import neighbourhood

    for run in data_runs:
        op = getattr(run.summary, "first_divergent_op", None)
        if op is None or run.npu_vs_npu:
            continue
        entries = [e for e in index.find(op.npu_op) if run.debug_id is None or e.debug_id == run.debug_id]
        if not entries:
            return None
        ops = [index.op(e) for e in neighbourhood(index, entries[0], depth)]
        return Subgraph(ops[0], tuple(ops), depth)
    return None


def _ranking(workspace: Any, result_dir: Path | None, notes: list[str]) -> tuple[tuple[dict[str, str], ...], Path | None]:
    """The replay ranking beside the comparison (precheck/), else the newest `replay --all`'s."""
    from precision_tool.analysis.replay.replay_all import newest_ranking
    from precision_tool.analysis.replay.replay_rank import read_ranked

    path = newest_ranking(workspace, result_dir)
    if path is None:
        return (), None
    try:
        return tuple(read_ranked(path)), path
    except PrecisionToolError as exc:
        notes.append(f"replay ranking: {exc}; run `replay --all` again to rewrite it")
        return (), path


def collect_report(workspace: Any, settings: Any, files: Sequence[Path], *, depth: int = 2) -> ReportData:
    """The report of the result CSVs `files` (one result folder's, usually) on `workspace`."""
    from precision_tool.analysis.compare.compare_runs import workspace_labeller
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.analysis.graphs.op_descs import descs_kept
    from precision_tool.analysis.replay.replay import read_replay
    from precision_tool.analysis.report.step_panel import speaking_runs, step_panel

    index = index_for(workspace)
    # every op of the Build graphs is read next: their kept descriptions, else one whole parse (not a light one
    # first)
    index.load(full=not all(descs_kept(workspace, path) for debug_id in workspace.debug_ids()
                            for path in workspace.build_graph_files(debug_id)))
    notes = [f"graph: cannot read {failure}" for failure in index.failures]
    labeller = workspace_labeller(workspace)
    ops: dict[str, OpFacts] = {}
    background = _background()
    try:
        started = [_run_report(Path(f), workspace, index, settings, labeller, ops, background) for f in files]
        result_dir = Path(files[0]).parent if files else None
        replay, replay_file, problem = read_replay(result_dir)
        if problem:
            notes.append(f"replay: {problem}")
        checks, check_notes = _checks(workspace, index)
        notes += check_notes
        runs = tuple(_with_stats(run, pending) for run, pending in started)
    finally:
        # not waiting: after an error or Ctrl-C the background read is abandoned, not sat out
        background.shutdown(wait=False, cancel_futures=True)
        _PARSED.clear()
    try:
        subgraph = _subgraph(index, runs, depth) if depth > 0 else None
    except (PrecisionToolError, OSError) as exc:
        subgraph = None
        notes.append(f"subgraph: cannot be drawn: {exc}")
    thresholds = {name: float(getattr(settings, name)) for name in dir(settings) if name.startswith("REPLAY_")}
    sources = _sources(workspace, ops, notes)
    from precision_tool.analysis.report.loss_data import loss_panel

    loss = loss_panel(workspace, settings.LOSS_TOLERANCE, notes)
    steps = step_panel(runs)  # several steps: the first diverging one answers, as in `ac`
    ranking, ranking_file = _ranking(workspace, result_dir, notes)
    explored = sorted(p.parent for p in (workspace.temp_dir / "explore").glob("*/explore.json"))
    return ReportData(answer=_answer(speaking_runs(runs, steps), workspace), sources=sources, steps=steps,
                      explore_dir=explored[-1] if explored else None,
                      ranking=ranking, ranking_file=ranking_file,
        workspace=workspace.root, result_dir=result_dir, created=time.strftime("%Y-%m-%d %H:%M:%S"),
        threshold=settings.COSINE_THRESHOLD, thresholds=thresholds, runs=runs, ops=ops, replay=replay,
        replay_file=replay_file, overflows=checks.get("overflows"), fusion=checks.get("fusion"),
        casts=checks.get("casts", ()), similarity=checks.get("similarity"), subgraph=subgraph, notes=tuple(notes),
        loss=loss)

