"""`demo --ranks N [DIR]`: build the N-rank data-parallel demo workspace (one planted fault on one rank),
extract each rank's golden tensors with `tf_dump`, and check it with `ac -c --report`.

TensorFlow runs only in the child process (`python -m precision_tool.demo.rank_network DIR --ranks N`).
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Context


def parse_ranks(text: str) -> int:
    """The --ranks value as a rank count; one UsageError line otherwise."""
    from precision_tool.demo.ranks import check_ranks
    from precision_tool.errors import UsageError

    try:
        value: Any = int(text)
    except ValueError:
        value = text
    try:
        return check_ranks(value)
    except ValueError as exc:
        raise UsageError(f"demo: {exc}") from None


def run_ranks(args: argparse.Namespace, ctx: Context) -> Any:
    import dataclasses
    import time
    from pathlib import Path

    from rich.rule import Rule
    from rich.text import Text

    from precision_tool.demo import ranks
    from precision_tool.demo.build import WRITE_HINT, prepare_folder, run_network
    from precision_tool.errors import UsageError, WorkspaceError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo.demo_steps import open_command, run_checks, unused_workspace
    from precision_tool.workspace import Workspace

    if args.fixed:
        raise UsageError("demo: --ranks and --fixed do not go together: --fixed re-runs the single-rank demo's "
                         "NPU step with fix/ops_info.json; build the rank demo with `demo --ranks N [DIR]`")
    count = parse_ranks(args.ranks)
    started = time.perf_counter()
    dir_text = args.dir or unused_workspace(ctx) or ranks.DEFAULT_DIR
    root = Path(dir_text).expanduser().resolve()
    if root.is_dir():
        Workspace.ensure_dir(root, "demo folder", hint=WRITE_HINT)
    try:
        prepare_folder(root, force=args.force)
    except WorkspaceError:
        raise
    except OSError as exc:
        raise WorkspaceError(f"cannot write the demo folder {root}: {exc.strerror or exc} "
                             f"({exc.filename}); {WRITE_HINT}") from None
    ctx.note(note_line(f"building the {count}-rank demo workspace in {root} (TensorFlow golden steps, one per "
                       "rank; simulated NPU ranks with an all-reduce per gradient)"))
    build = run_network(root, ranks=count)
    for line in build.log.splitlines():
        ctx.note(note_line(line))
    rank, op = ranks.planted_rank_fault(count)
    # what the checks below should find, said before they run
    held = Text("What it holds:", style="bold")
    held.append("\n  planted fault: ", style="bold")
    held.append(ranks.planted_rank_fault_text(count) + ".")
    held.append("\n  where it shows: ", style="bold")
    others = "rank 0" if count == 2 else f"the other {count - 1} ranks"
    held.append(f"on rank {rank} the input of {op} fails against its golden while its producer "
                f"{ranks.FAULT_GRADIENT} passes; on {others} the first op to fail is that all-reduce's output. "
                "The single demo's bn2 kernel fault and float16 overflow are off here.")
    held.append("\n  per rank: ", style="bold")
    held.append(f"npu/debug_0/dump/<time>/<rank>/ against tf/dump/{ranks.RANK_DIR_PREFIX}<rank>/")
    ctx.note(held)
    demo_ctx = Context(settings=dataclasses.replace(ctx.settings, ROOT_DIR=str(root)), workspace=Workspace(root),
                       console=ctx.console, table=ctx.table)
    answer = run_checks(demo_ctx, root, check=not args.no_check)
    seconds = time.perf_counter() - started
    text = Text()
    text.append(f"Rank demo workspace ({count} ranks) ready in {seconds:.0f} s: ", style="bold")
    text.append(str(root), style="path")
    text.append("\nOpen the shell on it:\n  ", style="bold")
    text.append(open_command(dir_text), style="bold green")
    return [Rule("[bold]demo[/bold]", align="left"), text, *answer]
