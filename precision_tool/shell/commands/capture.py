"""`npu_dump "CMD"` and `npu_overflow "CMD"`: run a training command with the original's capture flags;
`config-diff A B` and `ac`'s run-config section: the captures' recorded settings compared.

The flags (PRECISION_TOOL_DUMP=True / PRECISION_TOOL_OVERFLOW=True, the other unset) switch configs built
with `action=None` in tf_config to dumping or to overflow detection, so changing mode is no script edit.
The command's output streams to the terminal and its exit status is ours (a one-shot exits with it).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

from precision_tool.errors import CommandFailed
from precision_tool.shell.arg_types import non_negative_int, positive_int
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context

def hook_hint(flag: str) -> str:
    """How a script obeys the flags: the tf_config call that reads them."""
    return (f"hook the script: `config = npu_tf_config.session_dump_config(config)` after `import "
            f"precision_tool.tf_config as npu_tf_config` (action=None obeys {flag})")


def _dump_parser(parser: CommandParser) -> None:
    parser.add_argument("command", help="the training command line, quoted: \"python3 train.py --steps 1\"")


def _overflow_parser(parser: CommandParser) -> None:
    _dump_parser(parser)
    parser.add_argument("-l", "--limit", type=positive_int, default=3,
                        help="how many overflows the check shows afterwards (default 3, as `ac -l`)")


def _folders_below(root: Path) -> dict[Path, float]:
    """The capture folders (one per run, named by time) below `root`, with their modification times."""
    try:
        return {p: p.stat().st_mtime for p in root.iterdir() if p.is_dir()}
    except OSError:
        return {}


def _written_since(roots: list[Path], before: dict[Path, float], started: float) -> list[Path]:
    """Capture folders new since `before`, or changed since `started` (written again): newest last."""
    found = [(mtime, folder) for root in roots for folder, mtime in _folders_below(root).items()
             if folder not in before or mtime >= started]
    return [folder for _, folder in sorted(found)]


def _dump_roots(ctx: Context) -> list[Path]:
    """npu/debug_N/dump of every run (debug_0 when there is none yet)."""
    ids = ctx.workspace.debug_ids() or [0]
    return [ctx.workspace.dump_root(n) for n in ids]


def _overflow_roots(ctx: Context) -> list[Path]:
    return [ctx.workspace.overflow_root]


def _snapshot(roots: list[Path]) -> dict[Path, float]:
    seen: dict[Path, float] = {}
    for root in roots:
        seen.update(_folders_below(root))
    return seen


def _train(ctx: Context, command_line: str, flag: str,
           roots: Callable[[Context], list[Path]]) -> tuple[int, list[Path]]:
    """Run the command with `flag`=True; (its exit status, the capture folders it wrote, newest last)."""
    from precision_tool.analysis.golden_extract import run_training
    from precision_tool.render.messages import note_line

    before = _snapshot(roots(ctx))
    started = time.time() - 1  # file systems keep coarse times: a folder changed this second counts
    ctx.note(note_line(f"running `{command_line}` with {flag}=True, PRECISION_DATA={ctx.workspace.root}"))
    status = run_training(command_line, ctx.workspace.root.resolve(), flags={flag: "True"})
    return status, _written_since(roots(ctx), before, started)


def _failed(name: str, command_line: str, status: int) -> CommandFailed:
    return CommandFailed(f"{name}: `{command_line}` exited with status {status}", exit_status=status)


def _npu_dump(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.golden_extract import DUMP_FLAG
    from precision_tool.render.messages import note_line, warning_line

    status, written = _train(ctx, args.command, DUMP_FLAG, _dump_roots)
    if written:
        shown = [note_line(f"NPU dumps in {written[-1]}"),
                 note_line("next: the golden side with `tf_dump` (or tf_dump \"python3 train_cpu.py\"), then "
                           "`vc` (or `ac -c`) to compare")]
    elif status == 0:  # a failed command says why itself; the hook hint would mislead
        shown = [warning_line(f"`{args.command}` wrote no NPU dumps into {_dump_roots(ctx)[0]}; "
                              f"{hook_hint(DUMP_FLAG)}")]
    else:
        shown = []
    if status != 0:
        for line in shown:
            ctx.note(line)
        raise _failed("npu_dump", args.command, status)
    return shown


def _npu_overflow(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.golden_extract import OVERFLOW_FLAG
    from precision_tool.render.messages import warning_line
    from precision_tool.shell.commands.dumps import overflow_check

    status, written = _train(ctx, args.command, OVERFLOW_FLAG, _overflow_roots)
    shown: list[Any] = []
    if not written and status == 0:
        earlier = " (the check below reads the records of earlier runs)" if ctx.workspace.newest_overflow_dir() else ""
        shown.append(warning_line(f"`{args.command}` wrote no overflow records into {ctx.workspace.overflow_root}"
                                  f"{earlier}; {hook_hint(OVERFLOW_FLAG)}"))
    # The check runs also after a failed run: an overflow often is what stopped training.
    try:
        shown.append(overflow_check(args, ctx))
    except CommandFailed as exc:
        for line in shown:
            ctx.note(line)
        if status != 0:
            raise CommandFailed(f"{exc}; and `{args.command}` exited with status {status}",
                                exit_status=status) from None
        raise
    if status != 0:
        for line in shown:
            ctx.note(line)
        raise _failed("npu_overflow", args.command, status)
    return shown


_DUMP_DESCRIPTION = """\
Runs the training command (no shell; quote it) with PRECISION_TOOL_DUMP=True and PRECISION_DATA set to the
workspace, as the original tool's `cli.py npu_dump`. A script whose session config is built with
`npu_tf_config.session_dump_config(config)` (action=None) then dumps every op into npu/debug_0/dump/<time>.
Its output streams through; its exit status is ours. Afterwards says where the dumps landed.

examples:
  npu_dump "python3 train.py --steps 1"
  precision-tool --data ./precision_data npu_dump "bash run_npu.sh"
"""

_OVERFLOW_DESCRIPTION = """\
Runs the training command (no shell; quote it) with PRECISION_TOOL_OVERFLOW=True and PRECISION_DATA set to
the workspace, as the original tool's `cli.py npu_overflow`. A script whose session config is built with
`npu_tf_config.session_dump_config(config)` (action=None) then records overflows into overflow/dump/<time>.
Its output streams through; its exit status is ours. Afterwards runs the overflow check of `ac`.

examples:
  npu_overflow "python3 train.py --steps 10"
  npu_overflow "python3 train.py" -l 10
"""

COMMANDS = [
    Command("npu_dump", "run a training command with NPU dumping on (PRECISION_TOOL_DUMP=True)",
            _dump_parser, _npu_dump, description=_DUMP_DESCRIPTION),
    Command("npu_overflow", "run a training command with overflow detection on, then the overflow check",
            _overflow_parser, _npu_overflow, description=_OVERFLOW_DESCRIPTION),
]


# --- the run-config records (formats/run_config.py, written by the capture hooks) -------------------
# Each capture side records its versions, NPU options, seeds, dropout and environment in run_config.json;
# analysis/checks/run_config_diff.py compares two.
def _config_diff_parser(parser: CommandParser) -> None:
    parser.add_argument("first", metavar="A",
                        help="a workspace (precision_data), an npu/debug_N or tf folder, or a run_config.json")
    parser.add_argument("second", metavar="B", nargs="?", default=None,
                        help="the same kinds; left out: A is compared with the current workspace")
    parser.add_argument("-s", "--side", choices=("golden", "npu", "both"), default="both",
                        help="which side's records to compare between two workspaces (default both)")
    parser.add_argument("-r", "--run", type=non_negative_int, metavar="N", default=None,
                        help="compare npu/debug_N's records (default: each workspace's newest run with one)")


def _config_diff_complete(request: CompletionRequest) -> list[str]:
    """A and B are paths (workspaces, run folders, record files); -s completes its sides."""
    from precision_tool.shell.completion import complete_paths

    if request.option in ("-s", "--side"):
        return [side for side in ("golden", "npu", "both") if side.startswith(request.current)]
    if request.option is None and not request.current.startswith("-"):
        return complete_paths(request.current)
    return []


def _config_diff(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.run_config_diff import compare_paths, open_target, pairs_to_compare
    from precision_tool.render.messages import note_line
    from precision_tool.render.run_config import difference_table, no_differences_line, sources_line

    first_given = Path(args.first) if args.second is not None else ctx.workspace.root
    second_given = Path(args.second if args.second is not None else args.first)
    first, second = open_target(first_given, args.run), open_target(second_given, args.run)
    pairs, notes = pairs_to_compare(first, second, args.side)
    out: list[Any] = []
    for left, right, left_name, right_name in pairs:
        pair = compare_paths(left, right, left_name, right_name)
        if pair.differences:
            out.append(difference_table(pair, f"run config: {len(pair.differences)} difference(s)"))
        else:
            out.append(no_differences_line(pair))
        out.append(sources_line(pair))
    out += [note_line(note) for note in notes]
    return out


COMMANDS += [
    Command(
        "config-diff",
        "compare two runs' recorded settings: versions, NPU options, seeds, dropout, environment",
        _config_diff_parser,
        _config_diff,
        completer=_config_diff_complete,
        description=("Compare the run-config records (run_config.json) of two workspaces, runs or record files: "
                     "the TensorFlow/CANN/adapter/Python versions, the NPU options in force (precision_mode, "
                     "modify_mixlist, fusion switch file, dumps), seeds and op determinism, dropout rates, loss "
                     "scale and the environment variables that change kernels. Shows only what differs and "
                     "why it matters. Two workspaces: golden with golden, NPU with NPU (newest run with a "
                     "record unless --run)."),
    )
]


def _ac_run_config(args: argparse.Namespace, ctx: Context) -> Any:
    """The golden record against npu/debug_0's (the run the comparison uses): a table of what differs,
    nothing when nothing does or a side has no record."""
    from precision_tool.analysis.checks.run_config_diff import golden_against_npu
    from precision_tool.render.run_config import difference_table, sources_line

    pair = golden_against_npu(ctx.workspace, 0)
    if pair is None or not pair.differences:
        return None
    return [difference_table(pair, "run config: the golden and NPU runs differ in"), sources_line(pair)]


# First of all: a seed or a version that differs explains differences before any tensor is compared.
AC_SECTIONS = [AcSection("run config", _ac_run_config, order=5)]
