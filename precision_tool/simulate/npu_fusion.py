"""The demo compiler's fusion planning: which TF nodes become one NPU op, and what each pass did.

Conv2D+BiasAdd(+Relu) become one Conv2D (graph pass `AABiasaddConvFusion`, UB pass
`TbeConvElemwiseFusionPass`), MatMul+BiasAdd one MatMulV2 (`MatMulBiasAddFusionPass`);
`ConvBatchnormFusionPass` matches conv2+bn2 but does not fire (training-mode BatchNorm cannot fold).
With the training passes (`train -d sim`, `demo --model`): a training batch norm is split in two, Conv2D
joins the first half and a Relu the second (UB fusion); `training_fusion` adds layer norm and GELU.
`npu_graph` lowers the groups; this module only decides them, over the GraphDef's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping

# Graph fusion (GE) and UB fusion (TBE) pass names, as Ascend's fusion_result.json spells them.
PASS_CONV_BIAS = "AABiasaddConvFusion"
PASS_CONV_RELU_UB = "TbeConvElemwiseFusionPass"
PASS_MATMUL_BIAS = "MatMulBiasAddFusionPass"
PASS_CONV_BN = "ConvBatchnormFusionPass"  # matches conv2+bn2 but does not fire in training mode
# Training batch norm (the training passes): BN → `<bn>_Reduce` BNTrainingReduce + `<bn>_Update`
# BNTrainingUpdate, its gradient → `<grad>_Update` BNTrainingUpdateGrad + `<grad>_Reduce`
# BNTrainingReduceGrad; UB fusion then joins Conv2D with the reduce and the update with a following Relu.
PASS_BN_SPLIT = "FusedBatchnormFusionPass"
PASS_BN_GRAD_SPLIT = "FusedBatchNormGradFusionPass"
PASS_CONV_BNREDUCE_UB = "TbeConvBnreduceFusionPass"
PASS_BNUPDATE_RELU_UB = "BNUpdateEltwiseFusionPass"
# The UB (buffer) fusion passes; every other pass here is a graph fusion pass (the switch file's two groups).
UB_PASSES = frozenset({PASS_CONV_RELU_UB, PASS_CONV_BNREDUCE_UB, PASS_BNUPDATE_RELU_UB})


def all_on(pass_name: str) -> bool:
    """No fusion switch file: every pass runs."""
    return True


@dataclass
class FusionCount:
    """How often a fusion pass matched a pattern and how often it changed the graph."""

    match_times: int = 0
    effect_times: int = 0


@dataclass
class FusionPlan:
    """The groups to fuse and the passes' counts."""

    groups: dict[str, list[str]] = field(default_factory=dict)  # carrier (last TF node) → nodes, first to last
    fused_into: dict[str, str] = field(default_factory=dict)  # inner TF node → its group's carrier
    graph_fusion: dict[str, FusionCount] = field(default_factory=dict)
    ub_fusion: dict[str, FusionCount] = field(default_factory=dict)
    # the training passes (empty unless asked for)
    scopes: dict[str, Any] = field(default_factory=dict)  # last TF node → training_fusion.ScopeGroup
    bn_split: set[str] = field(default_factory=set)  # FusedBatchNormV3 / FusedBatchNormGradV3 nodes split in two
    conv_bn_reduce: dict[str, str] = field(default_factory=dict)  # Conv2D → the batch norm whose reduce joins it
    bn_relu: dict[str, str] = field(default_factory=dict)  # batch norm → the Relu joining its update


def split_ref(ref: str) -> tuple[str, int]:
    """'node:slot' → (node, slot); a bare 'node' is slot 0."""
    name, _, index = ref.partition(":")
    return name, int(index) if index else 0


def data_inputs(node: Any) -> list[str]:
    """A NodeDef's data inputs (control inputs `^name` left out)."""
    return [i for i in node.input if not i.startswith("^")]


def count(table: dict[str, FusionCount], name: str, *, effect: bool) -> None:
    entry = table.setdefault(name, FusionCount())
    entry.match_times += 1
    entry.effect_times += int(effect)


class FusionPlanner:
    """Plans the fused groups among the `needed` TF nodes (in GraphDef `order`): `resolve` maps an input
    reference past the ops the compiler drops, `pass_through` names those op types; `computed` (which
    nodes become NPU ops) asks for the batch norm passes of a training graph too."""

    def __init__(self, nodes: Mapping[str, Any], needed: Collection[str], order: Mapping[str, int],
                 resolve: Callable[[str], str], pass_through: Collection[str],
                 computed: Callable[[str], bool] | None = None,
                 enabled: Callable[[str], bool] = all_on) -> None:
        self.nodes, self.needed, self.order = nodes, needed, order
        self.enabled = enabled  # a pass the fusion switch file turns off is not applied (GE skips it)
        self.resolve, self.pass_through = resolve, pass_through
        self.computed = computed
        self._users: dict[str, set[str]] | None = None

    def consumers(self, name: str) -> list[str]:
        """The needed nodes reading `name` (past the dropped pass-through ops), in graph order."""
        if self._users is None:  # built once: a scan per call is quadratic on a 10,000-op graph
            self._users = {}
            for other in self.needed:
                if self.nodes[other].op in self.pass_through:
                    continue
                for ref in data_inputs(self.nodes[other]):
                    self._users.setdefault(split_ref(self.resolve(ref))[0], set()).add(other)
        found = self._users.get(name, set()) - {name}
        return sorted(found, key=self.order.__getitem__)

    def plan(self) -> FusionPlan:
        plan = FusionPlan()
        for name in sorted(self.needed, key=self.order.__getitem__):
            node = self.nodes[name]
            if node.op == "Conv2D":
                users = self.consumers(name)
                if len(users) == 1 and self.nodes[users[0]].op == "BiasAdd" and self.enabled(PASS_CONV_BIAS):
                    bias_add = users[0]
                    count(plan.graph_fusion, PASS_CONV_BIAS, effect=True)
                    group = [name, bias_add]
                    after = self.consumers(bias_add)
                    if len(after) == 1 and self.nodes[after[0]].op == "Relu" and self.enabled(PASS_CONV_RELU_UB):
                        group.append(after[0])
                        count(plan.ub_fusion, PASS_CONV_RELU_UB, effect=True)
                    plan.groups[group[-1]] = group
                elif (len(users) >= 1 and any(self.nodes[u].op.startswith("FusedBatchNorm") for u in users)
                      and self.enabled(PASS_CONV_BN)):
                    count(plan.graph_fusion, PASS_CONV_BN, effect=False)  # training-mode BN cannot fold
            elif node.op == "MatMul" and not node.attr["transpose_a"].b and not node.attr["transpose_b"].b:
                users = self.consumers(name)
                if (len(users) == 1 and self.nodes[users[0]].op == "BiasAdd"
                        and self.enabled(PASS_MATMUL_BIAS)):
                    count(plan.graph_fusion, PASS_MATMUL_BIAS, effect=True)
                    plan.groups[users[0]] = [name, users[0]]
        for carrier, group in plan.groups.items():
            for inner in group[:-1]:
                plan.fused_into[inner] = carrier
        if self.computed is not None:
            self.plan_training(plan)
        return plan

    def users(self, name: str) -> list[str]:
        """The nodes computed on the NPU that read `name`."""
        assert self.computed is not None
        return [u for u in self.consumers(name) if self.computed(u)]

    def plan_training(self, plan: FusionPlan) -> None:
        """The batch norm split and its UB fusions (`training_fusion` adds the scope groups)."""
        assert self.computed is not None
        for name in sorted(self.needed, key=self.order.__getitem__):
            node = self.nodes[name]
            if node.op not in ("FusedBatchNormV3", "FusedBatchNormGradV3") or not node.attr["is_training"].b:
                continue
            if not self.enabled(PASS_BN_GRAD_SPLIT if node.op == "FusedBatchNormGradV3" else PASS_BN_SPLIT):
                continue  # switched off: the batch norm stays one op
            plan.bn_split.add(name)
            if node.op == "FusedBatchNormGradV3":
                count(plan.graph_fusion, PASS_BN_GRAD_SPLIT, effect=True)
                continue
            count(plan.graph_fusion, PASS_BN_SPLIT, effect=True)
            x = split_ref(self.resolve(data_inputs(node)[0]))[0]
            if (self.nodes[x].op == "Conv2D" and x not in plan.fused_into and self.computed(x)
                    and self.enabled(PASS_CONV_BNREDUCE_UB)):
                plan.conv_bn_reduce[x] = name
                count(plan.ub_fusion, PASS_CONV_BNREDUCE_UB, effect=True)
            readers = [u for u in self.users(name)
                       if any(self.resolve(ref) == f"{name}:0" for ref in data_inputs(self.nodes[u]))]
            if len(readers) == 1 and self.nodes[readers[0]].op == "Relu" and self.enabled(PASS_BNUPDATE_RELU_UB):
                plan.bn_relu[name] = readers[0]
                count(plan.ub_fusion, PASS_BNUPDATE_RELU_UB, effect=True)
