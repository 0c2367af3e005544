"""Writes a GE ONNX-style dump (ge_onnx_*.pbtxt) of a real ge_proto graph, the way GE writes it.

Why: no ge_onnx file written by GE was found in a public repository (only a 15-line excerpt in a
MindInsight document), so the test file is made from a real ge_proto dump by following GE's own
encoder, metadef graph/utils/ge_ir_utils.cc (OnnxUtils::ConvertGeModelToModelProto, EncodeGraph,
EncodeNode, AddAttrProtoForOpInDesc/OutDesc, AddCommonAttrIntoProto, AddAttrProtoForAttrsFromAttrMap),
at DUMP_GE_GRAPH=1 (dump level "all": string attributes included). Facts followed: op_type "ge:<type>";
inputs "producer:idx", control inputs ":-1"; outputs "name:idx" for linked outputs (Netron only);
attributes sorted by name, each `name`, the value, `type`; descriptors as `input_desc_<field>:<i>`;
proto3 printing (zero scalars omitted); each subgraph one more node of op_type "subgraph" with a GRAPH
attribute. `python3 -m tests.analysis.graphs.make_ge_onnx SRC DST` rewrites the committed file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from precision_tool.formats.ge.ge_graph import Graph, Model, Op, TensorDesc, attr_kind, load_graph
from precision_tool.formats.ge.ge_text_write import format_float, quote

# onnx TensorProto elem_type numbers GE maps to (EncodeDataType); anything else is UNDEFINED (0)
_ONNX_ELEM = {"DT_INT64": 7, "DT_UINT64": 13, "DT_FLOAT": 1, "DT_INT32": 6, "DT_UINT32": 12, "DT_INT8": 3,
              "DT_UINT8": 2, "DT_INT16": 5, "DT_UINT16": 4, "DT_FLOAT16": 10, "DT_DOUBLE": 11, "DT_BOOL": 9}


def _attr(name: str, kind: str, value: Any) -> tuple[str, list[str]]:
    body = [f"name: {quote(name)}"]
    if kind == "INT" and value:
        body.append(f"i: {int(value)}")
    elif kind == "FLOAT" and value:
        body.append(f"f: {format_float(float(value))}")
    elif kind == "STRING" and value:
        body.append(f"s: {quote(value)}")
    elif kind == "INTS":
        body += [f"ints: {int(v)}" for v in value]
    elif kind == "FLOATS":
        body += [f"floats: {format_float(float(v))}" for v in value]
    elif kind == "STRINGS":
        body += [f"strings: {quote(v)}" for v in value]
    body.append(f"type: {kind}")
    return name, body


def _ge_attrs(attrs: dict[str, Any], prefix: str = "", suffix: str = "") -> list[tuple[str, list[str]]]:
    """AddAttrProtoForAttrsFromAttrMap at DUMP_ALL: s, i, f, b (as INT), lists by val_type, list_list_int."""
    out = []
    for key, value in attrs.items():
        kind = attr_kind(value)
        name = prefix + key + suffix
        if kind == "s":
            out.append(_attr(name, "STRING", value))
        elif kind in ("i", "b"):
            out.append(_attr(name, "INT", int(value)))
        elif kind == "f":
            out.append(_attr(name, "FLOAT", value))
        elif kind == "list":
            item = getattr(value, "item_kind", None)
            if item == "s":
                out.append(_attr(name, "STRINGS", list(value)))
            elif item in ("i", "b"):
                if len(value):
                    out.append(_attr(name, "INTS", [int(v) for v in value]))
            elif item == "f" and len(value):
                out.append(_attr(name, "FLOATS", list(value)))
        elif kind == "list_list_int":
            for n, ints in enumerate(value):
                if len(ints):
                    out.append(_attr(f"{name}_{n}", "INTS", list(ints)))
        elif kind == "td" or kind == "t":
            desc = value if kind == "td" else value.desc
            if kind == "t":
                out.append(_attr(prefix + key + "_desc_dtype" + suffix, "STRING", desc.dtype))
                if desc.shape:
                    out.append(_attr(prefix + key + "_desc_shape" + suffix, "INTS", list(desc.shape)))
                out.append(_attr(prefix + key + "_desc_layout" + suffix, "STRING", desc.layout))
                out.append(_attr(prefix + key + "_desc_device_type" + suffix, "STRING",
                                 desc.extra.get("device_type", "NPU")))
    return out


def _desc_attrs(side: str, i: int, desc: TensorDesc) -> list[tuple[str, list[str]]]:
    p, s = f"{side}_desc_", f":{i}"
    origin_shape = desc.origin_shape or ()
    out = [_attr(f"{p}dtype{s}", "STRING", desc.dtype),
           _attr(f"{p}origin_dtype{s}", "STRING", str(desc.attrs.get("origin_data_type", desc.dtype))),
           _attr(f"{p}shape{s}", "INTS", list(desc.shape)),
           _attr(f"{p}origin_shape{s}", "INTS", list(origin_shape)),
           _attr(f"{p}layout{s}", "STRING", desc.layout),
           _attr(f"{p}origin_layout{s}", "STRING", desc.origin_format or "ND"),
           _attr(f"{p}size{s}", "INT", desc.extra.get("size", 0)),
           _attr(f"{p}weight_size{s}", "INT", desc.extra.get("weight_size", 0)),
           _attr(f"{p}device_type{s}", "STRING", desc.extra.get("device_type", "NPU")),
           _attr(f"{p}real_dim_cnt{s}", "INT", desc.extra.get("real_dim_cnt", len(desc.shape)))]
    if side == "input":
        out += [_attr(f"{p}{f}{s}", "INT", int(desc.extra.get(f, 0) or 0))
                for f in ("reuse_input", "output_tensor", "input_tensor", "data_offset", "cmps_size",
                          "cmps_tab_offset")]
        out.append(_attr(f"{p}cmps_tab{s}", "STRING", desc.extra.get("cmps_tab", "")))
    out += _ge_attrs({k: v for k, v in desc.attrs.items() if k not in ("origin_format", "origin_shape")},
                     f"{side}_desc_attr_", s)
    return out


def _node(graph: Graph, op: Op) -> list[str]:
    attrs = [_attr("input_desc_nums", "INT", len(op.input_descs)),
             _attr("output_desc_nums", "INT", len(op.output_descs))]
    for i, desc in enumerate(op.input_descs):
        attrs += _desc_attrs("input", i, desc)
    for i, desc in enumerate(op.output_descs):
        attrs += _desc_attrs("output", i, desc)
    attrs += [_attr("id", "INT", op.id), _attr("stream_id", "INT", op.stream_id),
              _attr("input_name", "STRINGS", op.extra.get("input_name", [])),
              _attr("src_name", "STRINGS", op.extra.get("src_name", [])),
              _attr("src_index", "INTS", op.extra.get("src_index", [])),
              _attr("dst_name", "STRINGS", op.dst_names), _attr("dst_index", "INTS", op.dst_indexes),
              _attr("input_i", "INTS", op.extra.get("input_i", [])),
              _attr("output_i", "INTS", op.extra.get("output_i", [])),
              _attr("workspace", "INTS", op.extra.get("workspace", [])),
              _attr("workspace_bytes", "INTS", op.extra.get("workspace_bytes", [])),
              _attr("is_input_const", "INTS", [int(b) for b in op.extra.get("is_input_const", [])])]
    attrs += _ge_attrs(op.attrs)
    attrs.sort(key=lambda pair: pair[0])
    lines = [f"input: {quote(text)}" for text in op.inputs]
    linked = sorted({idx for _, idx, _ in ((c, o, p) for c, o, p in graph.consumers(op.name))})
    lines += [f"output: {quote(f'{op.name}:{idx}')}" for idx in linked]
    if any(f"{op.name}:-1" in other.inputs for other in graph.ops):
        lines.append(f"output: {quote(op.name + ':-1')}")
    lines += [f"name: {quote(op.name)}", f"op_type: {quote('ge:' + op.type)}"]
    for _, body in attrs:
        lines += ["attribute {"] + ["  " + b for b in body] + ["}"]
    return lines


def _value_info(op: Op) -> list[str]:
    lines = [f"name: {quote(op.name)}", "type {", "  tensor_type {"]
    for desc in op.output_descs[-1:]:  # EncodeTypeProtoTensorType keeps the last output's type
        elem = _ONNX_ELEM.get(desc.dtype, 0)
        if elem:
            lines.append(f"    elem_type: {elem}")
        lines.append("    shape {")
        for dim in desc.shape:
            lines += ["      dim {", f"        dim_value: {dim}" if dim else "", "      }"]
        lines.append("    }")
    lines += ["  }", "}"]
    return [line for line in lines if line]


def _graph(graph: Graph) -> list[str]:
    lines = []
    for op in graph.ops:
        lines += ["node {"] + ["  " + line for line in _node(graph, op)] + ["}"]
    lines.append(f"name: {quote(graph.name)}")
    for kind, types in (("input", ("Data", "RefData")), ("output", ("NetOutput",))):
        for op in graph.ops:
            if op.type in types:
                lines += [f"{kind} {{"] + ["  " + line for line in _value_info(op)] + ["}"]
    return lines


def onnx_text(model: Model) -> str:
    root, subgraphs = model.graphs[0], model.graphs[1:]
    body = _graph(root)
    at = body.index(f"name: {quote(root.name)}")
    for sub in subgraphs:  # ConvertGeModelToModelProto: each subgraph one more node after the root's
        node = [f"name: {quote(sub.name)}", 'op_type: "subgraph"', "attribute {", '  name: "graph"', "  g {"]
        node += ["    " + line for line in _graph(sub)] + ["  }", "  type: GRAPH", "}"]
        body[at:at] = ["node {"] + ["  " + line for line in node] + ["}"]
        at += len(node) + 2
    lines = ["ir_version: 6", 'producer_name: "GE"', "graph {"] + ["  " + line for line in body] + ["}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    source, target = Path(argv[0]), Path(argv[1])
    target.write_text(onnx_text(load_graph(source)), encoding="utf-8", errors="surrogateescape")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
