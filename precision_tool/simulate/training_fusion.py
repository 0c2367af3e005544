"""The fusion passes of a training graph that replace several TF ops with one NPU op (`ScopeGroup`), as
Ascend's TF parser and graph compiler do for BERT's and ResNet's training steps.

- `ScopeLayerNormPass` (a TF scope fusion pass of the parser): the `<P>/moments/` and `<P>/batchnorm/`
  scopes tf.contrib.layers.layer_norm and tf.nn.batch_normalization build become one `LayerNorm` op named
  `<P>` (GE keeps the scope's trailing `/`; we drop it), outputs y (`batchnorm/add_1`), mean
  (`moments/mean`) and `batchnorm/Rsqrt`, as the pass maps them.
- `ScopeLayerNormGradPass`: their gradient scopes (`gradients/<P>/...`) become one `LayerNormGrad`; the
  AddN summing only the scope's partial input gradients is absorbed (the pass's LayerNormGrad + Add).
  Forward tensors it reads that `LayerNorm` does not output (`batchnorm/mul` = gamma·rsqrt) are
  recomputed inside it, as the real LayerNormGrad recomputes from x, mean, variance and gamma.
- `GeluFusionPass`: Pow→Mul→Add→Mul→Tanh→Add→Mul→Mul (BERT's tanh GELU) becomes one `Gelu` named
  `<pow>/Gelu`, but only when no op outside reads the pattern's inner tensors (the pass checks each
  has one consumer). In a training graph TanhGrad reads the Tanh, so it matches and does not fire.
The batch norm split (FusedBatchnormFusionPass and its UB fusions) is planned in `npu_fusion`.
No pass fuses BatchMatMul with SoftmaxV2 (none was found in CANN's fusion passes), so none is made here.

Sources: canndev `ops/built-in/framework/tf_scope_fusion_passes/scope_layernorm{,_grad}_pass.cc` and
`fusion_pass/graph_fusion/ai_core/gelu_fusion_pass.cc` (docs/simulate.md has the commits).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping

from precision_tool.simulate.npu_fusion import FusionCount, FusionPlan, count, data_inputs, split_ref

PASS_LAYER_NORM = "ScopeLayerNormPass"
PASS_LAYER_NORM_GRAD = "ScopeLayerNormGradPass"
PASS_GELU = "GeluFusionPass"
_GRADIENT_SCOPE = re.compile(r"^(gradients(?:_\d+)?/)")


@dataclass
class ScopeGroup:
    """TF nodes computed as one NPU op: the op's name, type and pass, the nodes it computes in graph order
    (`recomputed` ones belong to another group too), and the TF tensors it outputs, in order."""

    name: str
    type: str
    pass_name: str
    members: list[str]
    outputs: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
    passive: list[str] = field(default_factory=list)  # the scope's Identity and no-op Reshape nodes

    @property
    def computed_originals(self) -> list[str]:
        """The TF nodes it stands for that it computes (in graph order)."""
        return [m for m in self.members if m not in self.recomputed]

    def original_names(self, order: Mapping[str, int]) -> list[str]:
        """Every TF node of its scope, as `_datadump_original_op_names` lists them (a replay rebuilds them)."""
        return sorted(self.computed_originals + self.passive, key=order.__getitem__)


class _ScopePlanner:
    def __init__(self, nodes: Mapping[str, Any], needed: Collection[str], order: Mapping[str, int],
                 resolve: Callable[[str], str], computed: Callable[[str], bool],
                 users: Callable[[str], list[str]]) -> None:
        self.nodes, self.order, self.resolve = nodes, order, resolve
        self.sorted = sorted(needed, key=order.__getitem__)
        self.computed = [n for n in self.sorted if computed(n)]
        self.is_computed = set(self.computed)
        self.users = users
        self.graph_fusion: dict[str, FusionCount] = {}

    def inputs(self, name: str) -> list[str]:
        return [self.resolve(ref) for ref in data_inputs(self.nodes[name])]

    # --- layer norm ------------------------------------------------------------------------------------
    def layer_norms(self) -> list[ScopeGroup]:
        found = []
        for name in self.computed:
            if self.nodes[name].op != "Rsqrt" or not name.endswith("/batchnorm/Rsqrt"):
                continue
            prefix = name[:-len("batchnorm/Rsqrt")]
            members = [n for n in self.computed if n.startswith(prefix + "batchnorm/")
                       or n.startswith(prefix + "moments/")]
            kinds = Counter(self.nodes[n].op for n in members)
            if (kinds["Mean"] == 2 and kinds["SquaredDifference"] == 1 and kinds["Rsqrt"] == 1
                    and kinds["Sub"] == 1 and kinds["Add"] + kinds["AddV2"] == 2 and kinds["Mul"] == 3):
                found.append(ScopeGroup(prefix.rstrip("/"), "LayerNorm", PASS_LAYER_NORM, members, outputs=[
                    f"{prefix}batchnorm/add_1:0", f"{prefix}moments/mean:0", f"{prefix}batchnorm/Rsqrt:0"],
                    passive=self._passive(lambda n: n.startswith(prefix + "batchnorm/")
                                          or n.startswith(prefix + "moments/"))))
        return found

    def layer_norm_grad(self, forward: ScopeGroup) -> ScopeGroup | None:
        prefix = forward.name + "/"
        def in_scope(name: str) -> bool:
            scope = _GRADIENT_SCOPE.match(name)
            rest = name[len(scope.group(1)):] if scope else ""
            return rest.startswith(prefix + "batchnorm/") or rest.startswith(prefix + "moments/")

        members = [n for n in self.computed if in_scope(n)]
        if not any("/batchnorm/Rsqrt_grad/" in m for m in members) or \
                not any("/moments/SquaredDifference_grad/" in m for m in members):
            return None
        inside = set(members)
        grown = True
        while grown:  # the AddNs that sum only the scope's partial gradients
            grown = False
            for name in self.computed:
                if name not in inside and self.nodes[name].op == "AddN" and all(
                        split_ref(ref)[0] in inside for ref in self.inputs(name)):
                    inside.add(name)
                    grown = True
        members = [n for n in self.computed if n in inside]
        scope = _GRADIENT_SCOPE.match(members[0]).group(1)
        group = ScopeGroup(scope + forward.name, "LayerNormGrad", PASS_LAYER_NORM_GRAD, members,
                           passive=self._passive(in_scope))
        self._recompute(group, forward)
        return group

    def _passive(self, in_scope: Callable[[str], bool]) -> list[str]:
        return [n for n in self.sorted if n not in self.is_computed and in_scope(n)
                and self.nodes[n].op in ("Identity", "Reshape")]

    def _recompute(self, group: ScopeGroup, forward: ScopeGroup) -> None:
        """Forward tensors the group reads that the forward op does not output: their nodes join it."""
        own = set(forward.members)
        held = set(forward.outputs)
        extra: set[str] = set()
        stack = [ref for m in group.members for ref in self.inputs(m)]
        while stack:
            ref = stack.pop()
            node = split_ref(ref)[0]
            if node in own and ref not in held and node not in extra:
                extra.add(node)
                stack.extend(self.inputs(node))
        group.recomputed = [n for n in forward.members if n in extra]
        group.members = sorted(set(group.members) | extra, key=self.order.__getitem__)

    # --- GELU ------------------------------------------------------------------------------------------
    def gelus(self) -> list[ScopeGroup]:
        found = []
        for name in self.computed:
            if self.nodes[name].op != "Tanh":
                continue
            chain = self._gelu_chain(name)
            if chain is None:
                continue
            inner = chain[:-1]
            fires = all(len(self.users(n)) == 1 for n in inner)  # the pass: one consumer each
            count(self.graph_fusion, PASS_GELU, effect=fires)
            if fires:
                found.append(ScopeGroup(chain[0] + "/Gelu", "Gelu", PASS_GELU, chain, outputs=[f"{chain[-1]}:0"]))
        return found

    def _gelu_chain(self, tanh: str) -> list[str] | None:
        """[pow, mul, add, mul_1, tanh, add_1, mul_2, mul_3] around a Tanh, or None."""
        def producer(name: str, op_type: str | tuple[str, ...]) -> str | None:
            kinds = (op_type,) if isinstance(op_type, str) else op_type
            found = [split_ref(r)[0] for r in self.inputs(name) if split_ref(r)[0] in self.is_computed
                     and self.nodes[split_ref(r)[0]].op in kinds]
            return found[0] if len(found) == 1 else None

        def consumer(name: str, op_type: str | tuple[str, ...], other: Callable[[str], bool]) -> str | None:
            """The one reader of `name` of that type whose other input passes `other` (the gradient's
            readers of the same type are told apart so)."""
            kinds = (op_type,) if isinstance(op_type, str) else op_type
            found = [u for u in self.users(name) if self.nodes[u].op in kinds and any(
                other(split_ref(r)[0]) for r in self.inputs(u) if split_ref(r)[0] != name)]
            return found[0] if len(found) == 1 else None

        def constant(name: str) -> bool:
            return name not in self.is_computed and self.nodes[name].op == "Const"

        mul_1 = producer(tanh, "Mul")
        add = mul_1 and producer(mul_1, ("Add", "AddV2"))
        mul = add and producer(add, "Mul")
        pow_ = mul and producer(mul, "Pow")
        if not pow_:
            return None
        x = self.inputs(pow_)[0]
        add_1 = consumer(tanh, ("Add", "AddV2"), constant)
        mul_2 = add_1 and consumer(add_1, "Mul", constant)
        mul_3 = mul_2 and consumer(mul_2, "Mul", lambda n: n == split_ref(x)[0])
        if not mul_3 or x not in self.inputs(add):
            return None
        return [pow_, mul, add, mul_1, tanh, add_1, mul_2, mul_3]

    # --- all -------------------------------------------------------------------------------------------
    def plan(self) -> list[ScopeGroup]:
        groups: list[ScopeGroup] = []
        for forward in self.layer_norms():
            grad = self.layer_norm_grad(forward)
            pair = [forward] + ([grad] if grad else [])
            if self._outputs(pair):
                for group in pair:
                    count(self.graph_fusion, group.pass_name, effect=True)
                groups += pair
            else:
                count(self.graph_fusion, forward.pass_name, effect=False)
        taken = {m for g in groups for m in g.computed_originals}
        for gelu in self.gelus():
            if not taken.intersection(gelu.members) and self._outputs([gelu]):
                groups.append(gelu)
        return groups

    def _outputs(self, pair: list[ScopeGroup]) -> bool:
        """Each group's outputs: its declared ones, then every other tensor of its own nodes that an op
        outside reads (a group recomputing that node computes it itself). False when such an op runs
        before the group's last node (the fused op could not feed it)."""
        for group in pair:
            carrier = self.order[group.computed_originals[-1]]
            members = set(group.members)
            for node in group.computed_originals:
                needing = [u for u in self.users(node) if u not in members and not any(
                    u in other.members and node in other.recomputed for other in pair)]
                for slot in self._slots_read(node, needing):
                    if f"{node}:{slot}" not in group.outputs:
                        group.outputs.append(f"{node}:{slot}")
                if any(self.order[u] < carrier for u in needing):
                    return False
        return True

    def _slots_read(self, node: str, readers: list[str]) -> list[int]:
        slots = {split_ref(ref)[1] for u in readers for ref in self.inputs(u) if split_ref(ref)[0] == node}
        return sorted(slots)


def plan_scopes(nodes: Mapping[str, Any], needed: Collection[str], order: Mapping[str, int],
                resolve: Callable[[str], str], computed: Callable[[str], bool],
                users: Callable[[str], list[str]]) -> tuple[list[ScopeGroup], dict[str, FusionCount]]:
    """The scope groups among the needed TF nodes and the passes' counts. `computed(name)`: the node
    becomes an NPU op (not folded, dropped or fed); `users(name)`: the needed nodes reading it."""
    planner = _ScopePlanner(nodes, needed, order, resolve, computed, users)
    return planner.plan(), planner.graph_fusion


def add_scope_groups(plan: FusionPlan, nodes: Mapping[str, Any], needed: Collection[str],
                     order: Mapping[str, int], resolve: Callable[[str], str], computed: Callable[[str], bool],
                     users: Callable[[str], list[str]], enabled: Callable[[str], bool] = lambda name: True) -> None:
    """`plan_scopes`'s groups and counts added to a fusion plan (groups overlapping its own left out, and
    those of a pass the fusion switch file turns off: GE does not run it, so it is not counted either)."""
    taken = {n for group in plan.groups.values() for n in group}
    groups, counts = plan_scopes(nodes, needed, order, resolve, computed, users)
    counts = {name: entry for name, entry in counts.items() if enabled(name)}
    for group in groups:
        if not enabled(group.pass_name):
            continue
        if taken.intersection(group.members):  # another pass took one of its nodes first: it did not fire
            counts[group.pass_name].effect_times -= 1
            continue
        plan.scopes[group.computed_originals[-1]] = group
        for inner in group.computed_originals[:-1]:
            plan.fused_into[inner] = group.computed_originals[-1]
    for name, entry in counts.items():
        total = plan.graph_fusion.setdefault(name, FusionCount())
        total.match_times += entry.match_times
        total.effect_times += entry.effect_times
