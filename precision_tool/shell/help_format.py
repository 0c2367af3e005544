"""How `CMD -h` and `help CMD` look: rich-argparse, reflowed to the terminal at word boundaries.

Command descriptions are written as paragraphs; the formatter joins a paragraph's lines and wraps them
to the width, so no sentence breaks where its source line did. Deliberate blocks stay as written:
lines that start with spaces (examples) or with the shell prompt. An example line too long for the
terminal wraps its explanation under itself, never inside the command. Words (paths, op names) are
never split.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from rich_argparse import RichHelpFormatter

PROMPT_PREFIX = "PrecisionTool >"
# An example line: indent, the command, two or more spaces, what it does.
_WORD = re.compile(r"\S+")
_EXAMPLE = re.compile(r"^(\s+\S.*?\s{2,})(\S.*)$")
# The narrowest explanation column worth wrapping into; narrower, the example stays one long line.
_MIN_EXPLANATION = 20


class HelpFormatter(RichHelpFormatter):
    """rich-argparse with the tool's conventions: argparse's own lower-case headings ("usage:",
    "options:"), help text taken literally (no rich markup: `[-1, 1]` is text), words never split."""

    group_name_formatter = str
    help_markup = False
    text_markup = False
    styles: ClassVar[dict[str, Any]] = {
        **RichHelpFormatter.styles,
        "argparse.groups": "bold",
        "argparse.prog": "bold",
        "argparse.args": "cyan",
        "argparse.metavar": "dark_cyan",
    }

    def _rich_split_lines(self, text: Text, width: int) -> Any:
        return _wrap_words(self.console, self._rich_whitespace_sub(text), width)

    def _rich_fill_text(self, text: Text, width: int, indent: Text) -> Text:
        out: list[Text] = []
        paragraph: list[Text] = []

        def end_paragraph() -> None:
            if paragraph:
                joined = Text(" ").join(paragraph)
                out.extend(indent + line for line in _wrap_words(self.console, joined, width))
                paragraph.clear()

        for line in text.split("\n", allow_blank=True):
            plain = line.plain
            if not plain.strip():
                end_paragraph()
                out.append(Text())
            elif plain[0].isspace() or plain.startswith(PROMPT_PREFIX):
                end_paragraph()
                out.extend(indent + part for part in _example_lines(self.console, line, width))
            else:
                line.rstrip()
                paragraph.append(line)
                if plain.rstrip().endswith(":"):  # a heading ("examples:") is a paragraph of its own
                    end_paragraph()
        end_paragraph()
        while out and not out[-1].plain:
            out.pop()
        return Text("\n").join(out) + "\n\n"


def _wrap_words(console: Console, text: Text, width: int) -> list[Text]:
    """Wrap at spaces; a word longer than the line stays whole on a line of its own (never cropped)."""
    plain = text.plain
    lines: list[Text] = []
    start = end = None  # span of the line being built
    for match in _WORD.finditer(plain):
        if start is None:
            start, end = match.span()
        elif cell_len(plain[start:match.end()]) <= width:
            end = match.end()
        else:
            lines.append(text[start:end])
            start, end = match.span()
    if start is not None:
        lines.append(text[start:end])
    return lines or [Text()]


def _example_lines(console: Console, line: Text, width: int) -> list[Text]:
    line.rstrip()
    match = _EXAMPLE.match(line.plain)
    if len(line.plain) <= width:
        return [line]
    if match is None or width - len(match.group(1)) < _MIN_EXPLANATION:
        # an indented line that is not "command  explanation" (a continuation): wrapped under its indent,
        # never cropped by the terminal
        column = len(line.plain) - len(line.plain.lstrip())
        if width - column < _MIN_EXPLANATION:
            return [line]
    else:
        column = len(match.group(1))
    lines = _wrap_words(console, line[column:], width - column)
    pad = Text(" " * column)
    return [line[:column] + lines[0], *(pad + rest for rest in lines[1:])]


def parser_help(parser: argparse.ArgumentParser, width: int) -> HelpFormatter:
    """The help of `parser` as a rich renderable `width` cells wide (what format_help would print)."""
    formatter = HelpFormatter(prog=parser.prog, width=width)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    formatter.add_text(parser.description)
    for group in parser._action_groups:
        formatter.start_section(group.title)
        formatter.add_text(group.description)
        formatter.add_arguments(group._group_actions)
        formatter.end_section()
    formatter.add_text(parser.epilog)
    return formatter


def plain_help(parser: argparse.ArgumentParser, width: int) -> str:
    """The same help as plain text (no colours), e.g. for a file or a test."""
    console = Console(width=width, no_color=True, force_terminal=False, color_system=None, highlight=False)
    with console.capture() as capture:
        console.print(parser_help(parser, width), crop=False)
    return capture.get().rstrip() + "\n"
