"""GE's ONNX-style graph dump (`ge_onnx_<n>_graph_<g>_<stage>.pbtxt`) read into the same graph model.

Why: DUMP_GE_GRAPH writes this file beside the ge_proto_*.txt dumps, and it is protobuf text of an ONNX
ModelProto (`ir_version`, `producer_name: "GE"`, `graph { node { ... } }`), not a ModelDef: read as a
ModelDef it was a graph with 0 ops. GE writes it in metadef's graph/utils/ge_ir_utils.cc (OnnxUtils):
- node: `name`, `op_type` "ge:<GE type>", `input` "producer:idx" ("" unlinked, ":-1" control),
  `output` "name:idx" (for Netron only), `attribute {name, i|s|f|ints|strings|floats, type}` sorted by name;
- the OpDef fields become attributes: `id`, `stream_id` (INT), `dst_name` (STRINGS), `dst_index`, ...;
- each tensor descriptor becomes `input_desc_<field>:<i>` / `output_desc_<field>:<i>` attributes
  (dtype, origin_dtype, shape, origin_shape, layout, origin_layout, size, ...), its attributes
  `input_desc_attr_<key>:<i>` / `output_desc_attr_<key>:<i>`; string attributes (pass_name,
  `_datadump_original_op_names`, ...) only at DUMP_GE_GRAPH=1 (dump level "all");
- each subgraph is one more node of op_type "subgraph" whose attribute `graph` (type GRAPH) holds it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_model import AttrList, Graph, Model, Op, TensorDesc
from precision_tool.formats.ge.ge_text_scalar import _TOKEN, _parse_float, _parse_int, unexpected, unquote

MAX_DEPTH = 64  # GE writes ~8 levels (model, graph, node, attribute, g, node, ...); deeper is damage
_ONNX_TOP = re.compile(r"^\s*(ir_version|producer_name|producer_version|model_version|opset_import)\s*[:{]",
                       re.MULTILINE)
_GRAPH_NODE = re.compile(r"\Agraph\s*\{\s*node\s*\{")
# the descriptor fields GE writes as `<side>_desc_<field>:<i>` and where each goes in TensorDesc
_DESC_INT_EXTRA = ("size", "real_dim_cnt")


def looks_like_onnx(text: str) -> bool:
    """Is this protobuf text an ONNX ModelProto (GE's ge_onnx dump) rather than a ge ModelDef?
    Its top-level fields before `graph` (ir_version, producer_name) say so, or `graph { node {`."""
    head = text[:65536]
    graph_at = head.find("graph")
    found = _ONNX_TOP.search(head, 0, graph_at if graph_at >= 0 else len(head))
    return found is not None or bool(_GRAPH_NODE.match(head.lstrip()))


def parse_onnx_text(text: str, path: Path) -> Model:
    """The model of a ge_onnx dump; FormatError (file, line, what) when it is not readable."""
    try:
        return _parse(text, path)
    except (ValueError, OverflowError, RecursionError) as exc:  # a value no GE dump holds; never a traceback
        raise FormatError(path, f"an ONNX-style graph dump (ge_onnx) with a value that cannot be read ({exc}); "
                                "the file is damaged") from None


def _parse(text: str, path: Path) -> Model:
    tree = _tree(text, path)
    graphs_in = tree.get("graph", [])
    if not graphs_in or not isinstance(graphs_in[0], dict):
        raise FormatError(path, "an ONNX-style graph dump (ge_onnx) without a graph { } block")
    model = Model(path=path, name=_str(tree, "producer_name"))
    warnings: list[str] = []
    pending = [graphs_in[0]]
    while pending:  # subgraphs are nodes of op_type "subgraph" holding a graph; read them after their owner
        graph_tree = pending.pop(0)
        graph = Graph(name=_str(graph_tree, "name"))
        for node in graph_tree.get("node", []):
            if not isinstance(node, dict):
                raise FormatError(path, f"graph {graph.name!r}: a node that is a value, not a node {{ }} block")
            if _str(node, "op_type") == "subgraph":
                for attribute in node.get("attribute", []):
                    if isinstance(attribute, dict):
                        pending.extend(g for g in attribute.get("g", []) if isinstance(g, dict))
                continue
            graph.ops.append(_op(node, path, warnings))
        graph.inputs = [_str(v, "name") for v in graph_tree.get("input", []) if isinstance(v, dict)]
        graph.outputs = [_str(v, "name") for v in graph_tree.get("output", []) if isinstance(v, dict)]
        model.graphs.append(graph)
    if not any(graph.ops for graph in model.graphs):
        raise FormatError(path, "an ONNX-style graph dump (ge_onnx) with no node: nothing to read")
    model.warnings = warnings[:20] + ([f"... and {len(warnings) - 20} more"] if len(warnings) > 20 else [])
    return model


# --- the message tree ------------------------------------------------------------------------------
def _tree(text: str, path: Path) -> dict[str, list[Any]]:
    """Protobuf text as nested dicts (field → list of raw scalar texts or child dicts), no schema.
    A loop with an explicit stack: deep nesting cannot reach Python's recursion limit."""
    root: dict[str, list[Any]] = {}
    current = root
    stack: list[tuple[dict[str, list[Any]], str]] = []
    for match in _TOKEN.finditer(text):
        name, scalar, opening, closing, bad = match.groups()
        if scalar:
            current.setdefault(name, []).append(scalar)
        elif opening:
            if len(stack) >= MAX_DEPTH:
                raise FormatError(path, f"{_at(text, match.start())}: blocks nested deeper than {MAX_DEPTH} "
                                        f"levels; the file is damaged")
            child: dict[str, list[Any]] = {}
            current.setdefault(name, []).append(child)
            stack.append((current, opening))
            current = child
        elif closing:
            if not stack:
                raise FormatError(path, f"{_at(text, match.start(4))}: '{closing}' closes nothing")
            current, opened = stack.pop()
            if (opened == "{") != (closing == "}"):
                raise FormatError(path, f"{_at(text, match.start(4))}: '{closing}' does not match '{opened}'")
        elif bad:
            raise FormatError(path, f"{_at(text, match.start(5))}: {unexpected(bad)}")
    if stack:
        raise FormatError(path, f"the file ends inside a block ({len(stack)} unclosed); it is cut short")
    return root


def _at(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    return f"line {line}, column {position - (text.rfind(chr(10), 0, position) + 1) + 1}"


def _str(tree: dict[str, list[Any]], key: str) -> str:
    values = tree.get(key)
    if not values or not isinstance(values[-1], str):
        return ""
    try:
        return unquote(values[-1]).decode("utf-8", "surrogateescape")
    except ValueError:
        return values[-1]


# --- nodes ---------------------------------------------------------------------------------------------
def _op(node: dict[str, list[Any]], path: Path, warnings: list[str]) -> Op:
    name = _str(node, "name")
    op_type = _str(node, "op_type")
    op = Op(name, op_type[3:] if op_type.startswith("ge:") else op_type)
    op.inputs = [_text_value(v, path) for v in node.get("input", []) if isinstance(v, str)]
    descs: dict[str, dict[int, TensorDesc]] = {"input": {}, "output": {}}
    for attribute in node.get("attribute", []):
        if not isinstance(attribute, dict):
            continue
        key = _str(attribute, "name")
        try:
            value = _attr_value(attribute)
        except ValueError as exc:
            warnings.append(f"op {name!r}: attribute {key!r} unreadable ({exc}); skipped")
            continue
        if value is None:
            continue
        _place(op, key, value, descs)
    for side, found in descs.items():
        if found:
            top = max(found)
            if top > 4096:
                warnings.append(f"op {name!r}: {side} descriptor number {top} is implausible; skipped")
                continue
            listed = [found.get(i, TensorDesc()) for i in range(top + 1)]
            if side == "input":
                op.input_descs = listed
            else:
                op.output_descs = listed
    return op


def _place(op: Op, key: str, value: Any, descs: dict[str, dict[int, TensorDesc]]) -> None:
    """One GE attribute into the op: an OpDef field, a descriptor field or attribute, or an op attribute."""
    if key in ("id", "stream_id") and type(value) is int:
        setattr(op, key, value)
        return
    if key == "dst_name" and isinstance(value, list):
        op.dst_names = [str(v) for v in value]
        return
    if key == "dst_index" and isinstance(value, list):
        op.dst_indexes = [int(v) for v in value if type(v) is int]
        return
    for side in ("input", "output"):
        prefix = f"{side}_desc_"
        field, sep, number = key.rpartition(":")
        if key.startswith(prefix) and sep and number.isascii() and number.isdigit() and len(number) <= 6:
            desc = descs[side].setdefault(int(number), TensorDesc())
            field = field[len(prefix):]
            if field.startswith("attr_"):
                desc.attrs[field[5:]] = value
            elif field == "dtype" and isinstance(value, str):
                desc.dtype = value
            elif field == "layout" and isinstance(value, str):
                desc.layout = value
            elif field == "shape" and isinstance(value, list):
                desc.shape = tuple(v for v in value if type(v) is int)
            elif field == "origin_layout" and isinstance(value, str):
                desc.attrs["origin_format"] = value
            elif field == "origin_shape" and isinstance(value, list):
                if value:  # GE writes the field for every descriptor; empty means it had none
                    desc.attrs["origin_shape"] = value
            elif field in _DESC_INT_EXTRA and type(value) is int:
                desc.extra[field] = value
            else:
                desc.attrs[f"_onnx_{field}"] = value  # origin_dtype, device_type, ...: kept, shown by ni -a
            return
    op.attrs[key] = value


def _attr_value(attribute: dict[str, list[Any]]) -> Any:
    """An AttributeProto's value by its `type` (or by the field present when `type` is absent)."""
    kind = attribute.get("type", [""])[-1]
    kind = kind if isinstance(kind, str) else ""
    if kind in ("INT", "2") or (not kind and "i" in attribute):
        return _parse_int(_scalar(attribute, "i", "0"))
    if kind in ("FLOAT", "1") or (not kind and "f" in attribute):
        return _parse_float(_scalar(attribute, "f", "0"))
    if kind in ("STRING", "3") or (not kind and "s" in attribute):
        return unquote(_scalar(attribute, "s", '""')).decode("utf-8", "surrogateescape")
    if kind in ("INTS", "7") or (not kind and "ints" in attribute):
        return AttrList([_parse_int(v) for v in _scalars(attribute, "ints")], "i", "VT_LIST_INT")
    if kind in ("FLOATS", "6") or (not kind and "floats" in attribute):
        return AttrList([_parse_float(v) for v in _scalars(attribute, "floats")], "f", "VT_LIST_FLOAT")
    if kind in ("STRINGS", "8") or (not kind and "strings" in attribute):
        return AttrList([unquote(v).decode("utf-8", "surrogateescape") for v in _scalars(attribute, "strings")],
                        "s", "VT_LIST_STRING")
    return None  # GRAPH (subgraph nodes), TENSOR, ...: nothing an op summary shows


def _scalar(attribute: dict[str, list[Any]], key: str, default: str) -> str:
    values = attribute.get(key)
    if not values:
        return default
    if not isinstance(values[-1], str):
        raise ValueError(f"{key} is a block, not a value")
    return values[-1]


def _scalars(attribute: dict[str, list[Any]], key: str) -> list[str]:
    values: list[str] = []
    for value in attribute.get(key, []):
        if not isinstance(value, str):
            raise ValueError(f"{key} is a block, not a value")
        if value.startswith("["):  # `ints: [1, 2]` list syntax
            values.extend(item.strip() for item in value[1:-1].split(",") if item.strip())
        else:
            values.append(value)
    return values


def _text_value(raw: str, path: Path) -> str:
    try:
        return unquote(raw).decode("utf-8", "surrogateescape")
    except ValueError as exc:
        raise FormatError(path, f"a node input that is not a quoted string ({exc})") from None
