"""Derive the compiled NPU graph from the TensorFlow training graph, as Ascend's graph compiler would.

What the compiler does and this module imitates (docs/demo.md lists it):
- prunes what the training step does not need, drops Identity/NoOp and no-op Reshapes, folds constant
  sub-graphs (shape arithmetic, the gradient seed) into `Const` ops or op attributes (`...D` ops);
- fuses Conv2D+BiasAdd(+Relu) into one op and MatMul+BiasAdd into one MatMulV2 (planned in
  `npu_fusion`), recording the TF ops in `_datadump_original_op_names` and the fusion passes in
  `pass_name`/`pass_name_ub`;
- mixed precision (`mix_precision`): white-list op types in float16, black-list ones in float32, gray
  ones following their inputs; variables stay float32; the user's `modify_mixlist` changes the lists;
  a `Cast` is inserted wherever the dtypes disagree;
- layouts: 4-D activations NC1HWC0, convolution weights FRACTAL_Z, matrices FRACTAL_NZ; a `TransData`
  is inserted wherever the layouts disagree;
- op ids follow the execution order.
The small demo's op types are lowered by hand, every other TF op generically (`lowering`).

The result (`NpuGraph`) is plain data; `kernels` computes it and `run_files` writes the GE graph and the dumps.
Pure Python over the GraphDef protobuf: TensorFlow itself is not imported here.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Mapping, Sequence

from precision_tool.simulate.graph_model import (FLOAT16, FLOAT32, INT32, PASS_THROUGH_OPS, SHAPE_OPS,  # noqa: F401
                                                 SKIPPED_OPS, NpuGraph, NpuOp, NpuTensor, TfTensorInfo, tensor_infos)
from precision_tool.simulate.lowering import (_FOLLOW_INPUT_OPS, CONTROL_FLOW, HCCL_ATTRS, Lowering,  # noqa: F401
                                              SimulationUnsupported)
from precision_tool.simulate.mix_precision import MIXED, MixPolicy
from precision_tool.simulate.npu_fusion import FusionPlanner, all_on
from precision_tool.simulate.npu_fusion import data_inputs as _data_inputs
from precision_tool.simulate.npu_fusion import split_ref as _split
from precision_tool.simulate.training_fusion import add_scope_groups
from precision_tool.simulate.training_lowering import TrainingLowering

IMAGE_OPS = frozenset({"Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "FusedBatchNormV3", "Conv3D"})


class _Deriver(Lowering, TrainingLowering):
    """One derivation; see `derive_npu_graph`."""

    def __init__(self, graph_def: Any, roots: Sequence[str], data_nodes: Sequence[str],
                 fold: Callable[[list[str]], list[Any]], graph_name: str, policy: MixPolicy,
                 dtypes: Mapping[str, str] | None, training: bool,
                 pass_enabled: Callable[[str], bool] = all_on) -> None:
        self.policy = policy
        self.pass_enabled = pass_enabled
        self.training = training
        self.nodes = {node.name: node for node in graph_def.node}
        self.order = {node.name: n for n, node in enumerate(graph_def.node)}
        self.infos = tensor_infos(graph_def, dtypes)
        self.data_nodes = set(data_nodes)
        self.fold = fold
        self.graph_name = graph_name
        self.needed = self._needed(roots)
        # 4-D tensors are images (NHWC) only in a network that convolves or pools
        self.images = any(self.nodes[n].op in IMAGE_OPS for n in self.needed)
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
        if len(info.shape) != 4 or not self.images:  # attention's [batch, heads, seq, seq] is no image
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
                self.add(NpuOp(var, "Variable", "variable", [], [NpuTensor(  # its own dtype: int64 counters too
                    info.dtype, self.origin_format(tensor), info.shape, self.origin_format(tensor),
                    origin_name=name, origin_index=0)], original_names=[var]))
            self.tf_to_npu[tensor] = (var, 0)
        elif name in self.data_nodes:
            self.add(NpuOp(name, "Data", "data", [], [NpuTensor(
                info.dtype, self.origin_format(tensor), info.shape, self.origin_format(tensor),
                origin_name=name, origin_index=slot)], original_names=[name]))
            self.tf_to_npu[tensor] = (name, 0)
        elif self.is_foldable(name):
            value = self.constant(tensor)
            op_name = name if slot == 0 else f"{name}_{slot}"
            self.folded_values[tensor] = value
            fmt = self.origin_format(tensor) if len(value.shape) == 4 else "ND"  # a constant image batch is NHWC
            self.add(NpuOp(op_name, "Const", "const", [], [NpuTensor(
                str(value.dtype), fmt, tuple(value.shape), fmt, origin_name=name, origin_index=slot)],
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
        """The dtype of a hand-lowered op type: float16 unless the black list keeps it in float32."""
        if self.policy.mode != MIXED or self.policy.list_of(npu_type) == "black":
            return FLOAT32
        return FLOAT16

    def prefold(self) -> None:
        """Every constant input of the ops to lower, evaluated in one call: one session run per constant
        costs a new executor each time (half a minute for BERT's thousand)."""
        wanted = set()
        for name in self.needed:
            if self.is_foldable(name) or name in self.data_nodes or self.nodes[name].op in PASS_THROUGH_OPS:
                continue
            for ref in _data_inputs(self.nodes[name]):
                tensor = self.resolve(ref)
                if self.is_foldable(_split(tensor)[0]) and self.infos.get(tensor) is not None:
                    wanted.add(tensor)
        ordered = sorted(wanted)
        if ordered:
            self.folded_values.update(zip(ordered, self.fold(ordered)))

    def derive(self) -> NpuGraph:
        flow = sorted((n for n in self.needed if self.nodes[n].op in CONTROL_FLOW), key=self.order.__getitem__)
        if flow:
            raise SimulationUnsupported(f"{flow[0]} is a {self.nodes[flow[0]].op}: control flow and function calls "
                                        "(tf.cond, tf.while_loop, tf.function) are not simulated")
        self.prefold()
        planner = FusionPlanner(self.nodes, self.needed, self.order, self.resolve, PASS_THROUGH_OPS,
                                self.computed if self.training else None, self.pass_enabled)
        self.plan = plan = planner.plan()
        if self.training:
            add_scope_groups(plan, self.nodes, self.needed, self.order, self.resolve, self.computed, planner.users,
                             self.pass_enabled)
        self.fused_into = plan.fused_into
        joined = set(plan.bn_relu.values())  # Relus computed by their batch norm's update (UB fusion)
        for name in sorted(self.needed, key=self.order.__getitem__):
            if not self.computed(name) or name in self.fused_into or name in joined:
                continue
            if name in plan.groups:
                self.lower_group([self.nodes[n] for n in plan.groups[name]])
            elif name in plan.scopes:
                self.lower_scope(plan.scopes[name])
            elif name in plan.bn_split:
                self.lower_batch_norm_split(self.nodes[name])
            elif name in plan.conv_bn_reduce:
                self.lower_conv_bn_reduce(self.nodes[name])
            else:
                self.lower(self.nodes[name])
        return NpuGraph(self.graph_name, self.ops, plan.graph_fusion, plan.ub_fusion)

    def computed(self, name: str) -> bool:
        """Whether a needed TF node becomes an NPU op (not dropped, folded, fed or a variable)."""
        node = self.nodes[name]
        if (node.op in PASS_THROUGH_OPS or node.op in SKIPPED_OPS or node.op == "VarHandleOp"
                or name in self.data_nodes or self.is_foldable(name)):
            return False
        return not (node.op == "Reshape" and self.resolve(f"{name}:0") != f"{name}:0")

    def finish(self, node_name: str, op: NpuOp) -> None:
        self.add(op)
        for slot in range(len(op.outputs)):
            self.tf_to_npu[f"{node_name}:{slot}"] = (op.name, slot)


def derive_npu_graph(graph_def: Any, *, roots: Sequence[str], data_nodes: Sequence[str],
                     fold: Callable[[list[str]], list[Any]], graph_name: str,
                     keep_fp32: Collection[str] = frozenset(), policy: MixPolicy | None = None,
                     dtypes: Mapping[str, str] | None = None, training_passes: bool = False,
                     pass_enabled: Callable[[str], bool] = all_on) -> NpuGraph:
    """The compiled graph for the TF nodes `roots` need (data edges only, as GE prunes the rest).

    `graph_def` must carry `_output_shapes` (as_graph_def(add_shapes=True)); `fold(['node:slot', ...])`
    evaluates constant tensors (the compiler's constant folding); `data_nodes` become `Data` inputs.
    `policy`: the mixed-precision lists (default CANN's, allow_mix_precision); `keep_fp32`: NPU op types
    (e.g. "MatMulV2") added to its black list: their inputs and outputs are float32 (Casts follow).
    `dtypes`: 'node:slot' → dtype name from the tf.Graph (exact; else read from type attributes).
    `training_passes`: also the fusion passes of a training graph (`training_fusion`, the batch norm
    split); the small demos keep the few passes they were built with.
    `pass_enabled(pass name)`: False for a pass the fusion switch file turns off (it is not applied).
    SimulationUnsupported when the graph holds what the simulation does not model.
    """
    policy = (policy or MixPolicy()).with_changes(black_add=keep_fp32)
    return _Deriver(graph_def, roots, data_nodes, fold, graph_name, policy, dtypes, training_passes,
                    pass_enabled).derive()
