"""`tf_dump`: turn tfdbg dumps (v1 run folders or v2 FULL_TENSOR dumps) into golden .npy files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.errors import CommandFailed, WorkspaceError
from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Reads precision_data/tf/tf_debug natively (no TensorFlow needed) and writes
every tensor of the chosen run to precision_data/tf/dump, one file per tensor:
  <node with / and . -> _>.<slot>.<us timestamp>.npy

examples:
  tf_dump                    the last run (the step after which training stopped)
  tf_dump --run 0            the first run; --run -2 the one before the last
  tf_dump --run all          every run (v2: every step)
  tf_dump "python3 train.py" run the training script first if tf_debug/ is empty
  tf_dump --force            rewrite files that are already there
  tf_dump --dir DIR          a dump folder elsewhere, or one run_* folder
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("command", nargs="?",
                        help="training command line to run first when tf_debug/ is empty (quote it)")
    parser.add_argument("--run", metavar="N|all|last", default="last",
                        help="which run (v1) or step (v2): an index from 0 (negative from the end), "
                             "'all', or 'last' (default)")
    parser.add_argument("--force", action="store_true", help="rewrite golden files that already exist")
    parser.add_argument("--dir", metavar="FOLDER",
                        help="tfdbg dump folder or one run_* folder (default: precision_data/tf/tf_debug)")
    parser.add_argument("--format", choices=["auto", "v1", "v2"], default="auto",
                        help="dump kind when a folder holds both (default: auto)")
    parser.add_argument("--out", metavar="FOLDER",
                        help="where the .npy files go (default: precision_data/tf/dump)")


def _tf_dump(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.golden_extract import (
        dump_is_empty,
        extract_golden,
        locate_tf_dumps,
        parse_run_selector,
        run_training,
    )
    from precision_tool.render.messages import note_line
    from precision_tool.render.tf import render_extract_summary
    from precision_tool.workspace import Workspace

    selector = parse_run_selector(args.run)
    dump_dir = Path(args.dir).expanduser() if args.dir else ctx.workspace.tf_debug_dir
    out_dir = Path(args.out).expanduser() if args.out else ctx.workspace.golden_dir
    if args.command:
        if dump_is_empty(dump_dir):
            ctx.note(note_line(f"{dump_dir} is empty: running `{args.command}` to produce the dumps"))
            # The runner npu_dump/npu_overflow use: output streams through, no capture flag is set
            status = run_training(args.command, ctx.workspace.root.resolve())
            if status != 0:
                raise CommandFailed(f"tf_dump: `{args.command}` exited with status {status}; nothing was "
                                    "extracted", exit_status=status)
            if dump_is_empty(dump_dir):
                raise WorkspaceError(
                    f"tf_dump: `{args.command}` ran but wrote no tfdbg dumps into {dump_dir}; make the script "
                    "wrap its session with npu_tf_config.sess_dump(sess) (import precision_tool.tf_config "
                    "as npu_tf_config) or use hooks=[npu_tf_config.estimator_dump()]")
        else:
            ctx.note(note_line(f"{dump_dir} already holds dumps: not running the training command "
                               "(empty the folder to dump again)"))
    location = locate_tf_dumps(dump_dir, args.format)
    # A read-only workspace (someone else's dumps): say so before reading anything, with the way out.
    Workspace.ensure_dir(out_dir, "golden folder", hint=(
        "give a folder you can write with --out DIR" if args.out else
        "write the golden files elsewhere with --out DIR, or choose another workspace with --data DIR"))
    with ctx.progress() as bar:
        task = bar.add_task("tf_dump", total=None)

        def tick(done: int, total: int) -> None:
            if done == 1 or done == total or done % 64 == 0:
                bar.update(task, completed=done, total=total)

        summary = extract_golden(location, out_dir, run=selector, force=args.force, progress=tick)
    shown = render_extract_summary(summary)
    if summary.failed:
        ctx.note(shown)
        problem = "stopped early" if summary.stopped else f"{len(summary.bad_files)} damaged file(s) skipped"
        raise CommandFailed(f"tf_dump: {problem}")
    return shown


def _complete(request: CompletionRequest) -> list[str]:
    if request.option in ("--dir", "--out"):
        from precision_tool.shell.completion import complete_paths

        return list(complete_paths(request.current))
    if request.option == "--run":
        return ["last", "all", "0", "-1"]
    if request.option == "--format":
        return ["auto", "v1", "v2"]
    return []


COMMANDS = [
    Command("tf_dump", "extract golden .npy tensors from tfdbg dumps (no TensorFlow needed)", _parser, _tf_dump,
            completer=_complete, description=_DESCRIPTION),
]
