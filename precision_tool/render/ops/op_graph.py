"""`ni -s`: the subgraph around an op as a graphviz picture (.gv always, .svg when `dot` exists).

Record nodes show each input and output port with its dtype and shape; the op asked about is filled.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from precision_tool.atomic import write_text_atomic
from precision_tool.formats.ge.ge_graph import Op, data_edges

INSTALL_HINT = ("install graphviz to get the picture (apt-get install graphviz, or conda install graphviz), "
                "then run `dot -Tsvg FILE.gv -o FILE.svg`")


@dataclass(frozen=True)
class SavedGraph:
    gv_path: Path
    svg_path: Path | None
    message: str | None  # why there is no svg


def _record_escape(text: str) -> str:
    for char in "\\{}|<>\"":
        text = text.replace(char, "\\" + char)
    return text


def _port_label(prefix: str, index: int, desc: object | None) -> str:
    if desc is None:
        return f"<{prefix}{index}> {index}"
    shape = ",".join(str(d) for d in getattr(desc, "shape", ()))
    dtype = str(getattr(desc, "dtype", "")).replace("DT_", "")
    return f"<{prefix}{index}> {index}: {_record_escape(dtype)} [{shape}]"


def subgraph_source(center: Op, ops: list[Op]) -> str:
    """DOT source: one record node per op, data edges between known ops, control edges dashed."""
    names = {op.name: f"n{i}" for i, op in enumerate(ops)}
    lines = ["digraph op_graph {", "  rankdir=TB;", '  node [shape=record, fontname="Helvetica", fontsize=10];']
    for op in ops:
        data_inputs = [t for t in op.inputs if t and not t.endswith(":-1")]
        ins = "|".join(_port_label("i", i, op.input_descs[i] if i < len(op.input_descs) else None)
                       for i in range(len(data_inputs)))
        outs = "|".join(_port_label("o", i, d) for i, d in enumerate(op.output_descs))
        middle = f"{_record_escape(op.type)}\\n{_record_escape(op.name)}"
        label = "{" + (("{" + ins + "}|") if ins else "") + middle + (("|{" + outs + "}") if outs else "") + "}"
        style = ', style=filled, fillcolor="#ffd27f"' if op.name == center.name else ""
        lines.append(f'  {names[op.name]} [label="{label}"{style}];')
    by_name = {op.name: op for op in ops}
    for op in ops:
        for producer in op.control_inputs:
            if producer in names:
                lines.append(f"  {names[producer]} -> {names[op.name]} [style=dashed];")
        for producer, out_idx, position in data_edges(op.inputs):
            if producer in names:
                # :s / :n make edges leave an output port downwards and enter an input port from above
                has_port = out_idx < len(by_name[producer].output_descs)
                tail = f"{names[producer]}:o{out_idx}:s" if has_port else names[producer]
                lines.append(f"  {tail} -> {names[op.name]}:i{position}:n;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_svg(source: str) -> tuple[str | None, str | None]:
    """The SVG `dot` draws from DOT `source` (`ni -s` saves it, the HTML report inlines it), or None and why:
    no `dot` installed (None, None: the caller says how to get it), or what dot said when it failed."""
    dot = shutil.which("dot")
    if dot is None:
        return None, None
    try:
        proc = subprocess.run([dot, "-Tsvg"], input=source, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"dot failed: {exc}"
    if proc.returncode != 0 or "<svg" not in proc.stdout:
        return None, f"dot failed: {proc.stderr.strip()[:300]}"
    return proc.stdout, None


def save_subgraph(center: Op, ops: list[Op], folder: Path, depth: int) -> SavedGraph:
    """Write <op>_<depth>.gv under `folder` and render .svg with `dot` when it is installed."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{center.name.replace('/', '_').replace('.', '_')}_{depth}"
    gv_path = folder / f"{stem}.gv"
    source = subgraph_source(center, ops)
    write_text_atomic(gv_path, source)
    svg, failure = dot_svg(source)
    if svg is None:
        missing = f"`dot` was not found: {INSTALL_HINT.replace('FILE', str(gv_path.with_suffix('')))}"
        return SavedGraph(gv_path, None, failure or missing)
    svg_path = gv_path.with_suffix(".svg")
    write_text_atomic(svg_path, svg)
    return SavedGraph(gv_path, svg_path, None)
