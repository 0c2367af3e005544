"""A runtime protobuf descriptor of ge.proto's ModelDef, built from the field table in formats.md §3.

Why: protobuf's own text parser is the yardstick our fast parser is checked (tests) and timed
(benchmarks) against, and no protoc is available at run time. Written out independently of
ge_tree.SCHEMA so that the comparison checks one against the other.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from precision_tool.formats.ge.ge_model import DATA_TYPE_NAMES, LIST_VAL_TYPES

_PACKAGE = "ge.proto"

# (name, number, type, label, message/enum type name or None)
_STRING, _BYTES, _INT64, _UINT32, _FLOAT, _BOOL, _MSG, _ENUM = (
    "string", "bytes", "int64", "uint32", "float", "bool", "message", "enum")
_REP, _OPT = "repeated", "optional"

_MESSAGES: dict[str, list[tuple[str, int, str, str, str | None]]] = {
    "ModelDef": [("name", 1, _STRING, _OPT, None), ("version", 2, _UINT32, _OPT, None),
                 ("custom_version", 3, _STRING, _OPT, None), ("graph", 7, _MSG, _REP, "GraphDef"),
                 ("attr", 11, _MSG, _REP, "ModelDef.AttrEntry")],
    "GraphDef": [("name", 1, _STRING, _OPT, None), ("input", 4, _STRING, _REP, None),
                 ("output", 5, _STRING, _REP, None), ("op", 6, _MSG, _REP, "OpDef"),
                 ("attr", 11, _MSG, _REP, "GraphDef.AttrEntry")],
    "OpDef": [("name", 1, _STRING, _OPT, None), ("type", 2, _STRING, _OPT, None),
              ("input", 5, _STRING, _REP, None), ("attr", 10, _MSG, _REP, "OpDef.AttrEntry"),
              ("has_out_attr", 20, _BOOL, _OPT, None), ("id", 21, _INT64, _OPT, None),
              ("stream_id", 22, _INT64, _OPT, None), ("input_name", 23, _STRING, _REP, None),
              ("src_name", 24, _STRING, _REP, None), ("src_index", 25, _INT64, _REP, None),
              ("dst_name", 26, _STRING, _REP, None), ("dst_index", 27, _INT64, _REP, None),
              ("input_i", 28, _INT64, _REP, None), ("output_i", 29, _INT64, _REP, None),
              ("workspace", 30, _INT64, _REP, None), ("workspace_bytes", 31, _INT64, _REP, None),
              ("is_input_const", 32, _BOOL, _REP, None),
              ("input_desc", 33, _MSG, _REP, "TensorDescriptor"),
              ("output_desc", 34, _MSG, _REP, "TensorDescriptor"),
              ("subgraph_name", 35, _STRING, _REP, None)],
    "TensorDescriptor": [("name", 1, _STRING, _OPT, None), ("dtype", 2, _ENUM, _OPT, "DataType"),
                         ("shape", 3, _MSG, _OPT, "ShapeDef"), ("layout", 4, _STRING, _OPT, None),
                         ("attr", 5, _MSG, _REP, "TensorDescriptor.AttrEntry"),
                         ("has_out_attr", 9, _BOOL, _OPT, None), ("size", 10, _INT64, _OPT, None),
                         ("weight_size", 11, _INT64, _OPT, None), ("reuse_input", 12, _BOOL, _OPT, None),
                         ("output_tensor", 13, _BOOL, _OPT, None), ("device_type", 14, _STRING, _OPT, None),
                         ("input_tensor", 15, _BOOL, _OPT, None), ("real_dim_cnt", 16, _INT64, _OPT, None),
                         ("reuse_input_index", 17, _INT64, _OPT, None),
                         ("data_offset", 18, _INT64, _OPT, None), ("cmps_size", 19, _INT64, _OPT, None),
                         ("cmps_tab", 20, _BYTES, _OPT, None), ("cmps_tab_offset", 21, _INT64, _OPT, None)],
    "ShapeDef": [("dim", 1, _INT64, _REP, None)],
    "AttrDef": [("list", 1, _MSG, _OPT, "AttrDef.ListValue"), ("s", 2, _BYTES, _OPT, None),
                ("i", 3, _INT64, _OPT, None), ("f", 4, _FLOAT, _OPT, None), ("b", 5, _BOOL, _OPT, None),
                ("bt", 7, _BYTES, _OPT, None), ("func", 10, _MSG, _OPT, "NamedAttrs"),
                ("td", 11, _MSG, _OPT, "TensorDescriptor"), ("t", 12, _MSG, _OPT, "TensorDef"),
                ("g", 13, _MSG, _OPT, "GraphDef"), ("list_list_int", 14, _MSG, _OPT, "AttrDef.ListListInt"),
                ("dt", 15, _INT64, _OPT, None), ("list_list_float", 16, _MSG, _OPT, "AttrDef.ListListFloat")],
    "AttrDef.ListValue": [("s", 2, _BYTES, _REP, None), ("i", 3, _INT64, _REP, None),
                          ("f", 4, _FLOAT, _REP, None), ("b", 5, _BOOL, _REP, None),
                          ("bt", 7, _BYTES, _REP, None), ("td", 8, _MSG, _REP, "TensorDescriptor"),
                          ("t", 9, _MSG, _REP, "TensorDef"), ("g", 10, _MSG, _REP, "GraphDef"),
                          ("na", 11, _MSG, _REP, "NamedAttrs"), ("dt", 12, _INT64, _REP, None),
                          ("val_type", 20, _ENUM, _OPT, "AttrDef.ListValue.ListValueType")],
    "AttrDef.ListListInt": [("list_list_i", 1, _MSG, _REP, "AttrDef.ListListInt.ListInt")],
    "AttrDef.ListListInt.ListInt": [("list_i", 1, _INT64, _REP, None)],
    "AttrDef.ListListFloat": [("list_list_f", 1, _MSG, _REP, "AttrDef.ListListFloat.ListFloat")],
    "AttrDef.ListListFloat.ListFloat": [("list_f", 1, _FLOAT, _REP, None)],
    "NamedAttrs": [("name", 1, _STRING, _OPT, None), ("attr", 2, _MSG, _REP, "NamedAttrs.AttrEntry")],
    "TensorDef": [("desc", 1, _MSG, _OPT, "TensorDescriptor"), ("data", 2, _BYTES, _OPT, None)],
}
_MAP_OWNERS = ("ModelDef", "GraphDef", "OpDef", "TensorDescriptor", "NamedAttrs")
_ONEOF = {"AttrDef": "value"}


@lru_cache(maxsize=1)
def model_def_class() -> Any:
    """The ModelDef message class (protobuf's own implementation), for cross-checks and benchmarks."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    type_ids = {
        _STRING: descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        _BYTES: descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        _INT64: descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        _UINT32: descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
        _FLOAT: descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT,
        _BOOL: descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
        _MSG: descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
        _ENUM: descriptor_pb2.FieldDescriptorProto.TYPE_ENUM,
    }
    labels = {_REP: descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
              _OPT: descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL}
    file_proto = descriptor_pb2.FileDescriptorProto(name="precision_tool_ge_ir.proto", package=_PACKAGE,
                                                    syntax="proto3")
    data_type = file_proto.enum_type.add(name="DataType")
    for number, name in sorted(DATA_TYPE_NAMES.items()):
        data_type.value.add(name=name, number=number)

    built: dict[str, Any] = {}

    def message_proto(full: str) -> Any:
        if full in built:
            return built[full]
        parent, _, short = full.rpartition(".")
        proto = (message_proto(parent).nested_type.add(name=short) if parent
                 else file_proto.message_type.add(name=short))
        built[full] = proto
        return proto

    all_messages = dict(_MESSAGES)
    for owner in _MAP_OWNERS:
        all_messages[f"{owner}.AttrEntry"] = [("key", 1, _STRING, _OPT, None),
                                              ("value", 2, _MSG, _OPT, "AttrDef")]
    for full in all_messages:
        message_proto(full)
    for owner in _MAP_OWNERS:
        built[f"{owner}.AttrEntry"].options.map_entry = True
    vt = built["AttrDef.ListValue"].enum_type.add(name="ListValueType")
    for number, name in sorted(LIST_VAL_TYPES.items()):
        vt.value.add(name=name, number=number)
    for full, fields in all_messages.items():
        proto = built[full]
        oneof = _ONEOF.get(full)
        if oneof:
            proto.oneof_decl.add(name=oneof)
        for name, number, kind, label, type_name in fields:
            field = proto.field.add(name=name, number=number, type=type_ids[kind], label=labels[label])
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if oneof:
                field.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.ModelDef"))
