"""Derive the compiled NPU graph from the TensorFlow training graph, as Ascend's graph compiler would.

What the compiler does and this module imitates (docs/demo.md lists it):
- prunes what the training step does not need, drops Identity/NoOp and no-op Reshapes, folds constant
  sub-graphs (shape arithmetic, the gradient seed) into `Const` ops or op attributes (`...D` ops);
- fuses Conv2D+BiasAdd(+Relu) into one op and MatMul+BiasAdd into one MatMulV2 (planned in
  `npu_fusion`), recording the TF ops in `_datadump_original_op_names` and the fusion passes in
  `pass_name`/`pass_name_ub`;
- mixed precision: cube and vector ops run in float16, loss / loss scale / optimizer ops in float32,
  variables stay float32; the op types of the block list (`keep_fp32`, CANN's `modify_mixlist`
  "black-list") stay in float32; a `Cast` is inserted wherever the dtypes disagree;
- layouts: 4-D activations NC1HWC0, convolution weights FRACTAL_Z, matrices FRACTAL_NZ; a `TransData`
  is inserted wherever the layouts disagree;
- op ids follow the execution order.

The result (`NpuGraph`) is plain data; `npu_sim` computes it and writes the GE graph and the dumps.
Pure Python over the GraphDef protobuf: TensorFlow itself is not imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

from precision_tool.simulate.npu_fusion import (PASS_CONV_BIAS, PASS_CONV_RELU_UB, PASS_MATMUL_BIAS, FusionCount,
                                            plan_fusion)
from precision_tool.simulate.npu_fusion import data_inputs as _data_inputs
from precision_tool.simulate.npu_fusion import split_ref as _split

FLOAT16 = "float16"
FLOAT32 = "float32"
INT32 = "int32"

# Ops whose value never depends on the step's data: evaluated at compile time.
SHAPE_OPS = frozenset({"Shape", "ShapeN", "Rank", "Size"})
# Not ops on the device: Identity disappears; a ReadVariableOp becomes the Variable op it reads.
PASS_THROUGH_OPS = frozenset({"Identity", "ReadVariableOp"})
SKIPPED_OPS = frozenset({"NoOp"})


@dataclass
class NpuTensor:
    """One output of an NPU op: its dtype and device layout, and the TF tensor it stands for."""

    dtype: str  # numpy dtype name
    layout: str  # NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NHWC, HWCN, ND
    shape: tuple[int, ...]  # logical shape, in origin_format
    origin_format: str  # NHWC, HWCN or ND
    origin_name: str | None = None  # TF op whose output this is (the golden tensor)
    origin_index: int | None = None


@dataclass
class NpuOp:
    """One op of the compiled graph. `kind`: data, variable, const, compute, trans."""

    name: str
    type: str
    kind: str
    inputs: list[tuple[str, int]]
    outputs: list[NpuTensor]
    original_names: list[str] | None = None
    pass_name: str | None = None
    pass_name_ub: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def has_task(self) -> bool:
        """Ops that run as a device task (and so are dumped); Data/Variable/Const are not."""
        return self.kind in ("compute", "trans")


@dataclass
class NpuGraph:
    """The derived graph: ops in execution order, plus what the fusion passes did."""

    name: str
    ops: list[NpuOp]
    graph_fusion: dict[str, FusionCount]
    ub_fusion: dict[str, FusionCount]

    def op(self, name: str) -> NpuOp:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)


@dataclass
class TfTensorInfo:
    dtype: str
    shape: tuple[int, ...]


_TF_DTYPES = {1: FLOAT32, 2: "float64", 3: INT32, 9: "int64", 10: "bool", 19: FLOAT16, 20: "resource"}


def tensor_infos(graph_def: Any) -> dict[str, TfTensorInfo]:
    """'node:slot' → dtype and static shape, from a GraphDef written with add_shapes=True."""
    infos: dict[str, TfTensorInfo] = {}
    for node in graph_def.node:
        shapes = node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else []
        for slot, shape in enumerate(shapes):
            dims = tuple(int(d.size) for d in shape.dim)
            infos[f"{node.name}:{slot}"] = TfTensorInfo(_output_dtype(node, slot), dims)
    return infos


def _output_dtype(node: Any, slot: int) -> str:
    if node.op in ("VarHandleOp",):
        return "resource"
    if node.op in SHAPE_OPS:
        return _TF_DTYPES.get(node.attr["out_type"].type, INT32)
    for key in ("T", "dtype", "DstT"):
        if key in node.attr and node.attr[key].type:
            return _TF_DTYPES.get(node.attr[key].type, "unknown")
    return FLOAT32


class _Deriver:
    """One derivation; see `derive_npu_graph`."""

    def __init__(self, graph_def: Any, roots: Sequence[str], data_nodes: Sequence[str],
                 fold: Callable[[list[str]], list[Any]], graph_name: str, keep_fp32: Collection[str]) -> None:
        self.keep_fp32 = frozenset(keep_fp32)
        self.nodes = {node.name: node for node in graph_def.node}
        self.order = {node.name: n for n, node in enumerate(graph_def.node)}
        self.infos = tensor_infos(graph_def)
        self.data_nodes = set(data_nodes)
        self.fold = fold
        self.graph_name = graph_name
        self.needed = self._needed(roots)
        self.foldable: dict[str, bool] = {}
        self.ops: list[NpuOp] = []
        self.by_name: dict[str, NpuOp] = {}
        self.tf_to_npu: dict[str, tuple[str, int]] = {}  # 'tf node:slot' → (npu op, output)
        self.trans_cache: dict[tuple[str, int, str, str], tuple[str, int]] = {}
        self.counters = {"Cast": 0, "TransData": 0}
        self.folded_values: dict[str, Any] = {}

    # --- reachability and folding ---------------------------------------------------------------
    def _needed(self, roots: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            for ref in _data_inputs(self.nodes[name]):
                stack.append(_split(ref)[0])
        return seen

    def is_foldable(self, name: str) -> bool:
        if name in self.foldable:
            return self.foldable[name]
        node = self.nodes[name]
        if name in self.data_nodes or node.op in ("VarHandleOp", "ReadVariableOp", "Placeholder"):
            result = False
        elif node.op == "Const" or node.op in SHAPE_OPS:
            result = True
        else:
            inputs = _data_inputs(node)
            result = bool(inputs) and all(self.is_foldable(_split(ref)[0]) for ref in inputs)
        self.foldable[name] = result
        return result

    def resolve(self, ref: str) -> str:
        """The TF tensor a reference really means once pass-through ops and no-op reshapes are gone."""
        name, slot = _split(ref)
        node = self.nodes[name]
        if node.op in PASS_THROUGH_OPS and node.op != "ReadVariableOp":
            return self.resolve(_data_inputs(node)[0])
        if node.op == "Reshape" and not self.is_foldable(name):
            source = self.resolve(_data_inputs(node)[0])
            if self.infos[source].shape == self.infos[f"{name}:0"].shape:
                return source
        return f"{name}:{slot}"

    # --- building ---------------------------------------------------------------------------------
    def add(self, op: NpuOp) -> NpuOp:
        if op.name in self.by_name:
            raise ValueError(f"NPU op {op.name} defined twice")
        self.ops.append(op)
        self.by_name[op.name] = op
        return op

    def origin_format(self, tensor: str) -> str:
        info = self.infos[tensor]
        if len(info.shape) != 4:
            return "ND"
        name = _split(tensor)[0]
        node = self.nodes[name]
        if node.op == "Conv2DBackpropFilter":
            return "HWCN"
        if node.op == "ReadVariableOp":
            return "HWCN"  # 4-D variables here are convolution kernels
        if node.op in _FOLLOW_INPUT_OPS:  # elementwise: the layout of the tensor it scales (HWCN for a kernel gradient)
            return self.origin_format(max((self.resolve(i) for i in _data_inputs(node)),
                                          key=lambda t: len(self.infos[t].shape)))
        return "NHWC"

    def producer(self, tensor: str) -> tuple[str, int]:
        """The NPU (op, output) that holds a TF tensor, creating Data/Variable/Const ops on first use."""
        tensor = self.resolve(tensor)
        if tensor in self.tf_to_npu:
            return self.tf_to_npu[tensor]
        name, slot = _split(tensor)
        node = self.nodes[name]
        info = self.infos[tensor]
        if node.op == "ReadVariableOp":
            var = _split(_data_inputs(node)[0])[0]
            if var not in self.by_name:
                self.add(NpuOp(var, "Variable", "variable", [], [NpuTensor(
                    FLOAT32, self.origin_format(tensor), info.shape, self.origin_format(tensor),
                    origin_name=name, origin_index=0)], original_names=[var]))
            self.tf_to_npu[tensor] = (var, 0)
        elif name in self.data_nodes:
            self.add(NpuOp(name, "Data", "data", [], [NpuTensor(
                info.dtype, self.origin_format(tensor), info.shape, self.origin_format(tensor),
                origin_name=name, origin_index=slot)], original_names=[name]))
            self.tf_to_npu[tensor] = (name, 0)
        elif self.is_foldable(name):
            (value,) = self.fold([tensor])
            op_name = name if slot == 0 else f"{name}_{slot}"
            self.folded_values[tensor] = value
            self.add(NpuOp(op_name, "Const", "const", [], [NpuTensor(
                str(value.dtype), "ND", tuple(value.shape), "ND", origin_name=name, origin_index=slot)],
                original_names=[name], params={"value": value}))
            self.tf_to_npu[tensor] = (op_name, 0)
        else:
            raise KeyError(f"TF tensor {tensor} has no NPU producer yet (graph order?)")
        return self.tf_to_npu[tensor]

    def constant(self, ref: str) -> Any:
        """The compile-time value of a folded input (becomes an attribute of a `...D` op)."""
        tensor = self.resolve(ref)
        if tensor not in self.folded_values:
            (self.folded_values[tensor],) = self.fold([tensor])
        return self.folded_values[tensor]

    def feed(self, tensor: str, dtype: str, layout: str) -> tuple[str, int]:
        """The producer of `tensor` converted to (dtype, layout): Cast / TransData inserted as needed.
        Casts to float16 happen before a layout change, casts to float32 after (the device converts
        layouts in the narrow type)."""
        source = self.producer(tensor)
        out = self.by_name[source[0]].outputs[source[1]]
        layout = out.origin_format if layout == "natural" else layout
        key = (source[0], source[1], dtype, layout)
        if key in self.trans_cache:
            return self.trans_cache[key]
        current = source
        if out.dtype != dtype and dtype == FLOAT16:
            current = self._trans("Cast", current, dtype, out.layout)
        if out.layout != layout:
            current = self._trans("TransData", current, self.tensor_of(current).dtype, layout)
        if self.tensor_of(current).dtype != dtype:
            current = self._trans("Cast", current, dtype, layout)
        self.trans_cache[key] = current
        return current

    def tensor_of(self, ref: tuple[str, int]) -> NpuTensor:
        return self.by_name[ref[0]].outputs[ref[1]]

    def _trans(self, kind: str, source: tuple[str, int], dtype: str, layout: str) -> tuple[str, int]:
        src = self.tensor_of(source)
        name = f"trans_{kind}_{self.counters[kind]}"
        self.counters[kind] += 1
        params: dict[str, Any] = {"src_format": src.layout, "dst_format": layout} if kind == "TransData" else {
            "dst_type": dtype}
        self.add(NpuOp(name, kind, "trans", [source], [NpuTensor(dtype, layout, src.shape, src.origin_format)],
                       params=params))
        return (name, 0)

    def output(self, node_name: str, slot: int, dtype: str, layout: str, origin: str | None = None,
               origin_slot: int | None = None) -> NpuTensor:
        tensor = f"{node_name}:{slot}"
        info = self.infos[tensor]
        fmt = self.origin_format(tensor)
        return NpuTensor(dtype, fmt if layout == "natural" else layout, info.shape, fmt,
                         origin_name=origin or node_name, origin_index=slot if origin_slot is None else origin_slot)

    @staticmethod
    def fp16_layout(shape: tuple[int, ...]) -> str:
        return {4: "NC1HWC0", 2: "FRACTAL_NZ"}.get(len(shape), "ND")

    # --- lowering ----------------------------------------------------------------------------------
    def low(self, npu_type: str) -> str:
        """The dtype of an op type the NPU runs in float16 unless the block list keeps it in float32."""
        return FLOAT32 if npu_type in self.keep_fp32 else FLOAT16

    def derive(self) -> NpuGraph:
        plan = plan_fusion(self.nodes, self.needed, self.order, self.resolve, PASS_THROUGH_OPS)
        self.fused_into = plan.fused_into
        groups = plan.groups
        for name in sorted(self.needed, key=self.order.__getitem__):
            node = self.nodes[name]
            if (node.op in PASS_THROUGH_OPS or node.op in SKIPPED_OPS or node.op == "VarHandleOp"
                    or name in self.data_nodes or self.is_foldable(name) or name in self.fused_into):
                continue
            if node.op == "Reshape" and self.resolve(f"{name}:0") != f"{name}:0":
                continue
            if name in groups:
                self.lower_group([self.nodes[n] for n in groups[name]])
            else:
                self.lower(node)
        return NpuGraph(self.graph_name, self.ops, plan.graph_fusion, plan.ub_fusion)

    def finish(self, node_name: str, op: NpuOp) -> None:
        self.add(op)
        for slot in range(len(op.outputs)):
            self.tf_to_npu[f"{node_name}:{slot}"] = (op.name, slot)

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
        name, kind = node.name, node.op
        ins = _data_inputs(node)
        shape = self.infos[f"{name}:0"].shape if f"{name}:0" in self.infos else ()
        fp16 = self.fp16_layout(shape)  # the device layout of a cube/vector op's result, either dtype
        lo = self.low(_NPU_TYPES.get(kind, kind))

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
            single(kind, [self.feed(i, FLOAT32, "ND") for i in ins],
                   [self.output(name, 0, FLOAT32, "ND"), self.output(name, 1, FLOAT32, "ND")])
        elif kind == "Mean":
            single("ReduceMeanD", [self.feed(ins[0], FLOAT32, "ND")], [self.output(name, 0, FLOAT32, "ND")],
                   axes=[int(a) for a in self.constant(ins[1]).reshape(-1)])
        elif kind == "Mul":
            # float32 ops (the loss gradient, the loss scale, the gradients' unscaling), each in the layout
            # of the tensor it scales: a convolution kernel's gradient stays HWCN
            single("Mul", [self.feed(i, FLOAT32, "natural") for i in ins],
                   [self.output(name, 0, FLOAT32, "natural")])
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
        elif kind == "RealDiv":  # the all-reduced sum over the rank size, in float32 as the optimizer takes it
            single(kind, [self.feed(i, FLOAT32, "natural") for i in ins], [self.output(name, 0, FLOAT32, "natural")])
        else:
            raise NotImplementedError(f"the demo's NPU compiler has no lowering for {kind} ({name})")

    def _variable_tensor(self, handle_ref: str) -> str:
        """A ReadVariableOp of the variable (the forward one, which the golden dump holds)."""
        handle = _split(handle_ref)[0]
        reads = [n for n in sorted(self.nodes, key=self.order.__getitem__)
                 if self.nodes[n].op == "ReadVariableOp" and _split(_data_inputs(self.nodes[n])[0])[0] == handle
                 and n in self.needed]
        return f"{reads[0]}:0"


# The NPU op type each lowered TF op type becomes (the block list names NPU types).
_NPU_TYPES = {"FusedBatchNormV3": "BatchNorm", "FusedBatchNormGradV3": "BatchNormGrad", "MatMul": "MatMulV2",
              "Conv2DBackpropInput": "Conv2DBackpropInputD", "Conv2DBackpropFilter": "Conv2DBackpropFilterD",
              "Mean": "ReduceMeanD", "ResourceApplyGradientDescent": "ApplyGradientDescent"}


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


def derive_npu_graph(graph_def: Any, *, roots: Sequence[str], data_nodes: Sequence[str],
                     fold: Callable[[list[str]], list[Any]], graph_name: str,
                     keep_fp32: frozenset[str] = frozenset()) -> NpuGraph:
    """The compiled graph for the TF nodes `roots` need (data edges only, as GE prunes the rest).

    `graph_def` must carry `_output_shapes` (as_graph_def(add_shapes=True)); `fold(['node:slot', ...])`
    evaluates constant tensors (the compiler's constant folding); `data_nodes` become `Data` inputs.
    `keep_fp32`: NPU op types (e.g. "MatMulV2") the mixed-precision block list keeps in float32: their
    inputs and outputs are float32 (Casts follow), every other op is as without it.
    """
    return _Deriver(graph_def, roots, data_nodes, fold, graph_name, keep_fp32).derive()
