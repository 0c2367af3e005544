"""Steps the demo commands share (`demo`, `demo --ranks N`, `demo --model NAME`): the command lines to show,
the folder to build in, and running `tf_dump` and `ac -c --report` on the built workspace with ac's answer block kept for last.

Light at import (argparse only): the shell's command table imports the demo modules at start-up.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Context


def open_command(dir_text: str) -> str:
    """The command line that opens the shell on the demo workspace."""
    return tool_command("--data", dir_text)


def finished(what: str, root: Any, dir_text: str, started: float, answer: list[Any],
             extra: list[tuple[str, str]] = ()) -> list[Any]:
    """A demo's closing lines: `<what> ready in N s: ROOT`, the `extra` (text, style) parts, how to open the
    shell on it, then ac's answer block (`started`: the demo's time.perf_counter() at its start)."""
    import time

    from rich.rule import Rule
    from rich.text import Text

    text = Text()
    text.append(f"{what} ready in {time.perf_counter() - started:.0f} s: ", style="bold")
    text.append(str(root), style="path")
    for part, style in extra:
        text.append(part, style=style)
    text.append("\nOpen the shell on it:\n  ", style="bold")
    text.append(open_command(dir_text), style="bold green")
    return [Rule("[bold]demo[/bold]", align="left"), text, *answer]


def tool_command(*words: str) -> str:
    """A command line of this tool as the user can type it (`precision-tool` when installed)."""
    import shlex
    import shutil
    from pathlib import Path

    tail = " ".join(shlex.quote(word) for word in words)
    if shutil.which("precision-tool"):
        return f"precision-tool {tail}"
    cli = Path(__file__).resolve().parents[3] / "cli.py"
    try:
        shown = str(cli.relative_to(Path.cwd()))
    except ValueError:
        shown = str(cli)
    return f"python3 {shlex.quote(shown)} {tail}"


def unused_workspace(ctx: Context) -> str | None:
    """The workspace named with --data ($PRECISION_DATA, ROOT_DIR) when nothing is there yet, so that
    `precision-tool --data DIR demo` builds in DIR; a workspace that holds anything is never the default."""
    from precision_tool.config import Settings

    root = ctx.workspace.root
    if ctx.settings.ROOT_DIR == Settings().ROOT_DIR:
        return None
    if root.is_dir() and any(root.iterdir()):
        return None
    return str(root) if not root.exists() or root.is_dir() else None


def prepare_root(ctx: Context, dir_arg: str | None, default: str, *, force: bool) -> tuple[str, Any]:
    """(the folder as the user named it, the resolved Path) of a demo to build: DIR, else the unused --data
    workspace, else `default`; refused in one line when it cannot be written or holds a workspace without
    --force (which clears only the demo's parts)."""
    from pathlib import Path

    from precision_tool.demo.build import WRITE_HINT, prepare_folder
    from precision_tool.errors import WorkspaceError
    from precision_tool.workspace import Workspace

    dir_text = dir_arg or unused_workspace(ctx) or default
    root = Path(dir_text).expanduser().resolve()
    if root.is_dir():  # someone else's or a read-only folder: say so before --force removes anything
        Workspace.ensure_dir(root, "demo folder", hint=WRITE_HINT)
    try:
        prepare_folder(root, force=force)
    except WorkspaceError:
        raise
    except OSError as exc:  # --force could not remove a part of the old workspace
        raise WorkspaceError(f"cannot write the demo folder {root}: {exc.strerror or exc} "
                             f"({exc.filename}); {WRITE_HINT}") from None
    return dir_text, root


def demo_context(ctx: Context, root: Any) -> Context:
    """The shell's context pointed at the demo workspace, for the commands run on it."""
    import dataclasses

    from precision_tool.workspace import Workspace

    return Context(settings=dataclasses.replace(ctx.settings, ROOT_DIR=str(root)), workspace=Workspace(root),
                   console=ctx.console, table=ctx.table)


def run_checks(demo_ctx: Context, root: Any, *, check: bool = True, ac_line: str = "ac -c --report",
               dump_lines: tuple[str, ...] = ("tf_dump",)) -> list[Any]:
    """`dump_lines` (`tf_dump`), then (`check`) `ac_line` on the demo workspace, each under a rule; returns
    ac's answer block, which the demo shows last, right above the prompt."""
    from rich.rule import Rule

    from precision_tool.errors import CommandFailed
    from precision_tool.shell.dispatch import execute

    held: dict[str, Any] = {}

    def defer_answer(args: argparse.Namespace) -> None:
        args.defer_answer = True
        held["args"] = args

    for line in ([*dump_lines] + ([ac_line] if check else [])):
        demo_ctx.note(Rule(f"[bold]{line}[/bold]", align="left"))
        prepare = defer_answer if line.startswith("ac ") else None
        if not execute(line, demo_ctx, passthrough=False, prepare=prepare).ok:
            for part in _answer_block(held):  # what the checks that ran found, above the failure
                demo_ctx.note(part)
            raise CommandFailed(f"demo: `{line}` failed on {root}")
    return _answer_block(held)


def _answer_block(held: dict[str, Any]) -> list[Any]:
    return list(getattr(held.get("args"), "answer_block", None) or [])
