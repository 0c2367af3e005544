"""The child process of `replay` / `ni -c`: rebuild NPU ops from the golden GraphDef and run them on CPU.

    python -m precision_tool.capture.op_replay CASE_FOLDER [CASE_FOLDER ...]

Each folder holds a case.json (analysis/replay_plan.py) and the NPU's inputs and outputs as .npy. For each
case: the TF nodes the NPU op was made from are copied out of the golden GraphDef with their attributes;
every tensor they read from outside becomes a placeholder fed with the NPU's own input (matched by the TF
tensor it stands for), a golden tensor (an input the NPU op holds as an attribute, like a shape), or is
left to TensorFlow when it is a constant. Then the ops run three times: in float32 on the NPU's inputs, in
the NPU's dtypes (float16 where the NPU computed in float16) on the NPU's inputs, and in float32 on the
golden inputs (which must give the golden output, or the replay is not trusted). The outputs go next to
the inputs; result.json says what was fed from where. One TensorFlow start serves every case.

A case that cannot be replayed gets status "failed" and a one-line reason; the process still exits 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_PASS_THROUGH_TF = ("Identity", "Snapshot", "StopGradient", "PreventGradient")
_NOT_CONSTANT = ("Placeholder", "PlaceholderWithDefault", "VarHandleOp", "VariableV2", "ReadVariableOp",
                 "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "IteratorGetNext")


def _split(ref: str) -> tuple[str, int]:
    name, _, slot = ref.lstrip("^").partition(":")
    return name, int(slot) if slot else 0


class _Failed(Exception):
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

        from precision_tool.formats.tfdbg_v2 import iter_records

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
                alias[node.name] = _canon(data[0])
    if not alias:
        return {node.name: node for node in graph_def.node}

    def resolve(ref: str) -> str:
        control = ref.startswith("^")
        name, slot = _split(ref)
        for _ in range(8):
            if name not in alias:
                break
            name, slot = _split(alias[name])
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

    def find(self, paths: list[str], nodes: list[str]) -> tuple[dict[str, Any], str]:
        missing: list[str] = []
        for path in paths:
            if path not in self._parsed:
                try:
                    self._parsed[path] = _graph_defs(Path(path))
                except Exception as exc:  # a damaged file: try the next one
                    self._parsed[path] = []
                    missing.append(f"{path} unreadable ({type(exc).__name__})")
            for graph_def in self._parsed[path]:
                by_name = _without_debug_copies(graph_def)
                if all(n in by_name for n in nodes):
                    return by_name, path
        absent = [n for n in nodes if not any(n in {x.name for x in g.node} for p in paths for g in self._parsed[p])]
        what = f"no node named {', '.join(absent[:3])}" if absent else "no one graph with all of " + ", ".join(nodes)
        raise _Failed(f"the golden GraphDef has {what} ({len(paths)} graph file(s) read)")


# --- building the replay graph -------------------------------------------------------------------
def _aliases(by_name: dict[str, Any], ref: str) -> set[str]:
    """A TF tensor and what it passes through to (Identity chains, ReadVariableOp → the variable)."""
    names = {_canon(ref)}
    name, slot = _split(ref)
    for _ in range(32):
        node = by_name.get(name)
        if node is None:
            break
        data = [i for i in node.input if not i.startswith("^")]
        if node.op in _PASS_THROUGH_TF and data:
            name, slot = _split(data[0])
        elif node.op == "ReadVariableOp" and data:
            name, slot = _split(data[0])
        else:
            break
        names.add(f"{name}:{slot}")
    return names


def _canon(ref: str) -> str:
    name, slot = _split(ref)
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
    return bool(data) and all(_constant(by_name, _split(i)[0], seen) for i in data)


def _ancestors(by_name: dict[str, Any], name: str, into: list[str]) -> None:
    if name in into:
        return
    for ref in by_name[name].input:
        if not ref.startswith("^"):
            _ancestors(by_name, _split(ref)[0], into)
    into.append(name)


def plan_feeds(case: dict[str, Any], by_name: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Each tensor the case's nodes read from outside: which NPU input, golden tensor or constant feeds it.
    Returns (feeds, constant nodes to copy, notes)."""
    from precision_tool.formats.golden import golden_key, scan_golden_dir

    nodes = list(case["tf_nodes"])
    external: list[str] = []
    for name in nodes:
        for ref in by_name[name].input:
            if not ref.startswith("^") and _split(ref)[0] not in nodes and _canon(ref) not in external:
                external.append(_canon(ref))
    npu_inputs = [t for t in case["inputs"] if t["file"]]
    npu_aliases = [_aliases(by_name, t["tf_tensor"]) if t["tf_tensor"] else set() for t in npu_inputs]
    used: set[int] = set()
    golden = scan_golden_dir(case["golden_dir"]) if case.get("golden_dir") else {}
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
        elif _constant(by_name, _split(ref)[0]):
            _ancestors(by_name, _split(ref)[0], constants)
        else:
            unmatched.append(ref)
    left = [n for n in range(len(npu_inputs)) if n not in used]
    for ref in unmatched:
        name, slot = _split(ref)
        path = golden.get(golden_key(name, slot))
        n, how = _unnamed_match(path, [npu_inputs[k] for k in left])
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
            raise _Failed(f"TF input {ref} of {', '.join(nodes)} has no NPU input, golden tensor or constant value")
    return feeds, constants, notes


def _unnamed_match(golden_path: Any, candidates: list[dict[str, Any]]) -> tuple[int | None, str]:
    """An NPU input for a TF input no name matched: the one whose golden tensor holds the same values (the
    TF input passes through Identity or a same-shape Reshape the compiler removed), else the first of the
    same shape; none when there is no candidate of that shape (then the TF input is an NPU attribute)."""
    import numpy as np

    from precision_tool.formats.golden import load_npy, read_npy_header

    if golden_path is None:
        return (0, "position") if candidates else (None, "")
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


def _input_dtypes(node: Any) -> list[int]:
    """The DataType each data input of a NodeDef takes, from its OpDef and attributes."""
    op_def = _op_def(node.op)
    if op_def is None:
        raise _Failed(f"TensorFlow has no op {node.op} (a custom op): it cannot run on CPU here")
    dtypes: list[int] = []
    for arg in op_def.input_arg:
        count = node.attr[arg.number_attr].i if arg.number_attr else 1
        if arg.type_list_attr:
            dtypes += list(node.attr[arg.type_list_attr].list.type)
        else:
            dtypes += [arg.type or node.attr[arg.type_attr].type] * count
    return dtypes


def _op_def(op_type: str) -> Any:
    from tensorflow.python.framework import op_def_registry

    if hasattr(op_def_registry, "get"):
        return op_def_registry.get(op_type)
    return op_def_registry.get_registered_ops().get(op_type)  # TF 1.15


def build_graph_def(case: dict[str, Any], by_name: dict[str, Any], feeds: list[dict[str, Any]],
                    constants: list[str], half: bool, values: dict[str, Any]) -> tuple[Any, list[str], list[str]]:
    """The replay GraphDef (constants, a placeholder per feed, the case's nodes, float16 where `half`), the
    tensors to fetch for the case's outputs, and the ops to run first. A resource input (an optimizer
    op's variable) becomes a variable initialised with the fed value; the op's result is that variable
    read after the op ran."""
    import tensorflow as tf

    from tensorflow.core.framework import types_pb2

    graph_def = tf.compat.v1.GraphDef()
    placeholder = {f["tf_tensor"]: f"replay_input_{n}" for n, f in enumerate(feeds)}
    wanted: dict[str, int] = {}
    copies = []
    for name in [*constants, *case["tf_nodes"]]:
        node = graph_def.node.add()
        node.CopyFrom(by_name[name])
        node.device = ""
        del node.input[:]
        node.input.extend(placeholder.get(_canon(ref), ref) for ref in by_name[name].input if not ref.startswith("^"))
        for key in ("_class", "_output_shapes"):
            if key in node.attr:
                del node.attr[key]
        if half and name in case["tf_nodes"] and node.attr["T"].type == types_pb2.DT_FLOAT:
            node.attr["T"].type = types_pb2.DT_HALF
        copies.append(node)
    for node in copies:
        for ref, dtype in zip(node.input, _input_dtypes(node)):
            if ref.startswith("replay_input_"):
                wanted[ref] = dtype
    init: list[str] = []
    variables: dict[str, str] = {}  # consumer node → the variable it updates
    for name in placeholder.values():
        value = values[name]
        holder = graph_def.node.add()
        holder.name, holder.op = name, "Placeholder"
        if wanted.get(name) != types_pb2.DT_RESOURCE:
            holder.attr["dtype"].type = wanted.get(name, types_pb2.DT_FLOAT)
            continue
        holder.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
        var = graph_def.node.add()
        var.name, var.op = f"{name}_variable", "VarHandleOp"
        var.attr["dtype"].type = holder.attr["dtype"].type
        var.attr["shape"].shape.CopyFrom(tf.TensorShape(value.shape).as_proto())
        var.attr["shared_name"].s = var.name.encode()
        assign = graph_def.node.add()
        assign.name, assign.op = f"{name}_init", "AssignVariableOp"
        assign.input.extend([var.name, name])
        assign.attr["dtype"].type = holder.attr["dtype"].type
        init.append(assign.name)
        for node in copies:
            for position, ref in enumerate(node.input):
                if ref == name:
                    node.input[position] = var.name
                    variables.setdefault(node.name, var.name)
    fetches = []
    for output in case["outputs"]:
        node_name, slot = _split(output["tf_tensor"])
        op_def = _op_def(by_name[node_name].op)
        if node_name in variables and op_def is not None and not op_def.output_arg:
            read = graph_def.node.add()
            read.name, read.op = f"replay_read_{output['index']}", "ReadVariableOp"
            read.input.extend([variables[node_name], f"^{node_name}"])
            read.attr["dtype"].CopyFrom(next(n for n in graph_def.node if n.name == variables[node_name]).attr["dtype"])
            fetches.append(f"{read.name}:0")
        else:
            fetches.append(f"{node_name}:{slot}")
    graph_def.node.sort(key=lambda n: n.op != "Placeholder")
    return graph_def, fetches, init


def run_graph(graph_def: Any, feeds: dict[str, Any], fetches: list[str], init: list[str]) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    from precision_tool import tf_config

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        feed_dict = {}
        for name, value in feeds.items():
            tensor = graph.get_tensor_by_name(f"{name}:0")
            feed_dict[tensor] = np.asarray(value).astype(tensor.dtype.as_numpy_dtype)
        with tf.compat.v1.Session(graph=graph, config=tf_config.golden_session_config()) as session:
            if init:
                session.run(init, feed_dict=feed_dict)
            values = session.run(fetches, feed_dict=feed_dict)
    return [np.asarray(v) for v in values]


# --- one case ----------------------------------------------------------------------------------------
def replay_case(folder: Path, graphs: GraphSource) -> dict[str, Any]:
    import numpy as np

    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    nodes = list(case["tf_nodes"])
    by_name, graph_file = graphs.find(list(case["graph_defs"]), nodes)
    missing = [o["index"] for o in case["outputs"] if not o["tf_tensor"]]
    if missing:
        raise _Failed(f"the graph does not say which TF tensor output {missing[0]} stands for")
    outside = [o["tf_tensor"] for o in case["outputs"] if _split(o["tf_tensor"])[0] not in nodes]
    if outside:
        raise _Failed(f"output {outside[0]} is not made by {', '.join(nodes)}")
    feeds, constants, notes = plan_feeds(case, by_name)
    result: dict[str, Any] = {"status": "ok", "graph_def": graph_file, "notes": notes, "variants": {},
                              "graphs": {}, "feeds": [{"placeholder": f"replay_input_{n}", **f}
                                                      for n, f in enumerate(feeds)],
                              "outputs": {str(o["index"]): o["tf_tensor"] for o in case["outputs"]}}

    def load(path: str) -> Any:
        full = Path(path) if Path(path).is_absolute() else folder / path
        return np.load(full, allow_pickle=False)

    def shaped(feed: dict[str, Any]) -> Any:
        """The NPU's value in the TF tensor's shape (a scalar is often dumped as [1])."""
        value = load(feed["file"])
        if feed["golden"] and feed["source"] != "golden":
            from precision_tool.formats.golden import read_npy_header

            shape = tuple(read_npy_header(feed["golden"])[1])
            if shape != value.shape and int(np.prod(shape)) == value.size:
                value = value.reshape(shape)
        return value

    npu_feeds = {f"replay_input_{n}": shaped(f) for n, f in enumerate(feeds)}
    variants = [("float32", False, npu_feeds)]
    if case["fp16"]:
        variants.append(("float16", True, npu_feeds))
    if all(f["golden"] for f in feeds):
        variants.append(("golden", False, {f"replay_input_{n}": load(f["golden"]) for n, f in enumerate(feeds)}))
    else:
        notes.append("no golden replay: a fed input has no golden tensor")
    result["fp16"] = "tensorflow" if case["fp16"] else "none"
    for variant, half, values in variants:
        graph_def, fetches, init = build_graph_def(case, by_name, feeds, constants, half, values)
        (folder / f"graph_{variant}.pb").write_bytes(graph_def.SerializeToString())
        result["graphs"][variant] = f"graph_{variant}.pb"
        result.setdefault("fetches", fetches)
        result.setdefault("init", init)
        try:
            outputs = run_graph(graph_def, values, fetches, init)
        except Exception as exc:  # TensorFlow's own errors: no kernel, bad shapes...
            message = getattr(exc, "message", None) or str(exc)
            first = _error_line(message) or type(exc).__name__
            if half and ("kernel" in message.lower()):
                outputs = _emulated_half(case, by_name, feeds, constants, values)
                result["fp16"] = "emulated"
                notes.append(f"float16 replay emulated (inputs and outputs rounded to float16, float32 "
                             f"arithmetic): TensorFlow has no float16 CPU kernel here ({first[:160]})")
            elif variant == "golden":
                notes.append(f"no golden replay: {first[:200]}")
                continue
            else:
                raise _Failed(f"TensorFlow cannot run {', '.join(nodes)} on CPU: {first[:300]}") from None
        files = {}
        for output, value in zip(case["outputs"], outputs):
            name = f"replay_{variant}_output_{output['index']}.npy"
            np.save(folder / name, value, allow_pickle=False)
            files[str(output["index"])] = name
        result["variants"][variant] = files
    return result


def _error_line(message: str) -> str:
    """The line of a TensorFlow error that says what is wrong (not where it was detected)."""
    skip = ("Graph execution error", "Detected at node", "Node:", "[[", "Stack trace", "Traceback", "File ")
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(skip)), lines[0] if lines else "")


def _emulated_half(case: dict[str, Any], by_name: dict[str, Any], feeds: list[dict[str, Any]],
                   constants: list[str], values: dict[str, Any]) -> list[Any]:
    import numpy as np

    rounded = {k: (v.astype(np.float16).astype(v.dtype) if v.dtype.kind == "f" else v) for k, v in values.items()}
    graph_def, fetches, init = build_graph_def(case, by_name, feeds, constants, False, rounded)
    with np.errstate(over="ignore"):
        return [v.astype(np.float16) if v.dtype == np.float32 else v
                for v in run_graph(graph_def, rounded, fetches, init)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-"):
        print("usage: python -m precision_tool.capture.op_replay CASE_FOLDER [CASE_FOLDER ...]", file=sys.stderr)
        return 2
    from precision_tool import tf_config  # noqa: F401  (before TensorFlow: oneDNN off, seeds)

    graphs = GraphSource()
    done = 0
    for text in argv:
        folder = Path(text)
        try:
            result = replay_case(folder, graphs)
        except _Failed as failed:
            result = {"status": "failed", "reason": str(failed)}
        except Exception as error:  # a bug of ours or a TensorFlow crash on this case: the others still run
            import traceback

            traceback.print_exc()
            result = {"status": "failed", "reason": f"the replay raised {type(error).__name__}: {error}"[:300]}
        (folder / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        done += 1
        print(json.dumps({"case": folder.name, "status": result["status"]}), flush=True)
    return 0 if done == len(argv) else 1


if __name__ == "__main__":
    sys.exit(main())
