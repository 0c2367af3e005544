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
    from precision_tool.errors import CommandFailed, UsageError, WorkspaceError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo import _newest_report, _open_command, _unused_workspace
    from precision_tool.shell.dispatch import execute
    from precision_tool.workspace import Workspace

    if args.fixed:
        raise UsageError("demo: --ranks and --fixed do not go together: --fixed re-runs the single-rank demo's "
                         "NPU step with fix/ops_info.json; build the rank demo with `demo --ranks N [DIR]`")
    count = parse_ranks(args.ranks)
    started = time.perf_counter()
    dir_text = args.dir or _unused_workspace(ctx) or ranks.DEFAULT_DIR
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
    demo_ctx = Context(settings=dataclasses.replace(ctx.settings, ROOT_DIR=str(root)), workspace=Workspace(root),
                       console=ctx.console, table=ctx.table)
    for line in (["tf_dump"] + ([] if args.no_check else ["ac -c --report"])):
        ctx.note(Rule(f"[bold]{line}[/bold]", align="left"))
        if not execute(line, demo_ctx, passthrough=False).ok:
            raise CommandFailed(f"demo: `{line}` failed on {root}")
    seconds = time.perf_counter() - started
    rank, op = ranks.planted_rank_fault(count)
    text = Text()
    text.append(f"Rank demo workspace ({count} ranks) ready in {seconds:.0f} s: ", style="bold")
    text.append(str(root), style="path")
    text.append("\nPlanted fault: ", style="bold")
    text.append(ranks.planted_rank_fault_text(count) + ".")
    text.append("\nWhere it shows: ", style="bold")
    others = "rank 0" if count == 2 else f"the other {count - 1} ranks"
    text.append(f"on rank {rank} the input of {op} fails against its golden while its producer "
                f"{ranks.FAULT_GRADIENT} passes; on {others} the first op to fail is that all-reduce's output. "
                "The single demo's bn2 kernel fault and float16 overflow are off here.")
    text.append("\nPer rank: ", style="bold")
    text.append(f"npu/debug_0/dump/<time>/<rank>/ against tf/dump/{ranks.RANK_DIR_PREFIX}<rank>/")
    text.append("\nOpen the shell on it:\n  ", style="bold")
    text.append(_open_command(dir_text), style="bold green")
    report = _newest_report(Workspace(root))
    if report is not None:
        text.append("\nThe report (one HTML file, opens offline; open it in a browser):\n  ", style="bold")
        text.append(str(report), style="path")
        text.append(f"\n  {report.as_uri()}")
    return [Rule("[bold]demo[/bold]", align="left"), text]
