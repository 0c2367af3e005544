"""The command table: every command module is listed once here, in the order help shows them.

Each module exports `COMMANDS: list[Command]` and may export `AC_SECTIONS: list[AcSection]`.
Modules import only light things at top level (argparse); heavy work is imported inside handlers,
so building the table costs nothing at start-up.
"""

from __future__ import annotations

import importlib

from precision_tool.shell.command import AcSection, Command, CommandTable

COMMAND_MODULES = (
    "precision_tool.shell.commands.core",
    "precision_tool.shell.commands.auto_check",
    "precision_tool.shell.commands.compare.compare",
    "precision_tool.shell.commands.compare.pair",
    "precision_tool.shell.commands.compare.same_step",
    "precision_tool.shell.commands.compare.loss",
    "precision_tool.shell.commands.graphs",
    "precision_tool.shell.commands.replay",
    "precision_tool.shell.commands.compare.replay_all",
    "precision_tool.shell.commands.compare.report",
    "precision_tool.shell.commands.explore.explore",
    "precision_tool.shell.commands.ls",
    "precision_tool.shell.commands.dumps",
    "precision_tool.shell.commands.tf",
    "precision_tool.shell.commands.capture",
    "precision_tool.shell.commands.train",
    "precision_tool.shell.commands.bisect.bisect",
    "precision_tool.shell.commands.infer",
    "precision_tool.shell.commands.demo.demo",
    "precision_tool.shell.commands.answer",
)


def build_table(modules: tuple[str, ...] = COMMAND_MODULES) -> CommandTable:
    commands: list[Command] = []
    sections: list[AcSection] = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        commands.extend(getattr(module, "COMMANDS", []))
        sections.extend(getattr(module, "AC_SECTIONS", []))
    return CommandTable(commands, sections)
