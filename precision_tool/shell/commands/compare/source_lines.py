"""The golden run's record of where each op was made (formats/tf/op_sources.py), as the commands that
name ops (vc, vcs, ac's comparison and answer) read it."""

from __future__ import annotations

from typing import Any

from precision_tool.shell.command import Context


def op_sources(ctx: Context) -> Any:
    """The record, read anew (a capture may have replaced it since the last command); None when there is
    none, or when it is damaged (said in one line; `ni` shows what is wrong with it too)."""
    from precision_tool.errors import FormatError
    from precision_tool.formats.tf.op_sources import read_op_sources

    try:
        return read_op_sources(ctx.workspace.op_sources_file)
    except FormatError as exc:
        from precision_tool.render.messages import note_line

        ctx.note(note_line(f"the ops' source lines are not shown: {exc}"))
        return None
