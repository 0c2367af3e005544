"""`tf_dump`: turn tfdbg dumps (v1 run folders or v2 FULL_TENSOR dumps) into golden .npy files; a
data-parallel capture (tf_debug/rank_<r>/ folders) rank by rank into tf/dump/rank_<r>/."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.errors import CommandFailed, UsageError, WorkspaceError
from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Reads precision_data/tf/tf_debug natively (no TensorFlow needed) and writes
every tensor of the chosen run to precision_data/tf/dump, one file per tensor:
  <node with / and . -> _>.<slot>.<us timestamp>.npy
A data-parallel capture, one dump per rank in tf_debug/rank_0, rank_1, ... (what `demo --ranks N`
writes), is extracted rank by rank into tf/dump/rank_0, rank_1, ... (--out: into OUT/rank_<r>); --dir
naming one rank_<r> folder extracts that rank alone, into tf/dump/rank_<r> unless --out says otherwise.

examples:
  tf_dump                    the last run (the step after which training stopped)
  tf_dump --run 0            the first run; --run -2 the one before the last
  tf_dump --run all          every run (v2: every step)
  tf_dump "python3 train.py" run the training script first if tf_debug/ is empty
  tf_dump --force            rewrite files that are already there
  tf_dump --dir DIR          a dump folder elsewhere, or one run_* folder
  tf_dump --dir precision_data/tf/tf_debug/rank_3   rank 3 alone (into tf/dump/rank_3)
  tf_dump --step all         every run (v2: step) into its own tf/dump/step_<N>/, N from 0 in the order
                             they ran, for `vc --step all` (NPU dump iteration N vs step_<N>; docs/steps.md)
  tf_dump --step all --first-step 300   the first run is step 300, the next 301, ...
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("command", nargs="?",
                        help="training command line to run first when tf_debug/ is empty (quote it)")
    parser.add_argument("--run", metavar="N|all|last", default="last",
                        help="which run (v1) or step (v2): an index from 0 (negative from the end), "
                             "'all', or 'last' (default)")
    parser.add_argument("--step", choices=["all"],
                        help="'all': every run (v1) or step (v2) into its own step_<N>/ folder of the golden "
                             "folder, for `vc --step all` (docs/steps.md)")
    parser.add_argument("--first-step", metavar="K", type=int, default=0,
                        help="with --step all: the step number of the first run (default 0); the NPU dump "
                             "iteration folder of the same number is compared with it")
    parser.add_argument("--force", action="store_true", help="rewrite golden files that already exist")
    parser.add_argument("--dir", metavar="FOLDER",
                        help="tfdbg dump folder, one run_* folder, or one rank_<r> folder (default: "
                             "precision_data/tf/tf_debug; its rank_<r> folders, when it has them, rank by rank)")
    parser.add_argument("--format", choices=["auto", "v1", "v2"], default="auto",
                        help="dump kind when a folder holds both (default: auto)")
    parser.add_argument("--out", metavar="FOLDER",
                        help="where the .npy files go (default: precision_data/tf/dump; per rank: its "
                             "rank_<r> folders)")


def _tf_dump(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.golden_extract import (
        RANK_DIR,
        dump_is_empty,
        extract_golden,
        locate_tf_dumps,
        parse_run_selector,
        rank_dump_dirs,
        rank_golden_dir,
        run_training,
    )
    from precision_tool.render.messages import note_line
    from precision_tool.render.tf import render_extract_summary
    from precision_tool.workspace import Workspace

    selector = parse_run_selector(args.run)
    if args.step and args.run != "last":
        raise UsageError("tf_dump: --step all extracts every run, each into its own step_<N>/ folder; "
                         f"leave out --run {args.run}")
    if args.first_step < 0:
        raise UsageError(f"tf_dump --first-step {args.first_step}: a step number is 0 or more")
    if args.first_step != 0 and not args.step:
        raise UsageError("tf_dump: --first-step numbers the step folders of --step all; add --step all")
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
    rank_dirs = rank_dump_dirs(dump_dir)
    if rank_dirs:
        return _tf_dump_ranks(args, ctx, dump_dir, rank_dirs, out_dir, selector)
    match = RANK_DIR.match(dump_dir.name)
    if match and not args.out:  # one rank's folder: its own golden folder
        out_dir = rank_golden_dir(out_dir, int(match.group(1)))
    location = locate_tf_dumps(dump_dir, args.format)
    # A read-only workspace (someone else's dumps): say so before reading anything, with the way out.
    Workspace.ensure_dir(out_dir, "golden folder", hint=_write_hint(args))
    if args.step:
        return _tf_dump_steps(args, ctx, [(None, location, out_dir)])
    with ctx.progress() as bar:
        task = bar.add_task("tf_dump", total=None)

        def tick(done: int, total: int) -> None:
            if done == 1 or done == total or done % 64 == 0:
                bar.update(task, completed=done, total=total)

        summary = extract_golden(location, out_dir, run=selector, force=args.force, progress=tick,
                                 sources_file=ctx.workspace.op_sources_file)
    shown = render_extract_summary(summary)
    if summary.failed:
        ctx.note(shown)
        problem = "stopped early" if summary.stopped else f"{len(summary.bad_files)} damaged file(s) skipped"
        raise CommandFailed(f"tf_dump: {problem}")
    return shown


def _write_hint(args: argparse.Namespace) -> str:
    return ("give a folder you can write with --out DIR" if args.out else
            "write the golden files elsewhere with --out DIR, or choose another workspace with --data DIR")


def _tf_dump_ranks(args: argparse.Namespace, ctx: Context, dump_dir: Path, rank_dirs: list[tuple[int, Path]],
                   out_dir: Path, selector: str | int) -> Any:
    """One dump per rank: each rank_<r> folder into out_dir/rank_<r>, one line per rank."""
    from rich.text import Text

    from precision_tool.analysis.golden_extract import extract_ranks
    from precision_tool.render.messages import note_line
    from precision_tool.render.tf import render_extract_summary
    from precision_tool.workspace import Workspace

    listed = ", ".join(folder.name for _, folder in rank_dirs[:3]) + (", ..." if len(rank_dirs) > 3 else "")
    ctx.note(note_line(f"{dump_dir} holds {len(rank_dirs)} rank folder(s) ({listed}): extracting each rank "
                       f"into {out_dir}/rank_<r>"))
    Workspace.ensure_dir(out_dir, "golden folder", hint=_write_hint(args))
    if args.step:
        from precision_tool.analysis.golden_extract import locate_tf_dumps, rank_golden_dir

        return _tf_dump_steps(args, ctx, [(rank, locate_tf_dumps(folder, args.format), rank_golden_dir(out_dir, rank))
                                          for rank, folder in rank_dirs])
    with ctx.progress() as bar:
        task = bar.add_task("tf_dump", total=None)

        def tick(rank: int, done: int, total: int) -> None:
            if done == 1 or done == total or done % 64 == 0:
                bar.update(task, description=f"tf_dump rank {rank}", completed=done, total=total)

        results = extract_ranks(rank_dirs, out_dir, kind=args.format, run=selector, force=args.force,
                                progress=tick, sources_file=ctx.workspace.op_sources_file)
    lines = [_summary_line(f"rank {rank}", summary) for rank, summary in results]
    total = sum(summary.written for _, summary in results)
    seconds = sum(summary.seconds for _, summary in results)
    shown: list[Any] = [Text("\n").join(lines),
                        Text(f"{len(results)} rank(s), {total} golden files written in {seconds:.2f} s")]
    rank, last = results[-1]
    if last.failed:
        ctx.note(shown)
        ctx.note(render_extract_summary(last))
        problem = "stopped early" if last.stopped else f"{len(last.bad_files)} damaged file(s) skipped"
        raise CommandFailed(f"tf_dump: rank {rank}: {problem}"
                            + (f"; ranks after {rank} were not extracted" if rank != rank_dirs[-1][0] else ""))
    return shown


def _summary_line(label: str, summary: Any) -> Any:
    """One extraction in one line: `  <label>  N tensors, W written, ... → folder`."""
    from rich.text import Text

    skipped = sum(count for _, count in summary.skipped)
    line = Text.assemble((f"  {label}", "bold"), f"  {summary.tensors} tensors, ", (f"{summary.written} written", "ok"))
    if summary.already_present:
        line.append(f", {summary.already_present} already there")
    if skipped:
        line.append(f", {skipped} skipped ({', '.join(reason for reason, _ in summary.skipped)})")
    line.append(" → ")
    line.append(str(summary.out_dir), style="path")
    return line


def _tf_dump_steps(args: argparse.Namespace, ctx: Context, sources: list[tuple[int | None, Any, Path]]) -> Any:
    """`--step all`: each run/step of each (rank, dump, golden folder) into golden folder/step_<N>, one line
    per step (docs/steps.md)."""
    from rich.text import Text

    from precision_tool.analysis.steps.golden_steps import extract_steps
    from precision_tool.render.tf import render_extract_summary

    lines: list[Any] = []
    written = 0
    with ctx.progress() as bar:
        task = bar.add_task("tf_dump", total=None)
        for rank, location, out_dir in sources:
            prefix = "" if rank is None else f"rank {rank} "

            def tick(step: int, done: int, total: int, prefix: str = prefix) -> None:
                if done == 1 or done == total or done % 64 == 0:
                    bar.update(task, description=f"tf_dump {prefix}step {step}", completed=done, total=total)

            results = extract_steps(location, out_dir, first_step=args.first_step, force=args.force, progress=tick,
                                    sources_file=ctx.workspace.op_sources_file if rank in (None, sources[0][0]) else None)
            for step, summary in results:
                source = ", ".join(summary.selected)
                lines.append(_summary_line(f"{prefix}step {step}", summary) + Text(f"  ({source})", style="dim"))
                written += summary.written
            step, last = results[-1]
            if last.failed:
                ctx.note(Text("\n").join(lines))
                ctx.note(render_extract_summary(last))
                problem = "stopped early" if last.stopped else f"{len(last.bad_files)} damaged file(s) skipped"
                raise CommandFailed(f"tf_dump: {prefix}step {step}: {problem}; the steps after it were not extracted")
    ranks = f"{len(sources)} rank(s), " if sources[0][0] is not None else ""
    return [Text("\n").join(lines),
            Text(f"{ranks}{len(lines)} step folder(s), {written} golden files written; `vc --step all` compares each "
                 "with the NPU dump iteration of the same number")]


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
