"""The two graphs `explore` shows, as Model Explorer graph JSON (its `graphs` format: nodes with a
`namespace`, `attrs`, `incomingEdges`, `outputsMetadata`), and the mapping between them.

The NPU side is every op of the run's Build graph(s): an op sits in the layer of the TF name scope its
original TF ops (`_datadump_original_op_names`) share, so a fused op lands in the block it was made from.
The TF side is the golden graph: the GraphDef of the golden run when the workspace holds one (tfdbg's
`_tfdbg_graph_*` file), else the TF ops the Build graph names, joined as their NPU ops are joined.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

NPU_GRAPH_ID = "NPU Build graph"
TF_GRAPH_ID = "TensorFlow golden graph"
WIDE_LAYER = 40
"""In a graph of GROUPED_FROM ops or more, a layer with more children (layers and ops) than this is split
into consecutive groups of them: Model Explorer lays out every child of a layer it opens; a stage of 1,000
blocks took it most of a minute, and finding an op of ResNet-50 (1,254 ops) 37 s against 3 s grouped. A
graph as small as the demo's draws fast as it is, and keeps its plain layers."""
GROUPED_FROM = 500


@dataclass(frozen=True)
class TfNode:
    """One op of the golden graph: its name, type and data inputs ('op' or 'op:N')."""

    name: str
    type: str
    inputs: tuple[str, ...]


def scope_of(name: str) -> str:
    """'net/stage3/block2/conv/Conv2D' → 'net/stage3/block2/conv'."""
    return name.rpartition("/")[0]


def common_scope(names: Sequence[str]) -> str:
    """The deepest name scope all `names` share ('' when they share none)."""
    scopes = [scope_of(n).split("/") for n in names]
    if not scopes:
        return ""
    shared = os.path.commonprefix(scopes)
    return "/".join(p for p in shared if p)


def npu_namespace(op: Any) -> str:
    """The layer of an NPU op: the scope its original TF ops share, else its own name's scope."""
    originals = [n for n in (op.original_op_names or ()) if n]
    return common_scope(originals) if originals else scope_of(op.name)


def _edge(source: str, output: int, target_input: int) -> dict[str, str]:
    return {"sourceNodeId": source, "sourceNodeOutputId": str(output), "targetNodeInputId": str(target_input)}


def _split_input(text: Any) -> tuple[str, int] | None:
    """'op:1' → ('op', 1), 'op' → ('op', 0); a control input ('^op') → None; a GE data input is already
    (name, slot)."""
    if isinstance(text, tuple):
        return text[0], int(text[1])
    if not text or text.startswith("^"):
        return None
    name, sep, slot = text.rpartition(":")
    if sep and slot.isdigit():
        return name, int(slot)
    return text, 0


def _edges(inputs: Sequence[Any], known: set[str]) -> list[dict[str, str]]:
    """A node's incoming data edges from the nodes of the graph (`known`); control inputs are left out."""
    edges = []
    for position, text in enumerate(inputs):
        split = _split_input(text)
        if split is not None and split[0] in known:
            edges.append(_edge(split[0], split[1], position))
    return edges


def kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value if isinstance(value, (str, dict)) else str(value)}


def npu_graph_json(ops: Iterable[Any], attrs_of: Any, outputs_of: Any) -> dict[str, Any]:
    """The Build graph's ops as one Model Explorer graph. `attrs_of(op)` → extra key/values shown when
    the node is clicked; `outputs_of(op)` → per output index, extra key/values (the comparison's)."""
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    kept = [op for op in ops if not (op.name in seen or seen.add(op.name))]
    for op in kept:
        edges = _edges(op.data_inputs, seen)
        outputs = []
        extra = outputs_of(op)
        for index, desc in enumerate(op.output_descs):
            item = [kv("dtype", str(desc.dtype or "").replace("DT_", "")), kv("layout", desc.layout or ""),
                    kv("shape", "[" + ",".join(str(d) for d in (desc.shape or ())) + "]")]
            item += extra.get(index, [])
            outputs.append({"id": str(index), "attrs": item})
        nodes.append({"id": op.name, "label": op.name, "namespace": npu_namespace(op),
                      "attrs": attrs_of(op), "incomingEdges": edges, "outputsMetadata": outputs})
    return {"id": NPU_GRAPH_ID, "nodes": split_wide_layers(nodes)}


def tf_graph_json(tf_nodes: Sequence[TfNode], attrs_of: Any) -> dict[str, Any]:
    """The golden graph's ops as one Model Explorer graph (layers: their name scopes)."""
    names = {n.name for n in tf_nodes}
    nodes = []
    for node in tf_nodes:
        edges = _edges(node.inputs, names)
        nodes.append({"id": node.name, "label": node.name, "namespace": scope_of(node.name),
                      "attrs": [kv("type", node.type)] + attrs_of(node.name), "incomingEdges": edges})
    return {"id": TF_GRAPH_ID, "nodes": split_wide_layers(nodes)}


def split_wide_layers(nodes: list[dict[str, Any]], limit: int = WIDE_LAYER,
                      grouped_from: int = GROUPED_FROM) -> list[dict[str, Any]]:
    """`nodes` (changed in place) with every layer of more than `limit` children given a level of groups in
    between: runs of consecutive children (in graph order), at most `limit` groups, each named after its first
    and last child ('block0…block39'); a graph of fewer than `grouped_from` nodes is left as it is. Only
    namespaces change; ids, edges and so the mapping stay."""
    if len(nodes) < grouped_from:
        return nodes
    children: dict[str, dict[tuple[str, str], None]] = {}
    for node in nodes:
        parts = node["namespace"].split("/") if node["namespace"] else []
        for depth, part in enumerate(parts):
            children.setdefault("/".join(parts[:depth]), {})[("layer", part)] = None
        children.setdefault(node["namespace"], {})[("op", node["id"])] = None
    group_of: dict[tuple[str, tuple[str, str]], str] = {}
    for parent, kids in children.items():
        if len(kids) <= limit:
            continue
        ordered = list(kids)
        size = max(limit, -(-len(ordered) // limit))
        taken = {name for kind, name in ordered if kind == "layer"}
        for start in range(0, len(ordered), size):
            run = ordered[start:start + size]
            label = f"{_short(run[0])}…{_short(run[-1])}"
            while label in taken:  # never the name of a real layer beside it
                label += "'"
            taken.add(label)
            group_of.update({(parent, kid): label for kid in run})
    if not group_of:
        return nodes
    for node in nodes:
        parts = node["namespace"].split("/") if node["namespace"] else []
        placed: list[str] = []
        for depth, part in enumerate(parts):
            group = group_of.get(("/".join(parts[:depth]), ("layer", part)))
            placed += [group, part] if group else [part]
        group = group_of.get((node["namespace"], ("op", node["id"])))
        node["namespace"] = "/".join(placed + ([group] if group else []))
    return nodes


def _short(child: tuple[str, str]) -> str:
    """A child's name as a group label shows it: a layer's name, an op's last name part."""
    return child[1].rpartition("/")[2]


def tf_nodes_from_npu(ops: Sequence[Any]) -> list[TfNode]:
    """The TF graph as the Build graph names it (no GraphDef in the workspace): each original TF op once,
    fed by the original ops of its NPU op's producers (ops GE added, such as TransData, are passed
    through to what feeds them)."""
    by_name = {op.name: op for op in ops}
    originals_of = {op.name: [n for n in (op.original_op_names or ()) if n] for op in ops}

    def sources(npu_name: str, depth: int = 0) -> list[str]:
        found = originals_of.get(npu_name)
        if found:
            return found[-1:]  # a fused op's result comes out of its last TF op
        op = by_name.get(npu_name)
        if op is None or depth > 16:
            return []
        result: list[str] = []
        for text in op.data_inputs:
            split = _split_input(text)
            if split is not None:
                result += sources(split[0], depth + 1)
        return result

    types: dict[str, str] = {}
    inputs: dict[str, list[str]] = {}
    for op in ops:
        chain = originals_of[op.name]
        for position, name in enumerate(chain):
            types.setdefault(name, op.type if len(chain) == 1 else "")
            wanted = inputs.setdefault(name, [])
            if position > 0:  # inside a fused op: the TF ops follow one another
                if chain[position - 1] not in wanted:
                    wanted.append(chain[position - 1])
                continue
            for text in op.data_inputs:
                split = _split_input(text)
                if split is None:
                    continue
                for source in sources(split[0]):
                    if source != name and source not in wanted:
                        wanted.append(source)
    return [TfNode(name, types[name] or "(fused)", tuple(inputs[name])) for name in types]


def mapping_json(ops: Sequence[Any], tf_names: set[str]) -> dict[str, Any]:
    """Model Explorer's sync-navigation mapping: each NPU op ↔ the TF ops it was made from (those the TF
    graph has); ops GE added (no original TF op) are left out."""
    entries = []
    for op in ops:
        right = [n for n in dict.fromkeys(op.original_op_names or ()) if n in tf_names]
        if right:
            entries.append({"leftNodeIds": [op.name], "rightNodeIds": right})
    return {"mappingEntries": entries}


def graphs_file(graph: dict[str, Any]) -> dict[str, Any]:
    """What Model Explorer's JSON adapter reads: one graph collection (its label names the pane)."""
    return {"label": graph["id"], "graphs": [graph]}
