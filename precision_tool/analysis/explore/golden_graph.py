"""The golden TF graph for `explore`, read without TensorFlow: the GraphDef a tfdbg v1 run saved
(`_tfdbg_graph_*`, an Event) or the captured step's MetaGraphDef (tf/checkpoints/model.meta), with
tfdbg's debug copies taken out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precision_tool.analysis.explore.explore_graphs import TfNode

_DEBUG_OPS = ("Copy", "CopyHost", "DebugIdentity", "DebugNanCount", "DebugNumericSummary", "DebugIdentityV2")


def golden_graph_file(workspace: Any) -> Path | None:
    """The newest tfdbg v1 graph file of the golden run, else the captured step's model.meta."""
    root = workspace.tf_debug_dir
    found = sorted(root.glob("*/_tfdbg_device_*/_tfdbg_graph_*"), key=lambda p: p.stat().st_mtime) \
        if root.is_dir() else []
    if found:
        return found[-1]
    meta = workspace.checkpoint_dir / "model.meta"
    return meta if meta.is_file() else None


def read_golden_nodes(path: Path) -> list[TfNode]:
    """The nodes of the GraphDef in `path`; FormatError when it is not one."""
    from google.protobuf.message import DecodeError

    from precision_tool.errors import FormatError
    from precision_tool.formats.tf.tf_protos import message_class, parse_event

    try:
        data = path.read_bytes()
        if path.name.startswith("_tfdbg_graph_"):
            graph = message_class("GraphDef")()
            graph.ParseFromString(parse_event(data).graph_def)
        else:
            meta = message_class("MetaGraphDef")()
            meta.ParseFromString(data)
            graph = meta.graph_def
    except OSError as exc:
        raise FormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    except DecodeError as exc:
        raise FormatError(path, f"is not a TensorFlow graph ({exc})") from None
    return _without_debug_ops(graph)


def _without_debug_ops(graph: Any) -> list[TfNode]:
    """tfdbg v1 saves the graph it ran: each watched tensor goes through a `__copy_` op to `__dbg_` ops;
    consumers read the copy. Those ops are dropped and their consumers read the original tensor."""
    alias: dict[str, str] = {}
    for node in graph.node:
        if node.op in _DEBUG_OPS and node.name.startswith("__copy_"):
            data = [i for i in node.input if not i.startswith("^")]
            if data:
                alias[node.name] = data[0]

    def resolve(ref: str) -> str:
        name, sep, slot = ref.partition(":")
        for _ in range(8):
            if name not in alias:
                break
            name, sep, slot = alias[name].partition(":")
        return name + sep + slot

    return [TfNode(node.name, node.op, tuple(resolve(i) for i in node.input if not i.startswith("^")))
            for node in graph.node if not (node.op in _DEBUG_OPS or node.name.startswith(("__copy_", "__dbg_")))]
