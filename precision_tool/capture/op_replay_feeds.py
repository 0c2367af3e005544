"""The replay child's inputs: the golden GraphDef (read once per child) and what feeds each replayed node.

Runs inside the TensorFlow child (capture/op_replay.py). A tensor the replayed nodes read from outside is
matched to the NPU input that stands for the same TF tensor (by name, through Identity and ReadVariableOp
chains; else by value through its golden tensor; else by shape), left to TensorFlow when it is constant,
or fed from the golden run when the NPU op has no such input (an attribute on the NPU). Anything else
fails the case with one line (ReplayFailed), never a guess.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

_PASS_THROUGH_TF = ("Identity", "Snapshot", "StopGradient", "PreventGradient")
_NOT_CONSTANT = ("Placeholder", "PlaceholderWithDefault", "VarHandleOp", "VariableV2", "ReadVariableOp",
                 "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "IteratorGetNext")


def split_ref(ref: str) -> tuple[str, int]:
    """'node:1' or '^node' → (node, slot), as GE inputs are split (formats.ge_graph.split_input)."""
    from precision_tool.formats.ge.ge_graph import split_input

    return split_input(ref.lstrip("^"))


@lru_cache(maxsize=None)
def _golden_index(folder: str) -> dict[str, Path]:
    """The golden folder's key → .npy, scanned once per child (every case asks)."""
    from precision_tool.formats.tf.golden import scan_golden_dir

    return scan_golden_dir(folder)


class ReplayFailed(Exception):
    """A case that cannot be replayed; the message is the reason."""


# --- the golden GraphDef ---------------------------------------------------------------------------
def _graph_defs(path: Path) -> list[Any]:
    """Every GraphDef a file holds: a tfdbg v1 Event, a tfdbg v2 .graphs file, a MetaGraphDef."""
    import tensorflow as tf

    data = path.read_bytes()
    if path.name.startswith("_tfdbg_graph_"):
        event = tf.compat.v1.Event.FromString(data)
        return [tf.compat.v1.GraphDef.FromString(event.graph_def)]
    if path.suffix == ".graphs":
        from tensorflow.core.protobuf import debug_event_pb2

        from precision_tool.formats.tf.tfdbg_v2 import iter_records

        found = []
        for _, record in iter_records(data):
            if isinstance(record, bytes):
                event = debug_event_pb2.DebugEvent.FromString(record)
                if event.HasField("debugged_graph") and event.debugged_graph.original_graph_def:
                    found.append(tf.compat.v1.GraphDef.FromString(event.debugged_graph.original_graph_def))
        return found
    meta = tf.compat.v1.MetaGraphDef.FromString(data)
    return [meta.graph_def]


# tfdbg v1 saves the partition graph it ran: every watched tensor goes through a `__copy_<node>_<slot>`
# Copy op (and on to `__dbg_...` debug ops), and consumers read the copy. Undone here.
_DEBUG_OPS = ("Copy", "CopyHost", "DebugIdentity", "DebugNanCount", "DebugNumericSummary", "DebugIdentityV2")


def _without_debug_copies(graph_def: Any) -> dict[str, Any]:
    """Nodes by name, tfdbg's debug copies removed and their consumers reading the original tensors."""
    alias: dict[str, str] = {}
    for node in graph_def.node:
        if node.op in _DEBUG_OPS and node.name.startswith("__copy_"):
            data = [i for i in node.input if not i.startswith("^")]
            if data:
                alias[node.name] = canon(data[0])
    if not alias:
        return {node.name: node for node in graph_def.node}

    def resolve(ref: str) -> str:
        control = ref.startswith("^")
        name, slot = split_ref(ref)
        for _ in range(8):
            if name not in alias:
                break
            name, slot = split_ref(alias[name])
        return f"^{name}" if control else f"{name}:{slot}"

    by_name = {}
    for node in graph_def.node:
        if node.name in alias or node.name.startswith("__dbg_"):
            continue
        copy = type(node)()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(resolve(ref) for ref in node.input if not ref.lstrip("^").startswith("__dbg_"))
        by_name[node.name] = copy
    return by_name


class GraphSource:
    """The golden GraphDefs of the case files, parsed once per child."""

    def __init__(self) -> None:
        self._parsed: dict[str, list[Any]] = {}
        self._cleaned: dict[tuple[str, int], dict[str, Any]] = {}
        """(file, graph number) → its nodes by name, debug copies undone: once per child, not per case (a
        BERT step's GraphDef takes a second to clean, and `replay --all` asks thousands of times)."""

    def find(self, paths: list[str], nodes: list[str]) -> tuple[dict[str, Any], str]:
        missing: list[str] = []
        for path in paths:
            if path not in self._parsed:
                try:
                    self._parsed[path] = _graph_defs(Path(path))
                except Exception as exc:  # a damaged file: try the next one
                    self._parsed[path] = []
                    missing.append(f"{path} unreadable ({type(exc).__name__})")
            for number, graph_def in enumerate(self._parsed[path]):
                key = (path, number)
                if key not in self._cleaned:
                    self._cleaned[key] = _without_debug_copies(graph_def)
                by_name = self._cleaned[key]
                if all(n in by_name for n in nodes):
                    return by_name, path
        names = [{x.name for x in g.node} for p in paths for g in self._parsed[p]]
        absent = [n for n in nodes if not any(n in found for found in names)]
        what = f"no node named {', '.join(absent[:3])}" if absent else "no one graph with all of " + ", ".join(nodes)
        raise ReplayFailed(f"the golden GraphDef has {what} ({len(paths)} graph file(s) read)")


# --- building the replay graph -------------------------------------------------------------------
def _aliases(by_name: dict[str, Any], ref: str) -> set[str]:
    """A TF tensor and what it passes through to (Identity chains, ReadVariableOp → the variable)."""
    names = {canon(ref)}
    name, slot = split_ref(ref)
    for _ in range(32):
        node = by_name.get(name)
        if node is None:
            break
        data = [i for i in node.input if not i.startswith("^")]
        if node.op in _PASS_THROUGH_TF and data:
            name, slot = split_ref(data[0])
        elif node.op == "ReadVariableOp" and data:
            name, slot = split_ref(data[0])
        else:
            break
        names.add(f"{name}:{slot}")
    return names


def canon(ref: str) -> str:
    name, slot = split_ref(ref)
    return f"{name}:{slot}"


def _constant(by_name: dict[str, Any], name: str, seen: set[str] | None = None) -> bool:
    """The node's value needs no data: Const, or ops on constants only (shape arithmetic)."""
    seen = set() if seen is None else seen
    if name in seen:
        return True
    seen.add(name)
    node = by_name.get(name)
    if node is None or node.op in _NOT_CONSTANT or node.op.startswith(("Shape", "Size", "Rank")):
        return False
    if node.op == "Const":
        return True
    data = [i for i in node.input if not i.startswith("^")]
    return bool(data) and all(_constant(by_name, split_ref(i)[0], seen) for i in data)


def _ancestors(by_name: dict[str, Any], name: str, into: list[str]) -> None:
    if name in into:
        return
    for ref in by_name[name].input:
        if not ref.startswith("^"):
            _ancestors(by_name, split_ref(ref)[0], into)
    into.append(name)


def plan_feeds(case: dict[str, Any], by_name: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Each tensor the case's nodes read from outside: which NPU input, golden tensor or constant feeds it.
    Returns (feeds, constant nodes to copy, notes)."""
    from precision_tool.formats.tf.golden import golden_key

    nodes = list(case["tf_nodes"])
    external: list[str] = []
    for name in nodes:
        for ref in by_name[name].input:
            if not ref.startswith("^") and split_ref(ref)[0] not in nodes and canon(ref) not in external:
                external.append(canon(ref))
    npu_inputs = [t for t in case["inputs"] if t["file"]]
    npu_aliases = [_aliases(by_name, t["tf_tensor"]) if t["tf_tensor"] else set() for t in npu_inputs]
    used: set[int] = set()
    golden = _golden_index(case["golden_dir"]) if case.get("golden_dir") else {}
    feeds: list[dict[str, Any]] = []
    constants: list[str] = []
    notes: list[str] = []
    unmatched: list[str] = []
    for ref in external:
        wanted = _aliases(by_name, ref)
        match = next((n for n, names in enumerate(npu_aliases) if n not in used and names & wanted), None)
        if match is not None:
            used.add(match)
            feeds.append({"tf_tensor": ref, "source": f"npu input {npu_inputs[match]['index']}",
                          "file": npu_inputs[match]["file"], "golden": npu_inputs[match]["golden"]})
        elif _constant(by_name, split_ref(ref)[0]):
            _ancestors(by_name, split_ref(ref)[0], constants)
        else:
            unmatched.append(ref)
    left = [n for n in range(len(npu_inputs)) if n not in used]
    alone = len(unmatched) == 1 and len(left) == 1  # one TF input and one NPU input left: they are each other
    for ref in unmatched:
        name, slot = split_ref(ref)
        path = golden.get(golden_key(name, slot))
        n, how = _unnamed_match(path, [npu_inputs[k] for k in left], alone)
        if n is not None:
            chosen = npu_inputs[left.pop(n)]
            feeds.append({"tf_tensor": ref, "source": f"npu input {chosen['index']}", "file": chosen["file"],
                          "golden": chosen["golden"]})
            if how != "value":
                notes.append(f"{ref} matched to NPU input {chosen['index']} by {how} (no name to match by)")
        elif path is not None:
            feeds.append({"tf_tensor": ref, "source": "golden", "file": str(path), "golden": str(path)})
            notes.append(f"{ref} fed from the golden run: the NPU op has no input for it (an attribute on the NPU)")
        else:
            raise ReplayFailed(f"TF input {ref} of {', '.join(nodes)} matches no NPU input by name, and has no golden "
                               "tensor or constant value to match or feed it by")
    return feeds, constants, notes


def _unnamed_match(golden_path: Any, candidates: list[dict[str, Any]], alone: bool) -> tuple[int | None, str]:
    """An NPU input for a TF input no name matched: the one whose golden tensor holds the same values (the
    TF input passes through Identity or a same-shape Reshape the compiler removed), else the first of the
    same shape; none when there is no candidate of that shape (then the TF input is an NPU attribute).
    Without a golden tensor to tell by, only the last input left matches the last one left (`alone`)."""
    import numpy as np

    from precision_tool.formats.tf.golden import load_npy, read_npy_header

    if golden_path is None:
        return (0, "elimination") if alone else (None, "")
    wanted = load_npy(golden_path)
    for n, candidate in enumerate(candidates):
        if candidate["golden"]:
            other = load_npy(candidate["golden"])
            if other.shape == wanted.shape and np.array_equal(other, wanted, equal_nan=True):
                return n, "value"
    for n, candidate in enumerate(candidates):
        if tuple(candidate["shape"]) == tuple(read_npy_header(golden_path)[1]):
            return n, "shape"
    return None, ""


