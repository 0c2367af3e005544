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
    import time

    from rich.text import Text

    from precision_tool.demo import ranks
    from precision_tool.demo.build import run_network
    from precision_tool.errors import UsageError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo.demo_steps import demo_context, finished, prepare_root, run_checks

    if args.fixed:
        raise UsageError("demo: --ranks and --fixed do not go together: --fixed re-runs the single-rank demo's "
                         "NPU step with fix/ops_info.json; build the rank demo with `demo --ranks N [DIR]`")
    count = parse_ranks(args.ranks)
    started = time.perf_counter()
    dir_text, root = prepare_root(ctx, args.dir, ranks.DEFAULT_DIR, force=args.force)
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
    demo_ctx = demo_context(ctx, root)
    answer = run_checks(demo_ctx, root, check=not args.no_check)
    return finished(f"Rank demo workspace ({count} ranks)", root, dir_text, started, answer)
