"""The interactive shell: prompt session, history, completion, key bindings, the read-run loop."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from rich.text import Text

from precision_tool import __version__
from precision_tool.config import user_state_dir
from precision_tool.shell.command import Context
from precision_tool.shell.completion import ShellCompleter
from precision_tool.shell.dispatch import execute

PROMPT = "PrecisionTool > "


class LazyFileHistory(FileHistory):
    """FileHistory that creates its folder only when the first line is stored."""

    def store_string(self, string: str) -> None:
        Path(self.filename).parent.mkdir(parents=True, exist_ok=True)
        super().store_string(string)


def history_for(ctx: Context) -> History:
    path = os.environ.get("PRECISION_TOOL_HISTORY")
    if path:
        return LazyFileHistory(path)
    if ctx.workspace.root.is_dir():
        return LazyFileHistory(str(ctx.workspace.history_file))
    try:
        return LazyFileHistory(str(user_state_dir() / "history"))
    except OSError:
        return InMemoryHistory()


def banner(ctx: Context) -> list[Text]:
    lines = [
        Text.assemble(("PrecisionTool ", "bold"), (__version__, "bold cyan"),
                      ("  workspace: ", "dim"), (str(ctx.workspace.root), "path")),
    ]
    for gap in ctx.workspace.missing():
        lines.append(Text.assemble(("  missing ", "warning"), gap.what, (f" — {gap.how}", "dim")))
    lines.append(Text("Type `help` for the commands, Ctrl-D or `exit` to leave.", style="dim"))
    return lines


def interactive(ctx: Context, debug: bool = False) -> int:
    for line in banner(ctx):
        ctx.console.print(line)
    session: PromptSession[str] = PromptSession(
        history=history_for(ctx),
        completer=ShellCompleter(ctx.table, ctx.workspace),
        complete_while_typing=False,
    )
    while True:
        try:
            line = session.prompt(PROMPT)
        except KeyboardInterrupt:  # Ctrl-C at the prompt: drop the line, stay
            continue
        except EOFError:  # Ctrl-D
            return 0
        if execute(line, ctx, debug=debug).exit_requested:
            return 0


def scripted(ctx: Context, stream: TextIO = sys.stdin, debug: bool = False) -> int:
    """Read commands line by line from a pipe or file; exit 1 if any of them failed."""
    status = 0
    for line in stream:
        outcome = execute(line, ctx, debug=debug)
        if not outcome.ok:
            status = 1
        if outcome.exit_requested:
            break
    return status
