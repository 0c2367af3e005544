"""`replay OP [OP ...]` (and `ni -c OP`): replay NPU ops on CPU with their own dumped inputs and say why
they differ; and `ac`'s replay section, which replays the suspects of the newest comparison.

TensorFlow runs in one child process per command (analysis/replay/replay.py); the shell never imports it.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Replay each op on CPU from its NPU dump: its own inputs, the TensorFlow ops it was made from (its
_datadump_original_op_names, with their attributes, from the golden run's GraphDef; a fused op replays its
whole original subgraph; an inserted Cast/TransData replays by numpy), run in float32 and in the NPU's
dtypes. Then one verdict per op:
  kernel     disagrees with TensorFlow in float32 and float16 on its own inputs;
             writes fix/repro_debug_N_<id>_<op>/, a reproducer for the vendor
  precision  agrees with the float16 replay only: float16 loses the answer;
             writes fix/ops_info.json (modify_mixlist: the op type kept in float32)
  inherited  computes correctly; its inputs already differ from golden;
             names the op to look at next
  ok         agrees with TensorFlow, and its inputs with golden
  cannot replay, and why (no dump, no GraphDef node, no CPU kernel, ...)
Results: temp/replay/<time>/replay.csv (the ten metrics per output and reference) and replay.json.
Tolerances: settings REPLAY_FLOAT16_COSINE, REPLAY_FLOAT16_ERROR, ... (docs/replay.md).

`replay --all` replays every compute op of the run (in parallel: -j TensorFlow processes, or Dask tasks
with --scheduler / DASK_SCHEDULER) and ranks them by their own error: the NPU output's distance from the
float32 replay on the same inputs, divided by what the op's dtype does there (the float16 replay's own
error for a float16 op), so the op that goes wrong by itself stands out from the many that only inherit.
Results: temp/replay/<time>/ranked.csv (worst first; the ten metrics against the float32 replay, the
verdict columns) beside replay.csv. `ac -c --precheck` does it after the comparison and says, for each
abnormal op, whether its own error explains it (docs/replay.md, "Every op on its own inputs").

examples:
  replay bn2/FusedBatchNormV3
  replay 16 48                  ops by id
  ni -c gradients/fc2/MatMul_grad/MatMul_1
  replay --all                  every op of npu/debug_0, ranked
  replay --all -d 1 -l 20 -j 4  npu/debug_1, the 20 worst, 4 processes
"""


def _parser(parser: CommandParser) -> None:
    from precision_tool.shell.arg_types import positive_int

    parser.add_argument("ops", nargs="*", metavar="OP", help="op names (as `ni` takes them) or op ids")
    parser.add_argument("--all", dest="all_ops", action="store_true",
                        help="every compute op of the run, ranked by its own error (instead of OP ...)")
    parser.add_argument("-l", "--limit", type=positive_int, default=10, metavar="N",
                        help="with --all: how many of the worst ops the table shows (default 10)")
    parser.add_argument("-j", dest="workers", type=positive_int, metavar="N", default=None,
                        help="with --all: TensorFlow processes at once (default: the WORKERS setting, the cores)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                        help="with --all: replay as tasks of this Dask cluster (default: the DASK_SCHEDULER setting; "
                             "none: processes on this machine); its workers must see the workspace at the same path")
    _common_options(parser)


def _common_options(parser: CommandParser) -> None:
    parser.add_argument("-g", "--graph", help="only graphs whose name (or file name) contains this")
    parser.add_argument("-d", "--debug", type=int, metavar="N", default=None,
                        help="the NPU run npu/debug_N to replay (default: the lowest that has the op)")
    parser.add_argument("--step", type=_step, metavar="N", default=None,
                        help="a dump of several steps: replay from dump iteration N and its golden step "
                             "tf/dump/step_N (default: each op's newest dump and the flat tf/dump)")
    parser.add_argument("--python", metavar="PY",
                        help="the Python that runs TensorFlow (default: this one), e.g. a python3.7 with TF 1.15")
    parser.add_argument("-q", "--quiet", action="store_true", help="the verdicts only, without the evidence")


def _step(text: str) -> int:
    from precision_tool.shell.arg_types import non_negative_int

    return non_negative_int(text)


def _replay(args: argparse.Namespace, ctx: Context) -> Any:
    if args.all_ops:
        if args.ops:
            raise UsageError("replay: give op names or --all, not both")
        from precision_tool.shell.commands.compare.replay_all import replay_all_command

        return replay_all_command(args, ctx)
    if not args.ops:
        raise UsageError("replay: name at least one op to replay (replay OP [OP ...]), or every one: replay --all")
    for option, given in (("-j", args.workers), ("--scheduler", args.scheduler)):
        if given is not None:
            raise UsageError(f"replay: {option} goes with --all (one process replays named ops)")
    return replay_names(list(args.ops), args, ctx)


def replay_names(names: list[str], args: argparse.Namespace, ctx: Context, command: str = "replay") -> Any:
    """Resolve the op names as `ni` does, replay them in one child, show the verdicts."""
    from precision_tool.analysis.ops.op_lookup import resolve
    from precision_tool.shell.commands.op_names import ambiguous_text, load_index, not_found_message

    index = load_index(ctx, args.graph)
    entries = []
    for name in names:
        lookup = resolve(index, name, args.graph)
        if not lookup.names:
            raise WorkspaceError(f"{command}: {not_found_message(lookup)}")
        if lookup.ambiguous:
            ctx.note(ambiguous_text(lookup))
            raise UsageError(f"{command}: {name!r} names several ops; give one of the names above")
        found = index.find(lookup.names[0], args.graph)
        if args.debug is not None:
            found = [e for e in found if e.debug_id == args.debug]
        if not found:
            where = f"npu/debug_{args.debug}" if args.debug is not None else "any Build graph"
            raise WorkspaceError(f"{command}: {lookup.names[0]} is not in {where}")
        first = min(e.debug_id for e in found)
        chosen = next(e for e in found if e.debug_id == first)
        if chosen not in entries:  # `replay 16 bn2/FusedBatchNormV3` names one op twice: replayed once
            entries.append(chosen)
    return _run(index, entries, ctx, args, folder=None, command=command, step=getattr(args, "step", None))


def _run(index: Any, entries: list[Any], ctx: Context, args: argparse.Namespace, folder: Any,
         summary: Any = None, command: str = "", step: int | None = None) -> list[Any]:
    """Replay `entries` into `folder` and return what to show; a replay that failed (not a finding about the op)
    is shown, then raised as CommandFailed (`command`: the name to start the message with; `ac` adds its own)."""
    import time

    from precision_tool.analysis.replay.replay import replay_ops
    from precision_tool.render.messages import note_line
    from precision_tool.render.replay import run_lines

    if folder is None:
        folder = ctx.workspace.temp_dir / "replay" / time.strftime("%Y%m%d%H%M%S")
    ctx.note(note_line(f"replaying {len(entries)} op(s) on CPU (one TensorFlow process)"))
    run = replay_ops(index, entries, folder, ctx.settings, summary=summary, python=getattr(args, "python", None),
                     step=step)
    # `ac --replay N` over many ops: the findings in full, the inherited ones counted
    lines = run_lines(run, evidence=not getattr(args, "quiet", False), brief=summary is not None)
    failed = [v for v in run.verdicts if v.failed]
    if failed:
        # the replay itself failed, which is no finding about the op: show everything, then exit 1
        from precision_tool.errors import CommandFailed

        for line in lines:
            ctx.note(line)
        names = ", ".join(v.case.op_name for v in failed[:3]) + (" ..." if len(failed) > 3 else "")
        raise CommandFailed(f"{command + ': ' if command else ''}{len(failed)} of {len(run.verdicts)} op(s) could not be replayed because "
                            f"the replay failed ({names}); the reason is above each")
    return lines


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.commands.op_names import complete_graph_names, complete_op_names

    if request.option in ("-g", "--graph"):
        return complete_graph_names(request)
    if request.option is None:
        return complete_op_names(request)
    return []


# --- ac --------------------------------------------------------------------------------------------------
def suspects(summary: Any, count: int | None) -> list[Any]:
    """The ops `ac` replays: the first `count` abnormal ops, or by default those the answer names (the first
    divergent op and the first op to produce Inf/NaN)."""
    from precision_tool.analysis.report.answer import suspects_of

    if count is not None:
        return list(summary.abnormal_ops[:count])
    return [op for _role, op in suspects_of(summary)]


def _ac_replay(args: argparse.Namespace, ctx: Context) -> Any:
    """After the comparison section: replay its suspects, NPU vs golden runs only."""
    from pathlib import Path

    from precision_tool.analysis.compare.compare_runs import result_spec
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.analysis.replay.replay import tensorflow_missing
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.compare.result_summaries import summaries

    count = getattr(args, "replay", None)
    if count == 0 or not (getattr(args, "compare", False) or count is not None):
        return None
    if getattr(args, "precheck", False):
        return None  # the precheck section replays every op, these suspects among them
    if ctx.workspace.newest_result_dir() is None:
        return None
    out: list[Any] = []
    found = getattr(args, "compared", None)  # what the comparison section just showed
    found = list(found if found is not None else summaries(ctx, None, ctx.settings.COSINE_THRESHOLD))
    overview = getattr(args, "rank_overview", None) or _overview(found, ctx)  # the comparison section's
    first_rank = overview.first_rank if overview is not None else None
    steps = getattr(args, "step_overview", None)  # vc --step all: the first diverging step is replayed
    first_step = steps.first.step if steps is not None and steps.first is not None else None
    for shown in found:
        if first_rank is not None and (shown.spec is None or shown.spec.rank != first_rank):
            continue  # a multi-device dump: the rank that went wrong first speaks for the others
        if first_step is not None and shown.spec is not None and shown.spec.step != first_step:
            continue
        summary = shown.summary
        if shown.npu_vs_npu or not hasattr(summary, "abnormal_ops"):
            continue  # NPU vs NPU has no golden to judge by; a statistics compare has no tensors
        ops = suspects(summary, count)
        if not ops:
            continue
        missing = tensorflow_missing()
        if missing:
            out.append(note_line(f"replay: not run: {missing}"))
            continue
        spec = result_spec(Path(summary.path))
        debug_id = ctx.workspace.run_of(Path(spec.npu_dir)) if spec is not None else None
        index = index_for(ctx.workspace)
        index.load()
        entries = []
        for op in ops:
            matches = [e for e in index.find(op.npu_op) if debug_id is None or e.debug_id == debug_id]
            if matches:
                entries.append(matches[0])
        if entries:
            folder = Path(summary.path).parent / "replay"
            out += _run(index, entries, ctx, args, folder, summary=summary,
                        step=spec.step if spec is not None and first_step is not None else None)
    return out or None


def _overview(found: list[Any], ctx: Context) -> Any:
    """The rank overview of a multi-device comparison (None for one device)."""
    from precision_tool.analysis.ranks import overview_of

    return overview_of([(s.spec, s.summary) for s in found if s.spec is not None and hasattr(s.summary, "abnormal_ops")],
                       ctx.workspace)


COMMANDS = [
    Command("replay", "replay ops on CPU with their NPU inputs: kernel, precision or inherited, and the fix",
            _parser, _replay, completer=_complete, description=_DESCRIPTION),
]

AC_SECTIONS = [AcSection("replay", _ac_replay, order=15)]
