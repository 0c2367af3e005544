"""Fixtures for the GE format tests: GE models made from a real TensorFlow graph, and a converter of
protobuf's own ModelDef messages into plain values for cross-checks (the graph command tests in
tests/analysis/graphs/ use the models too)."""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import pytest

from precision_tool.formats.ge.ge_graph import (
    Graph, Model, Op, TensorDesc, attr_dtype, attr_int, attr_list_int, attr_list_str, attr_str,
)

_TF_TO_GE = {"float32": "DT_FLOAT", "float16": "DT_FLOAT16", "int32": "DT_INT32", "int64": "DT_INT64",
             "bool": "DT_BOOL", "float64": "DT_DOUBLE", "bfloat16": "DT_BF16"}
_GE_DT = {"DT_FLOAT": 0, "DT_FLOAT16": 1, "DT_INT32": 3, "DT_INT64": 9, "DT_BOOL": 12}


def tf_graph_to_ge(graph: Any, fuse: tuple[str, str] | None = None, name: str = "ge_default_1") -> Model:
    """A GE 'Build' model from a TF graph: one op per TF node, descriptors from the TF tensors,
    `_datadump_original_op_names`, consumers (dst_name/dst_index); `fuse` merges a producer into
    its consumer the way a fusion pass does (the fused op keeps the first name, lists both originals)."""
    ops: dict[str, Op] = {}
    for op_id, tf_op in enumerate(graph.get_operations()):
        def desc(tensor: Any) -> TensorDesc:
            shape = tuple(int(d) if d is not None else -1 for d in tensor.shape.as_list()) \
                if tensor.shape.rank is not None else ()
            dtype = _TF_TO_GE.get(tensor.dtype.base_dtype.name, "DT_UNDEFINED")
            layout = "NHWC" if len(shape) == 4 else "ND"
            return TensorDesc(dtype, layout, shape, {"origin_format": attr_str(layout),
                                                     "origin_shape": attr_list_int(shape)})
        attrs: dict[str, Any] = {"_datadump_original_op_names": attr_list_str([tf_op.name])}
        for key, value in tf_op.node_def.attr.items():
            kind = value.WhichOneof("value")
            if kind == "type":
                attrs[key] = attr_dtype(_GE_DT.get(_TF_TO_GE.get(tf_op.get_attr(key).name, ""), 0))
            elif kind == "s":
                attrs[key] = attr_str(value.s.decode())
            elif kind == "i":
                attrs[key] = attr_int(value.i)
            elif kind == "list" and value.list.i:
                attrs[key] = attr_list_int(value.list.i)
        outputs = []
        for i, tensor in enumerate(tf_op.outputs):
            d = desc(tensor)
            d.attrs["_datadump_origin_name"] = attr_str(tf_op.name)
            d.attrs["_datadump_origin_output_index"] = attr_int(i)
            outputs.append(d)
        inputs = [f"{t.op.name}:{t.value_index}" for t in tf_op.inputs]
        inputs += [f"{c.name}:-1" for c in tf_op.control_inputs]
        ops[tf_op.name] = Op(name=tf_op.name, type=tf_op.type, id=op_id, stream_id=0, inputs=inputs,
                             input_descs=[desc(t) for t in tf_op.inputs], output_descs=outputs, attrs=attrs)
    if fuse:
        first, second = ops[fuse[0]], ops.pop(fuse[1])
        first.attrs["_datadump_original_op_names"] = attr_list_str([fuse[0], fuse[1]])
        first.attrs["pass_name"] = attr_str("TbeConvBiasaddFusionPass")
        first.input_descs = first.input_descs  # the fused op reads the conv inputs
        first.output_descs = second.output_descs
        for op in ops.values():
            op.inputs = [t.replace(f"{fuse[1]}:", f"{fuse[0]}:") for t in op.inputs]
    for op in ops.values():
        op.attrs[f"{op.name}_kernelname"] = attr_str(f"te_{op.type.lower()}_{op.id}")
        op.attrs["_ge_attr_op_kernel_lib_name"] = attr_str("AIcoreEngine")
    for op in ops.values():
        for position, (producer, _) in enumerate(op.data_inputs):
            ops[producer].dst_names.append(op.name)
            ops[producer].dst_indexes.append(position)
    return Model(path=Path("tf.txt"), name="tf_model", graphs=[Graph(name=name, ops=list(ops.values()))])


def build_tf_graph(variant: int = 0) -> Any:
    """A small convolutional network with tf.nn ops (variant 1 changes one shape and one dtype)."""
    import numpy as np
    import tensorflow as tf

    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 3], name="input")
        kernel = tf.constant(rng.standard_normal((3, 3, 3, 4)).astype(np.float32), name="conv1/kernel")
        conv = tf.nn.conv2d(x, kernel, strides=1, padding="SAME", name="conv1/Conv2D")
        bias = tf.nn.bias_add(conv, tf.constant(np.ones(4, np.float32), name="conv1/bias"), name="conv1/BiasAdd")
        relu = tf.nn.relu(bias, name="conv1/Relu")
        half = tf.cast(relu, tf.float16 if variant == 0 else tf.bfloat16, name="to_half")
        back = tf.cast(half, tf.float32, name="to_float")
        pool = tf.nn.max_pool2d(back, 2 if variant == 0 else 4, 2, "VALID", name="pool")
        flat = tf.reshape(pool, [1, -1], name="flatten")
        logits = tf.identity(flat, name="logits")
        tf.nn.softmax(logits, name="softmax")
        tf.cast(logits, tf.int32, name="to_int")
    return graph


@functools.lru_cache(maxsize=None)
def _tf_ge_model(variant: int) -> Model:
    """Built once per process: tests/analysis/graphs/ shares these fixtures through its own conftest, which
    pytest registers as a second fixture."""
    return tf_graph_to_ge(build_tf_graph(variant), fuse=("conv1/Conv2D", "conv1/BiasAdd"),
                          name="ge_default_2" if variant else "ge_default_1")


@pytest.fixture(scope="session")
def tf_ge_model() -> Model:
    return _tf_ge_model(0)


@pytest.fixture(scope="session")
def tf_ge_model_variant() -> Model:
    return _tf_ge_model(1)


# --- protobuf messages as plain values -----------------------------------------------------------------
def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def plain_pb_attr(attr: Any) -> Any:
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(attr, kind)
    if kind == "s":
        return value.decode("utf-8", "surrogateescape")
    if kind == "f":
        return ("f", f32(value))
    if kind in ("i", "b", "bt"):
        return value
    if kind == "dt":
        return ("dt", value)
    if kind == "list":
        vt = value.DESCRIPTOR.fields_by_name["val_type"].enum_type.values_by_number[value.val_type].name
        for item_kind in ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt"):
            items = getattr(value, item_kind)
            if len(items):
                return ("list", item_kind, [plain_pb_item(item_kind, x) for x in items], vt)
        return ("list", None, [], vt)
    if kind == "td":
        return plain_pb_desc(value)
    if kind == "t":
        return ("t", plain_pb_desc(value.desc) if value.HasField("desc") else None, value.data)
    if kind == "g":
        return plain_pb_graph(value)
    if kind == "func":
        return ("func", value.name, {k: plain_pb_attr(v) for k, v in value.attr.items()})
    if kind == "list_list_int":
        return ("lli", [list(row.list_i) for row in value.list_list_i])
    if kind == "list_list_float":
        return ("llf", [[f32(x) for x in row.list_f] for row in value.list_list_f])
    raise AssertionError(kind)


def plain_pb_item(kind: str, item: Any) -> Any:
    if kind == "s":
        return item.decode("utf-8", "surrogateescape")
    if kind == "f":
        return f32(item)
    if kind == "td":
        return plain_pb_desc(item)
    if kind == "na":
        return ("func", item.name, {k: plain_pb_attr(v) for k, v in item.attr.items()})
    return item


def plain_pb_desc(desc: Any) -> Any:
    dtype = desc.DESCRIPTOR.fields_by_name["dtype"].enum_type.values_by_number[desc.dtype].name
    return ("td", dtype, desc.layout, tuple(desc.shape.dim), {k: plain_pb_attr(v) for k, v in desc.attr.items()},
            desc.size, desc.real_dim_cnt)


def plain_pb_graph(graph: Any) -> Any:
    return ("g", graph.name, [plain_pb_op(op) for op in graph.op])


def plain_pb_op(op: Any) -> Any:
    return (op.name, op.type, op.id, op.stream_id, list(op.input), list(op.dst_name), list(op.dst_index),
            list(op.subgraph_name), list(op.workspace), {k: plain_pb_attr(v) for k, v in op.attr.items()},
            [plain_pb_desc(d) for d in op.input_desc], [plain_pb_desc(d) for d in op.output_desc])


def plain_attr(value: Any) -> Any:
    from precision_tool.formats.ge.ge_graph import (ListListFloat, ListListInt, NamedAttrs, TensorValue,
                                                 attr_kind, list_item_kind, list_val_type)
    kind = attr_kind(value)
    if kind == "":
        return None
    if kind == "f":
        return ("f", f32(value))
    if kind == "dt":
        return ("dt", int(value))
    if kind == "list":
        item_kind = list_item_kind(value) if value else None
        items = [plain_item(item_kind or "", x) for x in value]
        return ("list", item_kind, items, list_val_type(value) or "VT_LIST_NONE")
    if kind == "td":
        return plain_desc(value)
    if kind == "t":
        assert isinstance(value, TensorValue)
        return ("t", plain_desc(value.desc) if value.desc else None, value.data)
    if kind == "g":
        return ("g", value.name, [plain_op(op) for op in value.ops])
    if kind == "func":
        assert isinstance(value, NamedAttrs)
        return ("func", value.name, {k: plain_attr(v) for k, v in value.attrs.items()})
    if isinstance(value, ListListInt):
        return ("lli", [list(r) for r in value])
    if isinstance(value, ListListFloat):
        return ("llf", [[f32(x) for x in r] for r in value])
    return value


def plain_item(kind: str, item: Any) -> Any:
    if kind == "f":
        return f32(item)
    if kind == "td":
        return plain_desc(item)
    if kind == "na":
        return plain_attr(item)
    if kind == "dt":
        return int(item)
    return item


def plain_desc(desc: TensorDesc) -> Any:
    return ("td", desc.dtype, desc.layout, tuple(desc.shape), {k: plain_attr(v) for k, v in desc.attrs.items()},
            desc.extra.get("size", 0), desc.extra.get("real_dim_cnt", 0))


def plain_op(op: Op) -> Any:
    return (op.name, op.type, op.id, op.stream_id, list(op.inputs), list(op.dst_names), list(op.dst_indexes),
            list(op.subgraph_names), list(op.extra.get("workspace", [])), {k: plain_attr(v) for k, v in op.attrs.items()},
            [plain_desc(d) for d in op.input_descs], [plain_desc(d) for d in op.output_descs])


@pytest.fixture
def plain() -> Any:
    """Functions turning our ops and protobuf's OpDef messages into the same plain values."""
    class Plain:
        op = staticmethod(plain_op)
        pb_op = staticmethod(plain_pb_op)
    return Plain
