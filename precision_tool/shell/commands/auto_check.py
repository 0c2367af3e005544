"""`ac`: run every check that exists and show what each found.

The checks themselves live with the commands of their area (each module's AC_SECTIONS); `ac` only
runs them in order. `-c` is read by the comparison section, which runs `vc` first. A section may leave
what it found on `args` for a later one: the comparison's summaries (`args.compared`) are what the replay
section replays, and what the last section, the answer (shell/commands/answer.py), answers with.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from precision_tool.errors import CommandFailed, CommandInterrupted, PrecisionToolError
from precision_tool.render.messages import note_line, show_error
from precision_tool.shell.arg_types import non_negative_int, positive_int
from precision_tool.shell.command import Command, CommandParser, Context


@dataclass(frozen=True)
class SectionResult:
    """What a section may return besides a plain renderable: what to show now, and a short `recap` that
    `ac` shows after the last section, right above the prompt (where the eye lands when it ends)."""

    shown: Any
    recap: Any = None


def _parser(parser: CommandParser) -> None:
    parser.add_argument("-c", "--compare", "--vector_compare", dest="compare", action="store_true",
                        help="run the whole-network comparison (vc) first")
    parser.add_argument("-l", "--limit", type=positive_int, default=3,
                        help="how many abnormal ops / overflows each check shows (default 3)")
    parser.add_argument("--replay", type=non_negative_int, metavar="N", default=None,
                        help="replay the first N abnormal ops on CPU and give their verdicts (default with -c: the "
                             "first divergent op and the first to produce Inf/NaN; 0: no replay)")
    parser.add_argument("--precheck", action="store_true",
                        help="replay every op of the compared NPU run on its own inputs, rank them by their own "
                             "error and say which abnormal ops inherit theirs (as `replay --all`)")
    parser.add_argument("--report", action="store_true",
                        help="then write the HTML report of what the checks found (as `report` does)")


def _auto_check(args: argparse.Namespace, ctx: Context) -> Any:
    failed = []
    recaps: list[Any] = []
    if not ctx.table.ac_sections:
        ctx.note(note_line("no checks are available yet"))
    for section in ctx.table.ac_sections:
        # Each section's result is shown as soon as it is ready; one failing check does not stop the rest.
        try:
            result = section.run(args, ctx)
        except CommandInterrupted:
            raise  # Ctrl-C: `ac` stops here (the section said what was kept), the other checks do not run
        except PrecisionToolError as exc:
            failed.append(section.name)
            if str(exc):  # an empty message: the section has already said what went wrong
                show_error(ctx.console, f"{section.name}: {exc}")
            continue
        if isinstance(result, SectionResult):
            if result.recap is not None:
                recaps.append(result.recap)
            result = result.shown
        ctx.note(result)
    if failed:
        for recap in recaps:
            ctx.note(recap)
        raise CommandFailed(f"ac: {len(failed)} check(s) failed: {', '.join(failed)}")
    return recaps or None


COMMANDS = [
    Command(
        "ac",
        "auto check: comparison summary (-c runs it first), same step (inputs and weights), overflow, fusion, "
        "cast, graph checks",
        _parser,
        _auto_check,
    )
]
