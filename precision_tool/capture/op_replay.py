"""The child process of `replay` / `ni -c`: rebuild NPU ops from the golden GraphDef and run them on CPU.

    python -m precision_tool.capture.op_replay CASE_FOLDER [CASE_FOLDER ...]
    python -m precision_tool.capture.op_replay --cases LIST     (one case folder per line: `replay --all`)

Each folder holds a case.json (analysis/replay/replay_plan.py) and the NPU's inputs and outputs as .npy. For each
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

from precision_tool.capture.op_replay_feeds import GraphSource, ReplayFailed, canon, plan_feeds, split_ref


def _input_dtypes(node: Any) -> list[int]:
    """The DataType each data input of a NodeDef takes, from its OpDef and attributes."""
    op_def = _op_def(node.op)
    if op_def is None:
        raise ReplayFailed(f"TensorFlow has no op {node.op} (a custom op): it cannot run on CPU here")
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


# The type attributes set to half for the float16 replay (U, BatchNorm's statistics type, stays float32
# as on the NPU; a Const's dtype must stay what its value holds).
HALF_ATTRS = ("T", "Tparams")


class Replayed:
    """A replay GraphDef and how to run it: tensors to fetch per case output, ops to run first, and the
    float type attributes set to half (empty: the graph computes in float32)."""

    def __init__(self, graph_def: Any, fetches: list[str], init: list[str], rewritten: list[str]) -> None:
        self.graph_def, self.fetches, self.init, self.rewritten = graph_def, fetches, init, rewritten


def build_graph_def(case: dict[str, Any], by_name: dict[str, Any], feeds: list[dict[str, Any]],
                    constants: list[str], half: bool, values: dict[str, Any]) -> Replayed:
    """The replay GraphDef: constants, a placeholder per feed, the case's nodes (float16 where `half`).
    A resource input (an optimizer op's variable) becomes a variable initialised with the fed value; the
    op's k-th output is its k-th variable read after the op ran."""
    import tensorflow as tf

    from tensorflow.core.framework import types_pb2

    graph_def = tf.compat.v1.GraphDef()
    placeholder = {f["tf_tensor"]: f"replay_input_{n}" for n, f in enumerate(feeds)}
    wanted: dict[str, int] = {}
    copies = []
    rewritten: list[str] = []
    for name in [*constants, *case["tf_nodes"]]:
        node = graph_def.node.add()
        node.CopyFrom(by_name[name])
        node.device = ""
        del node.input[:]
        node.input.extend(placeholder.get(canon(ref), ref) for ref in by_name[name].input if not ref.startswith("^"))
        for key in ("_class", "_output_shapes"):
            if key in node.attr:
                del node.attr[key]
        if half and name in case["tf_nodes"]:
            for key in HALF_ATTRS:  # `in` first: reading a missing key of a proto map would add it
                if key in node.attr and node.attr[key].type == types_pb2.DT_FLOAT:
                    node.attr[key].type = types_pb2.DT_HALF
                    rewritten.append(f"{name}.{key}")
        copies.append(node)
    for node in copies:
        for ref, dtype in zip(node.input, _input_dtypes(node)):
            if ref.startswith("replay_input_"):
                wanted[ref] = dtype
    init: list[str] = []
    variables: dict[str, list[str]] = {}  # consumer node → the variables it updates, in input order
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
                    variables.setdefault(node.name, []).append(var.name)
    dtypes = {n.name: n.attr["dtype"] for n in graph_def.node if n.op == "VarHandleOp"}
    fetches = []
    for output in case["outputs"]:
        node_name, slot = split_ref(output["tf_tensor"])
        op_def = _op_def(by_name[node_name].op)
        updated = variables.get(node_name, [])
        if updated and op_def is not None and not op_def.output_arg:
            position = output["index"]
            if position >= len(updated):
                raise ReplayFailed(f"{node_name} updates {len(updated)} variable(s) but the NPU op has output "
                                   f"{position}: which variable it is, is unknown")
            read = graph_def.node.add()
            read.name, read.op = f"replay_read_{output['index']}", "ReadVariableOp"
            read.input.extend([updated[position], f"^{node_name}"])
            read.attr["dtype"].CopyFrom(dtypes[updated[position]])
            fetches.append(f"{read.name}:0")
        else:
            fetches.append(f"{node_name}:{slot}")
    graph_def.node.sort(key=lambda n: n.op != "Placeholder")
    return Replayed(graph_def, fetches, init, rewritten)


def run_graph(replayed: Replayed, feeds: dict[str, Any]) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    from precision_tool.capture import tf_setup

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(replayed.graph_def, name="")
        feed_dict = {}
        for name, value in feeds.items():
            tensor = graph.get_tensor_by_name(f"{name}:0")
            feed_dict[tensor] = np.asarray(value).astype(tensor.dtype.as_numpy_dtype)
        with tf.compat.v1.Session(graph=graph, config=tf_setup.golden_session_config()) as session:
            if replayed.init:
                session.run(replayed.init, feed_dict=feed_dict)
            values = session.run(replayed.fetches, feed_dict=feed_dict)
    return [np.asarray(v) for v in values]


# --- one case ----------------------------------------------------------------------------------------
def replay_case(folder: Path, graphs: GraphSource) -> dict[str, Any]:
    import numpy as np

    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    nodes = list(case["tf_nodes"])
    by_name, graph_file = graphs.find(list(case["graph_defs"]), nodes)
    missing = [o["index"] for o in case["outputs"] if not o["tf_tensor"]]
    if missing:
        raise ReplayFailed(f"the graph does not say which TF tensor output {missing[0]} stands for")
    outside = [o["tf_tensor"] for o in case["outputs"] if split_ref(o["tf_tensor"])[0] not in nodes]
    if outside:
        raise ReplayFailed(f"output {outside[0]} is not made by {', '.join(nodes)}")
    feeds, constants, notes = plan_feeds(case, by_name)
    result: dict[str, Any] = {"status": "ok", "graph_def": graph_file, "notes": notes, "variants": {}, "graphs": {}}

    def load(path: str) -> Any:
        full = Path(path) if Path(path).is_absolute() else folder / path
        return np.load(full, allow_pickle=False)

    def shaped(feed: dict[str, Any]) -> Any:
        """The NPU's value in the TF tensor's shape (a scalar is often dumped as [1]): the golden tensor's,
        or for a variable without one (the global step) the shape its VarHandleOp declares."""
        value = load(feed["file"])
        if feed["source"] == "golden":
            return value
        shape = None
        if feed["golden"]:
            from precision_tool.formats.tf.golden import read_npy_header

            shape = tuple(read_npy_header(feed["golden"])[1])
        else:
            handle = by_name.get(split_ref(feed["tf_tensor"])[0])
            if handle is not None and handle.op == "VarHandleOp" and "shape" in handle.attr:
                shape = tuple(d.size for d in handle.attr["shape"].shape.dim)
        if shape is not None and shape != value.shape and int(np.prod(shape)) == value.size:
            value = value.reshape(shape)
        return value

    npu_feeds = {}
    for n, feed in enumerate(feeds):
        value = shaped(feed)
        if feed["source"] != "golden":  # what was fed, as fed: the reproducer sends exactly this
            feed["file"] = f"feed_{n}.npy"
            np.save(folder / feed["file"], value, allow_pickle=False)
        npu_feeds[f"replay_input_{n}"] = value
    result["feeds"] = [{"placeholder": f"replay_input_{n}", **f} for n, f in enumerate(feeds)]
    variants = [("float32", False, npu_feeds)]
    if case["fp16"]:
        variants.append(("float16", True, npu_feeds))
    if all(f["golden"] for f in feeds):
        variants.append(("golden", False, {f"replay_input_{n}": load(f["golden"]) for n, f in enumerate(feeds)}))
    else:
        notes.append("no golden replay: a fed input has no golden tensor, so the rebuilt ops are not checked "
                     "against the golden run")
    result["fp16"] = "tensorflow" if case["fp16"] else "none"
    for variant, half, values in variants:
        replayed = build_graph_def(case, by_name, feeds, constants, half, values)
        try:
            if half and not replayed.rewritten:
                raise _NoHalf("no float type attribute (T, Tparams) to set to half")
            outputs = run_graph(replayed, values)
        except Exception as exc:  # TensorFlow's own errors: no kernel, bad shapes, dtypes...
            first = _error_line(getattr(exc, "message", None) or str(exc)) or type(exc).__name__
            if half:  # the float32 replay stands; float16 is emulated from it
                replayed = build_graph_def(case, by_name, feeds, constants, False, values)
                outputs = _emulated_half(replayed, values)
                result["fp16"] = "emulated"
                notes.append(f"float16 replay emulated (inputs and outputs rounded to float16, float32 arithmetic): "
                             f"TensorFlow cannot run it in float16 here ({first[:160]})")
            elif variant == "golden":
                raise ReplayFailed(f"the rebuilt TF ops cannot run on the golden inputs ({first[:200]}): they are "
                                   "not what the golden run computed") from None
            else:
                raise ReplayFailed(f"TensorFlow cannot run {', '.join(nodes)} on CPU: {first[:300]}") from None
        (folder / f"graph_{variant}.pb").write_bytes(replayed.graph_def.SerializeToString())
        result["graphs"][variant] = {"file": f"graph_{variant}.pb", "fetches": replayed.fetches,
                                     "init": replayed.init, "emulated": result["fp16"] == "emulated" and half}
        files = {}
        for output, value in zip(case["outputs"], outputs):
            name = f"replay_{variant}_output_{output['index']}.npy"
            np.save(folder / name, value, allow_pickle=False)
            files[str(output["index"])] = name
        result["variants"][variant] = files
    return result


class _NoHalf(Exception):
    """The float16 graph would compute in float32: emulate float16 instead."""


def _error_line(message: str) -> str:
    """The line of a TensorFlow error that says what is wrong (not where it was detected)."""
    skip = ("Graph execution error", "Detected at node", "Node:", "[[", "Stack trace", "Traceback", "File ")
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(skip)), lines[0] if lines else "")


def _emulated_half(replayed: Replayed, values: dict[str, Any]) -> list[Any]:
    """float16 without a float16 kernel: the float32 graph on inputs rounded to float16, outputs rounded."""
    import numpy as np

    with np.errstate(over="ignore"):
        rounded = {k: (v.astype(np.float16).astype(v.dtype) if v.dtype.kind == "f" else v) for k, v in values.items()}
        return [v.astype(np.float16) if v.dtype == np.float32 else v for v in run_graph(replayed, rounded)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 2 and argv[0] == "--cases":  # thousands of folders: a list file, not a command line
        argv = [line for line in Path(argv[1]).read_text(encoding="utf-8").splitlines() if line]
    elif not argv or argv[0].startswith("-"):
        print("usage: python -m precision_tool.capture.op_replay CASE_FOLDER [CASE_FOLDER ...] | --cases LIST",
              file=sys.stderr)
        return 2
    from precision_tool.capture import tf_setup  # noqa: F401  (before TensorFlow: oneDNN off, seeds)

    from precision_tool.atomic import write_text_atomic

    graphs = GraphSource()
    for text in argv:
        folder = Path(text)
        try:
            result = replay_case(folder, graphs)
        except ReplayFailed as failed:
            result = {"status": "failed", "reason": str(failed)}
        except Exception as error:  # a bug of ours or a TensorFlow crash on this case: the others still run
            import traceback

            traceback.print_exc()
            result = {"status": "failed", "reason": f"the replay raised {type(error).__name__}: {error}"[:300]}
        write_text_atomic(folder / "result.json", json.dumps(result, indent=1))
        print(json.dumps({"case": folder.name, "status": result["status"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
