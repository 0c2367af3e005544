"""Any TensorFlow op as a simulated NPU kernel: its own NodeDef run eagerly on the NPU's inputs.

The derived graph keeps, for every op it does not lower by hand, the TF NodeDef it came from
(`params["node_def"]`, serialized) and how the NPU computes it (`params["precision"]`):
- "float16": the float type attributes set to half, float16 inputs, float16 results (the vector unit);
- "cube": float16 operands, float32 accumulation, the result rounded to the output's dtype (the cube
  unit: MatMul, BatchMatMul, convolutions);
- "float32": as written (the mixed-precision lists keep the op in float32).
When TensorFlow's CPU has no float16 kernel for an op, it is computed in float32 on the float16 inputs
and the result rounded (`emulated` says which ops). A resource input (an optimizer's variable) becomes
an eager variable holding the NPU's value; the op's outputs are then the variables after the update,
as GE's Apply* ops output them.

One eager dispatch per op (about 50 µs): a 10,000-op graph costs well under a second beyond its math.
"""

from __future__ import annotations

from typing import Any

from precision_tool.simulate.npu_graph import NpuOp

FLOAT32_ONLY_ATTRS = frozenset({"U"})  # FusedBatchNorm's statistics type stays float32 on the NPU
emulated: set[str] = set()  # op types computed in float32 and rounded (no float16 CPU kernel)
_CACHE: dict[tuple[bytes, bool], tuple[str, tuple[Any, ...]]] = {}


def _python_attr(value: Any) -> Any:
    """An AttrValue as the eager executor takes it."""
    which = value.WhichOneof("value")
    if which == "list":
        items = value.list
        for field in ("type", "i", "f", "b", "s"):
            found = list(getattr(items, field))
            if found:
                return found
        if len(items.shape):
            return [None if s.unknown_rank else [d.size for d in s.dim] for s in items.shape]
        return []
    if which == "shape":
        return None if value.shape.unknown_rank else [d.size for d in value.shape.dim]
    if which == "tensor":
        return value.tensor
    if which == "func":
        return value.func.name
    return getattr(value, which) if which else None


def _prepared(serialized: bytes, half: bool) -> tuple[str, tuple[Any, ...]]:
    """(op type, eager attrs) for a serialized NodeDef, its float types set to half when `half`, built once
    (keyed by the NodeDef itself: two graphs may share an op name)."""
    key = (serialized, half)
    if key in _CACHE:
        return _CACHE[key]
    from tensorflow.core.framework import node_def_pb2, types_pb2

    node = node_def_pb2.NodeDef()
    node.ParseFromString(serialized)
    attrs: list[Any] = []
    for name, value in sorted(node.attr.items()):
        if name.startswith("_"):
            continue
        if half and name not in FLOAT32_ONLY_ATTRS and value.WhichOneof("value") == "type" \
                and value.type == types_pb2.DT_FLOAT:
            value.type = types_pb2.DT_HALF
        elif half and value.WhichOneof("value") == "list" and types_pb2.DT_FLOAT in value.list.type:
            # a list of types (IdentityN's T): its float entries, as the float inputs arrive in half
            value.list.type[:] = [types_pb2.DT_HALF if t == types_pb2.DT_FLOAT else t for t in value.list.type]
        attrs += [name, _python_attr(value)]
    _CACHE[key] = (node.op, tuple(attrs))
    return _CACHE[key]


def _execute(op_type: str, attrs: tuple[Any, ...], inputs: list[Any], count: int) -> list[Any]:
    from tensorflow.python.eager import context, execute

    return list(execute.execute(op_type, count, inputs, attrs, context.context()))


def run_node(op: NpuOp, ins: list[Any]) -> list[Any]:
    """The op's outputs (in the dtypes of `op.outputs`) computed by its TF NodeDef on `ins`."""
    import numpy as np
    import tensorflow as tf

    precision = op.params.get("precision", "float32")
    resources = set(op.params.get("resource_inputs", ()))
    tf_outputs = int(op.params.get("tf_outputs", len(op.outputs)))
    half = precision == "float16"
    wanted = [np.dtype(t.dtype) for t in op.outputs]
    variables = []
    inputs = []
    for position, value in enumerate(ins):
        value = np.asarray(value)
        if precision == "cube" and value.dtype == np.float16:
            value = value.astype(np.float32)  # the cube reads float16 and accumulates in float32
        if position in resources:
            variable = tf.Variable(value)
            variables.append(variable)
            inputs.append(variable.handle)
        else:
            inputs.append(tf.constant(value))
    op_type, attrs = _prepared(op.params["node_def"], half)
    try:
        results = _execute(op_type, attrs, inputs, tf_outputs)
    except tf.errors.NotFoundError:  # no float16 CPU kernel: float32 arithmetic on the float16 inputs
        if not half:
            raise
        emulated.add(op_type)
        op_type, attrs = _prepared(op.params["node_def"], False)
        widened = [tf.cast(t, tf.float32) if t.dtype == tf.float16 else t for t in inputs]
        results = _execute(op_type, attrs, widened, tf_outputs)
    outputs = [r.numpy() for r in results] + [v.numpy() for v in variables]
    return [np.asarray(out).astype(dtype, copy=False) for out, dtype in zip(outputs, wanted)]


def run_scope(op: NpuOp, ins: list[Any]) -> list[Any]:
    """A scope group's outputs: its TF nodes run in order in float32 on its inputs (float16 ones widened),
    each output rounded to the op's dtype, as CANN's fused kernels compute inside in float32."""
    import numpy as np
    import tensorflow as tf

    inputs = [tf.constant(np.asarray(v).astype(np.float32) if np.asarray(v).dtype == np.float16 else v)
              for v in ins]
    values: dict[str, Any] = {}
    for name, serialized, wiring, count in zip(op.params["names"], op.params["nodes"], op.params["wiring"],
                                               op.params["counts"]):
        op_type, attrs = _prepared(serialized, False)
        args = [inputs[ref] if isinstance(ref, int) else values[ref] for ref in wiring]
        for slot, result in enumerate(_execute(op_type, attrs, args, count)):
            values[f"{name}:{slot}"] = result
    return [np.asarray(values[t].numpy()).astype(out.dtype, copy=False)
            for t, out in zip(op.params["outputs"], op.outputs)]

