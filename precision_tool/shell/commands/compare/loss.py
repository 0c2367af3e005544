"""`loss`: the golden and NPU runs' loss curves side by side, the step where they part and which step to dump;
`loss import FILE` brings a training log or a CSV into a side's loss record. And `ac`'s loss-curves section.

The records are written by the capture hooks and `train` (capture/records/loss_recorder.py); the comparison is
analysis/checks/loss_curves.py, its tolerance the LOSS_TOLERANCE setting (docs/steps.md#loss-curves).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.errors import UsageError
from precision_tool.shell.arg_types import non_negative_int
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context

SIDES = ("npu", "golden")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0 (a relative difference, e.g. 0.01)")
    return value


def _parser(parser: CommandParser) -> None:
    parser.add_argument("words", nargs="*", metavar="import FILE",
                        help="import FILE (a training log, or a CSV with step and loss columns) into a side's loss "
                             "record; without it: show both curves")
    parser.add_argument("-s", "--side", choices=SIDES, default="npu",
                        help="import: which side the file is (default npu)")
    parser.add_argument("-n", "--debug", type=non_negative_int, metavar="N", default=None,
                        help="the NPU run npu/debug_N (import: default 0; show: the first run with a loss record)")
    parser.add_argument("-r", "--regex", metavar="RE", default=None,
                        help="import: a regular expression for the log's loss lines, with named groups step and "
                             "loss (and optionally grad_norm, loss_scale); default: `step N ... loss X` or "
                             "`loss X ... step N`")
    parser.add_argument("-t", "--tolerance", type=_positive_float, metavar="REL", default=None,
                        help="the relative difference past which the curves part (default: LOSS_TOLERANCE, 0.01)")
    parser.add_argument("-a", "--all", action="store_true", help="show every common step, not just those that matter")


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    if request.option in ("-s", "--side"):
        return [side for side in SIDES if side.startswith(request.current)]
    if request.option is None and not request.current.startswith("-"):
        words = [w for w in request.words[1:] if not w.startswith("-")]
        if not words:
            return ["import"] if "import".startswith(request.current) else []
        if words == ["import"]:
            return complete_paths(request.current)
    return []


def _loss(args: argparse.Namespace, ctx: Context) -> Any:
    if args.words and args.words[0] == "import":
        if len(args.words) != 2:
            raise UsageError("loss import: give one FILE (a training log or a CSV), e.g. `loss import train.log "
                             "--side npu`")
        return _import(Path(args.words[1]).expanduser(), args, ctx)
    if args.words:
        raise UsageError(f"loss: unknown word {args.words[0]!r}; `loss` shows the curves, `loss import FILE` imports one")
    return _show(args, ctx)


def _show(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.loss_curves import compare_workspace, dump_advice
    from precision_tool.render.compare import loss_curves as view

    tolerance = args.tolerance if args.tolerance is not None else ctx.settings.LOSS_TOLERANCE
    records, comparison = compare_workspace(ctx.workspace, tolerance, args.debug)
    if comparison is None:
        missing = view.missing_side_line(records)
        if missing is not None:
            return [missing]
        raise UsageError(f"loss: no loss record in {records.golden_file} nor {records.npu_file}; train with "
                         "PrecisionTfSession, sess_dump, npu_tf_config.loss_hook() or PrecisionLossRecord (both sides), "
                         "or import a training log: `loss import LOG --side golden|npu`")
    if not comparison.differences:
        return [view.no_common_steps_line(comparison), view.sources_line(records)]
    out: list[Any] = [view.all_steps_table(comparison) if args.all else view.curves_table(comparison, 10),
                      view.parting_line(comparison)]
    advice = dump_advice(comparison)
    if advice:
        out.append(view.advice_line(advice))
    out.append(view.sources_line(records))
    return out


def _import(path: Path, args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.errors import FormatError
    from precision_tool.formats.loss_record import (loss_pattern, looks_like_csv, read_loss, read_loss_table,
                                                    read_training_log, write_loss)
    from precision_tool.render.messages import note_line

    if args.side == "golden" and args.debug is not None:
        raise UsageError("loss import: --debug names an NPU run; the golden side has one record (tf/loss.csv)")
    if args.regex is not None:
        try:
            loss_pattern(args.regex)
        except ValueError as error:
            raise UsageError(f"loss import: {error}") from None
    workspace = ctx.workspace
    target = workspace.golden_loss_file if args.side == "golden" else workspace.loss_file(args.debug or 0)
    as_csv = args.regex is None and looks_like_csv(path)
    points = read_loss_table(path) if as_csv else read_training_log(path, args.regex)
    replaced = ""
    if target.is_file():
        try:
            replaced = f" (replacing the {len(read_loss(target))} steps recorded there)"
        except FormatError:
            replaced = " (replacing a damaged record)"
    write_loss(target, points)
    what = "CSV" if as_csv else "log"
    return [note_line(f"loss import: {len(points)} steps ({points[0].step}..{points[-1].step}) of the {what} {path} "
                      f"into {target}{replaced}"),
            note_line("next: `loss` to see both curves and where they part")]


COMMANDS = [
    Command(
        "loss",
        "the golden and NPU loss curves: where they part, which step to dump; `loss import` reads a log or CSV",
        _parser,
        _loss,
        completer=_complete,
        description=("Show the loss the golden run and an NPU run recorded at each step (tf/loss.csv, "
                     "npu/debug_N/loss.csv), the first step where they part by more than LOSS_TOLERANCE "
                     "(relative), the largest difference, and which step to dump to see why (TF_DUMP_STEP, or "
                     "`train` from the checkpoint nearest before it). `loss import FILE` writes a side's record "
                     "from a training log (each line a regular expression with named groups step and loss "
                     "matches) or from a CSV with step and loss columns."),
    )
]


def _ac_loss(args: argparse.Namespace, ctx: Context) -> Any:
    """One or two lines: where the curves part and which step to dump, that they never do, or how to get the
    side that is missing; nothing when no loss record exists."""
    from precision_tool.analysis.checks.loss_curves import compare_workspace, dump_advice
    from precision_tool.render.compare import loss_curves as view

    records, comparison = compare_workspace(ctx.workspace, ctx.settings.LOSS_TOLERANCE)
    if comparison is None:
        return view.missing_side_line(records)
    if not comparison.differences:
        return view.no_common_steps_line(comparison)
    advice = dump_advice(comparison)
    return [view.parting_line(comparison)] + ([view.advice_line(advice)] if advice else [])


# Before the comparison: the curves say which step is worth comparing at all.
AC_SECTIONS = [AcSection("loss curves", _ac_loss, order=7)]
