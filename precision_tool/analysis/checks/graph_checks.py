"""Graph checks of `ac`: lossy Cast ops, and op-by-op similarity of two NPU runs' Build graphs.

Why: a Cast from fp32 to fp16 (or float to int) is where precision is most often thrown away; and when
two NPU runs (debug_0, debug_1) disagree, the first thing to know is whether they even ran the same
compiled graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.graphs.graph_summary import OpEntry, cast_dtypes
from precision_tool.formats.ge.ge_graph import Graph, Op, TensorDesc, load_graph
from precision_tool.workspace import Workspace

# dtype name → (kind, bits, significant bits); kind: f float, i signed, u unsigned, b bool
_DTYPES: dict[str, tuple[str, int, int]] = {
    "DT_DOUBLE": ("f", 64, 53), "DT_FLOAT": ("f", 32, 24), "DT_FLOAT16": ("f", 16, 11),
    "DT_BF16": ("f", 16, 8), "DT_HIFLOAT8": ("f", 8, 4), "DT_FLOAT8_E5M2": ("f", 8, 3),
    "DT_FLOAT8_E4M3FN": ("f", 8, 4),
    "DT_INT64": ("i", 64, 63), "DT_INT32": ("i", 32, 31), "DT_INT16": ("i", 16, 15), "DT_INT8": ("i", 8, 7),
    "DT_INT4": ("i", 4, 3), "DT_UINT64": ("u", 64, 64), "DT_UINT32": ("u", 32, 32),
    "DT_UINT16": ("u", 16, 16), "DT_UINT8": ("u", 8, 8), "DT_BOOL": ("b", 1, 1),
}
_FLOAT_MAX_EXP = {64: 1024, 32: 128, 16: 16, 8: 16}
_BF16_EXP = 128


def cast_loses_information(src: str, dst: str) -> str | None:
    """Why a Cast from src to dst can lose information, or None when it cannot (or is unknown)."""
    a, b = _DTYPES.get(src), _DTYPES.get(dst)
    if a is None or b is None or src == dst:
        return None
    (ka, bits_a, sig_a), (kb, bits_b, sig_b) = a, b
    if ka == "b":
        return None
    if kb == "b":
        return "only zero/non-zero survives"
    if ka == "f" and kb in "iu":
        return "the fraction is dropped and large values overflow"
    if ka == "f" and kb == "f":
        exp_a = _BF16_EXP if src == "DT_BF16" else _FLOAT_MAX_EXP.get(bits_a, 16)
        exp_b = _BF16_EXP if dst == "DT_BF16" else _FLOAT_MAX_EXP.get(bits_b, 16)
        reasons = []
        if sig_b < sig_a:
            reasons.append("fewer mantissa bits")
        if exp_b < exp_a:
            reasons.append("smaller range (overflow to inf)")
        return " and ".join(reasons) or None
    if ka in "iu" and kb == "f":
        return "integers beyond the float's mantissa are rounded" if sig_a > sig_b else None
    # integer → integer
    if ka == "i" and kb == "u":
        return "negative values wrap"
    if sig_b < sig_a:
        return "large values wrap"
    return None


@dataclass(frozen=True)
class CastGroup:
    """Cast ops with the same lossy dtype pair."""

    src: str
    dst: str
    reason: str
    op_names: tuple[str, ...]


def lossy_casts(index: GraphIndex) -> list[CastGroup]:
    """Cast ops of the Build graphs whose dtype pair can lose information, grouped by pair."""
    groups: dict[tuple[str, str], list[str]] = {}
    seen: set[tuple[int, str]] = set()
    for entry in index.entries():
        if entry.type != "Cast" or (entry.debug_id, entry.name) in seen:
            continue
        seen.add((entry.debug_id, entry.name))
        # (the dtypes the graph's summary keeps; a summary without them: the op's own block)
        pair = (entry.cast or None) if entry.cast is not None else cast_dtypes(index.op(entry))
        if pair is None or cast_loses_information(*pair) is None:
            continue
        names = groups.setdefault(pair, [])
        if entry.name not in names:
            names.append(entry.name)
    return [CastGroup(src, dst, cast_loses_information(src, dst) or "", tuple(names))
            for (src, dst), names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


# --- similarity of debug_0 and debug_1 -------------------------------------------------------------
IGNORED_TYPES = frozenset({"TransData", "Cast", "Send", "Recv", "Variable", "NetOutput", "NoOp", "Assign",
                           "Constant", "StreamActive"})


@dataclass(frozen=True)
class OpDifference:
    name: str
    type: str
    what: tuple[str, ...]  # one line per difference ("only in debug_1", "output 0 shape (1,2) vs (1,3)")


@dataclass(frozen=True)
class GraphSimilarity:
    left: Path
    right: Path
    graph: str
    compared: int
    identical: int
    differences: tuple[OpDifference, ...]


def _desc_text(desc: TensorDesc) -> str:
    return f"{desc.dtype} {desc.layout} {list(desc.shape)}"


def compare_ops(left: Op, right: Op) -> list[str]:
    """What differs between the same op in two runs: inputs, input/output dtypes, layouts, shapes."""
    what = []
    if left.type != right.type:
        what.append(f"type {left.type} vs {right.type}")
    if left.data_inputs != right.data_inputs:
        what.append(f"inputs {', '.join(f'{n}:{i}' for n, i in left.data_inputs)} vs "
                    f"{', '.join(f'{n}:{i}' for n, i in right.data_inputs)}")
    for kind, a_list, b_list in (("input", left.input_descs, right.input_descs),
                                 ("output", left.output_descs, right.output_descs)):
        if len(a_list) != len(b_list):
            what.append(f"{len(a_list)} vs {len(b_list)} {kind}s")
        for i, (a, b) in enumerate(zip(a_list, b_list)):
            if (a.dtype, a.layout, a.shape) != (b.dtype, b.layout, b.shape):
                what.append(f"{kind} {i}: {_desc_text(a)} vs {_desc_text(b)}")
    return what


def compare_graphs(left: Graph, right: Graph, left_path: Path, right_path: Path) -> GraphSimilarity:
    differences = []
    compared = identical = 0
    right_ops = {op.name: op for op in right.ops if op.type not in IGNORED_TYPES}
    left_names = set()
    for op in left.ops:
        if op.type in IGNORED_TYPES:
            continue
        left_names.add(op.name)
        compared += 1
        other = right_ops.get(op.name)
        if other is None:
            differences.append(OpDifference(op.name, op.type, ("only in debug_0",)))
            continue
        what = compare_ops(op, other)
        if what:
            differences.append(OpDifference(op.name, op.type, tuple(what)))
        else:
            identical += 1
    for name, op in right_ops.items():
        if name not in left_names:
            compared += 1
            differences.append(OpDifference(name, op.type, ("only in debug_1",)))
    return GraphSimilarity(left_path, right_path, left.name, compared, identical, tuple(differences))


_GRAPH_NUMBER = re.compile(r"_graph_(\d+)_Build$")


def _pair_files(left: list[Path], right: list[Path]) -> list[tuple[Path, Path]]:
    """Pair Build graphs of two runs by their `_graph_<n>_Build` number, else by order."""
    def key(p: Path) -> str | None:
        match = _GRAPH_NUMBER.search(p.stem)
        return match.group(1) if match else None

    right_by_key = {key(p): p for p in right if key(p) is not None}
    pairs = []
    if right_by_key and all(key(p) in right_by_key for p in left):
        pairs = [(p, right_by_key[key(p)]) for p in left]  # type: ignore[index]
    else:
        pairs = list(zip(left, right))
    return pairs


def graph_similarity(workspace: Workspace) -> list[GraphSimilarity] | None:
    """None unless debug_0 and debug_1 both have Build graphs; else one result per graph pair."""
    left_files = [p for p in workspace.build_graph_files(0) if p.suffix == ".txt"] or workspace.build_graph_files(0)
    right_files = [p for p in workspace.build_graph_files(1) if p.suffix == ".txt"] or workspace.build_graph_files(1)
    if not left_files or not right_files:
        return None
    results = []
    for left_path, right_path in _pair_files(left_files, right_files):
        left_model, right_model = load_graph(left_path), load_graph(right_path)
        for left_graph, right_graph in zip(left_model.graphs, right_model.graphs):
            results.append(compare_graphs(left_graph, right_graph, left_path, right_path))
    return results


# --- what a second NPU run is ---------------------------------------------------------------------------
def other_run_of(workspace: Workspace, index: GraphIndex, spec: object) -> str | None:
    """other_run_text for an NPU-vs-NPU run (its RunSpec) when both sides are runs of this workspace (paths
    as run.json records them, relocated in a copy); None for folders from elsewhere."""
    npu_dir, right_dir = getattr(spec, "npu_dir", None), getattr(spec, "right_dir", None)
    if npu_dir is None or right_dir is None:
        return None
    left, right = workspace.run_of(workspace.relocate(npu_dir)), workspace.run_of(workspace.relocate(right_dir))
    if left is None or right is None or left == right:
        return None
    return other_run_text(index, left, right)


def other_run_text(index: GraphIndex, left: int, right: int, shown: int = 2) -> str:
    """What npu/debug_<right> is beside debug_<left>, from their Build graphs (the cached op index, no parse):
    the same graph or another one, and which ops run other kernels or other fusion passes. One line for the
    NPU-vs-NPU run, which otherwise says nothing of what it compares."""
    ops: dict[int, dict[str, OpEntry]] = {left: {}, right: {}}
    for entry in index.entries():
        if entry.debug_id in ops:
            ops[entry.debug_id].setdefault(entry.name, entry)
    a, b = ops[left], ops[right]
    if not a or not b:
        missing = " and ".join(f"debug_{n}" for n in (left, right) if not ops[n])
        return f"debug_{right}: a second NPU run ({missing} has no Build graph to tell how it differs)"
    common = [name for name in a if name in b]
    structure = [n for n in common if a[n].type != b[n].type]
    only = len(a) + len(b) - 2 * len(common)
    kernels = [n for n in common if n not in structure and a[n].kernel_name and b[n].kernel_name
               and a[n].kernel_name != b[n].kernel_name]
    passes = [n for n in common if a[n].fusion_pass != b[n].fusion_pass]
    if not structure and not only:
        text = f"debug_{right}: a second NPU run of the same graph ({len(a)} ops)"
    else:
        text = (f"debug_{right}: an NPU run of another graph ({len(b)} ops; {only} op(s) in one run only, "
                f"{len(structure)} of another type)")

    def listed(names: list[str], what: str, attr: str) -> str:
        first = ", ".join(f"{n} ({getattr(a[n], attr) or '-'} → {getattr(b[n], attr) or '-'})" for n in names[:shown])
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        return f"{len(names)} op(s) {what}: {first}{more}"

    found = [listed(kernels, "with another kernel", "kernel_name")] if kernels else []
    if passes:
        found.append(listed(passes, "fused by other passes", "fusion_pass"))
    if not found and not structure and not only:
        found.append("the same kernels and fusion passes: the two runs differ in their data only")
    return "; ".join([text, *found])
