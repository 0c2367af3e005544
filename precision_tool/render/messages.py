"""Small renderables shared by many commands: one-line errors, warnings, notes, key/value panels."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def error_line(message: str) -> Text:
    return Text(message, style="error")


def warning_line(message: str) -> Text:
    return Text(f"warning: {message}", style="warning")


def note_line(message: str) -> Text:
    return Text(message, style="dim")


def show_error(console: Console, message: str) -> None:
    """One red message: one line in a pipe (scripts and tests see exactly one line); wrapped at words in
    a terminal."""
    from precision_tool.render.console import show

    show(console, error_line(message))
