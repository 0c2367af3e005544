"""The one place consoles are made, so width and NO_COLOR are honoured the same way everywhere."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

from rich.console import Console
from rich.text import Text
from rich.theme import Theme

THEME = Theme(
    {
        "error": "bold red",
        "warning": "yellow",
        "ok": "green",
        "bad": "bold red",
        "dim": "dim",
        "op": "bold cyan",
        "path": "magenta",
    }
)


def make_console(file: IO[str] | None = None, width: int | None = None, stderr: bool = False) -> Console:
    """A rich console; rich itself honours NO_COLOR, COLUMNS and the terminal width."""
    return Console(
        file=file,
        width=width,
        stderr=stderr,
        theme=THEME,
        highlight=False,
        no_color="NO_COLOR" in os.environ or None,
        soft_wrap=False,
        force_terminal=None if file is None else False,
        force_interactive=None if file is None else False,
        legacy_windows=False if sys.platform != "win32" else None,
    )


def show(console: Console, result: Any) -> None:
    """Render what a handler returned: None, a string, a rich renderable, or a list of them."""
    if result is None:
        return
    if isinstance(result, (list, tuple)):
        for item in result:
            show(console, item)
        return
    # A line of text stays one line (paths and messages copy and grep whole); the terminal wraps it.
    console.print(result, soft_wrap=isinstance(result, (str, Text)))
