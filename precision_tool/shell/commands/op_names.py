"""Naming an op in a command: the workspace's graph index loaded for `ni`, `ls` and `replay`, op and
graph-name completion, and the one-line answers when a name matches nothing or several ops.

Shared by graphs.py (`ni`, `ls`) and replay.py (`replay`, `ni -c`), which is why it is neither of them.
"""

from __future__ import annotations

from typing import Any

from precision_tool.errors import WorkspaceError
from precision_tool.shell.command import CompletionRequest, Context


def index_of(ctx_or_workspace: Any) -> Any:
    from precision_tool.analysis.graphs.graph_index import index_for

    workspace = getattr(ctx_or_workspace, "workspace", ctx_or_workspace)
    return index_for(workspace)


def load_index(ctx: Context, graph_filter: str | None) -> Any:
    """The index with the graphs loaded; notes parsing progress and bad files as they happen."""
    from precision_tool.render.messages import note_line, warning_line

    index = index_of(ctx)
    files = index.load(graph_filter, progress=lambda message: ctx.note(note_line(message)))
    for failure in index.failures:
        ctx.note(warning_line(failure))
    if not files:
        message = index.missing_build_message()
        if message is None and graph_filter:
            message = f"no Build graph or graph file matches -g {graph_filter!r}"
        raise WorkspaceError(message or f"no readable GE graphs in {ctx.workspace.npu_dir}")
    return index


def no_graph_message(index: Any, graph_filter: str) -> str:
    choices = index.graph_choices()
    shown = ", ".join(choices[:10]) + (f" and {len(choices) - 10} more" if len(choices) > 10 else "")
    return f"no graph matches {graph_filter!r}; graphs: {shown or '(none)'}"


def complete_op_names(request: CompletionRequest) -> list[str]:
    """Op names starting with what is typed; never waits for a parse (warms the index up instead)."""
    index = index_of(request.workspace)
    if not index.ready_for_completion():
        index.warm_up()
        return []
    index.load()
    return index.complete(request.current)


def complete_graph_names(request: CompletionRequest) -> list[str]:
    """Values for -g: graph names and graph file names starting with what is typed. File names need no
    parse; graph names are added once the index is loaded (completion warms it up, never waits)."""
    index = index_of(request.workspace)
    if index.ready_for_completion():
        index.load()
        choices = index.graph_choices()
    else:
        index.warm_up()
        choices = [p.name for i in request.workspace.debug_ids() for p in request.workspace.graph_files(i)]
    typed = request.current.lower()
    return sorted({c for c in choices if c.lower().startswith(typed)})


def not_found_message(lookup: Any) -> str:
    """One line: nothing is named so, and what is close."""
    if lookup.problem:
        return lookup.problem
    if not lookup.close:
        return f"no op is named {lookup.query!r} and none contains it; `ls` lists the ops"
    more = lookup.close_total - len(lookup.close)
    tail = f", and {more} more (`ls -n {lookup.query}` lists them)" if more > 0 else ""
    return f"no op is named {lookup.query!r}; close matches: {', '.join(lookup.close)}{tail}"


def ambiguous_text(lookup: Any) -> Any:
    from rich.text import Text

    text = Text(f"{lookup.note or repr(lookup.query)}; give one of these names:\n", style="yellow")
    for candidate, place in zip(lookup.names, lookup.places or [""] * len(lookup.names)):
        text.append(f"  {candidate}")
        text.append(f"  {place}\n" if place else "\n", style="dim")
    text.rstrip()
    return text
