"""TensorFlow's Event / Summary / TensorProto / DebugEvent messages, built at run time (formats.md §6).

No TensorFlow and no protoc: the message types are declared here with `descriptor_pb2` from the field
numbers in formats.md and compiled by the protobuf runtime (upb, C speed) in a private descriptor pool,
so they never clash with TensorFlow's own classes when both are loaded. Fields we do not need (resource
handles, variants, images...) are left out; the runtime keeps them as unknown fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "precision_tool.tf"
_F = descriptor_pb2.FieldDescriptorProto

# field type shorthands
DOUBLE, FLOAT, INT64, UINT64, INT32 = _F.TYPE_DOUBLE, _F.TYPE_FLOAT, _F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_INT32
BOOL, STRING, MESSAGE, BYTES, UINT32, ENUM = _F.TYPE_BOOL, _F.TYPE_STRING, _F.TYPE_MESSAGE, _F.TYPE_BYTES, \
    _F.TYPE_UINT32, _F.TYPE_ENUM
OPT, REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# (message name, [(field name, number, type, label, message type or None, oneof index or None)], oneofs)
_MESSAGES: list[tuple[str, list[tuple[str, int, int, int, str | None, int | None]], list[str]]] = [
    ("TensorShapeProto.Dim", [("size", 1, INT64, OPT, None, None), ("name", 2, STRING, OPT, None, None)], []),
    ("TensorShapeProto", [("dim", 2, MESSAGE, REP, "TensorShapeProto.Dim", None),
                          ("unknown_rank", 3, BOOL, OPT, None, None)], []),
    ("TensorProto", [
        ("dtype", 1, INT32, OPT, None, None),  # an enum in TF; int32 has the same wire form
        ("tensor_shape", 2, MESSAGE, OPT, "TensorShapeProto", None),
        ("version_number", 3, INT32, OPT, None, None),
        ("tensor_content", 4, BYTES, OPT, None, None),
        ("float_val", 5, FLOAT, REP, None, None),
        ("double_val", 6, DOUBLE, REP, None, None),
        ("int_val", 7, INT32, REP, None, None),
        ("string_val", 8, BYTES, REP, None, None),
        ("scomplex_val", 9, FLOAT, REP, None, None),
        ("int64_val", 10, INT64, REP, None, None),
        ("bool_val", 11, BOOL, REP, None, None),
        ("dcomplex_val", 12, DOUBLE, REP, None, None),
        ("half_val", 13, INT32, REP, None, None),
        ("uint32_val", 16, UINT32, REP, None, None),
        ("uint64_val", 17, UINT64, REP, None, None),
        ("float8_val", 18, BYTES, OPT, None, None),
    ], []),
    ("Summary.Value", [
        ("node_name", 7, STRING, OPT, None, None),
        ("tag", 1, STRING, OPT, None, None),
        ("simple_value", 2, FLOAT, OPT, None, 0),
        ("tensor", 8, MESSAGE, OPT, "TensorProto", 0),
    ], ["value"]),
    ("Summary", [("value", 1, MESSAGE, REP, "Summary.Value", None)], []),
    ("LogMessage", [("level", 1, INT32, OPT, None, None), ("message", 2, STRING, OPT, None, None)], []),
    ("Event", [
        ("wall_time", 1, DOUBLE, OPT, None, None),
        ("step", 2, INT64, OPT, None, None),
        ("file_version", 3, STRING, OPT, None, 0),
        ("graph_def", 4, BYTES, OPT, None, 0),
        ("summary", 5, MESSAGE, OPT, "Summary", 0),
        ("log_message", 6, MESSAGE, OPT, "LogMessage", 0),
    ], ["what"]),
    # --- the golden graph (graph.proto, node_def.proto, meta_graph.proto): names, ops and inputs only ---
    ("NodeDef", [("name", 1, STRING, OPT, None, None), ("op", 2, STRING, OPT, None, None),
                 ("input", 3, STRING, REP, None, None), ("device", 4, STRING, OPT, None, None)], []),
    ("GraphDef", [("node", 1, MESSAGE, REP, "NodeDef", None)], []),
    ("MetaGraphDef", [("graph_def", 2, MESSAGE, OPT, "GraphDef", None)], []),
    # --- tfdbg v2 (debug_event.proto) ---
    ("DebugMetadata", [("tensorflow_version", 1, STRING, OPT, None, None),
                       ("file_version", 2, STRING, OPT, None, None),
                       ("tfdbg_run_id", 3, STRING, OPT, None, None)], []),
    ("SourceFile", [("file_path", 1, STRING, OPT, None, None), ("host_name", 2, STRING, OPT, None, None),
                    ("lines", 3, STRING, REP, None, None)], []),
    ("FileLineCol", [("file_index", 1, INT32, OPT, None, None), ("line", 2, INT32, OPT, None, None),
                     ("col", 3, INT32, OPT, None, None), ("func", 4, STRING, OPT, None, None),
                     ("code", 5, STRING, OPT, None, None)], []),  # GraphDebugInfo.FileLineCol
    ("StackFrameWithId", [("id", 1, STRING, OPT, None, None),
                          ("file_line_col", 2, MESSAGE, OPT, "FileLineCol", None)], []),
    ("CodeLocation", [("host_name", 1, STRING, OPT, None, None),
                      ("stack_frame_ids", 2, STRING, REP, None, None)], []),
    ("GraphOpCreation", [
        ("op_type", 1, STRING, OPT, None, None), ("op_name", 2, STRING, OPT, None, None),
        ("graph_name", 3, STRING, OPT, None, None), ("graph_id", 4, STRING, OPT, None, None),
        ("device_name", 5, STRING, OPT, None, None), ("input_names", 6, STRING, REP, None, None),
        ("num_outputs", 7, INT32, OPT, None, None), ("code_location", 8, MESSAGE, OPT, "CodeLocation", None),
        ("output_tensor_ids", 9, INT32, REP, None, None),
    ], []),
    ("DebuggedGraph", [
        ("graph_id", 1, STRING, OPT, None, None), ("graph_name", 2, STRING, OPT, None, None),
        ("instrumented_ops", 3, STRING, REP, None, None), ("original_graph_def", 4, BYTES, OPT, None, None),
        ("instrumented_graph_def", 5, BYTES, OPT, None, None), ("outer_context_id", 6, STRING, OPT, None, None),
    ], []),
    ("Execution", [
        ("op_type", 1, STRING, OPT, None, None), ("num_outputs", 2, INT32, OPT, None, None),
        ("graph_id", 3, STRING, OPT, None, None), ("input_tensor_ids", 4, INT64, REP, None, None),
        ("output_tensor_ids", 5, INT64, REP, None, None), ("tensor_debug_mode", 6, INT32, OPT, None, None),
        ("tensor_protos", 7, MESSAGE, REP, "TensorProto", None),
    ], []),
    ("GraphExecutionTrace", [
        ("tfdbg_context_id", 1, STRING, OPT, None, None), ("op_name", 2, STRING, OPT, None, None),
        ("output_slot", 3, INT32, OPT, None, None), ("tensor_debug_mode", 4, INT32, OPT, None, None),
        ("tensor_proto", 5, MESSAGE, OPT, "TensorProto", None), ("device_name", 6, STRING, OPT, None, None),
    ], []),
    ("DebuggedDevice", [("device_name", 1, STRING, OPT, None, None), ("device_id", 2, INT32, OPT, None, None)], []),
    ("DebugEvent", [
        ("wall_time", 1, DOUBLE, OPT, None, None),
        ("step", 2, INT64, OPT, None, None),
        ("debug_metadata", 3, MESSAGE, OPT, "DebugMetadata", 0),
        ("source_file", 4, MESSAGE, OPT, "SourceFile", 0),
        ("stack_frame_with_id", 6, MESSAGE, OPT, "StackFrameWithId", 0),
        ("graph_op_creation", 7, MESSAGE, OPT, "GraphOpCreation", 0),
        ("debugged_graph", 8, MESSAGE, OPT, "DebuggedGraph", 0),
        ("execution", 9, MESSAGE, OPT, "Execution", 0),
        ("graph_execution_trace", 10, MESSAGE, OPT, "GraphExecutionTrace", 0),
        ("graph_id", 11, STRING, OPT, None, 0),
        ("debugged_device", 12, MESSAGE, OPT, "DebuggedDevice", 0),
    ], ["what"]),
]

# TensorDebugMode.FULL_TENSOR (debug_event.proto)
FULL_TENSOR = 7


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """One .proto file's worth of messages; nested names ('Summary.Value') become nested types."""
    file_proto = descriptor_pb2.FileDescriptorProto(name="precision_tool_tf.proto", package=_PACKAGE,
                                                    syntax="proto3")
    made: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name, fields, oneofs in _MESSAGES:
        parent, _, short = name.rpartition(".")
        if parent:
            message = made[parent].nested_type.add(name=short) if parent in made else None
            if message is None:  # parent declared later: create it now, its fields are added afterwards
                made[parent] = file_proto.message_type.add(name=parent)
                message = made[parent].nested_type.add(name=short)
        elif name in made:
            message = made[name]
        else:
            message = file_proto.message_type.add(name=name)
        made[name] = message
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        for field_name, number, ftype, label, type_name, oneof_index in fields:
            field = message.field.add(name=field_name, number=number, type=ftype, label=label)
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if oneof_index is not None:
                field.oneof_index = oneof_index
            if label == REP and ftype not in (MESSAGE, STRING, BYTES):
                field.options.packed = True
    return file_proto


@lru_cache(maxsize=None)
def _classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
            for name, _, _ in _MESSAGES}


def message_class(name: str) -> Any:
    """The generated class for one of the messages above, e.g. message_class('Event')."""
    return _classes()[name]


def parse_event(data: bytes) -> Any:
    """bytes → tensorflow.Event (raises google.protobuf.message.DecodeError on bad bytes)."""
    event = message_class("Event")()
    event.ParseFromString(data)
    return event


def parse_debug_event(data: bytes) -> Any:
    """bytes → tensorflow.DebugEvent (tfdbg v2 record)."""
    event = message_class("DebugEvent")()
    event.ParseFromString(data)
    return event


# --- TensorProto → numpy ------------------------------------------------------------------------------
# TF DataType number → (numpy dtype name, typed-list field used when tensor_content is empty)
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_COMPLEX128 = 8, 9, 10, 14, 17, 18
DT_HALF, DT_RESOURCE, DT_VARIANT, DT_UINT32, DT_UINT64 = 19, 20, 21, 22, 23

_NUMERIC: dict[int, tuple[str, str]] = {
    DT_FLOAT: ("<f4", "float_val"), DT_DOUBLE: ("<f8", "double_val"), DT_INT32: ("<i4", "int_val"),
    DT_UINT8: ("|u1", "int_val"), DT_INT16: ("<i2", "int_val"), DT_INT8: ("|i1", "int_val"),
    DT_COMPLEX64: ("<c8", "scomplex_val"), DT_INT64: ("<i8", "int64_val"), DT_BOOL: ("|b1", "bool_val"),
    DT_UINT16: ("<u2", "int_val"), DT_COMPLEX128: ("<c16", "dcomplex_val"), DT_HALF: ("<f2", "half_val"),
    DT_UINT32: ("<u4", "uint32_val"), DT_UINT64: ("<u8", "uint64_val"), DT_BFLOAT16: ("<u2", "half_val"),
}
DTYPE_NAMES: dict[int, str] = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string", 8: "complex64",
    9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128", 19: "float16", 20: "resource",
    21: "variant", 22: "uint32", 23: "uint64",
}


_MAX_RANK = 32  # numpy's limit is 64; no TensorFlow tensor has more than 8 or so
_MAX_EXPANDED_BYTES = 1 << 30


@dataclass(frozen=True)
class DecodedTensor:
    """A TensorProto as numpy, or why it cannot be one (skip_reason: 'resource', 'string', ...)."""

    array: Any  # np.ndarray | None
    dtype_name: str  # the TF dtype ('bfloat16' for a bf16 tensor that `array` holds as float32)
    shape: tuple[int, ...]
    skip_reason: str | None = None


def _dtype_name(dtype: int) -> str:
    return DTYPE_NAMES.get(dtype, f"dtype {dtype}")


def decode_tensor_proto(tensor: Any) -> DecodedTensor:
    """TensorProto → numpy array, little-endian, shaped. bf16 becomes float32 (exact).

    Raises ValueError when the bytes do not match the shape (a cut file); the caller names the file.
    """
    import numpy as np

    dtype = int(tensor.dtype)
    dims = tuple(int(d.size) for d in tensor.tensor_shape.dim)
    name = _dtype_name(dtype)
    if tensor.tensor_shape.unknown_rank:
        return DecodedTensor(None, name, (), "unknown rank")
    if dtype in (DT_RESOURCE, DT_VARIANT):
        return DecodedTensor(None, name, dims, name)
    if dtype == DT_STRING:
        return DecodedTensor(None, name, dims, "string")
    if dtype not in _NUMERIC:
        return DecodedTensor(None, name, dims, f"unsupported {name}")
    np_name, list_field = _NUMERIC[dtype]
    np_dtype = np.dtype(np_name)
    if len(dims) > _MAX_RANK:
        raise ValueError(f"{name} tensor of rank {len(dims)}: more dimensions than any array can have ({_MAX_RANK})")
    if any(d < 0 for d in dims):
        raise ValueError(f"{name} tensor of shape {list(dims)}: a negative dimension (damaged file?)")
    count = 1
    for d in dims:
        count *= d
    content = tensor.tensor_content
    if not content and len(getattr(tensor, list_field)) and count * np_dtype.itemsize > _MAX_EXPANDED_BYTES:
        # a short value list stands for the whole tensor (the last value repeats); a declared size this
        # large is not expanded: it would fill memory from a few bytes of file
        raise ValueError(f"{name} tensor of shape {list(dims)} ({count * np_dtype.itemsize} bytes) is given by "
                         f"{len(getattr(tensor, list_field))} listed value(s); refusing to expand it beyond "
                         f"{_MAX_EXPANDED_BYTES >> 20} MiB (damaged file?)")
    if content:
        if len(content) != count * np_dtype.itemsize:
            raise ValueError(f"{name} tensor of shape {list(dims)} needs {count * np_dtype.itemsize} bytes, "
                             f"the file holds {len(content)} (cut short?)")
        flat = np.frombuffer(content, dtype=np_dtype)
    else:
        values = getattr(tensor, list_field)
        if count and not len(values):
            return DecodedTensor(None, name, dims, "uninitialized")
        if list_field in ("scomplex_val", "dcomplex_val"):
            if len(values) % 2:
                raise ValueError(f"{name} tensor of shape {list(dims)} lists {len(values)} numbers: complex "
                                 "values come in (real, imaginary) pairs; TensorFlow refuses it (damaged file?)")
            listed = np.asarray(values, dtype="<f4" if list_field == "scomplex_val" else "<f8").view(np_dtype)
        elif list_field == "half_val":
            listed = np.asarray(values, dtype=np.int64).astype("<u2")
            if dtype == DT_HALF:
                listed = listed.view("<f2")
        else:
            listed = np.asarray(values).astype(np_dtype)
        if len(listed) > count:  # TensorFlow refuses it (tf.make_ndarray cannot shape it): never cut it to fit
            raise ValueError(f"{name} tensor of shape {list(dims)} lists {len(listed)} values for its {count} "
                             f"element(s); TensorFlow refuses it (damaged file?)")
        if len(listed) == count:
            flat = listed
        else:  # TF's rule: the last value repeats
            flat = np.concatenate([listed, np.full(count - len(listed), listed[-1], dtype=np_dtype)])
    if dtype == DT_BFLOAT16:
        flat = (flat.astype("<u4") << 16).view("<f4")
    return DecodedTensor(flat.reshape(dims), name, dims)
