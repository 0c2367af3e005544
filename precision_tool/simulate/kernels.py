"""The simulated NPU's kernels: every op of a derived graph computed in the NPU's precision.

Each op is computed from the NPU's own upstream outputs (so errors propagate as on the device), with
TensorFlow's CPU kernels or numpy, in the dtypes the graph gives it: float16 tensors, float32
accumulation where the cube unit accumulates in float32 (convolutions, matmuls), float32 where the
mixed-precision lists keep an op in float32. Nothing is golden plus noise.

The op types the demo's compiler lowers by hand have a kernel here each; every other op (`kind`
"compute" with a `node_def` param) runs its own TensorFlow NodeDef eagerly (`generic_kernels`). A
`Fault` makes one op's kernel wrong on purpose (the demos' planted kernel bugs).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from precision_tool.simulate.npu_graph import NpuGraph, NpuOp

Values = dict[tuple[str, int], Any]


@dataclass(frozen=True)
class Fault:
    """A kernel bug planted in one op: what it reads instead of its inputs and/or writes instead of its
    outputs (each a function of the list of arrays)."""

    op_name: str
    description: str
    inputs: Callable[[list[Any]], list[Any]] | None = None
    outputs: Callable[[list[Any]], list[Any]] | None = None


@dataclass(frozen=True)
class SimOptions:
    """One simulated run: the planted faults (none: what float16 alone does)."""

    faults: tuple[Fault, ...] = ()

    def fault_of(self, op_name: str) -> Fault | None:
        return next((fault for fault in self.faults if fault.op_name == op_name), None)


def _f32(array: Any) -> Any:
    import numpy as np

    return np.asarray(array).astype(np.float32)


def _conv2d(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    # cube unit: float16 (or float32) operands, float32 accumulation, result in the graph's dtype
    dtype = np.dtype(op.outputs[0].dtype)
    acc = tf.nn.conv2d(_f32(ins[0]), _f32(ins[1]), op.params["strides"], op.params["padding"]).numpy()
    out = acc.astype(dtype)
    if op.params["bias"]:
        out = out + ins[2]  # vector unit, in the bias's dtype (the same)
    if op.params["relu"]:
        out = np.maximum(out, dtype.type(0))
    if op.params.get("bn_reduce"):  # UB-fused with a batch norm's reduce: sums of the rounded result
        return [out, *_channel_sums(out)]
    return [out]


def _channel_sums(x: Any) -> list[Any]:
    """BNTrainingReduce: per-channel sum and sum of squares, accumulated in float32."""
    import numpy as np

    wide = x.astype(np.float32)
    axes = tuple(range(wide.ndim - 1))
    return [wide.sum(axis=axes, dtype=np.float32), np.square(wide).sum(axis=axes, dtype=np.float32)]


def _bn_reduce(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return _channel_sums(ins[0])


def _bn_update(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    """BNTrainingUpdate from the reduce's sums: y in the data's dtype (Relu'd when UB-fused with one),
    then FusedBatchNormV3's batch mean, unbiased variance, mean and biased variance, all float32."""
    import numpy as np

    x, total, squares, scale, offset = ins
    n = x.size // x.shape[-1]
    mean = total / np.float32(n)
    variance = np.maximum(squares / np.float32(n) - mean * mean, np.float32(0))
    y = (x.astype(np.float32) - mean) / np.sqrt(variance + np.float32(op.params["epsilon"])) * scale + offset
    y = y.astype(x.dtype)
    if op.params["relu"]:
        y = np.maximum(y, y.dtype.type(0))
    unbiased = variance * np.float32(n / max(n - 1, 1))
    return [y, mean, unbiased, mean, variance]


def _bn_update_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    """BNTrainingUpdateGrad: the scale and offset gradients, float32."""
    import numpy as np

    dy, x, mean, variance = ins
    axes = tuple(range(x.ndim - 1))
    normalised = (x.astype(np.float32) - mean) / np.sqrt(variance + np.float32(op.params["epsilon"]))
    wide = dy.astype(np.float32)
    return [(wide * normalised).sum(axis=axes, dtype=np.float32), wide.sum(axis=axes, dtype=np.float32)]


def _bn_reduce_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    """BNTrainingReduceGrad: dx from dy, x and the update's gradients, in the data's dtype."""
    import numpy as np

    dy, x, diff_scale, diff_offset, scale, mean, variance = ins
    n = np.float32(x.size // x.shape[-1])
    inv = np.float32(1) / np.sqrt(variance + np.float32(op.params["epsilon"]))
    normalised = (x.astype(np.float32) - mean) * inv
    dx = scale * inv * (dy.astype(np.float32) - diff_offset / n - normalised * diff_scale / n)
    return [dx.astype(dy.dtype)]


def _matmul(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    a, b = _f32(ins[0]), _f32(ins[1])
    if op.params["transpose_a"]:
        a = a.T
    if op.params["transpose_b"]:
        b = b.T
    # float32 accumulation; a float16 result saturates to inf beyond 65504, a float32 one does not
    out = (a @ b).astype(op.outputs[0].dtype)
    if op.params["bias"]:
        out = out + ins[2]
    return [out]


def _max_pool(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    x = tf.constant(ins[0])  # in its own dtype (float16, or float32 when kept)
    return [tf.raw_ops.MaxPool(input=x, ksize=op.params["ksize"], strides=op.params["strides"],
                               padding=op.params["padding"]).numpy()]


def _max_pool_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    x, y, grad = (tf.constant(a) for a in ins)
    return [tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=grad, ksize=op.params["ksize"],
                                   strides=op.params["strides"], padding=op.params["padding"]).numpy()]


def _relu(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    return [np.maximum(ins[0], ins[0].dtype.type(0))]


def _relu_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    gradients, features = ins
    return [np.where(features > 0, gradients, gradients.dtype.type(0))]


def _batch_norm(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    x, scale, offset = ins
    empty = np.zeros(0, np.float32)
    results = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=empty, variance=empty,
                                          epsilon=op.params["epsilon"], is_training=True)
    return [r.numpy() for r in results[:5]]


def _batch_norm_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    dy, x, scale, mean, variance = ins
    results = tf.raw_ops.FusedBatchNormGradV3(y_backprop=dy, x=x, scale=scale, reserve_space_1=mean,
                                              reserve_space_2=variance, reserve_space_3=np.zeros(0, np.float32),
                                              epsilon=op.params["epsilon"], is_training=True)
    return [r.numpy() for r in results[:3]]


def _bias_add_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    grad = _f32(ins[0])
    return [grad.reshape(-1, grad.shape[-1]).sum(axis=0).astype(op.outputs[0].dtype)]


def _softmax_xent(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    loss, backprop = tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=_f32(ins[0]), labels=_f32(ins[1]))
    return [loss.numpy().astype(op.outputs[0].dtype), backprop.numpy().astype(op.outputs[1].dtype)]


def _reduce_mean(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    mean = _f32(ins[0]).mean(axis=tuple(op.params["axes"]), keepdims=op.params.get("keep_dims", False))
    return [np.asarray(mean, dtype=op.outputs[0].dtype)]


def _mul(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [(ins[0] * ins[1]).astype(ins[0].dtype)]


def _conv_backprop_input(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    acc = tf.raw_ops.Conv2DBackpropInput(input_sizes=op.params["input_size"], filter=_f32(ins[0]),
                                         out_backprop=_f32(ins[1]), strides=op.params["strides"],
                                         padding=op.params["padding"]).numpy()
    return [acc.astype(op.outputs[0].dtype)]


def _conv_backprop_filter(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    acc = tf.raw_ops.Conv2DBackpropFilter(input=_f32(ins[0]), filter_sizes=op.params["filter_size"],
                                          out_backprop=_f32(ins[1]), strides=op.params["strides"],
                                          padding=op.params["padding"]).numpy()
    return [_f32(acc)]  # weight gradients stay in float32 (fp32 accumulation, fp32 output)


def _apply_gradient_descent(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    var, lr, delta = ins
    return [_f32(var - lr * delta)]  # delta is already unscaled (the graph's loss_scale/unscale_* Muls)


def _reshape(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].reshape(op.params["shape"])]


def _cast(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].astype(op.outputs[0].dtype)]  # float32 → float16 saturates to inf, as the device does


def _trans_data(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].copy()]  # values kept in logical layout; the device layout is applied when dumping


KERNELS: dict[str, Callable[[NpuOp, list[Any], SimOptions], list[Any]]] = {
    "Conv2D": _conv2d, "MatMulV2": _matmul, "MaxPool": _max_pool, "MaxPoolGrad": _max_pool_grad,
    "Relu": _relu, "ReluGrad": _relu_grad, "BatchNorm": _batch_norm, "BatchNormGrad": _batch_norm_grad,
    "BiasAddGrad": _bias_add_grad, "SoftmaxCrossEntropyWithLogits": _softmax_xent, "ReduceMeanD": _reduce_mean,
    "Mul": _mul, "Conv2DBackpropInputD": _conv_backprop_input, "Conv2DBackpropFilterD": _conv_backprop_filter,
    "ApplyGradientDescent": _apply_gradient_descent, "Reshape": _reshape, "Cast": _cast, "TransData": _trans_data,
    "BNTrainingReduce": _bn_reduce, "BNTrainingUpdate": _bn_update, "BNTrainingUpdateGrad": _bn_update_grad,
    "BNTrainingReduceGrad": _bn_reduce_grad,
}


def simulate(graph: NpuGraph, feeds: dict[str, Any], options: SimOptions,
             kernels: dict[str, Callable[[NpuOp, list[Any], SimOptions], list[Any]]] | None = None) -> Values:
    """Every op's outputs (logical layout, device dtype), computed in execution order.

    `feeds` holds the Data inputs and the variables' starting values by op name (float32); `kernels`
    adds or replaces kernels by NPU op type (the rank demo's collectives)."""
    import numpy as np

    from precision_tool.simulate.generic_kernels import run_node, run_scope

    table = {**KERNELS, **(kernels or {})}
    names = {op.name for op in graph.ops}
    for fault in options.faults:
        if fault.op_name not in names:  # a fault that would silently plant nothing
            raise ValueError(f"planted fault: {fault.op_name} is no op of the NPU graph {graph.name}")
    values: Values = {}
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for op in graph.ops:
            if op.kind in ("data", "variable"):
                outputs = [np.asarray(feeds[op.name], dtype=op.outputs[0].dtype)]
            elif op.kind == "const":
                outputs = [np.asarray(op.params["value"])]
            else:
                ins = [values[ref] for ref in op.inputs]
                fault = options.fault_of(op.name)
                if fault and fault.inputs:
                    ins = fault.inputs(ins)
                if "node_def" in op.params:
                    outputs = run_node(op, ins)
                elif "nodes" in op.params:  # a scope group (LayerNorm...): its TF nodes as one kernel
                    outputs = run_scope(op, ins)
                else:
                    outputs = table[op.type](op, ins, options)
                if fault and fault.outputs:
                    outputs = fault.outputs(outputs)
            _check(op, outputs)
            for slot, array in enumerate(outputs):
                values[(op.name, slot)] = np.asarray(array)
    return values


def _check(op: NpuOp, outputs: list[Any]) -> None:
    """A kernel's results must be what the graph says: count, dtype and shape (a bug of ours otherwise)."""
    import numpy as np

    if len(outputs) != len(op.outputs):
        raise AssertionError(f"{op.name}: kernel gave {len(outputs)} outputs, graph says {len(op.outputs)}")
    for slot, (array, spec) in enumerate(zip(outputs, op.outputs)):
        array = np.asarray(array)
        if array.dtype != np.dtype(spec.dtype):
            raise AssertionError(f"{op.name}:{slot} is {array.dtype}, graph says {spec.dtype}")
        if -1 in spec.shape and len(spec.shape) == array.ndim:
            spec.shape = tuple(array.shape)  # a shape known only at run time (Unique): the run tells it
        if tuple(array.shape) != tuple(spec.shape):
            raise AssertionError(f"{op.name}:{slot} has shape {array.shape}, graph says {spec.shape}")
