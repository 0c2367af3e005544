"""Writing a model as protobuf text format (2-space indented, one field per line, like GE's own dumps)."""

from __future__ import annotations

import math
import re
from typing import Any

from precision_tool.formats.ge.ge_model import (
    Graph,
    Model,
    TensorDesc,
    attr_kind,
    list_item_kind,
    list_val_type,
)
from precision_tool.formats.ge.ge_tree import SCHEMA, B, F, I, O, S

_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f-\U0010ffff]*')


def quote(value: str | bytes) -> str:
    """A quoted text-format string; non-printable and non-ASCII bytes as octal escapes, as GE writes."""
    if isinstance(value, str):
        if _PLAIN.fullmatch(value):
            return f'"{value}"'
        value = value.encode("utf-8", "surrogateescape")
    out = []
    for byte in value:
        if byte == 0x22:
            out.append('\\"')
        elif byte == 0x5C:
            out.append("\\\\")
        elif byte == 0x0A:
            out.append("\\n")
        elif byte == 0x0D:
            out.append("\\r")
        elif byte == 0x09:
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def format_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def model(self, model: Model) -> None:
        add = self.lines.append
        if model.name:
            add(f"name: {quote(model.name)}")
        if model.version:
            add(f"version: {int(model.version)}")
        if model.custom_version:
            add(f"custom_version: {quote(model.custom_version)}")
        for graph in model.graphs:
            add("graph {")
            self.graph(graph, "  ")
            add("}")
        self.attrs(model.attrs, "")

    def graph(self, graph: Graph, pad: str) -> None:
        add = self.lines.append
        if graph.name:
            add(f"{pad}name: {quote(graph.name)}")
        for text in graph.inputs:
            add(f"{pad}input: {quote(text)}")
        for text in graph.outputs:
            add(f"{pad}output: {quote(text)}")
        inner = pad + "  "
        for op in graph.ops:
            add(f"{pad}op {{")
            add(f"{inner}name: {quote(op.name)}")
            if op.type:
                add(f"{inner}type: {quote(op.type)}")
            for text in op.inputs:
                add(f"{inner}input: {quote(text)}")
            self.attrs(op.attrs, inner)
            fields = dict(op.extra)
            if op.id:
                fields["id"] = op.id
            if op.stream_id:
                fields["stream_id"] = op.stream_id
            if op.dst_names:
                fields["dst_name"] = op.dst_names
            if op.dst_indexes:
                fields["dst_index"] = op.dst_indexes
            if op.subgraph_names:
                fields["subgraph_name"] = op.subgraph_names
            self.fields("OpDef", fields, inner, after=10, before=33)
            for desc in op.input_descs:
                add(f"{inner}input_desc {{")
                self.desc(desc, inner + "  ")
                add(f"{inner}}}")
            for desc in op.output_descs:
                add(f"{inner}output_desc {{")
                self.desc(desc, inner + "  ")
                add(f"{inner}}}")
            self.fields("OpDef", fields, inner, after=34, before=1000)
            add(f"{pad}}}")
        self.attrs(graph.attrs, pad)

    def fields(self, message: str, values: dict[str, Any], pad: str, after: int, before: int) -> None:
        """Scalar fields with numbers in (after, before), in field-number order."""
        schema = SCHEMA[message]
        chosen = sorted((schema[k][2], k) for k in values if k in schema and after < schema[k][2] < before)
        for _, key in chosen:
            kind, repeated, _ = schema[key]
            value = values[key]
            for item in (value if repeated else [value]):
                self.lines.append(f"{pad}{key}: {self.scalar(kind, item)}")

    @staticmethod
    def scalar(kind: str, value: Any) -> str:
        if kind is S or kind is B:
            return quote(value)
        if kind is O:
            return "true" if value else "false"
        if kind is F:
            return format_float(value)
        if kind is I:
            return str(int(value))
        return str(value)  # enum names

    def desc(self, desc: TensorDesc, pad: str) -> None:
        add = self.lines.append
        if "name" in desc.extra:
            add(f"{pad}name: {quote(desc.extra['name'])}")
        if desc.dtype and desc.dtype != "DT_UNDEFINED":
            add(f"{pad}dtype: {desc.dtype}")
        if desc.shape:
            add(f"{pad}shape {{")
            inner = pad + "  "
            for dim in desc.shape:
                add(f"{inner}dim: {int(dim)}")
            add(f"{pad}}}")
        if desc.layout:
            add(f"{pad}layout: {quote(desc.layout)}")
        self.attrs(desc.attrs, pad)
        self.fields("TensorDescriptor", desc.extra, pad, after=5, before=1000)

    def attrs(self, attrs: dict[str, Any], pad: str) -> None:
        add = self.lines.append
        inner = pad + "  "
        for key, value in attrs.items():
            add(f"{pad}attr {{")
            add(f"{inner}key: {quote(key)}")
            add(f"{inner}value {{")
            self.attr_value(value, inner + "  ")
            add(f"{inner}}}")
            add(f"{pad}}}")

    def attr_value(self, value: Any, pad: str) -> None:
        add = self.lines.append
        kind = attr_kind(value)
        if kind == "":
            return
        if kind == "s":
            add(f"{pad}s: {quote(value)}")
        elif kind == "i":
            add(f"{pad}i: {int(value)}")
        elif kind == "b":
            add(f"{pad}b: {'true' if value else 'false'}")
        elif kind == "f":
            add(f"{pad}f: {format_float(value)}")
        elif kind == "dt":
            add(f"{pad}dt: {int(value)}")
        elif kind == "bt":
            add(f"{pad}bt: {quote(bytes(value))}")
        elif kind == "list":
            add(f"{pad}list {{")
            self.list_value(value, pad + "  ")
            add(f"{pad}}}")
        else:
            add(f"{pad}{kind} {{")
            self.message_value(kind, value, pad + "  ")
            add(f"{pad}}}")

    def list_value(self, value: list[Any], pad: str) -> None:
        add = self.lines.append
        item_kind = list_item_kind(value)
        for item in value:
            if item_kind == "s":
                add(f"{pad}s: {quote(item)}")
            elif item_kind in ("i", "dt"):
                add(f"{pad}{item_kind}: {int(item)}")
            elif item_kind == "f":
                add(f"{pad}f: {format_float(item)}")
            elif item_kind == "b":
                add(f"{pad}b: {'true' if item else 'false'}")
            elif item_kind == "bt":
                add(f"{pad}bt: {quote(bytes(item))}")
            else:
                add(f"{pad}{item_kind} {{")
                self.message_value({"na": "func"}.get(item_kind or "", item_kind or ""), item, pad + "  ")
                add(f"{pad}}}")
        val_type = list_val_type(value)
        if val_type:
            add(f"{pad}val_type: {val_type}")

    def message_value(self, kind: str, value: Any, pad: str) -> None:
        add = self.lines.append
        if kind == "td":
            self.desc(value, pad)
        elif kind == "g":
            self.graph(value, pad)
        elif kind == "func":
            if value.name:
                add(f"{pad}name: {quote(value.name)}")
            self.attrs(value.attrs, pad)
        elif kind == "t":
            if value.desc is not None:
                add(f"{pad}desc {{")
                self.desc(value.desc, pad + "  ")
                add(f"{pad}}}")
            if value.data:
                add(f"{pad}data: {quote(bytes(value.data))}")
        elif kind in ("list_list_int", "list_list_float"):
            outer, inner_name = ("list_list_i", "list_i") if kind == "list_list_int" else ("list_list_f", "list_f")
            for row in value:
                add(f"{pad}{outer} {{")
                for item in row:
                    text = str(int(item)) if kind == "list_list_int" else format_float(item)
                    add(f"{pad}  {inner_name}: {text}")
                add(f"{pad}}}")
        else:
            raise TypeError(f"cannot write attribute kind {kind}")


def format_model(model: Model) -> str:
    """The text-format dump of a model (2-space indented, one field per line, like GE's own dumps)."""
    writer = _Writer()
    writer.model(model)
    return "\n".join(writer.lines) + "\n"
