"""Commands every shell has: help, exit/quit, run."""

from __future__ import annotations

import argparse
import subprocess

from rich.table import Table
from rich.text import Text

from precision_tool.errors import CommandFailed, UsageError
from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context
from precision_tool.shell.dispatch import ExitShell, unknown_command_message


def _help_parser(parser: CommandParser) -> None:
    parser.add_argument("command", nargs="?", help="a command to explain")


def _help(args: argparse.Namespace, ctx: Context) -> object:
    if args.command:
        command = ctx.table.get(args.command)
        if command is None:
            raise UsageError(unknown_command_message(args.command, ctx.table.names()))
        from precision_tool.render.console import shared_width

        return command.parser(prog=args.command).help_renderable(shared_width(ctx.console))
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2), pad_edge=False)
    table.add_column("command", style="op", no_wrap=True)
    table.add_column("what it does", overflow="fold")  # wraps at words; folds only a word wider than the column
    for command in ctx.table:
        names = ", ".join((command.name, *command.aliases))
        table.add_row(names, command.summary)
    footer = Text(
        "`help CMD` or `CMD -h` explains one command; `run CMD` runs a shell command (a program's name "
        "alone runs it too, unless it is one typo away from a command, like `nl` for `ni`).",
        style="dim",
    )
    return [table, footer]


def _complete_command_names(request: CompletionRequest) -> list[str]:
    return request.table.names() if request.table is not None and len(request.words) == 1 else []


def _complete_folders(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    return [p for p in complete_paths(request.current) if p.endswith("/")]


def _exit(args: argparse.Namespace, ctx: Context) -> None:
    raise ExitShell()


def _run_parser(parser: CommandParser) -> None:
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the shell command line to run")


def _run(args: argparse.Namespace, ctx: Context) -> None:
    line = args.raw_line
    if not line:
        raise UsageError("run: give a shell command, e.g. `run ls -l precision_data`")
    # The one place a shell is used on purpose: the user asked for a shell command line.
    status = subprocess.call(line, shell=True)  # noqa: S602
    if status != 0:
        raise CommandFailed(f"run: `{line}` exited with status {status}")


def _data_parser(parser: CommandParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="the workspace folder (a precision_data)")


def _data(args: argparse.Namespace, ctx: Context) -> object:
    from pathlib import Path

    from precision_tool.render.messages import note_line
    from precision_tool.workspace import Workspace

    folder = Path(args.dir).expanduser()
    if not folder.exists():
        raise UsageError(f"data: {args.dir} does not exist; give a workspace folder (`demo {args.dir}` builds an "
                         "example there)")
    if not folder.is_dir():
        raise UsageError(f"data: {args.dir} is a file; give a workspace folder (a precision_data)")
    ctx.use_workspace(Workspace(folder))
    return note_line(f"workspace: {ctx.workspace.root}")


COMMANDS = [
    Command("help", "list the commands, or explain one (help CMD)", _help_parser, _help,
            completer=_complete_command_names),
    Command("exit", "leave the shell (also Ctrl-D)", lambda p: None, _exit, aliases=("quit",)),
    Command("run", "run a shell command line: run ls -l | head", _run_parser, _run),
    Command("data", "work on another workspace: `precision-tool data DIR` opens the shell on DIR (= --data DIR)",
            _data_parser, _data, opens_shell=True, completer=_complete_folders,
            description="Switch to the workspace DIR. As a one-shot (`python3 precision_tool/cli.py data DIR`, "
                        "the original tool's spelling) it opens the shell on DIR, the same as `--data DIR`; "
                        "with stdin not a terminal the shell reads commands from stdin."),
]
