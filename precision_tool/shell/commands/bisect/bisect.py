"""`bisect precision ["TRAIN CMD"]` and `bisect fusion ["TRAIN CMD"]`: run the captured step round after
round with a changed mixed-precision list or fusion switch file until the smallest change that passes the
check is found (analysis/bisect). Here: the options, a line per round as it ends, the summary.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from precision_tool.errors import CommandFailed, UsageError
from precision_tool.shell.command import Command, CommandParser, Context

KINDS = ("precision", "fusion")

_DESCRIPTION = """\
Finds, by running the captured step round after round, the smallest change with which it passes the check.

bisect precision: the op types to keep in float32 (CANN's modify_mixlist block list). Candidates: the types
the replay calls a precision problem (ac -c, replay --all), then those of the first round's abnormal ops,
then its other float16 types (nearest upstream of its first divergent op first); added cumulatively (by
halving) until the run passes, then those it passes without removed again (by halving). Writes
fix/ops_info.json, merged with what it holds (no entry of yours is lost).

bisect fusion: the fusion passes to switch off, from those that fired in the first round's compile; halving
the set finds a pass alone, or passes that only fail together. Writes fusion/fusion_switch.cfg with them
"off" (your other entries kept).

Each round runs TRAIN CMD (no shell; quoted) with PRECISION_DATA, PRECISION_TOOL_DUMP=True and
$PRECISION_TOOL_MODIFY_MIXLIST / $PRECISION_TOOL_FUSION_SWITCH naming the round's file (tf_config's NPU
configs use them); without TRAIN CMD each round is `train -d sim`, the simulated NPU. The round's new dump
is compared with the golden tensors and judged as ac judges (no first divergent op, no NaN/Inf output; in
bisect precision a first divergent op of a type the replay calls a KERNEL fault ends the search: float32
cannot fix a wrong kernel), or by --outputs' cosine, or by --loss-tol.

Rounds are kept in temp/bisect/<time>/ (settings.json, rounds.csv, round_NNN/ with the round's file, its
comparison CSV, verdict.json, run.log). After Ctrl-C or a crashed round, the same command resumes (--new
starts afresh). A round whose command fails another way than the first failing round stops the search.

examples:
  bisect precision                       the simulated NPU: which op types must stay float32
  bisect precision "python3 train.py"    on the NPU: each round one run of the training script
  bisect fusion                          which fusion pass breaks the run (simulated NPU)
  bisect precision --loss-tol 0.01       judge by the loss instead of the comparison
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("kind", choices=list(KINDS), help="precision: op types kept in float32; fusion: fusion passes off")
    parser.add_argument("command", nargs="?", default=None, metavar="TRAIN CMD",
                        help="the training command, quoted (default: each round is `train -d sim`)")
    parser.add_argument("--outputs", metavar="OP[,OP]", default=None,
                        help="judge these ops' outputs (NPU or golden names) by --cosine instead of ac's judgement")
    parser.add_argument("--cosine", type=float, default=0.99, metavar="C",
                        help="with --outputs: each output's cosine must be above C (default 0.99)")
    parser.add_argument("--loss-tol", type=float, default=None, metavar="T",
                        help="judge by the recorded loss: within T (relative) of the golden loss")
    parser.add_argument("--new", action="store_true", help="start a new search (do not resume an unfinished one)")
    parser.add_argument("--fresh", action="store_true",
                        help="precision: the rounds leave fix/ops_info.json's own entries out (they are still kept "
                             "in the file written at the end)")
    parser.add_argument("--keep-runs", action="store_true",
                        help="keep each simulated round's npu/debug_N (default: removed once judged; the base "
                             "round's stays)")
    parser.add_argument("--python", metavar="PY", help="the Python that runs the simulated rounds (default: this one)")


def _request(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.bisect.bisect_run import BisectRequest
    from precision_tool.analysis.bisect.check import CheckSettings

    if not 0 < args.cosine <= 1:
        raise UsageError(f"bisect --cosine {args.cosine}: give a cosine between 0 and 1, e.g. 0.99")
    if args.loss_tol is not None and args.loss_tol < 0:
        raise UsageError(f"bisect --loss-tol {args.loss_tol}: give a relative tolerance ≥ 0, e.g. 0.01")
    if args.fresh and args.kind != "precision":
        raise UsageError("bisect --fresh: it leaves fix/ops_info.json out of the rounds; give it with bisect precision")
    outputs = tuple(o.strip() for o in (args.outputs or "").split(",") if o.strip())
    if args.outputs is not None and not outputs:
        raise UsageError("bisect --outputs: name at least one op, e.g. --outputs fc2/MatMul,loss/Mean")
    command = None
    if args.command is not None:
        try:
            command = tuple(shlex.split(args.command))
        except ValueError as exc:
            raise UsageError(f"bisect: cannot split the training command {args.command!r} ({exc}); quote it as a "
                             "shell would") from None
        if not command:
            raise UsageError("bisect: the training command is empty; give it quoted, e.g. \"python3 train.py\"")
    check = CheckSettings(outputs, args.cosine, args.loss_tol, ctx.settings.COSINE_THRESHOLD)
    return BisectRequest(args.kind, command, check, new=args.new, fresh=args.fresh, keep_runs=args.keep_runs,
                         python=args.python)


def _preflight(args: argparse.Namespace, ctx: Context) -> None:
    """What every round needs, checked before the first one runs."""
    from precision_tool.errors import WorkspaceError

    ws = ctx.workspace
    if not ws.golden_dir.is_dir() or not any(ws.golden_dir.iterdir()):
        raise WorkspaceError(f"bisect: no golden tensors in {ws.golden_dir}; each round is compared with them: "
                             "`train -d cpu` (or tf_dump) first")
    if args.kind == "fusion" and ws.fusion_switch_file.is_file():
        from precision_tool.capture.fusion_switch import read_fusion_switch

        read_fusion_switch(ws.fusion_switch_file)  # the search ends by writing into it: never over a damaged one
    if args.command is None and not (ws.checkpoint_dir / "manifest.json").is_file():
        raise WorkspaceError(f"bisect: no captured step in {ws.checkpoint_dir} for the simulated rounds; capture "
                             "one with PrecisionTfSession (docs/train.md) or give the training command")


def _bisect(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.bisect.bisect_run import run_bisect
    from precision_tool.render.messages import note_line

    request = _request(args, ctx)
    _preflight(args, ctx)
    runs = args.command or "train -d sim"
    ctx.note(note_line(f"bisect {args.kind}: each round runs `{runs}`; the check: {request.check.describe()}"))

    def on_round(row: Any, reused: bool) -> None:
        members = ", ".join(row.members[:6]) if row.members else "nothing changed"
        if len(row.members) > 6:  # rounds.csv has them all
            members += f" (+{len(row.members) - 6} more)"
        what = "float32" if args.kind == "precision" else "off"
        again = " (from the earlier run)" if reused else f" ({row.seconds:.1f} s)"
        mark = "PASS" if row.outcome == "pass" else row.outcome.upper()
        ctx.note(note_line(f"round {row.number}: {what}: {members} → {mark}: {row.verdict}{again}"))

    try:
        result = run_bisect(ctx.workspace, request, on_round, lambda text: ctx.note(note_line(text)))
    except KeyboardInterrupt:
        ctx.note(note_line(f"bisect {args.kind} interrupted: the finished rounds are kept; run the same bisect "
                           "again to resume (--new starts afresh)"))
        raise
    lines = _summary(args, result)
    if result.outcome in ("found", "base_passes"):
        return lines
    for line in lines:  # no passing set: shown, and the exit status says so
        ctx.note(line)
    raise CommandFailed(f"bisect {args.kind}: no passing set found ({result.outcome}); rounds in {result.folder}")


def _summary(args: argparse.Namespace, result: Any) -> list[Any]:
    from precision_tool.render.messages import note_line, warning_line

    what = "kept in float32" if args.kind == "precision" else "switched off"
    lines: list[Any] = []
    if result.candidates:
        lines.append(note_line(f"candidates, ranked: {', '.join(result.candidates)}"))
    for item, why in result.left_out.items():
        lines.append(note_line(f"not searched: {item} ({why})"))
    rounds = (f"{result.rounds_total} round(s) ({result.rounds_run} run now"
              f"{f', {result.rounds_reused} from the earlier run' if result.rounds_reused else ''}) in "
              f"{result.seconds:.1f} s; a linear search (the base run, then one round per candidate) would have "
              f"needed {result.linear_rounds}")
    if result.outcome == "found":
        lines.append(note_line(f"bisect {args.kind}: {', '.join(result.kept)} {what}: the run passes ({result.message})"))
        for item in result.kept:
            if item in result.effects:
                lines.append(note_line(f"  {item}: {result.effects[item]}"))
        lines.append(note_line(f"written: {result.written}"))
        if args.kind == "precision":
            lines.append(note_line("in the training script's session config: custom_op = "
                                   f"precision_tool.tf_config.keep_in_float32(custom_op, \"{result.written}\")"))
        else:
            lines.append(note_line(f"point the NPU run at it: train -d npu -a \"dump|fusion_switch\" (fusion_switch_file "
                                   f"{result.written})"))
    elif result.outcome == "base_passes":
        lines.append(note_line(f"bisect {args.kind}: {result.message}"))
    else:
        lines.append(warning_line(f"bisect {args.kind}: {result.message}"))
    lines.append(note_line(rounds))
    lines.append(note_line(f"rounds kept in {result.folder}"))
    return lines


def _complete(request: Any) -> list[str]:
    if request.option is None and not request.current.startswith("-"):
        return list(KINDS)
    return []


COMMANDS: list[Command] = [
    Command("bisect", "search the op types to keep in float32 (precision) or the fusion passes to switch off "
                      "(fusion) with which the step passes", _parser, _bisect, completer=_complete,
            description=_DESCRIPTION),
]
