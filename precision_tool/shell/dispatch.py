"""Run one command line: find the command, parse its options, call it, render what it returns."""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

from precision_tool.errors import CommandFailed, PrecisionToolError, UsageError
from precision_tool.render.console import shared_width, show
from precision_tool.render.messages import show_error
from precision_tool.shell.command import Context

log = logging.getLogger("precision_tool")


@dataclass(frozen=True)
class Outcome:
    ok: bool
    exit_requested: bool = False
    status: int | None = None  # the exit status a command asked for (CommandFailed.exit_status)

    @property
    def exit_status(self) -> int:
        """What a one-shot exits with: the status the command set, else 0 or 1."""
        if self.status is not None:
            return self.status
        return 0 if self.ok else 1


class ExitShell(Exception):
    """Raised by `exit`/`quit` to leave the shell."""


def split_line(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError as exc:  # unbalanced quotes
        raise UsageError(f"cannot read the command line: {exc}") from None


def log_file_in_use() -> str | None:
    """Where tracebacks go: the file of the tool's log handler (set up by shell/main.py)."""
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler) and handler.baseFilename != os.devnull:
            return handler.baseFilename
    return None


# Words that mean something only to a shell (a pipe, a redirection, a command list).
SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "2>", "2>&1", "&"})


def one_edit_away(word: str, names: list[str]) -> list[str]:
    """The names one typo from `word`: one letter changed, added, dropped, or two neighbours swapped."""
    return [n for n in names if n != word and _one_edit(word, n)]


def _one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _either(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def unknown_command_message(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.5)
    # a name the typed word begins with first: `lss` is `ls` with a key held, before `loss` (as close by ratio)
    close.sort(key=lambda name: not word.startswith(name))
    hint = f"; did you mean {', '.join(close)}?" if close else "; type `help` for the commands"
    return f"unknown command '{word}'{hint}"


def execute(line: str, ctx: Context, *, debug: bool = False, passthrough: bool = True,
            words: list[str] | None = None, prepare: Callable[[argparse.Namespace], None] | None = None) -> Outcome:
    """Run one line (or pre-split `words`, from the one-shot CLI). Errors are shown as one line. `prepare`
    sees the parsed arguments before the handler does (a caller running a command for its own ends: `demo`
    runs `ac` and shows its answer block last)."""
    console = ctx.console
    try:
        if words is None:
            words = split_line(line)
        if not words:
            return Outcome(ok=True)
        name, rest = words[0], words[1:]
        command = ctx.table.get(name)
        if command is None:
            close = one_edit_away(name, ctx.table.names())
            if passthrough and close and shutil.which(name):
                # `nl` for `ni`: running the program (which may wait on stdin) would hide the typo.
                raise UsageError(f"`{name}` is a shell program; did you mean {_either(close)}? "
                                 f"`run {line.strip() or name}` runs it")
            if passthrough and shutil.which(name):
                # The original tool runs a known program (`vim file.txt`) as it is; no shell involved.
                status = subprocess.call(words)
                return Outcome(ok=status == 0)
            raise UsageError(unknown_command_message(name, ctx.table.names()))
        parser = command.parser(prog=name)
        operators = [w for w in rest if w in SHELL_OPERATORS]
        if operators and command.name != "run":
            raise UsageError(f"{name}: `{operators[0]}` is shell syntax, and the tool's commands do not go "
                             f"through a shell; from bash: precision-tool --data {shlex.quote(str(ctx.workspace.root))} "
                             f"{line.strip()}")
        # -h wins over everything else on the line, even over missing required arguments.
        if "-h" in rest or "--help" in rest:
            show(console, parser.help_renderable(shared_width(console)))
            return Outcome(ok=True)
        args = parser.parse_args(rest)
        # What follows the command name, as typed (for `run`, which hands it to a shell).
        args.raw_line = line.strip()[len(name):].strip()
        args.invoked_as = name  # the name or alias typed (`compare` for `cp`), for messages
        if prepare is not None:
            prepare(args)
        show(console, command.handler(args, ctx))
        return Outcome(ok=True)
    except ExitShell:
        return Outcome(ok=True, exit_requested=True)
    except CommandFailed as exc:
        if str(exc):
            show_error(console, str(exc))
        return Outcome(ok=False, status=exc.exit_status)
    except PrecisionToolError as exc:
        show_error(console, str(exc))
        return Outcome(ok=False)
    except KeyboardInterrupt:
        show_error(console, "cancelled")
        return Outcome(ok=False)
    except Exception as exc:  # a bug: one line for the user, the traceback in the log
        log.exception("unexpected error running %r", line)
        if debug:
            console.print_exception()
        where = log_file_in_use() or "no log file"
        show_error(console, f"unexpected error: {type(exc).__name__}: {exc} (full traceback in {where}; "
                   "--debug shows it here)")
        return Outcome(ok=False)
