"""`demo --steps N [DIR]`: build the N-step demo workspace (a later step overflows in float16), extract each
golden step into tf/dump/step_<K>/ with `tf_dump`, and check it with `ac -c --report`.

TensorFlow runs only in the child process (`python -m precision_tool.demo.step_network DIR --steps N`).
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Context


def parse_steps(text: str) -> int:
    """The --steps value as a step count; one UsageError line otherwise."""
    from precision_tool.demo.steps import check_steps
    from precision_tool.errors import UsageError

    try:
        value: Any = int(text)
    except ValueError:
        value = text
    try:
        return check_steps(value)
    except ValueError as exc:
        raise UsageError(f"demo: {exc}") from None


def golden_step_lines(root: Any, count: int) -> tuple[str, ...]:
    """`tf_dump --step all`: tfdbg's run folders, oldest first, become tf/dump/step_0 ... step_<count - 1>."""
    return ("tf_dump --step all",)


def run_multistep(args: argparse.Namespace, ctx: Context) -> Any:
    import time

    from rich.text import Text

    from precision_tool.demo import steps
    from precision_tool.demo.build import run_network
    from precision_tool.errors import UsageError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo.demo_steps import demo_context, finished, prepare_root, run_checks

    others = [name for name, given in (("--fixed", args.fixed), ("--ranks", args.ranks is not None),
                                       ("--model", args.model is not None)) if given]
    if others:
        raise UsageError(f"demo: --steps and {', '.join(others)} do not go together: --steps builds its own "
                         "workspace (`demo --steps N [DIR]`)")
    count = parse_steps(args.steps)
    started = time.perf_counter()
    dir_text, root = prepare_root(ctx, args.dir, steps.DEFAULT_DIR, force=args.force)
    ctx.note(note_line(f"building the {count}-step demo workspace in {root} (TensorFlow golden steps on CPU, "
                       "simulated NPU steps from their own weights)"))
    build = run_network(root, steps=count)
    for line in build.log.splitlines():
        ctx.note(note_line(line))
    # what the checks below should find, said before they run
    held = Text("What it holds:", style="bold")
    held.append("\n  the divergence: ", style="bold")
    held.append(steps.DIVERGENCE + ".")
    if count <= steps.OVERFLOW_STEP:
        held.append(f"\n  with {count} steps no step reaches it: every step compares fine.")
    held.append("\n  per step: ", style="bold")
    held.append(f"npu/debug_0/dump/<time>/0/<graph>/1/<step>/ against tf/dump/{steps.step_dir_name(0)[:-1]}<step>/; "
                "the loss of every step in tf/loss.csv and npu/debug_0/loss.csv")
    ctx.note(held)
    demo_ctx = demo_context(ctx, root)
    answer = run_checks(demo_ctx, root, check=not args.no_check, dump_lines=golden_step_lines(root, count))
    return finished(f"Step demo workspace ({count} steps)", root, dir_text, started, answer)
