"""The interactive shell: prompt session, history, completion, key bindings, the read-run loop."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable, Sequence, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from rich.text import Text

from precision_tool import __version__
from precision_tool.config import HOME_ENV, user_state_dir
from precision_tool.render.console import show
from precision_tool.render.messages import warning_line
from precision_tool.shell.command import Context
from precision_tool.shell.completion import ShellCompleter
from precision_tool.shell.dispatch import execute

PROMPT = "PrecisionTool > "


class LazyFileHistory(FileHistory):
    """FileHistory that creates its folder only when the first line is stored, and never crashes the shell.

    When a place cannot be written (read-only workspace, no HOME, full disk) the lines go to the next of
    `fallbacks`, then stay in memory; `take_warning()` then gives one line for the user, once.
    """

    def __init__(self, filename: str | os.PathLike[str], fallbacks: Sequence[str | os.PathLike[str]] = ()) -> None:
        super().__init__(os.fspath(filename))
        self._fallbacks = [os.fspath(p) for p in fallbacks]
        self._failed: list[str] = []
        self._warning: str | None = None
        self._warned = False

    def load_history_strings(self) -> Iterable[str]:
        try:
            return list(super().load_history_strings())
        except OSError:  # an unreadable history file: start with an empty one
            return []

    def store_string(self, string: str) -> None:
        while self.filename is not None:
            try:
                Path(self.filename).parent.mkdir(parents=True, exist_ok=True)
                super().store_string(string)
                break
            except OSError as exc:
                self._failed.append(f"{self.filename} ({exc.strerror or exc})")
                self.filename = self._fallbacks.pop(0) if self._fallbacks else None  # type: ignore[assignment]
        if self._failed and self._warning is None:
            where = (f"this session's history goes to {self.filename}" if self.filename is not None
                     else f"this session's history stays in memory (set ${HOME_ENV} to a writable folder "
                          "to keep it)")
            self._warning = f"cannot write the shell history to {' nor '.join(self._failed)}; {where}"

    def take_warning(self) -> str | None:
        """The one line about where history could not be written: returned once, then None."""
        if self._warning is None or self._warned:
            return None
        self._warned = True
        return self._warning


def history_for(ctx: Context) -> History:
    path = os.environ.get("PRECISION_TOOL_HISTORY")
    if path:
        return LazyFileHistory(path)
    try:
        user = str(user_state_dir() / "history")
    except OSError:  # no usable folder for per-user state at all
        return InMemoryHistory()
    if ctx.workspace.root.is_dir():
        return LazyFileHistory(ctx.workspace.history_file, fallbacks=[user])
    return LazyFileHistory(user)


def banner(ctx: Context) -> list[Text]:
    lines = [
        Text.assemble(("PrecisionTool ", "bold"), (__version__, "bold cyan"),
                      ("  workspace: ", "dim"), (str(ctx.workspace.root), "path")),
    ]
    if not ctx.workspace.root.is_dir():
        lines += _no_workspace_lines(ctx.workspace.root)
    else:
        for gap in ctx.workspace.missing():
            lines.append(Text.assemble(("  missing ", "warning"), gap.what, (f" — {gap.how}", "dim")))
    lines.append(Text("Type `help` for the commands, Ctrl-D or `exit` to leave.", style="dim"))
    return lines


def _no_workspace_lines(root: Path) -> list[Text]:
    """The workspace folder does not exist: how to get one, and where `demo` builds its example (not
    ./precision_data, which the next plain start looks for), or that it is already here."""
    from precision_tool.demo.build import DEFAULT_DIR  # (a few ms, and only when there is no workspace)
    from precision_tool.shell.commands.demo.demo_steps import tool_command  # the spelling that runs here

    lines = [Text.assemble(("  missing ", "warning"), f"workspace {root} (the folder does not exist)",
                           (" — run the training script with `import precision_tool.tf_config`, or point "
                            "--data at an existing precision_data", "dim"))]
    demo, opens = Path(DEFAULT_DIR), tool_command("--data", DEFAULT_DIR)
    if demo.is_dir():
        lines.append(Text.assemble(("  demo workspace ", "ok"), (DEFAULT_DIR, "path"), " is here",
                                   (f" — open it: `{opens}` (in this shell: `data {DEFAULT_DIR}`)", "dim")))
    else:
        lines.append(Text.assemble(("  demo workspace", "dim"), (f" — `{tool_command('demo')}` builds one in ", "dim"),
                                   (DEFAULT_DIR, "path"), (f"; then `{opens}` opens it", "dim")))
    return lines


def interactive(ctx: Context, debug: bool = False) -> int:
    ctx.console.paging = True  # type: ignore[attr-defined]  # results taller than the screen go through a pager
    for line in banner(ctx):
        show(ctx.console, line)  # prose: wrapped at words, a path never split
    history = history_for(ctx)
    completer = ShellCompleter(ctx.table, ctx.workspace)
    session: PromptSession[str] = PromptSession(history=history, completer=completer, complete_while_typing=False)
    while True:
        try:
            line = session.prompt(PROMPT)
        except KeyboardInterrupt:  # Ctrl-C at the prompt: drop the line, stay
            continue
        except EOFError:  # Ctrl-D
            return 0
        warning = history.take_warning() if isinstance(history, LazyFileHistory) else None
        if warning:  # a history write failed while the line was accepted
            show(ctx.console, warning_line(warning))
        if execute(line, ctx, debug=debug).exit_requested:
            return 0
        completer.workspace = ctx.workspace  # `data DIR` may have switched it


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
