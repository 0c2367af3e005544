"""Reading and writing GE graph files: the one loader on top of the readers.

Why: every answer about an NPU op (its TF origin, fusion pass, layouts) comes from the compiled graph,
and the original tool needed CANN's `atc --mode=5` to read it. `load_graph` reads the protobuf text dump
(`ge_proto_*.txt`), atc-style JSON and GE's ONNX-style dump (`ge_onnx_*.pbtxt`), told apart by content;
the writers emit text and JSON. Imports flow one way: ge_model (the graph model) at the bottom, the
readers (ge_tree, ge_text, ge_json, ge_onnx) on it, this module on top. The model's names are
re-exported here because most callers import them from this module. Format facts: docs formats.md §3.
"""

from __future__ import annotations

import os
from pathlib import Path

from precision_tool.atomic import write_atomic
from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_json import format_model_json, parse_json_text
from precision_tool.formats.ge.ge_model import (  # noqa: F401  (re-exported: callers import the model from here)
    DATA_TYPE_NAMES,
    DATA_TYPE_NUMBERS,
    ITEM_KIND_VAL_TYPE,
    LIST_ITEM_KINDS,
    LIST_VAL_TYPES,
    VAL_TYPE_ITEM_KIND,
    AttrList,
    AttrValue,
    DataTypeValue,
    Graph,
    ListListFloat,
    ListListInt,
    Model,
    NamedAttrs,
    Op,
    TensorDesc,
    TensorValue,
    _int_attr,
    _str_attr,
    attr_bool,
    attr_bytes,
    attr_dtype,
    attr_float,
    attr_int,
    attr_kind,
    attr_list_bool,
    attr_list_float,
    attr_list_int,
    attr_list_list_int,
    attr_list_str,
    attr_str,
    data_edges,
    list_item_kind,
    list_val_type,
    split_input,
)
from precision_tool.formats.ge.ge_onnx import looks_like_onnx, parse_onnx_text
from precision_tool.formats.ge.ge_text import format_model, parse_text
from precision_tool.gc_pause import without_gc_keeping


# --- reading and writing ---------------------------------------------------------------------------
@without_gc_keeping  # (what survives is the graph: frozen out of the collector's view, as a parse leaves it)
def load_graph(path: str | os.PathLike[str], light: bool = False) -> Model:
    """Read a GE graph file: protobuf text (`ge_proto_*.txt`), atc JSON or GE's ONNX-style dump
    (`ge_onnx_*.pbtxt`), told apart by content. Bad files raise FormatError naming the file (and
    line/column for text).
    `light=True` (for op indexes; text graphs only): ops carry no tensor descriptors and only the
    attributes an index shows (ge_text.SUMMARY_ATTRS), which parses about a third faster."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read the graph file: {exc.strerror or exc}") from None
    text = data.decode("utf-8", "surrogateescape")
    del data  # a 100 MB graph: 100 MB less while it is parsed
    start = text.lstrip()[:1]
    if start in ("{", "["):
        model = parse_json_text(text, path)
    elif looks_like_onnx(text):
        model = parse_onnx_text(text, path)
    else:
        model = parse_text(text, path, light)
    if not model.graphs:
        # any JSON parses (`{}`, a fusion_result.json): a file with no graph at all is not a GE graph,
        # and treating it as one with 0 ops would let `vc -g` "compare" nothing and report success
        raise FormatError(path, "not a GE graph: no graph or op found; give a ge_proto_*.txt, a "
                                "ge_onnx_*.pbtxt or an atc JSON graph (atc --mode=1 / --json)")
    if not any(graph.ops for graph in model.graphs):
        # a file of another message that happens to have a `graph { }` block (an ONNX or TF GraphDef
        # text) reads as graphs of unknown fields: 0 ops is never a graph worth answering from
        unknown = _unknown(model)
        raise FormatError(path, "not a GE graph: its graphs hold no op"
                                + (f" (unknown fields: {unknown})" if unknown and unknown != "none" else "")
                                + "; give a ge_proto_*.txt, a ge_onnx_*.pbtxt or an atc JSON graph")
    return model


_KEPT: dict[tuple[str, int, int], Model] = {}
"""Whole parses by (path, mtime, size), for the parts of one command that read the same graph: every rank's
plan and the graph index's summary (parsing a 20,000-op graph takes a second)."""
KEPT_GRAPHS = 2


def shared_graph(path: str | os.PathLike[str]) -> Model:
    """The whole parse of `path`, parsed once while the file stays the same (read-only: nothing changes a
    parsed graph)."""
    key = _kept_key(path)
    model = _KEPT.get(key)
    if model is None:
        model = load_graph(path)
        while len(_KEPT) >= KEPT_GRAPHS:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[key] = model
    return model


def kept_graph(path: str | os.PathLike[str]) -> Model | None:
    """The whole parse of `path` when shared_graph keeps one of the file as it is now; never parses."""
    try:
        return _KEPT.get(_kept_key(path))
    except OSError:
        return None


def forget_graphs() -> None:
    """Drop the kept parses (a comparison forks its workers lighter once its plan is made)."""
    _KEPT.clear()


def _kept_key(path: str | os.PathLike[str]) -> tuple[str, int, int]:
    stat = os.stat(path)
    return os.path.abspath(path), stat.st_mtime_ns, stat.st_size


def _unknown(model: Model) -> str:
    found = [w for w in model.warnings if "unknown" in w]
    return found[0] if found else "none"


def write_graph_text(model: Model, path: str | os.PathLike[str]) -> None:
    """Write the model as protobuf text format (as GE dumps it), atomically."""
    _write_atomic(Path(path), format_model(model))


def write_graph_json(model: Model, path: str | os.PathLike[str]) -> None:
    """Write atc-style JSON (maps as key/value lists, enum names, int64 as numbers) that msaccucmp -f
    reads, atomically."""
    _write_atomic(Path(path), format_model_json(model))


def _write_atomic(path: Path, text: str) -> None:
    # surrogateescape: names that were not UTF-8 in the file we read are written back byte for byte
    write_atomic(path, [text.encode("utf-8", errors="surrogateescape")])
