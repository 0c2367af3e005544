"""The `toolkit.dumpdata` protobuf messages, built at runtime so that no user needs `protoc`.

Field numbers and types follow formats.md §2.3. Enum fields are declared as plain int32 (same wire
encoding as a proto3 enum) so that values newer than our tables survive a round trip.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_PACKAGE = "toolkit.dumpdata"

# (message, [(field name, number, type, label, message type or None)])
_INT32, _UINT32, _UINT64, _STRING, _BYTES, _MESSAGE = "int32", "uint32", "uint64", "string", "bytes", "message"
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool, str | None]]]] = [
    ("Shape", [("dim", 1, _UINT64, True, None)]),
    ("DimRange", [("dim_start", 1, _UINT64, False, None), ("dim_end", 2, _UINT64, False, None)]),
    ("OriginalOp", [
        ("name", 1, _STRING, False, None), ("output_index", 2, _UINT32, False, None),
        ("data_type", 3, _INT32, False, None), ("format", 4, _INT32, False, None),
    ]),
    ("OpOutput", [
        ("data_type", 1, _INT32, False, None), ("format", 2, _INT32, False, None),
        ("shape", 3, _MESSAGE, False, "Shape"), ("original_op", 4, _MESSAGE, False, "OriginalOp"),
        ("data", 5, _BYTES, False, None), ("size", 6, _UINT64, False, None),
        ("original_shape", 7, _MESSAGE, False, "Shape"), ("sub_format", 8, _INT32, False, None),
        ("address", 9, _UINT64, False, None), ("dim_range", 10, _MESSAGE, True, "DimRange"),
        ("offset", 11, _UINT64, False, None),
    ]),
    ("OpInput", [
        ("data_type", 1, _INT32, False, None), ("format", 2, _INT32, False, None),
        ("shape", 3, _MESSAGE, False, "Shape"), ("data", 4, _BYTES, False, None),
        ("size", 5, _UINT64, False, None), ("original_shape", 6, _MESSAGE, False, "Shape"),
        ("sub_format", 7, _INT32, False, None), ("address", 8, _UINT64, False, None),
        ("offset", 9, _UINT64, False, None),
    ]),
    ("OpBuffer", [
        ("buffer_type", 1, _INT32, False, None), ("data", 2, _BYTES, False, None),
        ("size", 3, _UINT64, False, None),
    ]),
    ("OpAttr", [("name", 1, _STRING, False, None), ("value", 2, _STRING, False, None)]),
    ("Workspace", [
        ("type", 1, _INT32, False, None), ("data", 2, _BYTES, False, None), ("size", 3, _UINT64, False, None),
    ]),
    ("DumpData", [
        ("version", 1, _STRING, False, None), ("dump_time", 2, _UINT64, False, None),
        ("output", 3, _MESSAGE, True, "OpOutput"), ("input", 4, _MESSAGE, True, "OpInput"),
        ("buffer", 5, _MESSAGE, True, "OpBuffer"), ("op_name", 6, _STRING, False, None),
        ("attr", 7, _MESSAGE, True, "OpAttr"), ("space", 8, _MESSAGE, True, "Workspace"),
    ]),
]


@lru_cache(maxsize=1)
def _message_classes() -> dict[str, Any]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FieldDescriptorProto
    types = {
        _INT32: fdp.TYPE_INT32, _UINT32: fdp.TYPE_UINT32, _UINT64: fdp.TYPE_UINT64,
        _STRING: fdp.TYPE_STRING, _BYTES: fdp.TYPE_BYTES, _MESSAGE: fdp.TYPE_MESSAGE,
    }
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="precision_tool_dumpdata.proto", package=_PACKAGE, syntax="proto3"
    )
    for message_name, fields in _MESSAGES:
        message = file_proto.message_type.add(name=message_name)
        for name, number, kind, repeated, type_name in fields:
            field = message.field.add(name=name, number=number, type=types[kind])
            field.label = fdp.LABEL_REPEATED if repeated else fdp.LABEL_OPTIONAL
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    file_descriptor = pool.Add(file_proto)
    del file_descriptor
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name, _ in _MESSAGES
    }


def dump_data_class() -> Any:
    """The DumpData message class (built once)."""
    return _message_classes()["DumpData"]
