"""Whole-network comparison commands: `vc` (compare), `vcs` (summary) and `ac`'s comparison section
(`cp`, two tensors, is in pair.py). Handlers parse, ask analysis/network_compare, and render with
render/compare."""

from __future__ import annotations

import argparse
import shlex
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from precision_tool.errors import UsageError
from precision_tool.shell.arg_types import cosine_threshold, non_negative_int, positive_int
from precision_tool.shell.command import AcSection, Command, CommandParser, Context
from precision_tool.shell.commands.compare.source_lines import op_sources
from precision_tool.shell.commands.compare.steps import by_step, golden_per_step, step_all_specs, step_arg, steps_view


# --- vc ------------------------------------------------------------------------------------------
def _vc_parser(parser: CommandParser) -> None:
    parser.add_argument("-lt", "--left", dest="npu_dir", metavar="NPU_DIR",
                        help="NPU dump folder (default: the newest npu/debug_0/dump/<time>)")
    parser.add_argument("-rt", "--right", dest="golden_dir", metavar="GOLDEN_DIR",
                        help="golden .npy folder (default tf/dump), or another NPU dump folder for NPU vs NPU")
    parser.add_argument("-g", "--graph", dest="graph", metavar="GRAPH",
                        help="compiled graph (ge_proto *_Build.txt or atc JSON); without it NPU dumps are "
                             "matched to golden tensors by name only")
    parser.add_argument("-j", dest="workers", type=positive_int, metavar="N",
                        help="worker processes (default: WORKERS setting, 0 = one per core)")
    parser.add_argument("--scheduler", dest="scheduler", metavar="tcp://HOST:PORT",
                        help="run the comparison on this Dask cluster (default: DASK_SCHEDULER setting, empty = "
                             "the local pool); workers read the dumps from a filesystem they share with you")
    parser.add_argument("--across-ranks", dest="across_ranks", action="store_true",
                        help="a dump with one folder per device: compare every rank with rank 0 (NPU vs NPU) and "
                             "name the ranks and ops that differ where all ranks must agree (after an all-reduce)")
    parser.add_argument("--step", dest="step", type=step_arg, metavar="N|all",
                        help="compare dump iteration N (the <iteration> folder; default: the lowest one); 'all': "
                             "every iteration against its golden tf/dump/step_<N>/, one CSV per step "
                             "(docs/steps.md)")
    parser.add_argument("--resume", action="store_true",
                        help="finish the newest interrupted comparison instead of starting a new one")
    parser.add_argument("-o", dest="out_dir", metavar="DIR",
                        help="write the result folder <time>/ under DIR instead of temp/vector_compare (for a "
                             "workspace you cannot write; `vcs -f DIR` reads it, `vc --resume -o DIR` finishes it)")
    parser.add_argument("--backend", choices=("auto", "native", "cann"), default="auto",
                        help="auto: CANN's msaccucmp when CMD_ROOT_PATH holds it, else ours (default auto)")
    parser.add_argument("-overflow_detection", "--overflow-detection", dest="overflow_detection",
                        action="store_true",
                        help="add msaccucmp's OverFlow column after Shape: YES for an fp16 NPU tensor holding "
                             "|x| >= 65504, inf or NaN, and for the outputs of ops the run's Opdebug records "
                             "(overflow/dump) name; NO for other fp16 tensors; NaN for other types")
    picked = parser.add_mutually_exclusive_group()
    picked.add_argument("-r", "--range", dest="op_range", metavar="START,END,STEP",
                        help="compare only the graph ops whose id is START, START+STEP, ... up to END (-1: the "
                             "last op; an empty field keeps its default 1,-1,1); adds msaccucmp's OpSequence "
                             "column (the op's id) after Index")
    picked.add_argument("-s", "--select", dest="op_select", metavar="ID,ID,...",
                        help="compare only the graph ops of these ids (as `ni` shows them); adds OpSequence")


@contextmanager
def _progress(ctx: Context) -> Iterator[Any]:
    from precision_tool.render.progress import run_updater

    with ctx.progress() as bar:
        yield run_updater(bar)


def run_vc(args: argparse.Namespace, ctx: Context) -> list[Any]:
    """Run the comparison `args` describe; returns the CompareRuns."""
    from precision_tool.analysis.compare.engine.compare_engine import CompareInterrupted
    from precision_tool.backends import cann
    from precision_tool.render.messages import warning_line

    workers = getattr(args, "workers", None) or ctx.settings.workers
    threshold = ctx.settings.COSINE_THRESHOLD
    backend = getattr(args, "backend", "auto")
    command = None
    if backend != "native":
        command = cann.find_msaccucmp(ctx.settings.CMD_ROOT_PATH)
        if backend == "cann" and command is None:
            from precision_tool.errors import WorkspaceError

            raise WorkspaceError(
                f"--backend cann: no msaccucmp.py under CMD_ROOT_PATH {ctx.settings.CMD_ROOT_PATH}; "
                "set CMD_ROOT_PATH in config.py or use --backend native")

    def warn(text: str) -> None:
        ctx.note(warning_line(text))

    try:
        return _run_vc(args, ctx, workers, threshold, command, warn)
    except CompareInterrupted as exc:
        # Ctrl-C once rows were written: say exactly what was kept, each path on its own line.
        from precision_tool.errors import CommandInterrupted
        from precision_tool.render.compare.compare import interrupted_lines

        out_dir = getattr(args, "out_dir", None)
        ctx.note(interrupted_lines(exc, "vc --resume" + (f" -o {shlex.quote(out_dir)}" if out_dir else "")))
        raise CommandInterrupted("") from None
    except KeyboardInterrupt:
        # Ctrl-C while planning (graphs, folder listings): nothing was compared yet; say so in one line.
        # (Once rows are written the engine turns Ctrl-C into CompareInterrupted naming the .partial CSV.)
        from precision_tool.errors import CommandInterrupted

        raise CommandInterrupted("cancelled before any rows were compared") from None


def results_root(args: argparse.Namespace, ctx: Context) -> Path:
    """Where result folders go: `-o DIR`, else the workspace's temp/vector_compare."""
    out_dir = getattr(args, "out_dir", None)
    from precision_tool.workspace import absolute_path

    return absolute_path(out_dir) if out_dir else ctx.workspace.vector_compare_dir


def _run_vc(args: argparse.Namespace, ctx: Context, workers: int, threshold: float, command: Any,
            warn: Any) -> list[Any]:
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.analysis.compare.compare_runs import workspace_labeller
    from precision_tool.analysis.results.result_folders import RESULTS_WRITE_HINT
    from precision_tool.workspace import new_result_dir
    from precision_tool.render.messages import note_line

    ws = ctx.workspace
    root = results_root(args, ctx)
    scheduler = getattr(args, "scheduler", None) or ctx.settings.DASK_SCHEDULER
    if scheduler and command is not None and getattr(args, "backend", "auto") == "cann":
        raise UsageError("vc --backend cann runs CANN's msaccucmp on this machine; --scheduler needs --backend "
                         "native (or leave --backend out)")
    if scheduler:
        command = None  # the cluster runs our engine
    with _progress(ctx) as progress, _executor(scheduler, ctx) as executor:
        if getattr(args, "resume", False):
            return nc.resume_workspace(ws, ctx.settings, workers=workers, progress=progress, on_warning=warn,
                                       root=root, executor=executor)
        npu_dir = getattr(args, "npu_dir", None)
        golden_dir = getattr(args, "golden_dir", None)
        graph = getattr(args, "graph", None)
        step = getattr(args, "step", None)
        notes: list[str] = []
        across = getattr(args, "across_ranks", False)
        specs = step_all_specs(ws, npu_dir, golden_dir, graph, notes, across, resolve_graph_file) if step == "all" \
            else None  # --step all: every step (docs/steps.md); None: one iteration, compared as plain vc
        step = None if step == "all" else step
        if specs is None and npu_dir is None and golden_dir is None and graph is None:
            specs = nc.workspace_specs(ws, "{stamp}", notes, step, across_ranks=across)
        elif specs is None and across:
            raise UsageError("vc --across-ranks compares the ranks of the workspace's newest dump; leave out "
                             "-lt/-rt/-g (or compare two rank folders with -lt DIR -rt DIR)")
        elif specs is None:
            specs = _explicit_specs(ws, npu_dir, golden_dir, graph, step, notes)
        specs = _with_columns(specs, args, ws, notes)
        for note in notes:
            warn(note)
        result_dir = new_result_dir(root, getattr(args, "write_hint", None) or RESULTS_WRITE_HINT)
        specs = [nc.RunSpec(**{**s.__dict__, "csv_name": s.csv_name.replace("{stamp}", result_dir.name)})
                 for s in specs]
        if command is not None and _wants_columns(args):
            if getattr(args, "backend", "auto") == "cann":
                raise UsageError("vc --backend cann: -overflow_detection, -r and -s are not passed on to msaccucmp; "
                                 "use --backend native (or leave --backend out)")
            command = None  # auto: the native engine writes these columns
        if command is not None:
            ctx.note(note_line(f"running CANN's msaccucmp ({' '.join(command)})"))
            from precision_tool.backends.cann import run_specs_cann

            return run_specs_cann(specs, result_dir, command, threshold=threshold, labels=workspace_labeller(ws))
        return nc.run_specs(specs, result_dir, workers=workers, threshold=threshold, progress=progress,
                            on_warning=warn, labels=workspace_labeller(ws), executor=executor,
                            cache_dir=ws.cache_dir)


@contextmanager
def _executor(scheduler: str, ctx: Context) -> Iterator[Any]:
    """None (the local pool) without a scheduler; else a DaskExecutor connected for the whole command."""
    if not scheduler:
        yield None
        return
    from precision_tool.analysis.compare.engine.dask_executor import connect
    from precision_tool.render.messages import note_line

    with connect(scheduler) as executor:
        ctx.note(note_line(f"comparing on the Dask cluster at {scheduler} ({executor.describe()})"))
        yield executor


def _wants_columns(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "overflow_detection", False) or getattr(args, "op_range", None) is not None
                or getattr(args, "op_select", None) is not None)


def _with_columns(specs: list[Any], args: argparse.Namespace, ws: Any, notes: list[str]) -> list[Any]:
    """The runs with vc's -overflow_detection / -r / -s (recorded in run.json, so --resume keeps them).
    -r/-s pick graph ops by id: runs matched by name (NPU vs NPU) are left out, with a note."""
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.errors import UsageError

    if not _wants_columns(args):
        return specs
    changes: dict[str, Any] = {}
    if getattr(args, "overflow_detection", False):
        changes["overflow_detection"] = True
        newest = ws.newest_overflow_dir()  # the newest overflow capture, as ac's overflow check reads
        if newest is not None:
            changes["overflow_dir"] = str(newest)
    if getattr(args, "op_range", None) is not None or getattr(args, "op_select", None) is not None:
        if all(s.graph_path is None for s in specs):
            raise UsageError("vc -r/-s pick graph ops by their id: give the compiled graph with -g GRAPH "
                             "(the run's *_Build.txt or atc JSON)")
        for spec in specs:
            if spec.graph_path is None:
                notes.append(f"{spec.label}: not compared: -r/-s pick ops by graph id and this run is matched "
                             "by op name (vc without -r/-s compares it)")
        specs = [s for s in specs if s.graph_path is not None]
        changes["op_range"] = getattr(args, "op_range", None)
        changes["op_select"] = getattr(args, "op_select", None)
    return [nc.RunSpec(**{**s.__dict__, **changes}) for s in specs]


def _explicit_specs(ws: Any, npu_dir: str | None, golden_dir: str | None, graph: str | None,
                    step: int | None, notes: list[str]) -> list[Any]:
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.analysis.compare.workspace_runs import golden_for_iteration
    from precision_tool.errors import WorkspaceError
    from precision_tool.workspace import absolute_path

    # absolute: run.json records them for vcs and --resume, and Dask workers run in other folders
    left = absolute_path(npu_dir) if npu_dir else ws.newest_dump_dir(0)
    if left is None:
        raise WorkspaceError(f"no NPU dumps in {ws.dump_root(0)}; pass the dump folder with -lt DIR")
    right = absolute_path(golden_dir) if golden_dir else golden_for_iteration(ws.golden_dir, [left], step)
    if not right.is_dir():
        hint = f" ({ws.golden_hint()})" if not golden_dir else ""
        raise WorkspaceError(f"{right} is not a folder; pass golden tensors (or a second NPU dump) with -rt DIR{hint}")
    if not golden_dir and not nc.has_golden_files(right):  # the workspace's own tf/dump, still empty
        raise WorkspaceError(f"no golden tensors in {right}; {ws.golden_hint()} (or pass a folder with -rt DIR)")
    if graph is not None:
        resolved = str(resolve_graph_file(ws, graph, ws.run_of(left)))
        if resolved != str(absolute_path(graph)):
            notes.append(f"-g {graph}: using {resolved}")
        graph = resolved
    if nc.has_golden_files(right):
        debug_id = ws.run_of(left) if graph is None and left.is_dir() else None
        if debug_id is not None:
            # a dump of this workspace: match through its run's Build graph(s), as plain `vc` does
            found = nc.graph_specs(ws, debug_id, left, right, "{stamp}", notes, step)
            if found:
                used = sorted({Path(s.graph_path).name for s in found})
                notes.append(f"-lt is a dump of npu/debug_{debug_id}: matching through its Build graph "
                             f"{', '.join(used)} (-g GRAPH picks another)")
                return found
        chosen = nc.choose_step([left], step, notes, str(left))
        npu = "SIMULATED NPU" if left.is_dir() and ws.is_simulated(ws.run_of(left)) else "NPU"
        return [nc.RunSpec(f"{npu} vs golden" if graph else f"{npu} vs golden (by name)", str(left), "result_{stamp}.csv",
                           golden_dir=str(right), graph_path=str(absolute_path(graph)) if graph else None,
                           step=chosen)]
    chosen = nc.common_step(left, right, step, notes)
    return [nc.RunSpec("NPU vs NPU", str(left), "result_{stamp}.csv", right_dir=str(right), step=chosen)]


def resolve_graph_file(ws: Any, graph: str, prefer: int | None = None) -> Path:
    """-g GRAPH: a path, or a bare file name looked up in the workspace's npu/debug_*/graph/ folders
    (debug_<prefer> first: the run whose dump is compared)."""
    from precision_tool.errors import WorkspaceError
    from precision_tool.workspace import absolute_path

    path = absolute_path(graph)
    if path.is_dir():
        raise WorkspaceError(f"-g {graph} is a folder; give a graph file (ge_proto *_Build.txt or its JSON)")
    if path.is_file():
        return path
    if path.name == graph:
        if prefer is not None and (ws.graph_dir(prefer) / graph).is_file():
            return ws.graph_dir(prefer) / graph
        found = [ws.graph_dir(n) / graph for n in ws.debug_ids() if (ws.graph_dir(n) / graph).is_file()]
        if len(found) == 1 or (found and len({f.resolve() for f in found}) == 1):
            return found[0]
        if found:
            raise WorkspaceError(f"graph file {graph} is in several runs ({', '.join(str(f) for f in found)}); "
                                 "give its path with -g")
    folders = ", ".join(str(ws.graph_dir(n)) for n in ws.debug_ids()) or str(ws.graph_dir(0))
    raise WorkspaceError(f"graph file {graph} does not exist (bare names are looked up in {folders}); "
                         "give a *_Build.txt path with -g (`ls -g` lists the graphs)")


def unreadable_report(runs: list[Any]) -> list[Any]:
    """The files the runs could not read: the whole list kept in the result folder, the first shown."""
    from precision_tool.analysis.results.result_folders import write_unreadable_list
    from precision_tool.render.compare.compare import unreadable_lines

    return unreadable_lines(runs, write_unreadable_list(runs[0].csv_path.parent, runs) if runs else None)


def _vc(args: argparse.Namespace, ctx: Context) -> list[Any]:
    from precision_tool.analysis.ranks import overview_of
    from precision_tool.render.compare.compare import result_view, run_lines
    from precision_tool.render.console import shared_width
    from precision_tool.render.compare.ranks import overview_view, ranks_shown

    runs = run_vc(args, ctx)
    width = shared_width(ctx.console)
    shown: list[Any] = []
    overview = overview_of([(run.spec, run.summary) for run in runs], ctx.workspace)
    # many ranks: the full view of the rank that went wrong first, then one row per rank
    listed = ranks_shown(overview, [run.spec for run in runs])
    steps, listed = by_step([(run.spec, run.summary) for run in runs], listed)
    sources = op_sources(ctx)
    for run in (r for r, (view, _line) in zip(runs, listed) if view):
        shown.extend(result_view(run.summary, 3, run.label, width, npu_vs_npu=run.spec.npu_vs_npu,
                                 sources=sources))
    if overview is not None:
        shown.extend(overview_view(overview))
    shown.extend(run_lines(runs, [line for _view, line in listed]))
    shown.extend(steps_view(steps))
    from precision_tool.shell.commands.compare.same_step import vc_same_step_line

    other_step = vc_same_step_line(runs, ctx)  # other inputs or weights: no op of the results can be blamed yet
    if other_step is not None:
        shown.append(other_step)
    bad = unreadable_report(runs)
    if bad:
        # show everything, then exit 1: some rows could not be compared because their files are unreadable
        from precision_tool.errors import CommandFailed

        for part in shown + bad:
            ctx.note(part)
        raise CommandFailed("")
    return shown


# --- vcs -----------------------------------------------------------------------------------------
def _vcs_parser(parser: CommandParser) -> None:
    parser.add_argument("-f", "--file", dest="path", metavar="FILE|DIR",
                        help="result CSV or folder (default: the newest vector_compare result folder)")
    parser.add_argument("-c", "--cos-sim", dest="threshold", type=cosine_threshold, metavar="THRESHOLD",
                        help="cosine at or below this is abnormal (default: COSINE_THRESHOLD, 0.98)")
    # the original tool's spelling, still accepted (not listed: one name per option in the help)
    parser.add_argument("--cos_sim", dest="threshold", type=cosine_threshold, help=argparse.SUPPRESS)
    parser.add_argument("-l", "--limit", dest="limit", type=positive_int, default=3, metavar="LIMIT",
                        help="how many abnormal ops to show (default 3)")
    parser.add_argument("--overflow", action="store_true",
                        help="show the ops whose OverFlow cell is YES instead of the abnormal ones (the CSV needs "
                             "the OverFlow column: vc -overflow_detection, or msaccucmp's)")
    parser.add_argument("--rank", dest="rank", type=non_negative_int, metavar="N",
                        help="a multi-device result: show rank N's results in full (default: the rank summary and "
                             "the rank that went wrong first)")
    parser.add_argument("--source", action="store_true",
                        help="in each op's panel, the line of the user's code that made it (recorded by the golden "
                             "run's tf_config.sess_dump / estimator_dump)")


def _vcs(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.render.compare.compare import result_view
    from precision_tool.shell.commands.compare.result_summaries import summaries
    from precision_tool.render.console import Paged, shared_width

    threshold = args.threshold if args.threshold is not None else ctx.settings.COSINE_THRESHOLD
    width = shared_width(ctx.console)
    found = summaries(ctx, args.path, threshold)
    if getattr(args, "overflow", False):
        missing = [s.summary.csv_path if s.stats_rows else s.summary.path for s in found
                   if not getattr(s.summary, "overflow_column", False)]
        if len(missing) == len(found):
            from precision_tool.errors import UsageError

            raise UsageError(f"vcs --overflow: {missing[0]} has no OverFlow column; run `vc -overflow_detection` "
                             "(or msaccucmp with -overflow_detection) to write one")
        found = [s for s in found if getattr(s.summary, "overflow_column", False)]
    found, overview, listed = _by_rank(found, getattr(args, "rank", None), ctx)
    steps, listed = by_step([(s.spec, s.summary) for s in found], listed)
    # `vcs -l 50` is taller than a terminal: the interactive shell pages it (as git does)
    sources = op_sources(ctx)
    views: list[Any] = [result_view(s.summary, args.limit, s.label, width, overflow_only=getattr(args, "overflow", False),
                                    npu_vs_npu=s.npu_vs_npu, stats_rows=s.stats_rows, sources=sources,
                                    source_rows=args.source)
                        for s, (view, _line) in zip(found, listed) if view]
    if overview is not None:
        from precision_tool.render.compare.ranks import overview_view

        views.extend(overview_view(overview))
    views.extend(steps_view(steps))
    return Paged(views)


def _by_rank(found: list[Any], rank: int | None, ctx: Context) -> tuple[list[Any], Any, list[tuple[bool, bool]]]:
    """The results to show of a multi-device comparison: `rank`'s alone (all in full), else every result with
    the rank overview and which results get a full view (render.ranks.ranks_shown)."""
    from precision_tool.analysis.ranks import overview_of
    from precision_tool.render.compare.ranks import ranks_shown

    if rank is not None:
        ranks = sorted({s.spec.rank for s in found if s.spec is not None and s.spec.rank is not None})
        if not ranks:
            raise UsageError(f"--rank {rank}: these results are of a single-device dump (no rank folders)")
        found = [s for s in found if s.spec is not None and s.spec.rank == rank]
        if not found:
            raise UsageError(f"--rank {rank}: no result of rank {rank}; the results hold ranks "
                             f"{', '.join(map(str, ranks))}")
        return found, None, [(True, True)] * len(found)
    pairs = [(s.spec, s.summary) for s in found if s.spec is not None and not s.stats_rows]
    overview = overview_of(pairs, ctx.workspace)
    return found, overview, ranks_shown(overview, [s.spec for s in found])


def _complete_path(request: Any) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    return list(complete_paths(request.current))


# --- ac ------------------------------------------------------------------------------------------
def _compared(summary: Any) -> int:
    """How many tensors a result compared (a tensor compare's CompareSummary or a StatsSummary)."""
    return summary.compared if hasattr(summary, "compared") else summary.tensors_compared


def _ac_section(args: argparse.Namespace, ctx: Context) -> Any:
    """`ac`'s comparison section (`-c` runs `vc` first); what it found is left on `args` for the replay and
    answer sections."""
    from precision_tool.analysis.checks.graph_checks import other_run_of
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.render.compare.compare import npu_pair_view, result_view
    from precision_tool.render.console import shared_width
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.compare.result_summaries import run_summaries, summaries

    if getattr(args, "compare", False):
        hint = "run `vc -o DIR` to write the results to another folder (`vcs -f DIR` reads them)"
        # several ranks: each against its golden and rank 0; golden per step: every step (vc --step all)
        step = "all" if golden_per_step(ctx) else None
        runs = run_vc(argparse.Namespace(backend="auto", write_hint=hint, across_ranks=False if step else "also",
                                         step=step), ctx)
        for line in unreadable_report(runs):
            ctx.note(line)
        blind = [run.label for run in runs if run.unreadable and not _compared(run.summary)]
        if blind:  # every file a run needed was unreadable: not an all-clear
            from precision_tool.errors import CommandFailed

            raise CommandFailed(f"nothing could be compared in {', '.join(blind)}: the files it needed could not "
                                "be read (listed above)")
    elif ctx.workspace.newest_result_dir() is None:
        return note_line("comparison: no results yet; `ac -c` (or `vc`) runs one")
    # the runs just made hold their summaries: the CSVs need not be read and summarised a second time
    found = (run_summaries(runs) if getattr(args, "compare", False) else None) \
        or summaries(ctx, None, ctx.settings.COSINE_THRESHOLD)
    args.compared = found  # the replay and answer sections judge these same results (no second read of the CSVs)
    width = shared_width(ctx.console)
    found, overview, listed = _by_rank(found, None, ctx)
    args.rank_overview = overview
    steps, listed = by_step([(s.spec, s.summary) for s in found], listed)
    args.step_overview = steps  # the answer names the first diverging step too
    shown: list[Any] = []
    sources = op_sources(ctx)
    args.op_sources = sources  # the answer section names the same lines (the record read once)
    for s, (view, _line) in zip(found, listed):
        if not view:
            continue
        if s.npu_vs_npu and not s.stats_rows:
            # a second NPU run: what it is and where it first differs; `vcs` shows its panels
            other = other_run_of(ctx.workspace, index_for(ctx.workspace), s.spec)
            shown.extend(npu_pair_view(s.summary, s.label, other))
            continue
        shown.extend(result_view(s.summary, args.limit, s.label, width, npu_vs_npu=s.npu_vs_npu,
                                 sources=sources))
    if overview is not None:
        from precision_tool.render.compare.ranks import overview_view

        shown.extend(overview_view(overview))
    shown.extend(steps_view(steps))
    return shown


COMMANDS = [
    Command("vc", "compare the whole network: NPU dumps vs golden tensors (or vs another NPU run)",
            _vc_parser, _vc, completer=_complete_path, aliases=("vector_compare",),
            # one paragraph, no hard line breaks: the help formatter wraps it to the terminal
            description="Compare every NPU op with its golden tensors through the compiled graph; rows go to "
                        "temp/vector_compare/<time>/result_<time>.csv (msaccucmp's format; -o DIR writes "
                        "DIR/<time>/ instead). With no options: the newest npu/debug_0 dump vs tf/dump through "
                        "debug_0's Build graphs, and debug_0 vs debug_1 when both exist; one dump iteration (the "
                        "lowest, or --step N), never several mixed; --step all compares each step with its golden "
                        "tf/dump/step_<N>/ and names the step that diverges first. Ctrl-C keeps the rows so far "
                        "(vc --resume finishes them)."),
    Command("vcs", "summarise comparison results: abnormal ops and the first divergent op",
            _vcs_parser, _vcs, completer=_complete_path),
]

AC_SECTIONS = [AcSection("comparison", _ac_section, order=10)]
