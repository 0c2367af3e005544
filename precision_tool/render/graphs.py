"""Rich renderables for graph commands: `ls` rows, `ni` panels, and the fusion/cast/similarity checks."""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_tool.analysis.graph_index import OpEntry
from precision_tool.analysis.op_report import OpReport, TensorFacts
from precision_tool.formats.ge_graph import TensorDesc, attr_kind


def op_rows(entries: list[OpEntry]) -> Text:
    """One line per op `[Type][Pass] name`, under a header per (debug id, file, graph) so it is always
    clear which run and graph an op comes from, and a count at the end."""
    text = Text()
    current = None
    for entry in entries:
        source = (entry.debug_id, entry.file, entry.graph)
        if source != current:
            current = source
            text.append(f"debug_{entry.debug_id} · {entry.file.name} · {entry.graph}\n", style="bold")
        text.append(f"[{entry.type}]", style="cyan")
        text.append(f"[{entry.fusion_pass or ''}]", style="magenta")
        text.append(f" {entry.name}\n")
    text.append(f"{len(entries)} op(s)", style="bold")
    return text


def _shape(shape: Iterable[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _desc(index: int, desc: TensorDesc | None) -> str:
    if desc is None:
        return f"-[{index}][?][?][?]"
    return f"-[{index}][{desc.dtype}][{desc.layout}]{_shape(desc.shape)}"


def _stats_line(facts: TensorFacts) -> str:
    if facts.stats is None:
        return f"{facts.label}: {facts.problem or 'no data'}"
    s = facts.stats
    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.6g}"
    # a golden .npy has no layout name: show only its shape ("scalar" for shape [])
    layout = f"[{facts.layout}]" if facts.layout else ""
    shape = _shape(facts.shape) if facts.shape or facts.layout else " scalar"
    line = (f"{facts.label} [{facts.dtype}]{layout}{shape} max {num(s.max)} "
            f"min {num(s.min)} mean {num(s.mean)} nan {s.nan_count} inf {s.inf_count} zero {s.zero_count}")
    return line + (f"  ({facts.note})" if facts.note else "")


def attr_text(value: Any) -> str:
    kind = attr_kind(value)
    if kind == "list":
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    if kind == "td":
        return f"TensorDesc({value.dtype}, {value.layout}, {_shape(value.shape)})"
    if kind == "g":
        return f"Graph({value.name}, {len(value.ops)} ops)"
    if kind == "bt":
        return f"<{len(value)} bytes>"
    return repr(value) if kind in ("s", "") else str(value)


def op_panel(report: OpReport, show_attrs: bool) -> Panel:
    entry, op = report.entry, report.op
    lines = Text()
    def row(label: str, value: str) -> None:
        lines.append(f"{label:<15}", style="bold")
        lines.append(f"{value}\n")
    row("Type", op.type)
    row("Id", str(op.id))
    row("Stream", str(op.stream_id))
    row("KernelName", op.kernel_name or "-")
    row("KernelLib", op.kernel_lib or "-")
    row("FusionPass", op.fusion_pass or "-")
    originals = op.original_op_names
    row("OriginalOps", ", ".join(originals) if originals else "-")
    _relation_rows(report, row)
    lines.append("Inputs\n", style="bold")
    position = 0
    for text in op.inputs:
        if text.endswith(":-1"):
            lines.append(f"  -[ctrl] {text}\n", style="dim")
            continue
        desc = op.input_descs[position] if position < len(op.input_descs) else None
        lines.append(f"  {_desc(position, desc)} {text}\n")
        position += 1
    lines.append("Outputs\n", style="bold")
    by_output: dict[int, list[str]] = {}
    for name, out_idx, in_idx in report.consumers:
        by_output.setdefault(out_idx, []).append(f"{name}:{in_idx}")
    for i, desc in enumerate(op.output_descs):
        origin = f"  (origin {desc.origin_name}:{desc.origin_output_index})" if desc.origin_name else ""
        lines.append(f"  {_desc(i, desc)} [{', '.join(by_output.get(i, []))}]{origin}\n")
    if not op.output_descs and by_output:
        lines.append(f"  [{', '.join(c for cs in by_output.values() for c in cs)}]\n")
    parts: list[Any] = [lines]
    # file names are shortened in the middle to fit one line; file_paths() prints them whole below
    if report.dump_files:
        parts.append(Text("NPU dumps", style="bold"))
        for number, (path, facts) in enumerate(report.dump_files, 1):
            parts.append(MiddleEllipsis(f"  [{number}] ", path.name))
            parts.append(Text("".join(f"    {_stats_line(fact)}\n" for fact in facts).rstrip("\n")))
        parts.append(Text(""))
    if report.golden:
        parts.append(Text("Golden tensors", style="bold"))
        for number, fact in enumerate(report.golden, len(report.dump_files) + 1):
            parts.append(MiddleEllipsis(f"  [{number}] ", fact.path.name))
            parts.append(Text(f"    {_stats_line(fact)}"))
        parts.append(Text(""))
    if show_attrs:
        attrs = Table("attribute", "value", box=None, show_header=True, pad_edge=False)
        for key, value in op.attrs.items():
            attrs.add_row(Text(key), Text(attr_text(value)))
        parts.append(attrs)
    title = Text(f"debug_{entry.debug_id} · {entry.graph} · {op.name}")
    return Panel(Group(*parts), title=title, title_align="left", subtitle=entry.file.name)


def file_paths(report: OpReport) -> Text | None:
    """The full path of every file an `ni` panel numbers, one line each so it can be copied whole."""
    paths = [path for path, _ in report.dump_files] + [fact.path for fact in report.golden]
    if not paths:
        return None
    return Text("\n".join(f"[{number}] {path}" for number, path in enumerate(paths, 1)), style="dim")


class MiddleEllipsis:
    """One line `prefix + text`, with the middle of `text` replaced by '…' when it does not fit
    (the start and the end of a dump file name, op and timestamp, are what tell files apart)."""

    def __init__(self, prefix: str, text: str) -> None:
        self.prefix = prefix
        self.text = text

    def __rich_console__(self, console: Any, options: Any) -> Iterable[Text]:
        room = max(options.max_width - len(self.prefix), 5)
        text = self.text
        if len(text) > room:
            head = (room - 1) // 2
            text = text[:head] + "…" + text[len(text) - (room - 1 - head):]
        yield Text(self.prefix + text, no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        full = len(self.prefix) + len(self.text)
        return Measurement(min(full, len(self.prefix) + 5), full)


def _relation_rows(report: OpReport, row: Any) -> None:
    """Subgraph rows: what the op owns, who owns its graph, and what a subgraph Data op really reads."""
    relations = report.relations
    for i, (name, count) in enumerate(relations.subgraphs):
        size = f"{count} ops" if count is not None else "not in this file"
        row("Subgraphs" if i == 0 else "", f"{name} ({size})")
    if relations.owner is not None:
        owner = relations.owner
        row("ParentOp", f"[{owner.type}] {owner.name} (graph {owner.graph})")
    if relations.parent_node_index is not None:
        if relations.real_input is not None:
            graph, producer, out_idx = relations.real_input
            row("RealInput", f"{producer}:{out_idx} (graph {graph}, input {relations.parent_node_index} "
                             f"of the parent op)")
        else:
            row("RealInput", f"? ({relations.problem})")


def candidates(name: str, names: list[str]) -> Text:
    text = Text(f"no op is named exactly {name!r}; did you mean one of these?\n", style="yellow")
    for candidate in names:
        text.append(f"  {candidate}\n")
    return text


def fusion_tables(summary: Any) -> list[Any]:
    out: list[Any] = []
    if summary.copied_from is not None:
        out.append(Text(f"copied {summary.copied_from} to {summary.path}", style="dim"))
    for graph in summary.graphs:
        for ub, title in ((False, "graph fusion"), (True, "UB fusion")):
            fired = summary.fired(graph, ub)
            table = Table(title=f"graph {graph.graph_id}: {title} passes that fired", title_justify="left")
            table.add_column("pass")
            table.add_column("effect times", justify="right")
            table.add_column("match times", justify="right")
            for p in fired:
                table.add_row(Text(p.name), str(p.effect_times), str(p.match_times))
            if not fired:
                table.add_row(Text("(none fired)", style="dim"), "", "")
            out.append(table)
    if not summary.graphs:
        out.append(Text(f"{summary.path}: no graphs in the file", style="dim"))
    return out


def cast_table(groups: list[Any], limit: int) -> Table:
    table = Table(title="Cast ops that can lose information", title_justify="left")
    table.add_column("from")
    table.add_column("to")
    table.add_column("count", justify="right")
    table.add_column("why", ratio=1)
    table.add_column("ops", ratio=2, min_width=20)
    most = max(limit, 1) * 10
    for group in groups:
        # names are joined with ", " so the cell wraps between names, never hiding them behind "..."
        shown = ", ".join(group.op_names[:most])
        if len(group.op_names) > most:
            shown += f" and {len(group.op_names) - most} more (-l {max(limit, 1) * 2} shows more)"
        table.add_row(group.src, group.dst, str(len(group.op_names)), group.reason, Text(shown))
    return table


def similarity_tables(results: list[Any], limit: int) -> list[Any]:
    out: list[Any] = []
    for result in results:
        title = (f"debug_0 vs debug_1 · {result.left.name} vs {result.right.name} · "
                 f"{result.identical}/{result.compared} ops identical")
        if not result.differences:  # a title alone says it; an empty table would squeeze it into a column
            out.append(Text(title, style="ok"))
            continue
        table = Table(title=title, title_justify="left")
        table.add_column("op")
        table.add_column("type")
        table.add_column("difference")
        for diff in result.differences[: max(limit, 1) * 10]:
            table.add_row(Text(diff.name), diff.type, Text("\n".join(diff.what)))
        if len(result.differences) > max(limit, 1) * 10:
            table.caption = f"{len(result.differences)} differing ops; first {max(limit, 1) * 10} shown"
        out.append(table)
    return out
