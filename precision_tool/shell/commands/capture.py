"""(being written) commands of issue 12: capture."""

from __future__ import annotations

from precision_tool.shell.command import Command

COMMANDS: list[Command] = []
