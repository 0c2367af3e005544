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
    """One red line: never hard-wrapped, so scripts and tests see exactly one line."""
    console.print(error_line(message), soft_wrap=True)
