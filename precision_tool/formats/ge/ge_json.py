"""atc-style JSON of ge ModelDef (what `atc --mode=5` writes and msaccucmp `-f` reads).

Maps are lists of {"key", "value"}; enums are names; int64 values are JSON integers; `s` values are
plain strings. Other bytes fields (`bt`, a tensor's `data`, `cmps_tab`) are base64 text.
`google.protobuf.json_format` output is not what msaccucmp accepts, hence this writer.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_model import (
    Graph,
    Model,
    NamedAttrs,
    Op,
    TensorDesc,
    TensorValue,
    attr_kind,
    list_item_kind,
    list_val_type,
)
from precision_tool.formats.ge.ge_tree import SCHEMA, B, TreeReader, bytes_from_json


def parse_json_text(text: str, path: Path) -> Model:
    try:
        tree = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}") from None
    except ValueError as exc:  # _bounded_int's refusal
        raise FormatError(path, f"not a GE graph: {exc}") from None
    except RecursionError:
        raise FormatError(path, "not a GE graph: the JSON is nested deeper than any GE graph "
                                "(thousands of levels); the file is damaged") from None
    if isinstance(tree, list):  # a bare list of graphs
        tree = {"graph": tree}
    if not isinstance(tree, dict):
        raise FormatError(path, "not a GE graph: the JSON is not an object with a 'graph' list")
    if "graph" not in tree and "op" in tree:  # a single GraphDef
        tree = {"graph": [tree]}
    if not isinstance(tree.get("graph", []), list):
        raise FormatError(path, "not a GE graph: 'graph' is not a list")
    reader = TreeReader(bytes_from_json)
    try:
        return reader.model(tree, path)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        raise FormatError(path, f"not a GE graph: {_short(exc)}") from None
    except RecursionError:
        raise FormatError(path, "not a GE graph: graphs nested in attributes deeper than any GE graph; "
                                "the file is damaged") from None


MAX_INT_DIGITS = 40  # int64 has 19 digits; a longer integer is damage, and Python refuses > 4,300


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits ({text[:12]}...); GE writes 64-bit integers")
    return int(text)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _b64(value: bytes) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _float(value: float) -> Any:
    # JSON has no inf/nan; protobuf's JSON mapping spells them as strings, which we read back too.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


def model_tree(model: Model) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    if model.name:
        tree["name"] = model.name
    if model.version:
        tree["version"] = int(model.version)
    if model.custom_version:
        tree["custom_version"] = model.custom_version
    tree["graph"] = [graph_tree(g) for g in model.graphs]
    if model.attrs:
        tree["attr"] = attrs_tree(model.attrs)
    return tree


def graph_tree(graph: Graph) -> dict[str, Any]:
    tree: dict[str, Any] = {"name": graph.name}
    if graph.inputs:
        tree["input"] = list(graph.inputs)
    if graph.outputs:
        tree["output"] = list(graph.outputs)
    tree["op"] = [op_tree(op) for op in graph.ops]
    if graph.attrs:
        tree["attr"] = attrs_tree(graph.attrs)
    return tree


def op_tree(op: Op) -> dict[str, Any]:
    fields: dict[str, Any] = {"name": op.name, "type": op.type}
    if op.inputs:
        fields["input"] = list(op.inputs)
    if op.attrs:
        fields["attr"] = attrs_tree(op.attrs)
    fields["id"] = int(op.id)
    if op.stream_id:
        fields["stream_id"] = int(op.stream_id)
    if op.dst_names:
        fields["dst_name"] = list(op.dst_names)
    if op.dst_indexes:
        fields["dst_index"] = [int(i) for i in op.dst_indexes]
    if op.input_descs:
        fields["input_desc"] = [desc_tree(d) for d in op.input_descs]
    if op.output_descs:
        fields["output_desc"] = [desc_tree(d) for d in op.output_descs]
    if op.subgraph_names:
        fields["subgraph_name"] = list(op.subgraph_names)
    fields.update(_extra_tree("OpDef", op.extra))
    schema = SCHEMA["OpDef"]
    return dict(sorted(fields.items(), key=lambda kv: schema.get(kv[0], ("", False, 999))[2]))


def desc_tree(desc: TensorDesc) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    if "name" in desc.extra:
        tree["name"] = desc.extra["name"]
    tree["dtype"] = desc.dtype
    tree["shape"] = {"dim": [int(d) for d in desc.shape]} if desc.shape else {}
    tree["layout"] = desc.layout
    if desc.attrs:
        tree["attr"] = attrs_tree(desc.attrs)
    tree.update(_extra_tree("TensorDescriptor", {k: v for k, v in desc.extra.items() if k != "name"}))
    return tree


def _extra_tree(message: str, extra: dict[str, Any]) -> dict[str, Any]:
    schema = SCHEMA[message]
    result = {}
    for key, value in extra.items():
        kind = schema.get(key, ("", False, 0))[0]
        result[key] = _b64(value) if kind == B else value
    return result


def attrs_tree(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": attr_tree(value)} for key, value in attrs.items()]


def attr_tree(value: Any) -> dict[str, Any]:
    kind = attr_kind(value)
    if kind == "":
        return {}
    if kind == "s":
        return {"s": value}
    if kind in ("i", "dt"):
        return {kind: int(value)}
    if kind == "b":
        return {"b": bool(value)}
    if kind == "f":
        return {"f": _float(value)}
    if kind == "bt":
        return {"bt": _b64(value)}
    if kind == "list":
        return {"list": list_tree(value)}
    return {kind: _message_tree(kind, value)}


def list_tree(value: list[Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    item_kind = list_item_kind(value)
    if value and item_kind:
        if item_kind == "s":
            items: list[Any] = list(value)
        elif item_kind in ("i", "dt"):
            items = [int(v) for v in value]
        elif item_kind == "f":
            items = [_float(v) for v in value]
        elif item_kind == "b":
            items = [bool(v) for v in value]
        elif item_kind == "bt":
            items = [_b64(v) for v in value]
        else:
            items = [_message_tree({"na": "func"}.get(item_kind, item_kind), v) for v in value]
        tree[item_kind] = items
    val_type = list_val_type(value)
    if val_type:
        tree["val_type"] = val_type
    return tree


def _message_tree(kind: str, value: Any) -> dict[str, Any]:
    if kind == "td":
        return desc_tree(value)
    if kind == "g":
        return graph_tree(value)
    if kind == "func":
        assert isinstance(value, NamedAttrs)
        tree: dict[str, Any] = {"name": value.name}
        if value.attrs:
            tree["attr"] = attrs_tree(value.attrs)
        return tree
    if kind == "t":
        assert isinstance(value, TensorValue)
        tree = {}
        if value.desc is not None:
            tree["desc"] = desc_tree(value.desc)
        if value.data:
            tree["data"] = _b64(value.data)
        return tree
    if kind == "list_list_int":
        return {"list_list_i": [{"list_i": [int(v) for v in row]} for row in value]}
    if kind == "list_list_float":
        return {"list_list_f": [{"list_f": [_float(v) for v in row]} for row in value]}
    raise TypeError(f"cannot write attribute kind {kind}")


def format_model_json(model: Model) -> str:
    return json.dumps(model_tree(model), ensure_ascii=True, separators=(",", ":")) + "\n"
