"""What a command is: one frozen entry (name, parser, handler, completer) read by REPL, CLI and help alike.

A handler gets the parsed arguments and a `Context`, and returns what to show (a rich renderable, a
list of them, or None). It never prints; the shell renders what it returns. Long-running handlers may
use `ctx.progress()` for a live progress bar and `ctx.status()` for notes shown as they happen.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterable, NoReturn, Sequence

from precision_tool.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from precision_tool.config import Settings
    from precision_tool.workspace import Workspace


class CommandParser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting, so the shell keeps running."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("add_help", False)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # -h is handled by the dispatcher (it shows format_help()), never by argparse's print+exit.
        self.add_argument("-h", "--help", action="store_true", help="show this help")

    def format_help(self) -> str:
        """Plain help at the terminal's width (the shell prints `help_renderable` instead)."""
        import shutil

        from precision_tool.shell.help_format import plain_help

        return plain_help(self, shutil.get_terminal_size().columns)

    def help_renderable(self, width: int) -> Any:
        """The help as a rich renderable, reflowed to `width` (see shell/help_format.py)."""
        from precision_tool.shell.help_format import parser_help

        return parser_help(self, width)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        # A positional's name is what users see in the usage line and in errors; without a metavar
        # argparse would show its internal dest ("argument subject: ..."). Upper-case, as option values are.
        if (args and not args[0].startswith("-") and "metavar" not in kwargs and "choices" not in kwargs
                and kwargs.get("nargs") != argparse.REMAINDER):
            kwargs["metavar"] = args[0].upper()
        return super().add_argument(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own message names the argument by its dest and quotes each choice.
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(str, action.choices))
            option = "/".join(action.option_strings)
            raise argparse.ArgumentError(None, f"{option} takes one of: {choices}; not {value!r}" if option
                                         else f"{value!r} is not one of: {choices}")

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {user_words(message)} (see `{self.prog} -h`)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"{self.prog}: exit {status}")


def user_words(message: str) -> str:
    """argparse's messages in the words of the usage line: no "argument X:" prefix, plain phrasing."""
    for pattern, replacement in _ARGPARSE_PHRASES:
        message = pattern.sub(replacement, message)
    return message


_ARGPARSE_PHRASES = [
    (re.compile(r"^argument (\S+): expected one argument$"), r"\1 needs a value"),
    (re.compile(r"^argument (\S+): expected at least one argument$"), r"\1 needs at least one value"),
    (re.compile(r"^argument (\S+): expected (\d+) arguments$"), r"\1 needs \2 values"),
    (re.compile(r"^argument (\S+): ignored explicit argument (.*)$"), r"\1 takes no value (got \2)"),
    (re.compile(r"^argument (\S+): not allowed with argument (\S+)$"), r"\1 and \2 do not go together"),
    (re.compile(r"invalid int value: ('.*')$"), r"\1 is not a whole number"),
    (re.compile(r"invalid float value: ('.*')$"), r"\1 is not a number"),
    (re.compile(r"^argument "), ""),
]


@dataclass
class Context:
    """What a handler may use: settings, the workspace, and the console for live progress only."""

    settings: "Settings"
    workspace: "Workspace"
    console: "Console"
    table: "CommandTable"
    notes: list[Any] = field(default_factory=list)

    def use_workspace(self, workspace: "Workspace") -> None:
        """Switch the workspace the following commands use (`data DIR`, `infer DIR`); in a one-shot with
        opens_shell, the shell then opens on it. The settings' ROOT_DIR follows, as `--data DIR` sets it."""
        import dataclasses

        self.workspace = workspace
        self.settings = dataclasses.replace(self.settings, ROOT_DIR=str(workspace.root))

    def note(self, renderable: Any) -> None:
        """Show something now (warnings during a long run); final results are returned instead."""
        from precision_tool.render.console import show

        show(self.console, renderable)

    def progress(self, transient: bool = True) -> "Progress":
        from precision_tool.render.progress import make_progress

        return make_progress(self.console, transient=transient)


Handler = Callable[[argparse.Namespace, Context], Any]
Completer = Callable[["CompletionRequest"], Iterable[str]]


@dataclass(frozen=True)
class CompletionRequest:
    """What the completer of one command sees: the words before the cursor and the word being typed."""

    words: Sequence[str]
    current: str
    option: str | None  # the option the current word is a value of ('-n'), or None for a positional
    workspace: "Workspace"
    table: "CommandTable | None" = None  # for commands that complete command names (help)


@dataclass(frozen=True)
class Command:
    """One command. `build_parser` adds arguments to a fresh parser; the parser's help is the help."""

    name: str
    summary: str
    build_parser: Callable[[CommandParser], None]
    handler: Handler
    completer: Completer | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""
    # As a one-shot from a terminal (`cli.py data DIR`, `cli.py infer DIR`), open the shell afterwards,
    # on the workspace the command leaves in ctx.workspace, as the original tool did.
    opens_shell: bool = False

    def parser(self, prog: str | None = None) -> CommandParser:
        """A fresh parser; `prog` is the name the user typed (an alias reads better in errors)."""
        parser = CommandParser(
            prog=prog or self.name,
            description=self.description or self.summary,
        )
        self.build_parser(parser)
        return parser

    def options(self) -> list[str]:
        """Option strings, for completion."""
        opts: list[str] = []
        for action in self.parser()._actions:
            opts.extend(action.option_strings)
        return opts


@dataclass(frozen=True)
class AcSection:
    """One check that `ac` runs: returns a renderable (or None when it has nothing to say)."""

    name: str
    run: Callable[[argparse.Namespace, Context], Any]
    order: int = 50  # lower runs first


class CommandTable:
    """The single table of commands, built from the modules listed in `shell/table.py`."""

    def __init__(self, commands: Iterable[Command], ac_sections: Iterable[AcSection] = ()) -> None:
        self._commands: dict[str, Command] = {}
        self._by_alias: dict[str, Command] = {}
        for command in commands:
            if command.name in self._commands:
                raise ValueError(f"command {command.name} defined twice")
            self._commands[command.name] = command
            for name in (command.name, *command.aliases):
                self._by_alias[name] = command
        self.ac_sections = sorted(ac_sections, key=lambda s: s.order)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._commands.values())

    def get(self, name: str) -> Command | None:
        return self._by_alias.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_alias)

    @cached_property
    def width(self) -> int:
        return max(len(n) for n in self._commands)
