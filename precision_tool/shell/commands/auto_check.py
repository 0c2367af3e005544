"""`ac`: run every check that exists and show what each found.

The checks themselves live with the commands of their area (each module's AC_SECTIONS); `ac` only
runs them in order. `-c` is read by the comparison section, which runs `vc` first.
"""

from __future__ import annotations

import argparse

from precision_tool.errors import CommandFailed, PrecisionToolError
from precision_tool.render.messages import note_line, show_error
from precision_tool.shell.arg_types import positive_int
from precision_tool.shell.command import Command, CommandParser, Context


def _parser(parser: CommandParser) -> None:
    parser.add_argument("-c", "--compare", action="store_true",
                        help="run the whole-network comparison (vc) first")
    parser.add_argument("-l", "--limit", type=positive_int, default=3,
                        help="how many abnormal ops / overflows each check shows (default 3)")


def _auto_check(args: argparse.Namespace, ctx: Context) -> None:
    failed = []
    if not ctx.table.ac_sections:
        ctx.note(note_line("no checks are available yet"))
    for section in ctx.table.ac_sections:
        # Each section's result is shown as soon as it is ready; one failing check does not stop the rest.
        try:
            result = section.run(args, ctx)
        except PrecisionToolError as exc:
            failed.append(section.name)
            show_error(ctx.console, f"{section.name}: {exc}")
            continue
        ctx.note(result)
    if failed:
        raise CommandFailed(f"ac: {len(failed)} check(s) failed: {', '.join(failed)}")


COMMANDS = [
    Command(
        "ac",
        "auto check: comparison summary (-c runs it first), overflow, fusion, cast, graph checks",
        _parser,
        _auto_check,
    )
]
