"""Rich renderables for graph commands: the `ls` op table and the fusion/cast/similarity checks of `ac`
(`ni` is render/node_info.py).

Lists of op names are prose lines (comma-separated, wrapped between names by `show()`), never table
cells, so a name is never folded; numbers sit in columns that are never cut.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.graph_index import OpEntry
from precision_tool.shapes import shape_text
from precision_tool.formats.ge_graph import attr_kind

TYPE_WIDTH = 30  # longer types (SparseSoftmaxCrossEntropyWithLogits) are printed whole and push their row's name
PASS_WIDTH = 28


def op_rows(entries: list[OpEntry]) -> Text:
    """`ls`: an aligned table (id, type, fusion pass, name) under a header per run, file and graph.
    The name comes last so it is never cut; a run listing the same ops as the one before says so
    instead of repeating them."""
    groups: list[tuple[tuple[int, Any, str], list[OpEntry]]] = []
    for entry in entries:
        source = (entry.debug_id, entry.file, entry.graph)
        if not groups or groups[-1][0] != source:
            groups.append((source, []))
        groups[-1][1].append(entry)
    type_w = min(max([len("type")] + [len(e.type) for e in entries]), TYPE_WIDTH)
    pass_w = min(max([len("fusion pass")] + [len(e.fusion_pass or "-") for e in entries]), PASS_WIDTH)
    id_w = max([len("id")] + [len(str(e.id)) for e in entries])
    text = Text()
    shown: dict[tuple[str, str], tuple[int, list[tuple[str, str, str | None]]]] = {}
    repeated = 0
    for (debug_id, file, graph), group in groups:
        text.append(f"debug_{debug_id} · {file.name} · {graph}", style="bold")
        rows = [(e.name, e.type, e.fusion_pass) for e in group]
        earlier = shown.get((file.name, graph))
        if earlier is not None and earlier[1] == rows:
            text.append(f"\n  the same {len(rows)} op(s) as debug_{earlier[0]}\n", style="dim")
            repeated += len(rows)
            continue
        shown.setdefault((file.name, graph), (debug_id, rows))
        text.append(f"\n  {'id':>{id_w}}  {'type':<{type_w}}  {'fusion pass':<{pass_w}}  name\n", style="dim")
        for e in group:
            text.append(f"  {e.id:>{id_w}}  ")
            text.append(f"{e.type:<{type_w}}", style="cyan")
            text.append("  ")
            text.append(f"{e.fusion_pass or '-':<{pass_w}}", style="magenta" if e.fusion_pass else "dim")
            text.append(f"  {e.name}\n")
    text.append(f"{len(entries)} op(s)", style="bold")
    if repeated:
        text.append(f" ({repeated} listed once above as the same in two runs)", style="dim")
    return text


def attr_text(value: Any) -> str:
    kind = attr_kind(value)
    if kind == "list":
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    if kind == "td":
        return f"TensorDesc({value.dtype}, {value.layout}, {shape_text(value.shape)})"
    if kind == "g":
        return f"Graph({value.name}, {len(value.ops)} ops)"
    if kind == "bt":
        return f"<{len(value)} bytes>"
    return repr(value) if kind in ("s", "") else str(value)


def fusion_tables(summary: Any) -> list[Any]:
    out: list[Any] = []
    if summary.copied_from is not None:
        out.append(Text(f"copied {summary.copied_from} to {summary.path}", style="dim"))
    for graph in summary.graphs:
        for ub, title in ((False, "graph fusion"), (True, "UB fusion")):
            fired = summary.fired(graph, ub)
            table = Table(title=f"graph {graph.graph_id}: {title} passes that fired", title_justify="left")
            table.add_column("pass")
            table.add_column("effect times", justify="right", no_wrap=True)
            table.add_column("match times", justify="right", no_wrap=True)
            for p in fired:
                table.add_row(Text(p.name), str(p.effect_times), str(p.match_times))
            if not fired:
                table.add_row(Text("(none fired)", style="dim"), "", "")
            out.append(table)
    if not summary.graphs:
        out.append(Text(f"{summary.path}: no graphs in the file", style="dim"))
    return out


def cast_table(groups: list[Any], limit: int) -> list[Text]:
    """Per (from, to) pair: a line with the count and why it can lose information, then the op names
    as a comma-separated list (wrapped between names, never cut)."""
    most = max(limit, 1) * 10
    text = Text("Cast ops that can lose information", style="bold")
    for group in groups:
        text.append(f"\n  {group.src} → {group.dst}", style="bold")
        text.append(f"  {len(group.op_names)} op(s): {group.reason}\n")
        shown = ", ".join(group.op_names[:most])
        if len(group.op_names) > most:
            shown += f" and {len(group.op_names) - most} more (-l {max(limit, 1) * 2} shows more)"
        text.append(f"    {shown}")
    return [text]


def similarity_tables(results: list[Any], limit: int) -> list[Any]:
    """One line per pair of graph files compared (names whole), then each differing op and how."""
    out: list[Any] = []
    most = max(limit, 1) * 10
    for result in results:
        files = result.left.name if result.left.name == result.right.name \
            else f"{result.left.name} vs {result.right.name}"
        title = f"debug_0 vs debug_1 · {files} · {result.identical}/{result.compared} ops identical"
        if not result.differences:
            out.append(Text(title, style="ok"))
            continue
        text = Text(title + f"; {len(result.differences)} differ:", style="bold")
        for diff in result.differences[:most]:
            text.append(f"\n  {diff.name}", style="op").append(f" ({diff.type})")
            for what in diff.what:
                text.append(f"\n    {what}")
        if len(result.differences) > most:
            text.append(f"\n  first {most} of {len(result.differences)} shown (-l {max(limit, 1) * 2} "
                        f"shows more)", style="dim")
        out.append(text)
    return out
