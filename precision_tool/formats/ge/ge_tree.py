"""The ge.proto schema by field name, and the step from a parsed message tree to the graph model.

Why: the text parser and the JSON reader both produce the same tree (a message is a dict, a repeated
field a list, a map a list of {"key", "value"} dicts), so one converter builds the model for both.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any, Callable

from precision_tool.formats.ge.ge_model import (
    DATA_TYPE_NAMES,
    LIST_ITEM_KINDS,
    LIST_VAL_TYPES,
    VAL_TYPE_ITEM_KIND,
    AttrList,
    DataTypeValue,
    Graph,
    ListListFloat,
    ListListInt,
    Model,
    NamedAttrs,
    Op,
    TensorDesc,
    TensorValue,
    split_input,
)

# Scalar kinds: S text (string, and the `s` bytes fields read as text), B raw bytes, I integer,
# F float, O bool, E DataType enum name, V ListValue.val_type enum name.
S, B, I, F, O, E, V = "S", "B", "I", "F", "O", "E", "V"

# message name → {field name: (kind or message name, repeated, field number)}; the field numbers give
# the order the writers use (the order protobuf itself prints).
SCHEMA: dict[str, dict[str, tuple[str, bool, int]]] = {
    "ModelDef": {
        "name": (S, False, 1), "version": (I, False, 2), "custom_version": (S, False, 3),
        "graph": ("GraphDef", True, 7), "attr": ("AttrEntry", True, 11),
    },
    "GraphDef": {
        "name": (S, False, 1), "input": (S, True, 4), "output": (S, True, 5),
        "op": ("OpDef", True, 6), "attr": ("AttrEntry", True, 11),
    },
    "OpDef": {
        "name": (S, False, 1), "type": (S, False, 2), "input": (S, True, 5),
        "attr": ("AttrEntry", True, 10), "has_out_attr": (O, False, 20), "id": (I, False, 21),
        "stream_id": (I, False, 22), "input_name": (S, True, 23), "src_name": (S, True, 24),
        "src_index": (I, True, 25), "dst_name": (S, True, 26), "dst_index": (I, True, 27),
        "input_i": (I, True, 28), "output_i": (I, True, 29), "workspace": (I, True, 30),
        "workspace_bytes": (I, True, 31), "is_input_const": (O, True, 32),
        "input_desc": ("TensorDescriptor", True, 33), "output_desc": ("TensorDescriptor", True, 34),
        "subgraph_name": (S, True, 35), "attached_stream_id": (I, True, 36),
    },
    "TensorDescriptor": {
        "name": (S, False, 1), "dtype": (E, False, 2), "shape": ("ShapeDef", False, 3),
        "layout": (S, False, 4), "attr": ("AttrEntry", True, 5), "has_out_attr": (O, False, 9),
        "size": (I, False, 10), "weight_size": (I, False, 11), "reuse_input": (O, False, 12),
        "output_tensor": (O, False, 13), "device_type": (S, False, 14), "input_tensor": (O, False, 15),
        "real_dim_cnt": (I, False, 16), "reuse_input_index": (I, False, 17),
        "data_offset": (I, False, 18), "cmps_size": (I, False, 19), "cmps_tab": (B, False, 20),
        "cmps_tab_offset": (I, False, 21),
    },
    "ShapeDef": {"dim": (I, True, 1)},
    "AttrEntry": {"key": (S, False, 1), "value": ("AttrDef", False, 2)},
    "AttrDef": {
        "list": ("ListValue", False, 1), "s": (S, False, 2), "i": (I, False, 3), "f": (F, False, 4),
        "b": (O, False, 5), "bt": (B, False, 7), "func": ("NamedAttrs", False, 10),
        "td": ("TensorDescriptor", False, 11), "t": ("TensorDef", False, 12),
        "g": ("GraphDef", False, 13), "list_list_int": ("ListListInt", False, 14),
        "dt": (I, False, 15), "list_list_float": ("ListListFloat", False, 16),
    },
    "ListValue": {
        "s": (S, True, 2), "i": (I, True, 3), "f": (F, True, 4), "b": (O, True, 5), "bt": (B, True, 7),
        "td": ("TensorDescriptor", True, 8), "t": ("TensorDef", True, 9), "g": ("GraphDef", True, 10),
        "na": ("NamedAttrs", True, 11), "dt": (I, True, 12), "val_type": (V, False, 20),
    },
    "NamedAttrs": {"name": (S, False, 1), "attr": ("AttrEntry", True, 2)},
    "TensorDef": {"desc": ("TensorDescriptor", False, 1), "data": (B, False, 2)},
    "ListListInt": {"list_list_i": ("ListInt", True, 1)},
    "ListInt": {"list_i": (I, True, 1)},
    "ListListFloat": {"list_list_f": ("ListFloat", True, 1)},
    "ListFloat": {"list_f": (F, True, 1)},
}

OP_FIELDS = {"name", "type", "input", "attr", "id", "stream_id", "input_desc", "output_desc",
             "dst_name", "dst_index", "subgraph_name"}
DESC_FIELDS = {"dtype", "shape", "layout", "attr"}
GRAPH_FIELDS = {"name", "input", "output", "op", "attr"}
MAX_DETAILED_WARNINGS = 20


class TreeReader:
    """Builds model objects from a tree; collects warnings. `to_bytes` turns a bytes field's tree value
    into bytes (text: already bytes; JSON: base64 text)."""

    def __init__(self, to_bytes: Callable[[Any], bytes]) -> None:
        self.to_bytes = to_bytes
        self.warnings: list[str] = []
        self._counts: dict[str, int] = {}

    def warn(self, group: str, message: str) -> None:
        """Keep the first few messages of each group in full; the rest are counted."""
        count = self._counts.get(group, 0) + 1
        self._counts[group] = count
        if count <= MAX_DETAILED_WARNINGS:
            self.warnings.append(message)

    def finish(self) -> list[str]:
        for group, count in self._counts.items():
            if count > MAX_DETAILED_WARNINGS:
                self.warnings.append(f"... and {count - MAX_DETAILED_WARNINGS} more {group} warnings")
        return self.warnings

    # --- messages -------------------------------------------------------------------------------
    def model(self, tree: dict[str, Any], path: Path) -> Model:
        graphs = [self.graph(g) for g in _as_list(tree.get("graph"))]
        model = Model(path=path, name=_text(tree.get("name", "")), graphs=graphs,
                      version=_int(tree.get("version", 0)),
                      custom_version=_text(tree.get("custom_version", "")),
                      attrs=self.attrs(tree.get("attr"), "model"))
        for graph in graphs:
            self.check_edges(graph)
        model.warnings = self.finish()
        return model

    def graph(self, tree: dict[str, Any]) -> Graph:
        if not isinstance(tree, dict):
            raise ValueError("a graph is not an object")
        ops = [self.op(o) for o in _as_list(tree.get("op"))]
        return Graph(name=_text(tree.get("name", "")), ops=ops,
                     inputs=[_text(x) for x in _as_list(tree.get("input"))],
                     outputs=[_text(x) for x in _as_list(tree.get("output"))],
                     attrs=self.attrs(tree.get("attr"), "graph"))

    def op(self, tree: dict[str, Any]) -> Op:
        if not isinstance(tree, dict):
            raise ValueError("an op is not an object")
        get = tree.get
        name = get("name", "")
        if not isinstance(name, str):
            name = _text(name)
        extra = {k: v for k, v in tree.items() if k not in OP_FIELDS} if len(tree) > 4 else {}
        if extra:
            extra = self._extra("OpDef", extra)
        return Op(
            name=name,
            type=_text(get("type", "")),
            id=_int(get("id", 0)),
            stream_id=_int(get("stream_id", 0)),
            inputs=[_text(x) for x in _as_list(get("input"))],
            input_descs=[self.desc(d) for d in _as_list(get("input_desc"))],
            output_descs=[self.desc(d) for d in _as_list(get("output_desc"))],
            attrs=self.attrs(get("attr"), name),
            dst_names=[_text(x) for x in _as_list(get("dst_name"))],
            dst_indexes=[_int(x) for x in _as_list(get("dst_index"))],
            subgraph_names=[_text(x) for x in _as_list(get("subgraph_name"))],
            extra=extra,
        )

    def desc(self, tree: dict[str, Any]) -> TensorDesc:
        if not isinstance(tree, dict):
            raise ValueError("a tensor descriptor is not an object")
        dtype = tree.get("dtype", "DT_UNDEFINED")
        if not isinstance(dtype, str):
            dtype = DATA_TYPE_NAMES.get(_int(dtype), str(dtype))
        shape_tree = tree.get("shape")
        shape = tuple(_int(d) for d in _as_list(shape_tree.get("dim"))) if shape_tree else ()
        attrs = self.attrs(tree.get("attr"), "tensor")
        extra = {k: v for k, v in tree.items() if k not in DESC_FIELDS}
        if extra:
            extra = self._extra("TensorDescriptor", extra)
        return TensorDesc(dtype=dtype, layout=_text(tree.get("layout", "")), shape=shape,
                          attrs=attrs, extra=extra)

    def _extra(self, message: str, extra: dict[str, Any]) -> dict[str, Any]:
        """Other known fields, normalised (bytes fields to bytes, ints to int)."""
        schema = SCHEMA[message]
        result: dict[str, Any] = {}
        for key, value in extra.items():
            spec = schema.get(key)
            if spec is None:
                self.warn("unknown field", f"unknown {message} field {key!r} ignored")
                continue
            kind, repeated = spec[0], spec[1]
            convert = _SCALAR_FROM_TREE.get(kind)
            if kind == B:
                convert = self.to_bytes
            if convert is None:
                result[key] = value
            elif repeated:
                result[key] = [convert(v) for v in _as_list(value)]
            else:
                result[key] = convert(value)
        return result

    def attrs(self, entries: Any, owner: str) -> dict[str, Any]:
        if not entries:
            return {}
        if isinstance(entries, dict):  # json_format style map
            pairs = list(entries.items())
        else:
            pairs = []
            for entry in entries:
                if not isinstance(entry, dict):
                    raise ValueError(f"an attribute of {owner!r} is not a key/value object")
                pairs.append((entry.get("key", ""), entry.get("value")))
        result: dict[str, Any] = {}
        for key, value in pairs:
            if not isinstance(key, str):
                key = _text(key)
            result[key] = self.attr_value(value, key, owner) if value else None
        return result

    def attr_value(self, value: dict[str, Any], key: str, owner: str) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"attribute {key!r} of {owner!r} has no value object")
        for kind, item in value.items():
            if kind == "s":
                return item if isinstance(item, str) else _text(item)
            if kind == "i":
                return _int(item)
            if kind == "b":
                return _bool(item)
            if kind == "list":
                return self.list_value(item, key, owner)
            if kind == "f":
                return _float(item)
            if kind == "dt":
                return DataTypeValue(_int(item))
            if kind == "bt":
                return self.to_bytes(item)
            if kind == "td":
                return self.desc(item)
            if kind == "t":
                return self.tensor(item)
            if kind == "g":
                return self.graph(item)
            if kind == "func":
                return self.named_attrs(item)
            if kind == "list_list_int":
                return ListListInt([[_int(v) for v in _as_list(row.get("list_i"))]
                                    for row in _as_list(item.get("list_list_i"))])
            if kind == "list_list_float":
                return ListListFloat([[_float(v) for v in _as_list(row.get("list_f"))]
                                      for row in _as_list(item.get("list_list_f"))])
            self.warn("unknown attribute kind",
                      f"attribute {key!r} of {owner!r} has an unknown value kind {kind!r}; kept as empty")
        return None

    def list_value(self, tree: dict[str, Any], key: str, owner: str) -> AttrList:
        val_type = tree.get("val_type")
        if val_type is not None and not isinstance(val_type, str):
            val_type = LIST_VAL_TYPES.get(_int(val_type), str(val_type))
        present = [k for k in tree if k in _LIST_KINDS]
        if not present:
            unknown = [k for k in tree if k != "val_type"]
            if unknown:
                self.warn("unknown attribute kind",
                          f"list attribute {key!r} of {owner!r} has unknown item kind {unknown[0]!r}")
            return AttrList([], VAL_TYPE_ITEM_KIND.get(val_type or ""), val_type)
        kind = present[0]
        if len(present) > 1:
            self.warn("mixed list", f"list attribute {key!r} of {owner!r} mixes {', '.join(present)}; "
                                    f"kept the {kind} items")
        items = _as_list(tree[kind])
        if kind == "s":
            values: list[Any] = [x if isinstance(x, str) else _text(x) for x in items]
        elif kind == "i":
            values = [_int(x) for x in items]
        elif kind == "f":
            values = [_float(x) for x in items]
        elif kind == "b":
            values = [_bool(x) for x in items]
        elif kind == "bt":
            values = [self.to_bytes(x) for x in items]
        elif kind == "dt":
            values = [DataTypeValue(_int(x)) for x in items]
        elif kind == "td":
            values = [self.desc(x) for x in items]
        elif kind == "t":
            values = [self.tensor(x) for x in items]
        elif kind == "g":
            values = [self.graph(x) for x in items]
        else:
            values = [self.named_attrs(x) for x in items]
        return AttrList(values, kind, val_type)

    def tensor(self, tree: dict[str, Any]) -> TensorValue:
        desc = tree.get("desc")
        return TensorValue(self.desc(desc) if desc is not None else None,
                           self.to_bytes(tree.get("data", b"")))

    def named_attrs(self, tree: dict[str, Any]) -> NamedAttrs:
        name = _text(tree.get("name", ""))
        return NamedAttrs(name, self.attrs(tree.get("attr"), name))

    # --- edges ----------------------------------------------------------------------------------
    def check_edges(self, graph: Graph) -> None:
        """Missing producers and dangling consumers are warnings; the graph stays usable."""
        names = {op.name for op in graph.ops}
        for op in graph.ops:
            for text in op.inputs:
                if not text:
                    continue
                producer = split_input(text)[0]
                if producer not in names:
                    self.warn("missing producer", f"graph {graph.name!r}: op {op.name!r} reads "
                                                  f"{text!r} but no op {producer!r} is in the graph")
            for entry in op.dst_names:
                # real GE dumps join several consumers in one entry ("a:b"); a name may hold ':' itself
                for consumer in ([entry] if entry in names else entry.split(":")):
                    if consumer and consumer not in names:
                        self.warn("dangling consumer", f"graph {graph.name!r}: op {op.name!r} lists consumer "
                                                       f"{consumer!r} which is not in the graph")


_LIST_KINDS = set(LIST_ITEM_KINDS)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, (dict, list)):
        raise ValueError(f"expected text, found {type(value).__name__}")
    return str(value)


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if isinstance(value, (bool, float)) or not isinstance(value, (int, str)):
        raise ValueError(f"expected an integer, found {value!r}")
    return int(value)


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        return float(value)
    raise ValueError(f"expected a number, found {value!r}")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false", "t", "f"):
        return value.lower().startswith("t")
    raise ValueError(f"expected true or false, found {value!r}")


_SCALAR_FROM_TREE: dict[str, Callable[[Any], Any]] = {S: _text, I: _int, F: _float, O: _bool}


def bytes_from_json(value: Any) -> bytes:
    """JSON carries bytes fields other than `s` as base64 text (plain text is accepted too)."""
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected base64 text for a bytes field, found {value!r}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode("utf-8", "surrogateescape")


def bytes_from_text(value: Any) -> bytes:
    return value if isinstance(value, bytes) else _text(value).encode("utf-8", "surrogateescape")
