"""The one place consoles are made and results are shown, so width, wrapping, paging and NO_COLOR are
handled the same way by every command.

Prose (a `str` or `Text` a handler returns) wraps like text in a terminal: at word boundaries, with
continuation lines indented under their line, and a word (a path, an op name) is never split: one too long
for its indent moves left only as far as it must, and one longer than the line keeps its indent and the
terminal folds it, so it still copies whole. In a pipe, prose is one line per logical line, so `grep` sees
whole messages. Tables and panels render at the console width (80 in a pipe unless COLUMNS says otherwise).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import IO, Any

from rich.cells import cell_len
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

# Panels of one command share one width: the terminal's, but no wider than this (wide panels of short
# lines are hard to scan on a 200-column terminal).
MAX_PANEL_WIDTH = 120
# Continuation lines of wrapped prose are indented this much more than their line.
HANGING_INDENT = 2

_WORD = re.compile(r"\S+")


class ToolConsole(Console):
    """A rich Console that knows whether its output may go through a pager (the interactive shell)."""

    paging: bool = False


def make_console(file: IO[str] | None = None, width: int | None = None, stderr: bool = False,
                 terminal: bool | None = None) -> ToolConsole:
    """A rich console; rich itself honours NO_COLOR, COLUMNS and the terminal width.

    `terminal=True` renders as in a terminal (prose wrapped at words) into `file`, for tests."""
    if terminal is None and file is not None:
        terminal = False
    return ToolConsole(
        file=file,
        width=width,
        stderr=stderr,
        theme=THEME,
        highlight=False,
        no_color="NO_COLOR" in os.environ or None,
        soft_wrap=False,
        force_terminal=terminal,
        force_interactive=None if terminal is None else terminal,
        legacy_windows=False if sys.platform != "win32" else None,
    )


def shared_width(console: Console) -> int:
    """The one width every panel of a command uses."""
    return min(console.width, MAX_PANEL_WIDTH)


@dataclass(frozen=True)
class Paged:
    """Results that the interactive shell shows through a pager when they are taller than the terminal."""

    items: Any


class PlainBlock:
    """Lines already laid out (none wrapped: the terminal folds one too long, as for soft-wrapped text), printed
    as they are in one write, the first `bold_head` characters bold (a header). Why not a Text with no_wrap:
    rich still lays a Text out line by line, a Text per line: 0.3 s for `ls dump`'s 20,000 lines."""

    def __init__(self, text: str, bold_head: int = 0) -> None:
        from rich.control import strip_control_codes  # (what a Text strips of its text too)

        self.head = strip_control_codes(text[:bold_head])
        self.body = strip_control_codes(text[bold_head:])

    @property
    def plain(self) -> str:
        return self.head + self.body

    def __rich_console__(self, console: Console, options: Any) -> Any:
        from rich.segment import Segment
        from rich.style import Style

        if self.head:
            yield Segment(self.head, Style(bold=True))
        yield Segment(self.body + "\n")


def wrap_prose(text: Text, width: int) -> Text:
    """`text` wrapped at word boundaries to `width` cells; words are never split (see module doc)."""
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        out.extend(_wrap_line(line, width))
    return Text("\n").join(out)


def _wrap_line(line: Text, width: int) -> list[Text]:
    plain = line.plain
    words = [m.span() for m in _WORD.finditer(plain)]
    if cell_len(plain) <= width or not words:
        return [line]
    indent = words[0][0]
    hanging = Text(" " * min(indent + HANGING_INDENT, max(width // 2, 0)))
    lines: list[Text] = []
    start, end = words[0]  # the span of the line being built, in `plain`
    lead = line[:start]  # what precedes the first word of the current line
    for word_start, word_end in words[1:]:
        if cell_len(lead.plain) + cell_len(plain[start:word_end]) <= width:
            end = word_end
            continue
        lines.append(_indented(lead, line[start:end], width))
        start, end, lead = word_start, word_end, hanging
    lines.append(_indented(lead, line[start:end], width))
    return lines


def _indented(lead: Text, body: Text, width: int) -> Text:
    # A word too long to follow its indent moves left only as far as it must, so it stays under what it
    # belongs to and the terminal folds it only if it must; one too long for any line keeps its indent (it
    # is folded either way).
    room = width - cell_len(body.plain)
    if cell_len(lead.plain) <= room or room < 0:
        return lead + body
    return lead[:room] + body  # `lead` is only spaces: the line's own indent or the hanging one


def show(console: Console, result: Any) -> None:
    """Render what a handler returned: None, a string, a rich renderable, a list of them, or Paged."""
    if result is None:
        return
    if isinstance(result, Paged):
        _show_paged(console, result.items)
        return
    if isinstance(result, (list, tuple)):
        for item in result:
            show(console, item)
        return
    if isinstance(result, (str, Text)):
        text = console.render_str(result) if isinstance(result, str) else result
        if console.is_terminal and not text.no_wrap:
            text = wrap_prose(text, console.width)
        # Already wrapped (or a pipe): rich must not fold it again.
        console.print(text, soft_wrap=True)
        return
    if isinstance(result, PlainBlock):
        console.print(result, soft_wrap=True)  # (not cropped to the width: the terminal folds a long line)
        return
    console.print(result)


def _show_paged(console: Console, items: Any) -> None:
    if not (getattr(console, "paging", False) and console.is_terminal):
        show(console, items)
        return
    with console.capture() as capture:
        show(console, items)
    rendered = capture.get()
    if rendered.count("\n") < console.height - 1:
        console.file.write(rendered)
        console.file.flush()
        return
    # As git does: quit at once if it fits after all, keep colours, leave the text on the screen.
    os.environ.setdefault("LESS", "FRX")
    with console.pager(styles=True):
        show(console, items)
