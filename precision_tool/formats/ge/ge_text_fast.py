"""The fast path of the protobuf text reader, for files printed one field per line (as GE prints them).

Such a file is turned into JSON with a handful of C-speed string replacements and read by json.loads;
big files are split between two processes (see "two processes" below). Anything else returns None and
the general path in ge_text reads it.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any, Callable

from precision_tool.formats.ge.ge_model import (
    VAL_TYPE_ITEM_KIND,
    AttrList,
    Graph,
    Model,
    Op,
    TensorDesc,
)
from precision_tool.formats.ge.ge_text_scalar import (
    _ESCAPE,
    _parse_int,
    _scalar,
    _unescape_one,
)
from precision_tool.formats.ge.ge_tree import (
    MAX_DETAILED_WARNINGS,
    SCHEMA,
    B,
    E,
    O,
    S,
    TreeReader,
    V,
    bytes_from_text,
)

# the attributes a light parse keeps (with every "<op name>_kernelname"): what an op index shows
SUMMARY_ATTRS = frozenset({"_datadump_original_op_names", "pass_name", "pass_name_ub", "_kernelname",
                           "_ge_attr_op_kernel_lib_name", "_parent_node_index"})

# --- fast path ----------------------------------------------------------------------------------------
# GE (and our writer) print one field per line. Such a file is turned into JSON with a handful of
# C-speed string replacements and read by json.loads: every message becomes a flat list
# [key, value, key, value, ...] where a message field's key ends in " {" and its value is a list.
# Anything not in that layout fails the checks below and goes to the general parser above.
_NON_STRING_SEPARATOR = re.compile(r': (?=[-+\w.]+",\n)')
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)


class _NotFlat(Exception):
    """The file is not in the one-field-per-line layout the fast path handles."""


def flat_lists(text: str) -> list[Any]:
    """The one-field-per-line text as nested flat lists; raises _NotFlat when the layout differs."""
    import json

    if "\r" in text:
        text = text.replace("\r\n", "\n")
    text = text.rstrip().replace("\\", "\\\\").replace('"', '\\"')
    text = '",\n"'.join(map(str.lstrip, text.split("\n")))
    text = _NON_STRING_SEPARATOR.sub('","', text + '",\n')
    if text.count(': \\"') != text.count('\\"",\n'):  # a string not closed on its line, or two fields
        raise _NotFlat()
    text = text.replace(': \\"', '","').replace('\\"",\n', '",\n')
    text = text.replace(' {",\n', ' {",[\n').replace('\n"}"', "]").replace(",]", "]")
    try:
        return json.loads('["' + text[:-2] + "]")  # type: ignore[no-any-return]
    except ValueError:
        raise _NotFlat() from None


def _body(value: str, to_bytes: bool = False) -> Any:
    """A string field's value from the fast path: text-format escapes still in it when it has '\\'."""
    quotes = value.count('\\"')
    if quotes and value.count("\\") == quotes == value.count('"'):  # only \" escapes (JSON in a string)
        plain = value.replace('\\"', '"')
        return plain.encode("utf-8", "surrogateescape") if to_bytes else plain
    if not _STRING_BODY.fullmatch(value):
        raise _NotFlat()
    data = _ESCAPE.sub(_unescape_one, value.encode("utf-8", "surrogateescape"))
    return data if to_bytes else data.decode("utf-8", "surrogateescape")


class FlatReader(TreeReader):
    """Builds the model straight from the flat lists (the hot path: ops, descriptors, attributes)."""

    def __init__(self, light: bool = False) -> None:
        super().__init__(bytes_from_text)
        self.light = light
        # set when a helper process parses a run of ops: called where the split marker sits
        self.split_ops: Callable[[], list[Op]] | None = None

    def text(self, value: Any) -> str:
        if type(value) is not str:
            raise _NotFlat()
        if "\\" in value or '"' in value:
            return _body(value)  # type: ignore[no-any-return]
        return value

    def pairs(self, flat: Any) -> Any:
        if type(flat) is not list or len(flat) % 2:
            raise _NotFlat()
        it = iter(flat)
        return zip(it, it)

    def flat_model(self, flat: list[Any], path: Path) -> Model:
        if flat and flat[-1] == "":
            flat = flat[:-1]
        tree: dict[str, Any] = {"graph": []}
        for key, value in self.pairs(flat):
            if key == "graph {":
                tree["graph"].append(self.flat_graph(value))
            elif key == "attr {":
                tree.setdefault("attr", []).append(self.generic(value, "AttrEntry"))
            else:
                self.put(tree, key, value, "ModelDef")
        graphs = tree.pop("graph")
        model = self.model(tree, path)
        model.graphs = graphs
        for graph in graphs:
            self.check_edges(graph)
        model.warnings = self.finish()
        return model

    def flat_graph(self, flat: list[Any]) -> Graph:
        ops = []
        rest: dict[str, Any] = {}
        if type(flat) is not list or len(flat) % 2:
            raise _NotFlat()
        for position in range(0, len(flat), 2):
            key = flat[position]
            value = flat[position + 1]
            if key == "op {":
                ops.append(self.flat_op(value))
            elif key == _SPLIT_KEY and self.split_ops is not None:
                for done in range(1, position, 2):
                    flat[done] = None  # free the parsed blocks while the helper process finishes
                ops.extend(self.split_ops())  # the ops the helper parsed, in their place
                self.split_ops = None
            elif key == "attr {":
                rest.setdefault("attr", []).append(self.generic(value, "AttrEntry"))
            else:
                self.put(rest, key, value, "GraphDef")
        graph = self.graph(rest)
        graph.ops = ops
        return graph

    def flat_op(self, flat: list[Any]) -> Op:
        name = op_type = ""
        op_id = stream_id = 0
        inputs: list[str] = []
        attrs: dict[str, Any] = {}
        input_descs: list[TensorDesc] = []
        output_descs: list[TensorDesc] = []
        dst_names: list[str] = []
        dst_indexes: list[int] = []
        subgraphs: list[str] = []
        extra: dict[str, Any] = {}
        text = self.text
        light = self.light
        for key, value in self.pairs(flat):
            if key == "attr {":
                if not light or self.wanted_in_summary(value):
                    self.flat_attr(value, attrs, name)
            elif key == "input":
                inputs.append(text(value))
            elif key == "input_desc {":
                if not light:
                    input_descs.append(self.flat_desc(value))
            elif key == "output_desc {":
                if not light:
                    output_descs.append(self.flat_desc(value))
            elif key == "dst_name":
                dst_names.append(text(value))
            elif key == "dst_index":
                dst_indexes.append(int(value))
            elif key == "name":
                name = text(value)
            elif key == "type":
                op_type = text(value)
            elif key == "id":
                op_id = int(value)
            elif key == "stream_id":
                stream_id = int(value)
            elif key == "subgraph_name":
                subgraphs.append(text(value))
            elif key == "workspace" or key == "workspace_bytes":
                found = extra.get(key)
                if found is None:
                    extra[key] = [_int_of(value)]
                else:
                    found.append(_int_of(value))
            else:
                self.put(extra, key, value, "OpDef")  # put has normalised and checked every field
        return Op(name, op_type, op_id, stream_id, inputs, input_descs, output_descs, attrs,
                  dst_names, dst_indexes, subgraphs, extra)

    def flat_desc(self, flat: list[Any]) -> TensorDesc:
        dtype = "DT_UNDEFINED"
        layout = ""
        shape: tuple[int, ...] = ()
        attrs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in self.pairs(flat):
            if key == "attr {":
                self.flat_attr(value, attrs, "tensor")
            elif key == "dtype":
                dtype = value if value[:1].isalpha() else _scalar(value, E, False)
            elif key == "shape {":
                if type(value) is list and not len(value) % 2 and value[0::2].count("dim") * 2 == len(value):
                    shape = tuple(map(int, value[1::2]))
                else:
                    shape = tuple(int(v) for k, v in self.pairs(value) if k == "dim" or self._odd(k, "ShapeDef"))
            elif key == "layout":
                layout = self.text(value)
            elif key == "size" or key == "real_dim_cnt":
                extra[key] = _int_of(value)
            else:
                self.put(extra, key, value, "TensorDescriptor")  # put has normalised and checked every field
        return TensorDesc(dtype, layout, shape, attrs, extra)

    def wanted_in_summary(self, flat: list[Any]) -> bool:
        """In a light parse: is this attribute entry one the summary needs (or oddly shaped)?"""
        if len(flat) == 4 and flat[0] == "key" and type(flat[1]) is str:
            key = flat[1]
            return key in SUMMARY_ATTRS or key.endswith("_kernelname") or "\\" in key or '"' in key
        return True

    def _odd(self, key: str, message: str) -> bool:
        if key.endswith(" {") or not key.isidentifier():
            raise _NotFlat()
        self.warn("unknown field", f"unknown {message} field {key!r} ignored")
        return False

    def flat_attr(self, flat: list[Any], attrs: dict[str, Any], owner: str) -> None:
        if len(flat) == 4 and flat[0] == "key" and flat[2] == "value {":
            key = flat[1]
            if type(key) is not str or "\\" in key or '"' in key:
                key = self.text(key)
            value = flat[3]
            if len(value) == 2:
                kind, item = value
                if kind == "s":
                    if type(item) is not str or "\\" in item or '"' in item:
                        item = self.text(item)
                    attrs[key] = item
                    return
                if kind == "i":
                    attrs[key] = int(item)
                    return
                if kind == "b":
                    attrs[key] = _scalar(item, O, False)
                    return
                if kind == "list {":
                    attrs[key] = self.flat_list(item, key, owner)
                    return
            attrs[key] = self.attr_value(self.generic(value, "AttrDef"), key, owner) if value else None
            return
        entry = self.generic(flat, "AttrEntry")
        key = entry.get("key", "")
        value = entry.get("value")
        attrs[key] = self.attr_value(value, key, owner) if value else None

    def flat_list(self, flat: list[Any], key: str, owner: str) -> Any:
        items: list[Any] = []
        kind = None
        val_type = None
        for field_name, value in self.pairs(flat):
            if field_name == "s" or field_name == "i":
                if kind is None:
                    kind = field_name
                elif kind != field_name:
                    return self.list_value(self.generic(flat, "ListValue"), key, owner)
                items.append(self.text(value) if field_name == "s" else int(value))
            elif field_name == "val_type":
                val_type = value
            else:
                return self.list_value(self.generic(flat, "ListValue"), key, owner)
        if val_type is not None and not val_type[:1].isalpha():
            val_type = _scalar(val_type, V, False)
        if kind is None:
            kind = VAL_TYPE_ITEM_KIND.get(val_type or "")
        return AttrList(items, kind, val_type)

    def put(self, tree: dict[str, Any], key: str, value: Any, message: str) -> None:
        """A field outside the hot path, into a dict tree (scalars decoded by kind)."""
        if key.endswith(" {"):
            name = key[:-2]
            spec = SCHEMA[message].get(name)
            if spec is None or spec[0] not in SCHEMA:
                if spec is not None or not name.isidentifier():
                    raise _NotFlat()
                self.warn("unknown field", f"unknown {message} field {name!r} ignored")
                return
            converted: Any = self.generic(value, spec[0])
        else:
            spec = SCHEMA[message].get(key)
            if spec is None:
                if not key.isidentifier():
                    raise _NotFlat()
                self.warn("unknown field", f"unknown {message} field {key!r} ignored")
                return
            if spec[0] in SCHEMA:
                raise _NotFlat()
            if spec[0] is S:
                converted = self.text(value)
            elif spec[0] is B:
                converted = _body(value, to_bytes=True)
            else:
                converted = _scalar(value, spec[0], spec[1])
        if spec[1]:
            tree.setdefault(spec_name(key), []).append(converted)
        else:
            tree[spec_name(key)] = converted

    def generic(self, flat: list[Any], message: str) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for key, value in self.pairs(flat):
            self.put(tree, key, value, message)
        return tree


def _int_of(text: str) -> int:
    """An integer field's value: plain decimals directly, anything else by the text-format rules."""
    if text.isascii() and text.isdigit() and (text[0] != "0" or len(text) == 1):
        return int(text)
    return _parse_int(text)


def spec_name(key: str) -> str:
    return key[:-2] if key.endswith(" {") else key


def parse_text_fast(text: str, path: Path, light: bool = False,
                    parallel_min_chars: int | None = None) -> Model | None:
    """The fast path; None when the file is not one field per line (or anything looks odd).
    Big files are parsed by two processes (see _parse_split) when the machine has two cores."""
    if parallel_min_chars is None:
        parallel_min_chars = PARALLEL_MIN_CHARS
    if len(text) >= parallel_min_chars and _cores() >= 2 and hasattr(os, "fork"):
        split = _split_region(text)
        if split is not None:
            try:
                return _parse_split(text, path, *split, light=light)
            except (_NotFlat, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError,
                    RecursionError, OSError, pickle.PickleError):
                pass  # anything odd: the one-process fast path below decides
    try:
        flat = flat_lists(text)
        return FlatReader(light).flat_model(flat, path)
    except (_NotFlat, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError, RecursionError):
        return None  # anything odd (deep nesting included): the general path reads it and names the problem


# --- two processes ------------------------------------------------------------------------------------
# A big graph is cut at a top-level op boundary near the middle: a forked helper process parses the run of
# whole op blocks from there to the end of that graph's ops, the main process parses the rest, in which a
# marker line stands where the cut-out ops belong. The helper sends its ops back pickled (unpickling
# is ~10x faster than parsing). The cut is checked, not trusted: the helper's text must be op blocks only
# (balanced, each `op {` at the graph's level) and the marker must land in a top-level graph; otherwise
# the one-process path runs.
PARALLEL_MIN_CHARS = 8_000_000
HELPER_SHARE_START = 0.55  # the helper also pickles its ops, so it takes a bit less than half
_SPLIT_KEY = "split-marker"  # not an identifier: anywhere but a graph's field list it fails the fast path
_TOP_OP = "\n  op {\n"
_TOP_OP_END = "\n  }\n"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _split_region(text: str) -> tuple[int, int] | None:
    """(start, end) of a run of whole top-level op blocks from near the middle to the end of that graph's
    op list; None when the file does not look like that."""
    start = text.find(_TOP_OP, int(len(text) * HELPER_SHARE_START))
    if start < 0:
        return None
    start += 1
    position = start
    while text.startswith("  op {\n", position):
        close = text.find(_TOP_OP_END, position)
        if close < 0:
            return None
        position = close + len(_TOP_OP_END)
    if position - start < len(text) // 8:
        return None  # too little to be worth a process
    return start, position


def _parse_split(text: str, path: Path, start: int, end: int, light: bool = False) -> Model:
    """Parse text[start:end] (op blocks) in a forked process and the rest here, then join them."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: parse, send, exit without running any of the parent's clean-up
        status = 1
        try:
            os.close(read_fd)
            result, keep = _parse_op_run(text[start:end], light)  # `keep`: not freed, the exit drops it all
            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    collected = False

    def helper_ops() -> list[Op]:
        nonlocal collected
        with os.fdopen(read_fd, "rb") as handle:
            payload = handle.read()
        _, status = os.waitpid(pid, 0)
        collected = True
        if status != 0 or not payload:
            raise _NotFlat()
        ops, warnings, counts = pickle.loads(payload)
        for group, message in warnings:
            reader.warn(group, message)
        for group, count in counts.items():
            reader._counts[group] = reader._counts.get(group, 0) + count - sum(1 for g, _ in warnings if g == group)
        return ops  # type: ignore[no-any-return]

    reader = FlatReader(light)
    reader.split_ops = helper_ops
    try:
        flat = flat_lists(text[:start] + f"  {_SPLIT_KEY}: 0\n" + text[end:])
        model = reader.flat_model(flat, path)
        if reader.split_ops is not None:
            raise _NotFlat()  # the marker was not in a top-level graph
        return model
    finally:
        if not collected:
            try:
                os.close(read_fd)
            except OSError:
                pass
            try:
                os.kill(pid, 9)
            except OSError:
                pass
            os.waitpid(pid, 0)


class _RecordingReader(FlatReader):
    """The helper's reader: keeps every detailed warning with its group, so the parent can replay them."""

    def __init__(self, light: bool) -> None:
        super().__init__(light)
        self.grouped: list[tuple[str, str]] = []

    def warn(self, group: str, message: str) -> None:
        count = self._counts.get(group, 0) + 1
        self._counts[group] = count
        if count <= MAX_DETAILED_WARNINGS:
            self.grouped.append((group, message))


def _parse_op_run(region: str, light: bool) -> tuple[tuple[list[Op], list[tuple[str, str]], dict[str, int]], Any]:
    """The ops of a run of op blocks (the helper's share), with its warnings; and the intermediate
    lists, which the helper never frees (its exit is faster than freeing millions of objects)."""
    reader = _RecordingReader(light)
    flat = flat_lists("graph {\n" + region + "}\n")
    if flat and flat[-1] == "":
        flat = flat[:-1]
    if len(flat) != 2 or flat[0] != "graph {":
        raise _NotFlat()
    ops = []
    for key, value in reader.pairs(flat[1]):
        if key != "op {":
            raise _NotFlat()
        ops.append(reader.flat_op(value))
    return (ops, reader.grouped, dict(reader._counts)), flat
