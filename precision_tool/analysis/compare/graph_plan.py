"""NPU vs golden through the graph: which golden tensor each NPU op's inputs and outputs are compared with,
by msaccucmp's rules (fusion groups, Cast/TransData traced to their producer, origin names), as a MatchPlan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from precision_tool.analysis.compare.matching import (
    DEQUANT_NAME_ENDINGS, PASS_THROUGH_TYPES, DumpIndex, GoldenRef, GroupPlan, MatchPlan, OpPlan, TensorMatch,
    graph_op_name,
)
from precision_tool.analysis.compare.quant_filter import QUANT_NAME as _QUANT_NAME


# --- NPU vs golden through the graph --------------------------------------------------------------
def _group_key(op: "Op") -> str | tuple[str, ...]:  # type: ignore[name-defined]  # noqa: F821
    """msaccucmp's fusion-op name: the L1 group number, else the single original name, else the op's own
    name (attribute absent, empty, or ['']), all in one string namespace — so an op without the attribute
    and an op whose only original name is that op share a group. Several original names: their own key."""
    group = op.fusion_group
    if group is not None:
        return group
    names = op.original_op_names
    if not names or (len(names) == 1 and names[0] == ""):
        return op.name
    if len(names) == 1:
        return names[0]
    return ("multi", *names)


def _group_reason(members: Sequence["Op"], inner: set[str], graph: "_GraphIndex") -> str:  # type: ignore[name-defined]  # noqa: F821
    reasons = []
    for op in members:
        if op.name in graph.quant_filtered:
            continue
        if op.name in inner:
            reasons.append(f"[{op.name}] The op is inner node for multi to multi relation.Skip the op.")
        else:
            reasons.append(f'[{op.name}] There is no dump file for my output operator "{op.name}". '
                           f"The type is {op.type}.")
    return ",".join(reasons)


def _ground_truth_names(op: "Op") -> str:  # type: ignore[name-defined]  # noqa: F821
    names = op.original_op_names
    if names is None:
        return op.name
    return ",".join(names)


def _is_inner_node(op: "Op") -> bool:  # type: ignore[name-defined]  # noqa: F821
    multi = op.attrs.get("_datadump_is_multiop")
    return bool(multi) and not any(desc.origin_name for desc in op.output_descs)


class _GraphIndex:
    def __init__(self, ops: Sequence["Op"]) -> None:  # type: ignore[name-defined]  # noqa: F821
        self.by_name = {op.name: op for op in ops}
        self._ops = ops
        self._filtered: set[str] | None = None
        sizes: dict[str | tuple[str, ...], int] = {}
        for op in ops:
            key = _group_key(op)
            sizes[key] = sizes.get(key, 0) + 1
        self.group_size = {op.name: sizes[_group_key(op)] for op in ops}
        self._outputs: dict[tuple[str, int], TensorMatch] = {}
        """(op, output) → its golden: an output is asked for once as itself and once per consumer."""

    @property
    def quant_filtered(self) -> set[str]:
        """The ops msaccucmp's quant filter drops (computed when first asked: only inner-node groups ask)."""
        if self._filtered is None:
            from precision_tool.analysis.compare.quant_filter import quant_filtered

            self._filtered = quant_filtered(self._ops)
        return self._filtered

    def output_golden(self, op: "Op", index: int) -> TensorMatch:  # type: ignore[name-defined]  # noqa: F821
        key = (op.name, index)
        found = self._outputs.get(key)
        if found is None or self.by_name.get(op.name) is not op:
            found = output_golden(op, index, self.by_name.get, lambda o: self.group_size.get(o.name, 1))
            if self.by_name.get(op.name) is op:
                self._outputs[key] = found
        return found

    def input_golden(self, op: "Op", index: int, inputs: list[tuple[str, int]] | None = None) -> TensorMatch:  # type: ignore[name-defined]  # noqa: F821
        """`inputs`: op.data_inputs when the caller has them (they are parsed from text each time)."""
        producer_name, producer_index = (op.data_inputs if inputs is None else inputs)[index]
        producer = self.by_name.get(producer_name)
        if producer is None:
            return TensorMatch(None, f'There is no "{producer_name}" in the graph.')
        return self.output_golden(producer, producer_index)


def output_golden(op: Any, index: int, producer: Callable[[str], Any], group_size: Callable[[Any], int],
                  seen: int = 0) -> TensorMatch:
    """The golden of output `index` of `op`, as msaccucmp finds it: through inserted Cast/TransData ops to the
    producer (`producer(name)` looks an op up), then the output desc's origin name, else the op's one original
    name when it is alone in its group (`group_size`), else its own name when it has none."""
    if op.type in PASS_THROUGH_TYPES and seen < 64:
        inputs = op.data_inputs
        if index < len(inputs):
            producer_name, producer_index = inputs[index]
            found = producer(producer_name)
            if found is None:
                return TensorMatch(None, f'There is no "{producer_name}" in the graph.')
            return output_golden(found, producer_index, producer, group_size, seen + 1)
    desc = op.output_descs[index] if index < len(op.output_descs) else None
    origin = desc.origin_name if desc is not None else None
    if origin:
        name: str | None = origin
    else:
        names = op.original_op_names
        if names is None:
            name = op.name
        elif len(names) == 1 and names[0] and group_size(op) == 1 and _group_key(op) == names[0]:
            name = names[0]  # msaccucmp's "rename node": alone in a group named by its original name
        else:
            name = None
    if name is None:
        return TensorMatch(None)
    golden_index = desc.origin_output_index if desc is not None and desc.origin_output_index is not None else index
    layout = desc.origin_format if desc is not None else None
    shape = desc.origin_shape if desc is not None else None
    return TensorMatch(GoldenRef(name, int(golden_index), layout or None, shape))


def _without_lxslice(ops: Sequence["Op"]) -> Sequence["Op"]:  # type: ignore[name-defined]  # noqa: F821
    """The ops with `_lxslice<k>` removed from their names and inputs, as msaccucmp reads the graph."""
    import dataclasses

    if not any("_lxslice" in op.name or any("_lxslice" in i for i in op.inputs) for op in ops):
        return ops
    return [dataclasses.replace(op, name=graph_op_name(op.name), inputs=[graph_op_name(i) for i in op.inputs])
            if "_lxslice" in op.name or any("_lxslice" in i for i in op.inputs) else op for op in ops]


@dataclass  # not frozen: a graph has tens of thousands, and a frozen one costs four times as much to make
class MemberSide:
    """One op of a fusion group as the graph alone decides it: its OpPlan but for the dump file."""

    name: str
    op_type: str
    inputs: tuple[TensorMatch, ...]
    outputs: tuple[TensorMatch, ...]
    skip_inputs: bool
    skip_outputs: bool
    sequence: int
    ground_truth: str
    """Its TF names, joined (the group's GroundTruth text is made of these)."""
    inner: bool
    """An inner node of a multi-to-multi fusion: msaccucmp never compares it."""

    def plan(self, dump: Path | None) -> OpPlan:
        return OpPlan(self.name, self.op_type, dump, self.inputs, self.outputs, None, self.skip_inputs,
                      self.skip_outputs, self.sequence)


@dataclass  # not frozen, as MemberSide
class GroupSide:
    """One fusion group (msaccucmp's Index) as the graph alone decides it."""

    members: tuple[MemberSide, ...]
    npu_text: str
    ground_truth_text: str
    sequences: tuple[int, ...]
    reason: str = ""
    """The group's NaN row when no member has a dump to compare (several members only)."""


@dataclass(frozen=True)
class GraphSide:
    """Everything of a plan that the graph decides: the same for every dump of that graph, so it can be
    worked out once and kept (plan_cache.py); plan_from_side adds the dump files."""

    groups: tuple[GroupSide, ...]
    op_count: int
    warnings: tuple[str, ...] = ()


def plan_graph_compare(
    graph_ops: Sequence["Op"],  # type: ignore[name-defined]  # noqa: F821
    dumps: DumpIndex,
    *,
    all_ops: Sequence["Op"] | None = None,  # type: ignore[name-defined]  # noqa: F821
) -> MatchPlan:
    """Rows of an NPU-vs-golden run from the ops of one graph (in file order) and a dump index."""
    return plan_from_side(graph_side(graph_ops, all_ops=all_ops), dumps)


def graph_side(
    graph_ops: Sequence["Op"],  # type: ignore[name-defined]  # noqa: F821
    *,
    all_ops: Sequence["Op"] | None = None,  # type: ignore[name-defined]  # noqa: F821
) -> GraphSide:
    """The graph's part of a plan: fusion groups in file order, each op's golden for every tensor."""
    graph_ops = _without_lxslice(graph_ops)
    graph = _GraphIndex(_without_lxslice(all_ops) if all_ops is not None else graph_ops)
    groups: dict[str | tuple[str, ...], list["Op"]] = {}  # type: ignore[name-defined]  # noqa: F821
    for op in graph_ops:
        groups.setdefault(_group_key(op), []).append(op)
    sides: list[GroupSide] = []
    for members in groups.values():
        member_sides = []
        for op in members:
            outputs = max(len(op.output_descs), 1)
            data_inputs = op.data_inputs
            member_sides.append(MemberSide(
                op.name, op.type, tuple(graph.input_golden(op, i, data_inputs) for i in range(len(data_inputs))),
                tuple(graph.output_golden(op, i) for i in range(outputs)),
                op.type == "AscendDequant" or op.name.endswith(DEQUANT_NAME_ENDINGS), op.type == "AscendQuant",
                int(op.id or 0), _ground_truth_names(op), len(members) > 1 and _is_inner_node(op)))
        sequences = tuple(int(op.id or 0) for op in members)
        if len(members) == 1:
            sides.append(GroupSide((member_sides[0],), members[0].name, member_sides[0].ground_truth or "*",
                                   sequences))
            continue
        by_names: dict[str, list[str]] = {}
        for member in member_sides:
            by_names.setdefault(member.ground_truth, []).append(member.name)
        inner = {m.name for m in member_sides if m.inner}
        sides.append(GroupSide(tuple(member_sides), ",".join(n for names in by_names.values() for n in names),
                               ",".join(by_names), sequences, _group_reason(members, inner, graph)))
    warnings: list[str] = []
    bare = [op.name for op in graph_ops if len(op.output_descs) > 1 and any(not d.attrs for d in op.output_descs)]
    if bare:
        warnings.append(
            f"{len(bare)} ops (e.g. {bare[0]}) have output descs without attributes: msaccucmp drops those descs and "
            "pairs the later outputs with the wrong golden tensors (an index past the end falls back to output 0); "
            "here output i always uses output_desc[i], so its rows for these ops differ from msaccucmp's"
        )
    quant = [op.name for op in graph_ops if _QUANT_NAME.search(op.name + "".join(op.original_op_names or []))]
    if quant:
        warnings.append(
            f"the graph is quantized ({len(quant)} quantize ops, e.g. {quant[0]}): AscendQuant outputs and "
            "dequantize inputs are not compared (as msaccucmp); msaccucmp also skips the ops between a quantize "
            "and its dequantize op, which are compared here"
        )
    return GraphSide(tuple(sides), len(graph_ops), tuple(warnings))


def plan_from_side(side: GraphSide, dumps: DumpIndex) -> MatchPlan:
    """The plan of one run: the graph's side with each op's dump file (a group of several ops keeps the
    members that have one and are not inner nodes; none left: the group's one NaN row)."""
    plans: list[GroupPlan] = []
    used: set[str] = set()  # the dump index's keys (a key per file: hashing text, not 20,000 Paths)
    by_op = dumps.plan_paths()
    for number, group in enumerate(side.groups):
        members = []
        for member in group.members:
            key = dumps.key(member.name)
            dump = by_op.get(key)
            if dump is not None:
                used.add(key)
            members.append((member.plan(dump), member.inner))
        plans.append(group_plan(number, members, group.npu_text, group.ground_truth_text, group.sequences,
                                group.reason))
    ops_with_dump = sum(1 for g in plans for p in g.ops if p.dump_path is not None)
    return MatchPlan(tuple(plans), npu_vs_npu=False,
                     warnings=plan_warnings(side.warnings, side.op_count, len(used), len(by_op), ops_with_dump),
                     matched_dumps=len(used), unmatched_dumps=len(by_op) - len(used))


def group_plan(number: int, members: Sequence[tuple[OpPlan, bool]], npu_text: str, ground_truth_text: str,
               sequences: tuple[int, ...], reason: str) -> GroupPlan:
    """Group `number` of a plan from (op plan, inner node?) of each member: a group of several ops keeps the
    members that have a dump and are not inner nodes; none left, its first op with the group's NaN reason."""
    if len(members) == 1:
        kept = [members[0][0]]
    else:
        kept = [p for p, inner in members if p.dump_path is not None and not inner]
        if not kept:
            # msaccucmp's one NaN row: each op's reason (inner node / no dump), quant-filtered ops unsaid
            kept = [dataclasses.replace(members[0][0], skip_reason=reason)]
    return GroupPlan(number, tuple(kept), npu_text, ground_truth_text, sequences)


def plan_warnings(side_warnings: Sequence[str], op_count: int, matched: int, dump_files: int,
                  ops_with_dump: int) -> tuple[str, ...]:
    """The graph's warnings, and one when graph and dump folder seem not to belong together (`matched` of
    the folder's `dump_files` named by a graph op; `ops_with_dump`: planned ops that have a dump)."""
    unmatched = dump_files - matched
    if op_count and (matched == 0 or unmatched > matched):
        return (*side_warnings, f"the graph and the dump folder do not seem to belong together: {ops_with_dump} of "
                f"{op_count} graph ops have a dump, {unmatched} dump files match no graph op")
    return tuple(side_warnings)
