"""The GE graph model (`ge.proto` ModelDef as plain Python objects): the bottom of the GE readers.

Why a module of its own: every reader (ge_text, ge_json, ge_onnx, via ge_tree) builds this model and
imports only this module, and the loader (ge_graph) sits on top of them all, so imports flow one way.
Format facts: docs formats.md §3.

Attribute values (`AttrDef`) are plain Python values where the kind is unambiguous:
`s` → str, `i` → int, `f` → float, `b` → bool, `bt` → bytes, `td` → TensorDesc, `t` → TensorValue,
`g` → Graph, `func` → NamedAttrs, an empty AttrDef → None. Kinds that would be ambiguous as plain values
are small subclasses: `dt` → DataTypeValue(int), `list` → AttrList(list) (remembers its item kind and
`val_type`), `list_list_int` → ListListInt(list), `list_list_float` → ListListFloat(list).
Build them with `attr_str`, `attr_int`, ... so the writers know the kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence, Union

# The proto DataType enum (formats.md §3), number → name. Unknown names read from a file are kept as is.
DATA_TYPE_NAMES: dict[int, str] = {
    0: "DT_UNDEFINED", 1: "DT_FLOAT", 2: "DT_FLOAT16", 3: "DT_INT8", 4: "DT_UINT8", 5: "DT_INT16",
    6: "DT_UINT16", 7: "DT_INT32", 8: "DT_INT64", 9: "DT_UINT32", 10: "DT_UINT64", 11: "DT_BOOL",
    12: "DT_DOUBLE", 13: "DT_STRING", 14: "DT_DUAL_SUB_INT8", 15: "DT_DUAL_SUB_UINT8",
    16: "DT_COMPLEX64", 17: "DT_COMPLEX128", 18: "DT_QINT8", 19: "DT_QINT16", 20: "DT_QINT32",
    21: "DT_QUINT8", 22: "DT_QUINT16", 23: "DT_RESOURCE", 24: "DT_STRING_REF", 25: "DT_DUAL",
    26: "DT_VARIANT", 27: "DT_BF16", 28: "DT_INT4", 29: "DT_UINT1", 30: "DT_INT2", 31: "DT_UINT2",
    32: "DT_COMPLEX32", 33: "DT_HIFLOAT8", 34: "DT_FLOAT8_E5M2", 35: "DT_FLOAT8_E4M3FN",
    36: "DT_FLOAT8_E8M0", 37: "DT_FLOAT6_E3M2", 38: "DT_FLOAT6_E2M3", 39: "DT_FLOAT4_E2M1",
    40: "DT_FLOAT4_E1M2",
}
DATA_TYPE_NUMBERS: dict[str, int] = {name: number for number, name in DATA_TYPE_NAMES.items()}

# ListValue.val_type enum.
LIST_VAL_TYPES: dict[int, str] = {
    0: "VT_LIST_NONE", 1: "VT_LIST_STRING", 2: "VT_LIST_INT", 3: "VT_LIST_FLOAT", 4: "VT_LIST_BOOL",
    5: "VT_LIST_BYTES", 6: "VT_LIST_TENSOR_DESC", 7: "VT_LIST_TENSOR", 8: "VT_LIST_GRAPH",
    9: "VT_LIST_NAMED_ATTRS", 10: "VT_LIST_DATA_TYPE",
}
# The ListValue field that holds each val_type's items, and back.
VAL_TYPE_ITEM_KIND: dict[str, str] = {
    "VT_LIST_STRING": "s", "VT_LIST_INT": "i", "VT_LIST_FLOAT": "f", "VT_LIST_BOOL": "b",
    "VT_LIST_BYTES": "bt", "VT_LIST_TENSOR_DESC": "td", "VT_LIST_TENSOR": "t", "VT_LIST_GRAPH": "g",
    "VT_LIST_NAMED_ATTRS": "na", "VT_LIST_DATA_TYPE": "dt",
}
ITEM_KIND_VAL_TYPE: dict[str, str] = {kind: vt for vt, kind in VAL_TYPE_ITEM_KIND.items()}
LIST_ITEM_KINDS = ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt")


# --- attribute values -----------------------------------------------------------------------------
class DataTypeValue(int):
    """An AttrDef `dt` value: a C++ ge::DataType number (DT_FLOAT 0, DT_FLOAT16 1, ...), not the proto enum."""

    def __repr__(self) -> str:
        return f"DataTypeValue({int(self)})"


class AttrList(list):  # type: ignore[type-arg]
    """An AttrDef `list` value: the items of one ListValue field (`item_kind`: s, i, f, b, bt, td, t, g,
    na, dt; None for an empty list) and the `val_type` name written in the file (None when absent)."""

    def __init__(self, items: Iterable[Any] = (), item_kind: str | None = None,
                 val_type: str | None = None) -> None:
        super().__init__(items)
        self.item_kind = item_kind
        self.val_type = val_type

    def __repr__(self) -> str:
        return f"AttrList({list(self)!r}, item_kind={self.item_kind!r}, val_type={self.val_type!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AttrList):
            return list.__eq__(self, other) and (self.item_kind, self.val_type) == (
                other.item_kind, other.val_type)
        return list.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


class ListListInt(list):  # type: ignore[type-arg]
    """An AttrDef `list_list_int` value: list of lists of int."""


class ListListFloat(list):  # type: ignore[type-arg]
    """An AttrDef `list_list_float` value: list of lists of float."""


@dataclass
class NamedAttrs:
    """An AttrDef `func` value (or a ListValue `na` item)."""

    name: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class TensorValue:
    """An AttrDef `t` value: a descriptor and the raw bytes of the tensor."""

    desc: TensorDesc | None = None
    data: bytes = b""


AttrValue = Union[str, int, float, bool, bytes, None, DataTypeValue, AttrList, ListListInt,
                  ListListFloat, NamedAttrs, TensorValue, "TensorDesc", "Graph"]


def attr_str(value: str) -> str:
    return str(value)


def attr_int(value: int) -> int:
    return int(value)


def attr_float(value: float) -> float:
    return float(value)


def attr_bool(value: bool) -> bool:
    return bool(value)


def attr_bytes(value: bytes) -> bytes:
    return bytes(value)


def attr_dtype(value: int) -> DataTypeValue:
    """A `dt` attribute (C++ ge::DataType numbering)."""
    return DataTypeValue(value)


def attr_list_str(values: Iterable[str]) -> AttrList:
    return AttrList([str(v) for v in values], "s", "VT_LIST_STRING")


def attr_list_int(values: Iterable[int]) -> AttrList:
    return AttrList([int(v) for v in values], "i", "VT_LIST_INT")


def attr_list_float(values: Iterable[float]) -> AttrList:
    return AttrList([float(v) for v in values], "f", "VT_LIST_FLOAT")


def attr_list_bool(values: Iterable[bool]) -> AttrList:
    return AttrList([bool(v) for v in values], "b", "VT_LIST_BOOL")


def attr_list_list_int(values: Iterable[Iterable[int]]) -> ListListInt:
    return ListListInt([[int(v) for v in row] for row in values])


def attr_kind(value: Any) -> str:
    """The AttrDef field a value is written to: s, i, f, b, bt, dt, list, func, td, t, g,
    list_list_int, list_list_float, or '' for an empty AttrDef (None)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "b"
    if isinstance(value, DataTypeValue):
        return "dt"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "s"
    if isinstance(value, (bytes, bytearray)):
        return "bt"
    if isinstance(value, ListListInt):
        return "list_list_int"
    if isinstance(value, ListListFloat):
        return "list_list_float"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, NamedAttrs):
        return "func"
    if isinstance(value, TensorDesc):
        return "td"
    if isinstance(value, TensorValue):
        return "t"
    if isinstance(value, Graph):
        return "g"
    raise TypeError(f"not an attribute value: {type(value).__name__}")


def list_item_kind(value: Sequence[Any]) -> str | None:
    """The ListValue field of a list attribute: its recorded kind, else guessed from the first item."""
    kind = getattr(value, "item_kind", None)
    if kind is not None or not value:
        return kind
    first = attr_kind(value[0])
    return {"func": "na"}.get(first, first)


def list_val_type(value: Sequence[Any]) -> str | None:
    """The val_type to write for a list: the one read from the file, else derived from the item kind."""
    if isinstance(value, AttrList):
        if value.val_type is not None or value.item_kind is None:
            return value.val_type
    kind = list_item_kind(value)
    return ITEM_KIND_VAL_TYPE.get(kind) if kind else None


# --- tensors, ops, graphs ---------------------------------------------------------------------------
def _text_items(value: Any) -> list[str] | None:
    """The names in an attribute that holds text: `s` (str), `bt` (bytes) or a list of them (real atc
    JSON writes pass_name as `list.s`, several passes per op); None for any other kind."""
    if isinstance(value, bytes):
        return [value.decode("utf-8", "replace")]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and not isinstance(value, (ListListInt, ListListFloat)):
        items = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        if all(isinstance(v, str) for v in items):
            return items
    return None


def _str_attr(attrs: dict[str, Any], key: str) -> str | None:
    """A text attribute as one string: a list of names joined with ', ' (never a list's repr); numbers
    as their digits; None when absent, empty or of a kind that is not text (a descriptor, a graph)."""
    value = attrs.get(key)
    if value is None:
        return None
    if type(value) is str:  # the usual case, first: plans read this on every output of 100,000-op graphs
        return value or None
    items = _text_items(value)
    if items is not None:
        return ", ".join(item for item in items if item) or None
    if isinstance(value, (bool, int, float)):
        return str(value)
    return None


def _int_attr(attrs: dict[str, Any], key: str) -> int | None:
    value = attrs.get(key)
    if isinstance(value, list) and len(value) == 1 and not isinstance(value, (ListListInt, ListListFloat)):
        value = value[0]  # a one-item list.i where an i was expected
    if value is None or isinstance(value, (list, dict, bytes)):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class TensorDesc:
    """One input or output of an op (TensorDescriptor). `extra` keeps the other proto fields by name
    (size, real_dim_cnt, device_type, ...) so a round trip loses nothing."""

    dtype: str = "DT_UNDEFINED"
    layout: str = ""
    shape: tuple[int, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def origin_format(self) -> str | None:
        return _str_attr(self.attrs, "_datadump_origin_format") or _str_attr(self.attrs, "origin_format")

    @property
    def origin_shape(self) -> tuple[int, ...] | None:
        value = self.attrs.get("origin_shape")
        if isinstance(value, list) and not isinstance(value, (ListListInt, ListListFloat)):
            if all(type(v) is int for v in value):  # a list of text or floats is not a shape
                return tuple(value)
        return None

    @property
    def origin_name(self) -> str | None:
        return _str_attr(self.attrs, "_datadump_origin_name")

    @property
    def origin_output_index(self) -> int | None:
        return _int_attr(self.attrs, "_datadump_origin_output_index")


@dataclass
class Op:
    """One OpDef. `inputs` are "producer:idx" (idx -1 = control edge); `extra` keeps the other proto
    fields by name (input_name, src_name, workspace, is_input_const, ...)."""

    name: str
    type: str = ""
    id: int = 0
    stream_id: int = 0
    inputs: list[str] = field(default_factory=list)
    input_descs: list[TensorDesc] = field(default_factory=list)
    output_descs: list[TensorDesc] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    dst_names: list[str] = field(default_factory=list)
    dst_indexes: list[int] = field(default_factory=list)
    subgraph_names: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def data_inputs(self) -> list[tuple[str, int]]:
        """(producer, output index) of each data input, in input order; empty strings are skipped."""
        result = []
        for text in self.inputs:
            producer, index = split_input(text)
            if producer and index >= 0:
                result.append((producer, index))
        return result

    @property
    def consumer_names(self) -> list[str]:
        """The consumers `dst_name` lists, each once: real GE dumps join several in one entry ("a:b")."""
        found: list[str] = []
        for entry in self.dst_names:
            for name in entry.split(":"):
                if name and name not in found:
                    found.append(name)
        return found

    @property
    def control_inputs(self) -> list[str]:
        return [split_input(text)[0] for text in self.inputs if text.endswith(":-1")]

    @property
    def original_op_names(self) -> list[str] | None:
        """The TF ops this NPU op came from; None when the attribute is absent, [] when it is empty."""
        value = self.attrs.get("_datadump_original_op_names")
        if value is None:
            return None
        items = _text_items(value)
        if items is None:
            return None
        return [item for item in items if item]

    @property
    def fusion_passes(self) -> tuple[str, ...]:
        """Every fusion pass that made the op: its graph passes (pass_name), then its UB passes
        (pass_name_ub); each attribute may be one string or a list of strings."""
        found: list[str] = []
        for key in ("pass_name", "pass_name_ub"):
            for item in _text_items(self.attrs.get(key)) or ():
                if item and item not in found:
                    found.append(item)
        return tuple(found)

    @property
    def fusion_pass(self) -> str | None:
        """The first pass that made the op (its graph pass, else its UB pass), a name, never a list's repr;
        None for no pass. `fusion_passes` has them all (`ls` and `ni` show 'A + B')."""
        passes = self.fusion_passes
        return passes[0] if passes else None

    @property
    def kernel_name(self) -> str | None:
        return _str_attr(self.attrs, f"{self.name}_kernelname") or _str_attr(self.attrs, "_kernelname")

    @property
    def kernel_lib(self) -> str | None:
        return _str_attr(self.attrs, "_ge_attr_op_kernel_lib_name")

    @property
    def fusion_group(self) -> str | None:
        """`_L1_fusion_sub_graph_no` as text: msaccucmp reads it as a string attribute (any text, 'A' too), GE
        may also write a number; absent or empty: no L1 group."""
        value = self.attrs.get("_L1_fusion_sub_graph_no")
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if value is None or isinstance(value, (list, dict)) or str(value) == "":
            return None
        return str(value)

    @property
    def parent_node_index(self) -> int | None:
        """For a subgraph's Data op: which input of the owning PartitionedCall it stands for."""
        return _int_attr(self.attrs, "_parent_node_index")


def split_input(text: str) -> tuple[str, int]:
    """"producer:idx" → (producer, idx); a bare name is output 0. Names may contain ':' themselves."""
    name, sep, index = text.rpartition(":")
    digits = index[1:] if index.startswith("-") else index
    # ASCII digits only (int() also takes '²' and others), and short: an output index, not a 5,000-digit number
    if sep and digits.isascii() and digits.isdigit() and len(digits) <= 9:
        return name, int(index)
    return text, 0


def data_edges(inputs: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    """(producer, its output index, input position) of each data input; control edges (':-1') are skipped
    and do not count as positions, empty inputs count but name no producer."""
    position = 0
    for text in inputs:
        producer, out_idx = split_input(text)
        if out_idx < 0:
            continue
        if producer:
            yield producer, out_idx, position
        position += 1


@dataclass
class Graph:
    """One GraphDef; ops in file order. Name lookups build an index on first use."""

    name: str = ""
    ops: list[Op] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    _by_name: dict[str, Op] | None = field(default=None, init=False, repr=False, compare=False)
    _consumers: dict[str, list[tuple[Op, int, int]]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def op(self, name: str) -> Op | None:
        if self._by_name is None or len(self._by_name) > len(self.ops):
            self._by_name = {op.name: op for op in self.ops}
        found = self._by_name.get(name)
        if found is None and len(self._by_name) != len(self.ops):  # ops were added since
            self._by_name = {op.name: op for op in self.ops}
            found = self._by_name.get(name)
        return found

    def consumers(self, name: str) -> list[tuple[Op, int, int]]:
        """(consumer op, output index of `name`, input index of the consumer) for every data edge."""
        if self._consumers is None:
            index: dict[str, list[tuple[Op, int, int]]] = {}
            for op in self.ops:
                for producer, out_idx, position in data_edges(op.inputs):
                    index.setdefault(producer, []).append((op, out_idx, position))
            self._consumers = index
        return list(self._consumers.get(name, ()))

    def forget_indexes(self) -> None:
        """Call after editing ops so name and consumer lookups are rebuilt."""
        self._by_name = None
        self._consumers = None


@dataclass
class Model:
    """One ModelDef file. `warnings` lists what was odd but readable (unknown fields, missing producers)."""

    path: Path
    name: str = ""
    graphs: list[Graph] = field(default_factory=list)
    version: int = 0
    custom_version: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def graph(self, name: str) -> Graph | None:
        for graph in self.graphs:
            if graph.name == name:
                return graph
        return None

    def iter_ops(self) -> Iterator[tuple[Graph, Op]]:
        for graph in self.graphs:
            for op in graph.ops:
                yield graph, op

    def parent_op(self, subgraph_name: str) -> tuple[Graph, Op] | None:
        """The op (e.g. PartitionedCall) whose `subgraph_name` lists this graph."""
        for graph, op in self.iter_ops():
            if subgraph_name in op.subgraph_names:
                return graph, op
        return None

    def resolve_data_input(self, graph: Graph, data_op: Op) -> tuple[Graph, str, int] | None:
        """Where a subgraph's Data op really reads from: (graph, producer, index) in the parent graph,
        through the owning op's input number `_parent_node_index`."""
        index = data_op.parent_node_index
        parent = self.parent_op(graph.name)
        if index is None or parent is None:
            return None
        parent_graph, parent_op = parent
        inputs = parent_op.data_inputs
        if not 0 <= index < len(inputs):
            return None
        producer, out_idx = inputs[index]
        return parent_graph, producer, out_idx
