"""What `ni` prints: one block per op (its runs merged), as lines of text so nothing is cut.

Why text lines rather than a panel: op names run to 100 characters and a panel cell folds them
mid-name; lines are wrapped by `show()` at word boundaries instead (names whole). Runs (debug_N) of
the same op are merged: a fact that is the same in every run is printed once, one that differs is
printed per run, and a line says which runs are identical. NPU and golden statistics of a tensor sit
in one table, under each other, so their columns line up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.text import Text

from precision_tool.analysis.graphs.graph_summary import fusion_pass_text
from precision_tool.analysis.ops.op_report import OpReport, TensorFacts
from precision_tool.formats.ge.ge_graph import Op, TensorDesc
from precision_tool.formats.tf.op_sources import user_frame
from precision_tool.shapes import shape_text
from precision_tool.render.dumps import number as number_text
from precision_tool.render.graphs import attr_text

LABEL = 13  # width of the fact labels ("KernelName   ")


def runs_label(reports: Sequence[OpReport]) -> str:
    return ", ".join(f"debug_{r.entry.debug_id}" for r in reports)


def op_block(reports: Sequence[OpReport], show_attrs: bool, width: int, tensor: str | None = None, *,
             extra: Sequence[Text] = (), first_ranks: Sequence[int] = (),
             golden_hint: str | None = None) -> list[Text]:
    """The lines about one op seen in one or more runs (`reports`, one per debug id); `extra` (what the
    comparison and the replays found) goes before the statistics table, where the NPU rows of a rank in
    `first_ranks` (the rank that went wrong first) are marked. `golden_hint`: what to run when the workspace
    has no golden tensors yet."""
    first = reports[0]
    out: list[Text] = [_heading(reports)]
    facts = Text()
    differing: list[str] = []

    def fact(label: str, value: Callable[[OpReport], str]) -> None:
        values = [value(r) for r in reports]
        if len(set(values)) == 1:
            if values[0]:
                facts.append(f"  {label:<{LABEL}}", style="bold").append(values[0] + "\n")
            return
        differing.append(label)
        shown = "; ".join(f"{v or '-'} (debug_{r.entry.debug_id})" for r, v in zip(reports, values))
        facts.append(f"  {label:<{LABEL}}", style="bold").append(shown + "\n", style="yellow")

    if len({(r.entry.file.name, r.entry.graph) for r in reports}) > 1:
        fact("Graph", lambda r: f"{r.entry.graph} ({r.entry.file.name})")
    fact("Type", lambda r: r.op.type)
    fact("Id", lambda r: str(r.op.id))
    fact("Stream", lambda r: str(r.op.stream_id))
    fact("KernelName", lambda r: r.op.kernel_name or "-")
    fact("KernelLib", lambda r: r.op.kernel_lib or "-")
    fact("FusionPass", lambda r: fusion_pass_text(r.op) or "-")
    fact("OriginalOps", lambda r: ", ".join(r.op.original_op_names or []) or "-")
    fact("Subgraphs", lambda r: ", ".join(f"{n} ({c} ops)" if c is not None else f"{n} (not in this file)"
                                         for n, c in r.relations.subgraphs))
    fact("ParentOp", lambda r: (f"[{r.relations.owner.type}] {r.relations.owner.name} (graph "
                                f"{r.relations.owner.graph})") if r.relations.owner else "")
    fact("RealInput", _real_input)
    out.append(_rstrip(facts))
    out.append(source_lines(first, whole_stack=show_attrs))
    for title, lines in (("Inputs", _input_lines), ("Outputs", _output_lines)):
        texts = [lines(r, tensor) for r in reports]
        if all(t.plain == texts[0].plain for t in texts):
            out.append(Text(f"  {title}", style="bold"))
            out.append(texts[0])
            continue
        differing.append(title)
        for r, text in zip(reports, texts):
            out.append(Text(f"  {title} (debug_{r.entry.debug_id})", style="bold"))
            out.append(text)
    if show_attrs:
        attrs = [_attr_lines(r) for r in reports]
        if all(a.plain == attrs[0].plain for a in attrs):
            out += [Text("  Attributes", style="bold"), attrs[0]]
        else:
            differing.append("Attributes")
            for r, text in zip(reports, attrs):
                out += [Text(f"  Attributes (debug_{r.entry.debug_id})", style="bold"), text]
    if len(reports) > 1:
        if differing:
            out.append(Text(f"  {runs_label(reports)}: identical except {', '.join(differing)}", style="dim"))
        else:
            out.append(Text(f"  {runs_label(reports)}: identical", style="dim"))
    out += extra
    table = stats_lines(reports, width, tensor, first_ranks)
    if table is not None:
        with_stats = any(f.statistics for r in reports for _, facts in r.dump_files for f in facts)
        out.append(Text("  Tensors", style="bold").append(
            "  NPU dumps in the origin layout (device padding cut), "
            + (f"no golden tensors yet: {golden_hint}" if golden_hint else "then the golden tensor")
            + ("; `stats` rows: the NPU's statistics CSV (device layout, padding included)" if with_stats else ""),
            style="dim"))
        out.append(table)
        out.append(_file_lines(reports))
    elif first.op.output_descs or first.op.inputs:
        out.append(Text("  no NPU dump or golden tensor of this op in the workspace", style="dim"))
    return [t for t in out if t.plain]


SHOWN_SOURCES = 4
"""Original ops whose source line `ni` shows (a fused op may stand for dozens); -a shows all, with stacks."""


def source_lines(report: OpReport, whole_stack: bool = False) -> Text:
    """Where the op's original TF ops were created: the user's frame and its line (`whole_stack`: every
    frame, the user's in bold); one dim line when the golden run recorded none."""
    text = Text()
    sources = report.sources
    if sources is None:
        return text
    label = f"  {'Source':<{LABEL}}"
    if sources.problem and not sources.stacks:
        return text.append(label, style="bold").append(sources.problem + "\n", style="dim")
    shown = sources.stacks if whole_stack else sources.stacks[:SHOWN_SOURCES]
    places: set[tuple[str, int]] = set()
    for name, stack in shown:
        frame = user_frame(stack)
        if not whole_stack and frame is not None and (frame.path, frame.line) in places:
            continue  # a fused op's ops made by one line: the line once
        text.append(label, style="bold")
        label = " " * (LABEL + 2)
        if frame is None:
            text.append(f"{name}: no frame of the user's code (made inside TensorFlow)\n", style="dim")
        else:
            places.add((frame.path, frame.line))
            text.append(frame.place).append(f"  ({name})\n", style="dim")
            if frame.text is not None:
                text.append(" " * (LABEL + 4) + frame.text.strip() + "\n", style="cyan")
        if whole_stack:
            for each in stack:
                where = f"{each.path}:{each.line} in {each.function}()"
                text.append(" " * (LABEL + 4) + where + "\n", style="bold" if each.user else "dim")
    hidden = len(sources.stacks) - len(shown)
    if hidden:
        text.append(" " * (LABEL + 2) + f"{hidden} more original op(s): `ni -a` shows every one with its stack\n",
                    style="dim")
    return _rstrip(text)


def _heading(reports: Sequence[OpReport]) -> Text:
    first = reports[0].entry
    text = Text(first.name, style="op")
    text.append(f"  {runs_label(reports)}", style="bold")
    if len({(r.entry.file.name, r.entry.graph) for r in reports}) == 1:
        text.append(f" · graph {first.graph} · {first.file.name}", style="dim")
    return text


def _real_input(report: OpReport) -> str:
    relations = report.relations
    if relations.parent_node_index is None:
        return ""
    if relations.real_input is None:
        return f"? ({relations.problem})"
    graph, producer, out_idx = relations.real_input
    return f"{producer}:{out_idx} (graph {graph}, input {relations.parent_node_index} of the parent op)"


def _desc_cells(desc: TensorDesc | None) -> tuple[str, str, str]:
    if desc is None:
        return "?", "?", "?"
    return desc.dtype, desc.layout, shape_text(desc.shape)


def _aligned(rows: list[tuple[str, tuple[str, str, str], str, bool]], style: str | None = None) -> Text:
    """'    0  DT_FLOAT16  NC1HWC0  [8,2,8,8,16]  ← name' with the descriptor columns aligned."""
    text = Text()
    widths = [max((len(r[1][i]) for r in rows), default=0) for i in range(3)]
    number = max((len(r[0]) for r in rows), default=1)
    for key, cells, rest, marked in rows:
        line = f"    {key:>{number}}  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + f"  {rest}"
        text.append(line.rstrip() + ("  ◀" if marked else "") + "\n", style="bold" if marked else style)
    return _rstrip(text)


def _input_lines(report: OpReport, tensor: str | None) -> Text:
    op = report.op
    rows = []
    controls = []
    position = 0
    for source in op.inputs:
        if source.endswith(":-1"):
            controls.append(source[:-3])
            continue
        desc = op.input_descs[position] if position < len(op.input_descs) else None
        rows.append((str(position), _desc_cells(desc), f"← {source}", tensor == f"input {position}"))
        position += 1
    text = _aligned(rows) if rows else Text("    (none)", style="dim")
    if controls:
        text.append("\n    control ← " + ", ".join(controls), style="dim")
    return text


def _output_lines(report: OpReport, tensor: str | None) -> Text:
    op = report.op
    by_output: dict[int, list[str]] = {}
    for name, out_idx, in_idx in report.consumers:
        by_output.setdefault(out_idx, []).append(f"{name}:{in_idx}")
    rows = []
    for i, desc in enumerate(op.output_descs):
        rest = "→ " + (", ".join(by_output.get(i, [])) or "(unused)")
        if desc.origin_name and (desc.origin_name, desc.origin_output_index) != (op.name, i):
            rest += f"  (origin {desc.origin_name}:{desc.origin_output_index})"
        rows.append((str(i), _desc_cells(desc), rest, tensor in (f"output {i}", _golden_key(op, i))))
    if not op.output_descs and by_output:
        rows.append(("?", ("", "", ""), "→ " + ", ".join(c for cs in by_output.values() for c in cs), False))
    return _aligned(rows) if rows else Text("    (none)", style="dim")


def _attr_lines(report: OpReport) -> Text:
    attrs = report.op.attrs
    width = min(max((len(k) for k in attrs), default=0), 40)
    text = Text()
    for key, value in attrs.items():
        text.append(f"    {key:<{width}}  ", style="bold").append(attr_text(value) + "\n")
    return _rstrip(text) if attrs else Text("    (none)", style="dim")


def _rstrip(text: Text) -> Text:
    text.rstrip()
    while text.plain.endswith("\n"):
        text.right_crop(1)
    return text


# --- the statistics table ------------------------------------------------------------------------------
@dataclass
class _Group:
    label: str  # 'output 0', or a golden key for a golden tensor no NPU tensor stands for
    rows: list[tuple[str, TensorFacts]]  # (source, facts): 'debug_0', 'debug_0, debug_1', 'golden'
    marked: bool = False
    producer: str = ""  # for an input: the producer output its golden tensor is ('conv2/Conv2D:0')


def _golden_key(op: Op, i: int) -> str:
    """The golden tensor of output `i`: its origin's slot ('conv1_Relu.0' for a fused conv's output)."""
    from precision_tool.formats.tf.golden import golden_key

    desc = op.output_descs[i]
    return golden_key(desc.origin_name, desc.origin_output_index or 0) if desc.origin_name else golden_key(op.name, i)


def _dump_sources(report: OpReport) -> list[tuple[str, Path, Any]]:
    """(label, path, facts) of each dump of the op: `debug_0`, `debug_0 #2` when a run has several, and
    ` stats` for a statistics CSV; the tensor rows and the Files list name them alike."""
    several = len(report.dump_files) > 1
    ranks = report.dump_ranks or (None,) * len(report.dump_files)
    out = []
    for number, ((path, facts), rank) in enumerate(zip(report.dump_files, ranks), 1):
        # a multi-device dump: each file is its rank's
        suffix = f" rank {rank}" if rank is not None else f" #{number}" if several else ""
        label = f"debug_{report.entry.debug_id}" + suffix
        if facts and facts[0].statistics:
            label += " stats"
        out.append((label, path, facts))
    return out


def _groups(reports: Sequence[OpReport], tensor: str | None) -> list[_Group]:
    groups: dict[str, _Group] = {}
    for report in reports:
        for source, _, facts in _dump_sources(report):
            for fact in facts:
                groups.setdefault(fact.label, _Group(fact.label, [])).rows.append((source, fact))
    for group in groups.values():
        group.rows = _merge_identical(group.rows)
    golden: dict[str, list[tuple[str, TensorFacts]]] = {}
    for report in reports:
        ranks = report.golden_ranks or (None,) * len(report.golden)
        for fact, rank in zip(report.golden, ranks):
            rows = golden.setdefault(fact.label, [])
            source = "golden" if rank is None else f"golden rank {rank}"
            if all(src != source for src, _ in rows):
                rows.append((source, fact))
    op = reports[0].op
    for i in range(len(op.output_descs)):
        key = _golden_key(op, i)
        if key in golden:
            group = groups.setdefault(f"output {i}", _Group(f"output {i}", []))
            group.rows.extend(_merge_identical(golden.pop(key)))
    used = set()
    producers = op.data_inputs
    for i, key in enumerate(reports[0].input_golden):  # an input's golden: its producer's output
        if key is not None and key in golden:
            group = groups.setdefault(f"input {i}", _Group(f"input {i}", []))
            group.rows.extend(_merge_identical(golden[key]))
            group.producer = "{}:{}".format(*producers[i]) if i < len(producers) else ""
            used.add(key)
    for key in used:  # (popped after the loop: one tensor may feed two inputs)
        golden.pop(key)
    ordered = sorted(groups.values(), key=lambda g: (g.label.split(" ")[0] != "input", _number(g.label)))
    ordered += [_Group(key, _merge_identical(rows)) for key, rows in golden.items()]
    for group in ordered:
        group.marked = tensor is not None and (group.label == tensor or any(
            src.startswith("golden") and f.label == tensor for src, f in group.rows))
    return ordered


def _number(label: str) -> int:
    tail = label.rsplit(" ", 1)[-1]
    return int(tail) if tail.isascii() and tail.isdigit() else 0


def _merge_identical(rows: list[tuple[str, TensorFacts]]) -> list[tuple[str, TensorFacts]]:
    """Rows of runs whose tensors have the same dtype, shape and statistics become one row."""
    merged: list[tuple[list[str], TensorFacts]] = []
    for source, fact in rows:
        key = (fact.dtype, fact.layout, fact.shape, fact.stats, fact.problem)
        for sources, other in merged:
            if (other.dtype, other.layout, other.shape, other.stats, other.problem) == key:
                sources.append(source)
                break
        else:
            merged.append(([source], fact))
    return [(SOURCES_SEP.join(sources), fact) for sources, fact in merged]


SOURCES_SEP = ", "  # between the runs of a merged row (no source label holds it)


_RANK_SOURCE = re.compile(r"(.*) rank (\d+)")


def _sources_text(sources: list[str]) -> str:
    """'debug_0 rank 0', ..., 'debug_0 rank 3' → 'debug_0 ranks 0-3': a row of many ranks stays narrow."""
    from precision_tool.analysis.ranks import ranks_text

    parts: list[tuple[str, list[int]]] = []  # (text or rank prefix, its ranks; [] for a plain text)
    for source in sources:
        found = _RANK_SOURCE.fullmatch(source)
        if found is None:
            parts.append((source, []))
            continue
        group = next((p for p in parts if p[0] == found[1] and p[1]), None)
        if group is None:
            parts.append((found[1], [int(found[2])]))
        else:
            group[1].append(int(found[2]))
    return ", ".join(text if not ranks else f"{text} rank {ranks[0]}" if len(ranks) == 1
                     else f"{text} ranks {ranks_text(ranks)}" for text, ranks in parts)


FIRST_MARK = "  ◀ first"
"""After an NPU row of the rank that went wrong first."""


def _first_rank_row(source: str, first_ranks: Sequence[int]) -> bool:
    if SOURCES_SEP in source or " ranks " in source:
        return False  # a row of several ranks: not one rank's own
    found = _RANK_SOURCE.fullmatch(source)
    return found is not None and not source.startswith("golden") and int(found[2]) in first_ranks


_NUMBERS = ("max", "min", "mean", "nan", "inf", "zero")


def _cells(fact: TensorFacts) -> list[str]:
    s = fact.stats
    zeros = "-" if fact.statistics else str(s.zero_count)  # a statistics CSV has no zero count
    return [number_text(s.max), number_text(s.min), number_text(s.mean), str(s.nan_count), str(s.inf_count), zeros]


def stats_lines(reports: Sequence[OpReport], width: int, tensor: str | None = None,
                first_ranks: Sequence[int] = ()) -> Text | None:
    """One table: per tensor a line (dtype, layout, how it was converted), then a row per run and one
    for the golden tensor, numbers right-aligned in shared columns. Rows wider than `width` put the
    numbers on a second line rather than being cut. NPU rows of a rank in `first_ranks` are marked."""
    groups = _groups(reports, tensor)
    if not groups:
        return None
    if _layout(groups, width, first_ranks) is None:  # many ranks in a row: 'debug_0 ranks 0-7' keeps it one line
        for group in groups:
            group.rows = [(_sources_text(src.split(SOURCES_SEP)), f) for src, f in group.rows]
    layout = _layout(groups, width, first_ranks)
    source_w, shape_w, num_w, _ = _widths(groups, first_ranks)
    indent, gap = layout or (6, 1)
    pad, sep = " " * indent, " " * gap
    numbers_line = sep.join(name.rjust(w) for name, w in zip(_NUMBERS, num_w))
    text = Text()
    if layout:
        text.append(f"{pad}{'run':<{source_w}}  {'shape':<{shape_w}}{sep}{numbers_line}\n", style="dim")
    else:
        text.append(f"{pad}{'run':<{source_w}}  shape\n{pad}  {numbers_line}\n", style="dim")
    for group in groups:
        text.append(" " * (indent - 2) + _group_line(group) + "\n", style="bold" if group.marked else None)
        for source, fact in group.rows:
            if fact.stats is None:
                text.append(f"{pad}{source:<{source_w}}  {fact.problem or 'no data'}\n", style="yellow")
                continue
            head = f"{pad}{source:<{source_w}}  {shape_text(fact.shape) if fact.shape else 'scalar':<{shape_w}}"
            numbers = sep.join(c.rjust(w) for c, w in zip(_cells(fact), num_w))
            mark = FIRST_MARK if _first_rank_row(source, first_ranks) else ""
            text.append(f"{head}{sep}{numbers}" if layout else f"{head.rstrip()}\n{pad}  {numbers}")
            text.append(mark + "\n", style="bad" if mark else None)
    return _rstrip(text)


def _widths(groups: list[_Group], first_ranks: Sequence[int]) -> tuple[int, int, list[int], int]:
    """(run label, shape, each number, the first-rank mark) column widths."""
    rows = [(src, f) for g in groups for src, f in g.rows]
    source_w = max(len("run"), *(len(src) for src, _ in rows))
    shape_w = max(len("scalar"), *(len(shape_text(f.shape)) for _, f in rows))
    numeric = [_cells(f) for _, f in rows if f.stats is not None]
    num_w = [max([len(name)] + [len(cells[i]) for cells in numeric]) for i, name in enumerate(_NUMBERS)]
    mark_w = len(FIRST_MARK) if any(_first_rank_row(src, first_ranks) for src, _ in rows) else 0
    return source_w, shape_w, num_w, mark_w


def _layout(groups: list[_Group], width: int, first_ranks: Sequence[int]) -> tuple[int, int] | None:
    """The widest (indent, gap) whose rows fit `width`: roomy, then tighter; None: the numbers need a line
    of their own."""
    source_w, shape_w, num_w, mark_w = _widths(groups, first_ranks)
    for indent, gap in ((6, 2), (6, 1), (4, 1)):
        if indent + source_w + 2 + shape_w + gap + sum(num_w) + gap * (len(num_w) - 1) + mark_w <= width:
            return indent, gap
    return None


def _group_line(group: _Group) -> str:
    fact = group.rows[0][1]
    parts = [f"{group.label}" + ("  ◀" if group.marked else "")]
    npu = next((f for src, f in group.rows if not src.startswith("golden")), None)
    if npu is not None:
        parts.append(" ".join(p for p in (npu.dtype, npu.layout) if p))
        how = _layout_note(npu)
        if how:
            parts.append(f"({how})")
    else:
        parts.append(f"golden only, {fact.dtype}" if fact.dtype else "golden only")
    golden = next((f for src, f in group.rows if src.startswith("golden")), None)
    if golden is not None and golden.label != group.label:  # (a golden-only group is labelled by its key)
        # an input's golden is another op's output: say whose, as `ni KEY` shows that op
        parts.append(f"· golden {golden.label}" + (f" (from {group.producer})" if group.producer else ""))
    return "  ".join(parts)


def _layout_note(fact: TensorFacts) -> str | None:
    """How a dump tensor reached the layout shown: 'from NC1HWC0 [8,1,16,16,16], padding cut'."""
    if fact.statistics:
        return "statistics CSV: device layout, padding included"
    story = fact.story
    if story is None:
        return None
    if story.problem:
        return f"device layout, padding included: {story.problem}"
    if story.layout == story.device:
        return None
    return f"from {story.device} {shape_text(story.device_shape)}, padding cut"


def _file_lines(reports: Sequence[OpReport]) -> Text:
    """Where each tensor above comes from: the full path, last on its line so it copies whole."""
    text = Text()
    seen: set[Path] = set()
    for report in reports:
        for label, path, _facts in _dump_sources(report):
            text.append(f"    {label}: ", style="dim").append(str(path) + "\n")
    for report in reports:
        for fact, rank in zip(report.golden, report.golden_ranks or (None,) * len(report.golden)):
            if fact.path not in seen:
                seen.add(fact.path)
                where = "" if rank is None else f" rank {rank}"
                inputs = [f"input {i}" for i, key in enumerate(report.input_golden) if key == fact.label]
                used = f" ({', '.join(inputs)})" if inputs else ""
                text.append(f"    golden{where} {fact.label}{used}: ", style="dim").append(str(fact.path) + "\n")
    return _rstrip(Text("  Files\n", style="bold") + text)
