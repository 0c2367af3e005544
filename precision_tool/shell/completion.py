"""Tab completion: command names, then options, then whatever the command's completer offers."""

from __future__ import annotations

import itertools
import logging
import os
import shlex
from pathlib import Path
from typing import Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from precision_tool.shell.command import CommandTable, CompletionRequest
from precision_tool.workspace import Workspace

log = logging.getLogger("precision_tool")


class Offer(str):
    """A suggestion that need not start with the word typed, which it replaces: `pt bn2_Fu` offers the
    dump file BatchNorm.bn2_FusedBatchNormV3.10.0.<ts> (other suggestions must start with the word)."""


def complete_paths(current: str) -> list[str]:
    """File and folder names for a partly typed path (folders end in '/')."""
    folder, _, prefix = current.rpartition("/")
    base = Path(folder or ".").expanduser() if folder or not current.startswith("/") else Path("/")
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name.startswith(prefix) and (prefix.startswith(".") or not entry.name.startswith(".")):
            name = f"{folder}/{entry.name}" if folder else entry.name
            out.append(name + "/" if entry.is_dir() else name)
    return out


def words_before_cursor(text: str) -> tuple[list[str], str]:
    """Split what is typed into finished words and the word being typed ('' after a space)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if text and not text[-1].isspace() and words:
        return words[:-1], words[-1]
    return words, ""


class ShellCompleter(Completer):
    def __init__(self, table: CommandTable, workspace: Workspace, limit: int = 200) -> None:
        self.table = table
        self.workspace = workspace
        self.limit = limit

    def suggestions(self, text: str) -> Iterable[str]:
        words, current = words_before_cursor(text)
        if not words:
            return [n for n in self.table.names() if n.startswith(current)]
        command = self.table.get(words[0])
        if command is None:
            return complete_paths(current) if current else []
        if current.startswith("-"):
            return [o for o in command.options() if o.startswith(current)]
        option = words[-1] if len(words) > 1 and words[-1].startswith("-") else None
        action = _action(command, option) if option is not None else None
        if action is None or action.nargs == 0:
            option = None
        elif action.choices:  # an option with fixed values (--backend auto|native|cann) offers them
            return [str(c) for c in action.choices if str(c).startswith(current)]
        if command.completer is None:
            return []
        request = CompletionRequest(words, current, option, self.workspace, self.table)
        return [s for s in command.completer(request) if isinstance(s, Offer) or s.startswith(current)]

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        _, current = words_before_cursor(text)
        try:
            suggestions = list(itertools.islice(self.suggestions(text), self.limit))
        except Exception:  # an unreadable folder or a damaged file: offer nothing, never a traceback
            log.debug("completing %r failed", text, exc_info=True)
            return
        for suggestion in suggestions:
            yield Completion(suggestion, start_position=-len(current))


def _action(command, option: str):  # type: ignore[no-untyped-def]
    """The argparse action behind `option` in the command's parser, or None."""
    for action in command.parser()._actions:
        if option in action.option_strings:
            return action
    return None
