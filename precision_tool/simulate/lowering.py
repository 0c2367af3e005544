"""How the derived NPU graph computes each TF op: its NPU type, dtypes and device layouts (a mixin of
`npu_graph._Deriver`).

The op types of the small demo are lowered by hand, as Ascend's compiler lowers them (Conv2D in
NC1HWC0 with FRACTAL_Z weights, MatMulV2 in FRACTAL_NZ, BatchNorm with float32 statistics, the `...D`
ops that take constant inputs as attributes). Every other op is lowered by `lower_generic`: the same TF
op (GE's name for it), its float inputs in the dtype the mixed-precision lists give it (`mix_precision`),
in the layout of its input when it is elementwise, its NodeDef kept for `generic_kernels` to run. An
op that updates variables through resource handles takes the variables' values and outputs them
updated, as GE's Apply* ops do.
"""

from __future__ import annotations

from typing import Any

from precision_tool.simulate.graph_model import FLOAT16, FLOAT32, NpuOp, NpuTensor
from precision_tool.simulate.mix_precision import CUBE
from precision_tool.simulate.npu_fusion import PASS_CONV_BIAS, PASS_CONV_RELU_UB, PASS_MATMUL_BIAS
from precision_tool.simulate.npu_fusion import data_inputs as _data_inputs
from precision_tool.simulate.npu_fusion import split_ref as _split


class SimulationUnsupported(Exception):
    """The graph holds something the simulation does not model (control flow, a function call...)."""


# Control flow and function calls: GE compiles them into other structures the simulation does not model.
CONTROL_FLOW = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "If", "While",
                          "StatelessIf", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall"})
# Elementwise ops: computed in the device layout of their input when every float input has one shape.
SAME_LAYOUT = frozenset({
    "Add", "AddV2", "AddN", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Relu", "Relu6", "ReluGrad",
    "Relu6Grad", "Sigmoid", "SigmoidGrad", "Tanh", "TanhGrad", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Neg",
    "Abs", "Erf", "SquaredDifference", "LeakyRelu", "Elu", "EluGrad", "Reciprocal", "Pow", "Softplus",
})
# GE's names for TF op types where they differ (a Resource... optimizer op loses the prefix).
GE_TYPES = {"FusedBatchNormV3": "BatchNorm", "FusedBatchNormGradV3": "BatchNormGrad", "MatMul": "MatMulV2",
            "Conv2DBackpropInput": "Conv2DBackpropInputD", "Conv2DBackpropFilter": "Conv2DBackpropFilterD",
            "Mean": "ReduceMeanD", "Sum": "ReduceSumD", "ResourceApplyGradientDescent": "ApplyGradientDescent",
            "BatchMatMul": "BatchMatMul", "BatchMatMulV2": "BatchMatMulV2", "Softmax": "SoftmaxV2",
            "ConcatV2": "ConcatV2D", "Transpose": "TransposeD", "GatherV2": "GatherV2D",
            "UnsortedSegmentSum": "UnsortedSegmentSumD", "ResourceGather": "GatherV2D",
            "ResourceApplyMomentum": "ApplyMomentumD", "ResourceApplyAdam": "ApplyAdamD"}
FLOATS = (FLOAT16, FLOAT32)


def ge_type(tf_type: str) -> str:
    if tf_type in GE_TYPES:
        return GE_TYPES[tf_type]
    return tf_type[len("Resource"):] if tf_type.startswith("ResourceApply") or tf_type.startswith(
        "ResourceSparseApply") or tf_type.startswith("ResourceScatter") else tf_type


class Lowering:
    """The lowering half of `_Deriver` (which holds the state these methods use)."""

    infos: dict[str, Any]
    nodes: dict[str, Any]
    needed: set[str]
    order: dict[str, int]

    def lower_group(self, group: list[Any]) -> None:
        first, last = group[0], group[-1]
        names = [n.name for n in group]
        shape = self.infos[f"{last.name}:0"].shape
        if first.op == "Conv2D":
            lo = self.low("Conv2D")
            x, w = _data_inputs(first)
            bias = _data_inputs(group[1])[1]
            inputs = [self.feed(x, lo, "NC1HWC0"), self.feed(w, lo, "FRACTAL_Z"),
                      self.feed(bias, lo, "ND")]
            op = NpuOp(first.name, "Conv2D", "compute", inputs,
                       [self.output(last.name, 0, lo, "NC1HWC0")], original_names=names,
                       pass_name=PASS_CONV_BIAS, pass_name_ub=PASS_CONV_RELU_UB if len(group) > 2 else None,
                       params={"strides": list(first.attr["strides"].list.i),
                               "padding": first.attr["padding"].s.decode(), "bias": True,
                               "relu": len(group) > 2})
        else:  # MatMul + BiasAdd
            lo = self.low("MatMulV2")
            a, b = _data_inputs(first)
            bias = _data_inputs(last)[1]
            inputs = [self.feed(a, lo, "FRACTAL_NZ"), self.feed(b, lo, "FRACTAL_NZ"),
                      self.feed(bias, lo, "ND")]
            op = NpuOp(first.name, "MatMulV2", "compute", inputs,
                       [self.output(last.name, 0, lo, self.fp16_layout(shape))], original_names=names,
                       pass_name=PASS_MATMUL_BIAS,
                       params={"transpose_a": False, "transpose_b": False, "bias": True})
        self.finish(last.name, op)

    def lower(self, node: Any) -> None:
        """One TF node as one NPU op: the demo's op types by hand, every other one by `lower_generic`."""
        name, kind = node.name, node.op
        ins = _data_inputs(node)
        shape = self.infos[f"{name}:0"].shape if f"{name}:0" in self.infos else ()
        fp16 = self.fp16_layout(shape)  # the device layout of a cube/vector op's result, either dtype
        lo = self.low(ge_type(kind))

        def single(npu_type: str, inputs: list[tuple[str, int]], outputs: list[NpuTensor],
                   **params: Any) -> None:
            self.finish(name, NpuOp(name, npu_type, "compute", inputs, outputs, original_names=[name],
                                    params=params))

        if kind == "Conv2D":
            single("Conv2D", [self.feed(ins[0], lo, "NC1HWC0"), self.feed(ins[1], lo, "FRACTAL_Z")],
                   [self.output(name, 0, lo, "NC1HWC0")], strides=list(node.attr["strides"].list.i),
                   padding=node.attr["padding"].s.decode(), bias=False, relu=False)
        elif kind in ("MaxPool", "Relu"):
            single(kind, [self.feed(ins[0], lo, fp16)], [self.output(name, 0, lo, fp16)],
                   **_pool_params(node))
        elif kind == "ReluGrad":
            single(kind, [self.feed(i, lo, fp16) for i in ins], [self.output(name, 0, lo, fp16)])
        elif kind == "MaxPoolGrad":
            single(kind, [self.feed(i, lo, "NC1HWC0") for i in ins],
                   [self.output(name, 0, lo, "NC1HWC0")], **_pool_params(node))
        elif kind == "FusedBatchNormV3":
            # Ascend's BatchNorm: x in float16 (5HD) unless kept in float32, statistics and parameters float32
            single("BatchNorm", [self.feed(ins[0], lo, "NC1HWC0"), self.feed(ins[1], FLOAT32, "ND"),
                                 self.feed(ins[2], FLOAT32, "ND")],
                   [self.output(name, 0, lo, "NC1HWC0")]
                   + [self.output(name, slot, FLOAT32, "ND") for slot in (1, 2, 3, 4)],
                   epsilon=float(node.attr["epsilon"].f), is_training=True)
        elif kind == "FusedBatchNormGradV3":
            single("BatchNormGrad", [self.feed(ins[0], lo, "NC1HWC0"), self.feed(ins[1], lo, "NC1HWC0"),
                                     self.feed(ins[2], FLOAT32, "ND"), self.feed(ins[3], FLOAT32, "ND"),
                                     self.feed(ins[4], FLOAT32, "ND")],
                   [self.output(name, 0, lo, "NC1HWC0"), self.output(name, 1, FLOAT32, "ND"),
                    self.output(name, 2, FLOAT32, "ND")], epsilon=float(node.attr["epsilon"].f))
        elif kind == "Reshape":
            source = self.resolve(ins[0])
            dtype = self.tensor_of(self.producer(source)).dtype
            single("Reshape", [self.feed(source, dtype, "natural")], [self.output(name, 0, dtype, "natural")],
                   shape=[int(d) for d in self.constant(ins[1])])
        elif kind == "MatMul":
            single("MatMulV2", [self.feed(ins[0], lo, "FRACTAL_NZ"), self.feed(ins[1], lo, "FRACTAL_NZ")],
                   [self.output(name, 0, lo, fp16)], transpose_a=bool(node.attr["transpose_a"].b),
                   transpose_b=bool(node.attr["transpose_b"].b), bias=False)
        elif kind == "BiasAddGrad":
            source_shape = self.infos[self.resolve(ins[0])].shape
            single("BiasAddGrad", [self.feed(ins[0], lo, self.fp16_layout(source_shape))],
                   [self.output(name, 0, lo, "ND")])
        elif kind == "SoftmaxCrossEntropyWithLogits":
            dtype = self.gray(kind, ins)
            single(kind, [self.feed(i, dtype, "ND") for i in ins],
                   [self.output(name, 0, dtype, "ND"), self.output(name, 1, dtype, "ND")])
        elif kind == "Mean" and len(self.infos[self.resolve(ins[0])].shape) <= 2:
            dtype = self.gray("ReduceMeanD", ins[:1])
            single("ReduceMeanD", [self.feed(ins[0], dtype, "ND")], [self.output(name, 0, dtype, "ND")],
                   axes=[int(a) for a in self.constant(ins[1]).reshape(-1)], keep_dims=bool(node.attr["keep_dims"].b))
        elif kind == "Mul":
            # each in the layout of the tensor it scales: a convolution kernel's gradient stays HWCN
            dtype = self.gray("Mul", ins)
            single("Mul", [self.feed(i, dtype, "natural") for i in ins],
                   [self.output(name, 0, dtype, "natural")])
        elif kind == "Conv2DBackpropInput":
            single("Conv2DBackpropInputD", [self.feed(ins[1], lo, "FRACTAL_Z"),
                                            self.feed(ins[2], lo, "NC1HWC0")],
                   [self.output(name, 0, lo, "NC1HWC0")],
                   input_size=[int(d) for d in self.constant(ins[0])],
                   strides=list(node.attr["strides"].list.i), padding=node.attr["padding"].s.decode())
        elif kind == "Conv2DBackpropFilter":
            single("Conv2DBackpropFilterD", [self.feed(ins[0], lo, "NC1HWC0"),
                                             self.feed(ins[2], lo, "NC1HWC0")],
                   [self.output(name, 0, FLOAT32, "FRACTAL_Z")],
                   filter_size=[int(d) for d in self.constant(ins[1])],
                   strides=list(node.attr["strides"].list.i), padding=node.attr["padding"].s.decode())
        elif kind == "ResourceApplyGradientDescent":
            var_read = self._variable_tensor(ins[0])
            layout = self.origin_format(var_read)
            var_op = self.producer(var_read)
            single("ApplyGradientDescent", [var_op, self.feed(ins[1], FLOAT32, "ND"),
                                            self.feed(ins[2], FLOAT32, layout)],
                   [NpuTensor(FLOAT32, layout, self.infos[var_read].shape, layout)])
        elif kind == "HcomAllReduce":
            # a collective (the rank demo): reduces the gradient in its own dtype and device layout
            source = self.tensor_of(self.producer(ins[0]))
            single(kind, [self.feed(ins[0], source.dtype, source.layout)],
                   [self.output(name, 0, source.dtype, source.layout)], **_hccl_params(node))
        elif kind == "RealDiv" and self.nodes[_split(ins[0])[0]].op == "HcomAllReduce":
            # the all-reduced sum over the rank size (the rank demo), as the optimizer takes it
            dtype = self.gray(kind, ins)
            single(kind, [self.feed(i, dtype, "natural") for i in ins], [self.output(name, 0, dtype, "natural")])
        else:
            self.lower_generic(node)

    def _variable_tensor(self, handle_ref: str) -> str:
        """A ReadVariableOp of the variable (the forward one, which the golden dump holds)."""
        return f"{self.reads_of(_split(handle_ref)[0])[0]}:0"

    def reads_of(self, handle: str) -> list[str]:
        """The needed ReadVariableOps of a variable handle, in graph order (indexed once)."""
        if getattr(self, "_reads", None) is None:
            self._reads: dict[str, list[str]] = {}
            for n in sorted(self.needed, key=self.order.__getitem__):
                if self.nodes[n].op == "ReadVariableOp":
                    self._reads.setdefault(_split(_data_inputs(self.nodes[n])[0])[0], []).append(n)
        return self._reads.get(handle, [])

    # --- every other op ---------------------------------------------------------------------------------
    def peek(self, ref: str) -> tuple[str, str, bool]:
        """(dtype, layout, is a constant) of the NPU tensor a TF input will come from, without creating
        its producer (creating it here would change the order ops are numbered in)."""
        tensor = self.resolve(ref)
        if tensor in self.tf_to_npu:
            held = self.tensor_of(self.tf_to_npu[tensor])
            return held.dtype, held.layout, self.by_name[self.tf_to_npu[tensor][0]].kind == "const"
        name = _split(tensor)[0]
        info = self.infos[tensor]
        if self.nodes[name].op == "ReadVariableOp":
            return FLOAT32 if info.dtype == FLOAT32 else info.dtype, self.origin_format(tensor), False
        return info.dtype, self.origin_format(tensor), self.is_foldable(name) and name not in self.data_nodes

    def gray(self, npu_type: str, ins: list[str]) -> str:
        """The dtype the mixed-precision lists give an op computing from `ins` (constants do not count)."""
        dtypes = [dtype for dtype, _layout, const in map(self.peek, ins) if dtype in FLOATS and not const]
        return self.policy.precision(npu_type, dtypes)

    def variable(self, handle: str) -> tuple[str, int]:
        """The Variable op of a resource handle (VarHandleOp), made on first use."""
        if handle not in self.by_name:
            node = self.nodes[handle]
            dtype = _DTYPE_NAMES.get(node.attr["dtype"].type, FLOAT32)
            shape = tuple(int(d.size) for d in node.attr["shape"].shape.dim)
            fmt = "HWCN" if len(shape) == 4 else "ND"
            reads = self.reads_of(handle)
            self.add(NpuOp(handle, "Variable", "variable", [], [NpuTensor(
                dtype, fmt, shape, fmt, origin_name=reads[0] if reads else None, origin_index=0 if reads else None)],
                original_names=[handle]))
        return (handle, 0)

    def output_tensors(self, name: str) -> list[str]:
        """A TF node's outputs, 'node:slot', as many as the graph knows of."""
        slots: list[str] = []
        while f"{name}:{len(slots)}" in self.infos:
            slots.append(f"{name}:{len(slots)}")
        return slots

    def lower_generic(self, node: Any) -> None:
        """Any TF op as the same op on the NPU: float inputs in the dtype the lists give it, its NodeDef
        kept for the kernel (the deriver refused control flow before lowering anything)."""
        name, kind = node.name, node.op
        npu_type = ge_type(kind)
        ins = _data_inputs(node)
        # (dtype, layout, is a constant) of each input's NPU source
        sources = [self.peek(ref) if self.infos[self.resolve(ref)].dtype != "resource" else ("resource", "", False)
                   for ref in ins]
        resources = [n for n, (dtype, _l, _c) in enumerate(sources) if dtype == "resource"]
        floats = [n for n, (dtype, _l, _c) in enumerate(sources) if dtype in FLOATS
                  and self.infos[self.resolve(ins[n])].dtype == FLOAT32]
        slots = self.output_tensors(name)
        if resources:
            dtype = FLOAT32  # optimizer updates: the variables' own dtype
        else:
            dtype = self.policy.precision(npu_type, [sources[n][0] for n in floats if not sources[n][2]])
        precision = ("cube" if npu_type in CUBE else FLOAT16) if dtype == FLOAT16 else FLOAT32
        layout = "natural"
        shapes = {self.infos[self.resolve(ins[n])].shape for n in floats}
        if kind in SAME_LAYOUT and floats and len(shapes) == 1 and slots and \
                self.infos[slots[0]].shape in shapes:
            layout = sources[floats[0]][1]
        inputs = []
        for n, ref in enumerate(ins):
            if n in resources:
                inputs.append(self.variable(_split(self.resolve(ref))[0]))
            elif n in floats:
                inputs.append(self.feed(ref, dtype, layout))
            else:
                inputs.append(self.feed(ref, self.peek(ref)[0], "natural"))
        outputs = []
        for slot, tensor in enumerate(slots):
            info = self.infos[tensor]
            out_dtype = FLOAT16 if info.dtype == FLOAT32 and dtype == FLOAT16 else info.dtype
            outputs.append(self.output(name, slot, out_dtype, layout))
        for n in resources:  # the updated variables, as GE's Apply* ops output them (no golden tensor)
            outputs.append(NpuTensor(**{**vars(self.tensor_of(inputs[n])), "origin_name": None,
                                        "origin_index": None}))
        self.finish(name, NpuOp(name, npu_type, "compute", inputs, outputs, original_names=[name], params={
            "node_def": stripped_node_def(node), "precision": precision, "resource_inputs": resources,
            "tf_outputs": len(slots)}))


def stripped_node_def(node: Any) -> bytes:
    """A NodeDef as its kernel runs it: inputs and graph-only attributes left out, serialized."""
    copy = type(node)()
    copy.CopyFrom(node)
    del copy.input[:]
    for key in ("_output_shapes", "_class"):
        if key in copy.attr:
            del copy.attr[key]
    return copy.SerializeToString()


_DTYPE_NAMES = {1: FLOAT32, 3: "int32", 9: "int64", 19: FLOAT16}

# Elementwise ops whose origin format is that of their largest input (a kernel gradient's HWCN).
_FOLLOW_INPUT_OPS = frozenset({"Mul", "HcomAllReduce", "RealDiv"})
HCCL_ATTRS = ("reduction", "group", "fusion", "fusion_id")


def _hccl_params(node: Any) -> dict[str, Any]:
    """A collective NodeDef's HCCL attributes (strings and ints) as op params."""
    found: dict[str, Any] = {}
    for key in HCCL_ATTRS:
        if key in node.attr:
            value = node.attr[key]
            found[key] = value.s.decode() if value.WhichOneof("value") == "s" else int(value.i)
    return found


def _pool_params(node: Any) -> dict[str, Any]:
    if "ksize" not in node.attr:
        return {}
    return {"ksize": list(node.attr["ksize"].list.i), "strides": list(node.attr["strides"].list.i),
            "padding": node.attr["padding"].s.decode()}

