"""Small renderables shared by many commands: one-line errors, warnings, notes, key/value panels."""

from __future__ import annotations

from rich.text import Text


def error_line(message: str) -> Text:
    return Text(message, style="error")


def warning_line(message: str) -> Text:
    return Text(f"warning: {message}", style="warning")


def note_line(message: str) -> Text:
    return Text(message, style="dim")
