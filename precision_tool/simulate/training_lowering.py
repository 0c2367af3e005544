"""How the fused ops of a training graph are lowered (a mixin of `npu_graph._Deriver`, like `lowering`):
the batch norm split in two and its UB fusions (`npu_fusion.FusionPlanner.plan_training`), and the
scope groups of `training_fusion` (LayerNorm, LayerNormGrad, Gelu).

A batch norm's statistics are float32 on the NPU whatever the data's dtype: the reduce outputs the
per-channel sum and sum of squares, the update normalises with them. A scope group keeps its TF nodes
(`params["nodes"]`) and is computed as one kernel: float32 inside (as the fused kernels of CANN compute),
its float inputs and outputs in the dtype the mixed-precision lists give the fused op type.
"""

from __future__ import annotations

from typing import Any

from precision_tool.simulate.graph_model import FLOAT16, FLOAT32, NpuOp, NpuTensor
from precision_tool.simulate.lowering import stripped_node_def
from precision_tool.simulate.npu_fusion import (PASS_BN_GRAD_SPLIT, PASS_BN_SPLIT, PASS_BNUPDATE_RELU_UB,
                                                PASS_CONV_BNREDUCE_UB, data_inputs, split_ref)

FLOATS = frozenset({FLOAT16, FLOAT32})


class TrainingLowering:
    """The training passes' half of `_Deriver` (which holds the state these methods use)."""

    infos: dict[str, Any]
    nodes: dict[str, Any]
    plan: Any
    tf_to_npu: dict[str, tuple[str, int]]

    def _statistic(self, channels: int) -> NpuTensor:
        return NpuTensor(FLOAT32, "ND", (channels,), "ND")

    def _channels(self, tensor: str) -> int:
        return int(self.infos[self.resolve(tensor)].shape[-1])

    def _map(self, op: NpuOp, tensors: list[str | None]) -> None:
        """Add the op; its output k stands for the TF tensor `tensors[k]` (None: no TF counterpart)."""
        self.add(op)
        for slot, tensor in enumerate(tensors):
            if tensor is not None:
                self.tf_to_npu[tensor] = (op.name, slot)

    def lower_conv_bn_reduce(self, conv: Any) -> None:
        """Conv2D and the reduce half of the batch norm it feeds, one UB-fused kernel named after both
        (as GE names a UB fusion), typed Conv2D: the convolution and its per-channel sums."""
        bn = self.plan.conv_bn_reduce[conv.name]
        lo = self.low("Conv2D")
        x, w = data_inputs(conv)
        channels = self._channels(f"{conv.name}:0")
        op = NpuOp(conv.name + bn + "_Reduce", "Conv2D", "compute",
                   [self.feed(x, lo, "NC1HWC0"), self.feed(w, lo, "FRACTAL_Z")],
                   [self.output(conv.name, 0, lo, "NC1HWC0"), self._statistic(channels), self._statistic(channels)],
                   original_names=[conv.name, bn], pass_name=PASS_BN_SPLIT, pass_name_ub=PASS_CONV_BNREDUCE_UB,
                   params={"strides": list(conv.attr["strides"].list.i), "padding": conv.attr["padding"].s.decode(),
                           "bias": False, "relu": False, "bn_reduce": True})
        self._map(op, [f"{conv.name}:0", None, None])

    def lower_batch_norm_split(self, node: Any) -> None:
        if node.op == "FusedBatchNormGradV3":
            self._batch_norm_grad_split(node)
            return
        name = node.name
        lo = self.low("BNTrainingUpdate")
        x, scale, offset = data_inputs(node)[:3]
        channels = self._channels(x)
        fused_conv = next((c for c, b in self.plan.conv_bn_reduce.items() if b == name), None)
        if fused_conv is not None:
            sums = self.tf_to_npu[f"{fused_conv}:0"][0]
            reduced = [(sums, 1), (sums, 2)]
        else:
            reduce = NpuOp(f"{name}_Reduce", "BNTrainingReduce", "compute", [self.feed(x, lo, "NC1HWC0")],
                           [self._statistic(channels), self._statistic(channels)], original_names=[name],
                           pass_name=PASS_BN_SPLIT)
            self._map(reduce, [None, None])
            reduced = [(reduce.name, 0), (reduce.name, 1)]
        relu = self.plan.bn_relu.get(name)
        y_node = relu or name
        update = NpuOp(f"{name}_Update" + (relu or ""), "BNTrainingUpdate", "compute",
                       [self.feed(x, lo, "NC1HWC0"), *reduced, self.feed(scale, FLOAT32, "ND"),
                        self.feed(offset, FLOAT32, "ND")],
                       [self.output(y_node, 0, lo, "NC1HWC0")]
                       + [self.output(name, slot, FLOAT32, "ND") for slot in (1, 2, 3, 4)],
                       original_names=[name] + ([relu] if relu else []), pass_name=PASS_BN_SPLIT,
                       pass_name_ub=PASS_BNUPDATE_RELU_UB if relu else None,
                       params={"epsilon": float(node.attr["epsilon"].f), "relu": bool(relu)})
        self._map(update, [f"{y_node}:0"] + [f"{name}:{slot}" for slot in (1, 2, 3, 4)])

    def _batch_norm_grad_split(self, node: Any) -> None:
        """FusedBatchNormGradV3 → `_Update` (the scale and offset gradients) then `_Reduce` (dx)."""
        name = node.name
        lo = self.low("BNTrainingUpdateGrad")
        dy, x, scale, mean, variance = data_inputs(node)[:5]
        epsilon = float(node.attr["epsilon"].f)
        update = NpuOp(f"{name}_Update", "BNTrainingUpdateGrad", "compute",
                       [self.feed(dy, lo, "NC1HWC0"), self.feed(x, lo, "NC1HWC0"), self.feed(mean, FLOAT32, "ND"),
                        self.feed(variance, FLOAT32, "ND")],
                       [self.output(name, 1, FLOAT32, "ND"), self.output(name, 2, FLOAT32, "ND")],
                       original_names=[name], pass_name=PASS_BN_GRAD_SPLIT, params={"epsilon": epsilon})
        self._map(update, [f"{name}:1", f"{name}:2"])
        reduce = NpuOp(f"{name}_Reduce", "BNTrainingReduceGrad", "compute",
                       [self.feed(dy, lo, "NC1HWC0"), self.feed(x, lo, "NC1HWC0"), (update.name, 0), (update.name, 1),
                        self.feed(scale, FLOAT32, "ND"), self.feed(mean, FLOAT32, "ND"),
                        self.feed(variance, FLOAT32, "ND")],
                       [self.output(name, 0, lo, "NC1HWC0")], original_names=[name], pass_name=PASS_BN_GRAD_SPLIT,
                       params={"epsilon": epsilon})
        self._map(reduce, [f"{name}:0"])

    def lower_scope(self, group: Any) -> None:
        """A scope group as one op computing its TF nodes from the tensors it reads."""
        members = set(group.members)
        externals: list[str] = []
        wiring: list[list[Any]] = []
        for member in group.members:
            refs = []
            for ref in data_inputs(self.nodes[member]):
                tensor = self.resolve(ref)
                if split_ref(tensor)[0] in members:
                    refs.append(tensor)
                else:
                    if tensor not in externals:
                        externals.append(tensor)
                    refs.append(externals.index(tensor))
            wiring.append(refs)
        dtype = self.gray(group.type, externals)
        inputs = []
        for tensor in externals:
            own, _layout, constant = self.peek(tensor)
            # a constant (an epsilon of 1e-12) is the fused kernel's attribute: it keeps its dtype
            float_input = self.infos[tensor].dtype in FLOATS and not constant
            inputs.append(self.feed(tensor, dtype if float_input else own, "natural"))
        outputs = []
        for tensor in group.outputs:
            node, slot = split_ref(tensor)
            info = self.infos[tensor]
            outputs.append(self.output(node, slot, dtype if info.dtype in FLOATS else info.dtype, "natural"))
        op = NpuOp(group.name, group.type, "compute", inputs, outputs, original_names=group.original_names(self.order),
                   pass_name=group.pass_name, params={
                       "nodes": [stripped_node_def(self.nodes[m]) for m in group.members], "wiring": wiring,
                       "names": list(group.members), "outputs": list(group.outputs),
                       "counts": [len(self.output_tensors(m)) for m in group.members]})
        self._map(op, list(group.outputs))
