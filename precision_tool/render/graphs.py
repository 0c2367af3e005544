"""Rich renderables for graph commands: the `ls` op table and the fusion/cast/similarity checks of `ac`
(`ni` is render/ops/node_info.py).

Lists of op names are prose lines (comma-separated, wrapped between names by `show()`), never table
cells, so a name is never folded; numbers sit in columns that are never cut.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.graphs.graph_summary import OpEntry
from precision_tool.shapes import shape_text
from precision_tool.formats.ge.ge_graph import attr_kind

def op_rows(entries: list[OpEntry], width: int | None = None, kernels: bool = False) -> Text:
    """`ls`: under a header per run, file and graph, a table `id  type  name` with the op's fusion
    pass(es) after its name as a dim `[PassA + PassB]` (and its kernel with `kernels`, as `ls -k` shows).

    Names start at one column and are never cut. `width` is the terminal's (None in a pipe, where every
    row is one line however long): the type column is as wide as the types listed, narrowed when that
    lets more names fit; a longer type puts its row's name on the next line, under the name column; a
    name too long for the name column gets a line of its own, indented under the types; a marker that
    does not fit after its name goes on the next line. A run listing the same ops as an earlier run says
    so instead of repeating them."""
    groups: list[tuple[tuple[int, Any, str], list[OpEntry]]] = []
    for entry in entries:
        source = (entry.debug_id, entry.file, entry.graph)
        if not groups or groups[-1][0] != source:
            groups.append((source, []))
        groups[-1][1].append(entry)
    shown: dict[tuple[str, str], tuple[int, list[tuple[Any, ...]]]] = {}
    plan: list[tuple[tuple[int, Any, str], list[OpEntry], int | None]] = []  # (source, ops, same as debug_N)
    for (debug_id, file, graph), group in groups:
        rows = [(e.name, e.type, e.fusion_pass) + ((e.kernel_name,) if kernels else ()) for e in group]
        earlier = shown.get((file.name, graph))
        same = earlier[0] if earlier is not None and earlier[1] == rows else None
        shown.setdefault((file.name, graph), (debug_id, rows))
        plan.append(((debug_id, file, graph), group, same))
    listed = [e for _, group, same in plan if same is None for e in group]
    id_w = max([len("id")] + [len(str(e.id)) for e in listed])
    type_w = _type_width(listed, id_w, width)
    header = f"  {'id':>{id_w}}  {'type':<{type_w}}  name"
    if any(e.fusion_pass for e in listed):
        header += "  [fusion pass]"
    if kernels:
        header += "  kernel"
    text = Text(no_wrap=True)  # laid out here for `width`: show() must not wrap it again
    repeated: dict[tuple[int, int], int] = {}  # (debug id, the earlier run it repeats) → ops
    for (debug_id, file, graph), group, same in plan:
        text.append(f"debug_{debug_id} · {file.name} · {graph}\n", style="bold")
        if same is not None:
            text.append(f"  the same {len(group)} op(s) as debug_{same}\n", style="dim")
            repeated[(debug_id, same)] = repeated.get((debug_id, same), 0) + len(group)
            continue
        text.append(header + "\n", style="dim")
        for e in group:
            _op_row(text, e, id_w, type_w, width, kernels)
    runs = len({source[0] for source, _, _ in plan})
    text.append(f"{len(entries)} op(s)" + (f" in {runs} runs" if runs > 1 else ""), style="bold")
    if repeated:
        whose = "; ".join(f"debug_{n}'s {count} are debug_{same}'s" for (n, same), count in sorted(repeated.items()))
        text.append(f"; {whose} (listed once)", style="dim")
    return text


def _type_width(entries: list[OpEntry], id_w: int, width: int | None) -> int:
    """The type column: the longest type listed, or (at a terminal width) the width that leaves the
    fewest rows on two lines (a type longer than the column, or a name too long to follow it)."""
    longest = max([len("type")] + [len(e.type) for e in entries])
    if width is None:
        return longest
    sizes = Counter((len(e.type), len(e.name)) for e in entries)

    def broken(type_w: int) -> int:
        room = width - (6 + id_w + type_w)  # what is left for the name
        return sum(n for (t, name), n in sizes.items() if t > type_w or name > room)

    return min(range(len("type"), longest + 1), key=lambda t: (broken(t), -t))


def _op_row(text: Text, e: OpEntry, id_w: int, type_w: int, width: int | None, kernels: bool) -> None:
    type_at, name_at = 4 + id_w, 6 + id_w + type_w
    line = Text(f"  {e.id:>{id_w}}  ").append(e.type, style="cyan")
    lines = [line]

    def place(piece: Text, fixed: bool) -> None:
        """`piece` at the name column (`fixed`) or after what the row holds; when it does not fit there,
        on a line of its own: at the name column, else under the types, else at the line start."""
        used = lines[-1].cell_len
        start = name_at if fixed else used + 2
        if used + 2 > start or (width is not None and start + piece.cell_len > width):
            lines.append(Text())
            start = next((c for c in (name_at, type_at) if width is None or c + piece.cell_len <= width), 0)
        lines[-1].append(" " * (start - lines[-1].cell_len)).append_text(piece)

    place(Text(e.name), fixed=True)
    if e.fusion_pass:
        place(Text(f"[{e.fusion_pass}]", style="dim"), fixed=False)
    if kernels:
        place(Text(f"kernel {e.kernel_name or '-'}", style="dim"), fixed=False)
    for row in lines:
        text.append_text(row)
        text.append("\n")


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
    """Per graph: the graph and UB fusion passes that fired, with counts; where none fired, how many matched
    without firing (a bare "(none fired)" only when no pass was even tried). Titles are plain text: a graph
    id from the file is never read as markup."""
    out: list[Any] = []
    if summary.copied_from is not None:
        out.append(Text(f"copied {summary.copied_from} to {summary.path}", style="dim"))
    for graph in summary.graphs:
        for ub, title in ((False, "graph fusion"), (True, "UB fusion")):
            fired = summary.fired(graph, ub)
            table = Table(title=Text(f"graph {graph.graph_id}: {title} passes that fired"), title_justify="left")
            table.add_column("pass")
            table.add_column("effect times", justify="right", no_wrap=True)
            table.add_column("match times", justify="right", no_wrap=True)
            for p in fired:
                table.add_row(Text(p.name), str(p.effect_times), str(p.match_times))
            matched = summary.matched_only(graph, ub) if not fired else ()
            if matched:
                names = ", ".join(p.name for p in matched[:3]) + (", ..." if len(matched) > 3 else "")
                table.add_row(Text(f"(none fired; {len(matched)} matched without firing: {names})", style="dim"),
                              "", "")
            elif not fired and not (graph.ub_fusion if ub else graph.graph_fusion):
                table.add_row(Text("(none recorded)", style="dim"), "", "")
            elif not fired:
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
        # structure only (types, inputs, dtypes, layouts, shapes): the data of the two runs is vc's business
        title = f"debug_0 vs debug_1 · {files} · graph structure"
        if not result.differences:
            out.append(Text(f"{title}: the same in all {result.compared} ops compared (types, inputs, dtypes, "
                            "layouts, shapes; Cast, TransData, Variable, Constant and other plumbing left out)",
                            style="ok"))
            continue
        text = Text(f"{title}: {len(result.differences)} of {result.compared} ops differ:", style="bold")
        for diff in result.differences[:most]:
            text.append(f"\n  {diff.name}", style="op").append(f" ({diff.type})")
            for what in diff.what:
                text.append(f"\n    {what}")
        if len(result.differences) > most:
            text.append(f"\n  first {most} of {len(result.differences)} shown (-l {max(limit, 1) * 2} "
                        f"shows more)", style="dim")
        out.append(text)
    return out
