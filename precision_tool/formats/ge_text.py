"""Protobuf text format of ge ModelDef: a fast reader and a writer.

Why our own: protobuf's Python text parser handles ~2 MB/s, and real Build graphs are 50-300 MB.
The fast path (files printed one field per line, as GE and protobuf print them) turns the text into JSON
with a few C-speed string replacements and builds the model from json.loads' lists; big files are split
between two processes (see "two processes" below). Anything else goes to the general path: one regular
expression cuts the file into field units (`name: value`, `name {`, `}`) and a loop builds the message
tree guided by the schema in ge_tree, reporting file, line and column on errors.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from precision_tool.errors import FormatError
from precision_tool.formats.ge_graph import (
    DATA_TYPE_NAMES,
    LIST_VAL_TYPES,
    AttrList,
    Graph,
    Model,
    Op,
    TensorDesc,
    attr_kind,
    list_item_kind,
    list_val_type,
)
from precision_tool.formats.ge_tree import (
    MAX_DETAILED_WARNINGS, SCHEMA, B, E, F, I, O, S, TreeReader, V, bytes_from_text,
)

_DQ = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SQ = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_QUOTED = rf"(?:{_DQ}|{_SQ})"
_SCALAR = rf"{_QUOTED}(?:\s*{_QUOTED})*|\[[^\[\]]*\]|[-+\w.]+"
# groups: 1 field name, 2 scalar, 3 opening brace, 4 closing brace, 5 anything else (an error)
_TOKEN = re.compile(
    rf"\s*(?:#[^\n]*\s*)*(?:([A-Za-z_]\w*)\s*(?::\s*({_SCALAR})|:?\s*([{{<]))|([}}>])|(\S))[ \t]*[;,]?"
)
_PIECE = re.compile(_QUOTED)
# the attributes a light parse keeps (with every "<op name>_kernelname"): what an op index shows
SUMMARY_ATTRS = frozenset({"_datadump_original_op_names", "pass_name", "pass_name_ub", "_kernelname",
                           "_ge_attr_op_kernel_lib_name", "_parent_node_index"})
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))",
                     re.DOTALL)
_SIMPLE_ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"\\": b"\\", b"'": b"'", b'"': b'"',
                   b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v", b"?": b"?"}
_LIST_ITEM = re.compile(rf"\s*({_QUOTED}|[^\s,\]\"']+)\s*,?")


class _Problem(Exception):
    """A parse problem at the current field unit; turned into a FormatError with line and column."""

    token: tuple[str, ...] = ()


def parse_text(text: str, path: Path, light: bool = False) -> Model:
    """Parse protobuf text of a ModelDef into the model. FormatError names file, line and column.
    `light` (for indexes): ops keep only the attributes in SUMMARY_ATTRS and no tensor descriptors,
    which the fast path then does not decode (their structure is still checked)."""
    with _gc_paused():
        return _parse_text(text, path, light)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of small objects are made: it would otherwise
    rescan them over and over (it doubles the parse time) although the parse makes no cycles. At the
    end the surviving objects (the model: acyclic, freed by reference counting when dropped) are moved
    out of the collector's view with gc.freeze, else its first pass after the parse rescans them all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


_MALLOC_TUNED = False
TUNE_MALLOC_MIN_CHARS = 8_000_000


def _tune_malloc() -> None:
    """Keep freed memory in the process (glibc): a big parse makes and drops many 50-300 MB strings
    and millions of small objects; handing that memory back to the system and faulting it in again
    costs a third of the parse time. Done once, before the first big parse; a no-op elsewhere."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 1 << 30)
    mallopt(m_trim_threshold, 1 << 30)
    mallopt(m_top_pad, 1 << 28)


def _parse_text(text: str, path: Path, light: bool) -> Model:
    if len(text) >= TUNE_MALLOC_MIN_CHARS:
        _tune_malloc()
    fast = parse_text_fast(text, path, light)
    if fast is not None:
        return fast
    tokens = _TOKEN.findall(text)
    reader = TreeReader(bytes_from_text)
    try:
        tree, _ = _build_tree(tokens, reader)
    except _Problem as problem:
        raise FormatError(path, _where(text, tokens, problem.token, str(problem))) from None
    try:
        return reader.model(tree, path)
    except ValueError as exc:
        raise FormatError(path, f"not a GE graph: {exc}") from None


def _build_tree(tokens: list[tuple[str, str, str, str, str]],
                reader: TreeReader) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The message tree of the token list; raises _Problem with the failing token remembered."""
    skip: dict[str, tuple[str, bool, int]] = {}  # schema of an unknown block: everything inside is skipped
    schemas = {name: fields for name, fields in SCHEMA.items()}
    schema = schemas["ModelDef"]
    message = "ModelDef"
    root: dict[str, Any] = {}
    current = root
    stack: list[tuple[dict[str, Any], dict[str, tuple[str, bool, int]], str, str]] = []
    token: tuple[str, ...] = ()
    try:
        for token in tokens:
            name, scalar, opening, closing, bad = token
            if scalar:
                spec = schema.get(name)
                if spec is None:
                    if schema is not skip:
                        reader.warn("unknown field", f"unknown {message} field {name!r} ignored")
                    continue
                kind, repeated = spec[0], spec[1]
                if kind is S:
                    if scalar[0] == '"' and "\\" not in scalar and scalar.count('"') == 2:
                        value: Any = scalar[1:-1]
                    else:
                        value = _scalar(scalar, kind, repeated)
                elif kind is I:
                    try:
                        value = int(scalar)
                    except ValueError:
                        value = _scalar(scalar, kind, repeated)
                else:
                    value = _scalar(scalar, kind, repeated)
                if repeated:
                    if isinstance(value, _Many):
                        current.setdefault(name, []).extend(value)
                    else:
                        existing = current.get(name)
                        if existing is None:
                            current[name] = [value]
                        else:
                            existing.append(value)
                elif isinstance(value, _Many):
                    raise _Problem(f"field {name!r} of {message} takes one value, not a list")
                else:
                    current[name] = value
            elif opening:
                spec = schema.get(name)
                stack.append((current, schema, message, opening))
                if spec is None or spec[0] not in schemas:
                    if spec is not None:
                        raise _Problem(f"field {name!r} of {message} is a value, not a message")
                    if schema is not skip:
                        reader.warn("unknown field", f"unknown {message} field {name!r} ignored")
                    current, schema = {}, skip
                    continue
                child: dict[str, Any] = {}
                if spec[1]:
                    existing = current.get(name)
                    if existing is None:
                        current[name] = [child]
                    else:
                        existing.append(child)
                else:
                    current[name] = child
                current, message = child, spec[0]
                schema = schemas[message]
            elif closing:
                if not stack:
                    raise _Problem(f"'{closing}' closes nothing")
                current, schema, message, opened = stack.pop()
                if (opened == "{") != (closing == "}"):
                    raise _Problem(f"'{closing}' does not match '{opened}'")
            else:
                raise _Problem(f"unexpected {bad!r}")
    except (ValueError, OverflowError) as exc:
        problem = _Problem(str(exc))
        problem.token = token
        raise problem from None
    except _Problem as problem:
        problem.token = token
        raise
    if stack:
        problem = _Problem(f"the file ends inside a {message} block ({len(stack)} unclosed)")
        problem.token = ()
        raise problem
    return root, token


class _Many(list):  # type: ignore[type-arg]
    """Values of a `field: [a, b]` list."""


def _scalar(text: str, kind: str, repeated: bool) -> Any:
    """Decode one scalar (or a [..] list of them) for a field of `kind`."""
    if text[0] == "[":
        if not repeated:
            raise ValueError(f"a list {text[:40]!r} given for a single value")
        return _Many(_scalar(item, kind, False) for item in _LIST_ITEM.findall(text[1:-1]))
    if kind is S:
        return unquote(text).decode("utf-8", "surrogateescape")
    if kind is B:
        return unquote(text)
    if kind is I:
        return _parse_int(text)
    if kind is F:
        return _parse_float(text)
    if kind is O:
        if text in ("true", "True", "t", "1"):
            return True
        if text in ("false", "False", "f", "0"):
            return False
        raise ValueError(f"expected true or false, found {text!r}")
    if kind is E:
        if text[0] in "-0123456789":
            number = _parse_int(text)
            return DATA_TYPE_NAMES.get(number, str(number))
        return _identifier(text)
    if kind is V:
        if text[0] in "-0123456789":
            number = _parse_int(text)
            return LIST_VAL_TYPES.get(number, str(number))
        return _identifier(text)
    raise ValueError(f"unexpected value {text[:40]!r}")


def _identifier(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_]\w*", text):
        raise ValueError(f"expected an enum name, found {text[:40]!r}")
    return text


def _parse_int(text: str) -> int:
    if text[:1] in "\"'":
        raise ValueError(f"expected an integer, found {text[:40]!r}")
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.lower().startswith("0x"):
        return sign * int(body[2:], 16)
    if len(body) > 1 and body.startswith("0") and body.isdigit():
        return sign * int(body, 8)
    try:
        return sign * int(body)
    except ValueError:
        raise ValueError(f"expected an integer, found {text[:40]!r}") from None


def _parse_float(text: str) -> float:
    lower = text.lower()
    if lower.lstrip("+-") in ("inf", "infinity", "inff", "infinityf"):
        return -math.inf if lower.startswith("-") else math.inf
    if lower.lstrip("+-") in ("nan", "nanf"):
        return math.nan
    if lower.endswith("f") and not lower.startswith(("0x", "-0x")):
        lower = lower[:-1]
    try:
        return float(lower)
    except ValueError:
        raise ValueError(f"expected a number, found {text[:40]!r}") from None


def unquote(text: str) -> bytes:
    """The bytes of one or more adjacent quoted strings, C escapes decoded."""
    if text[:1] not in "\"'":
        raise ValueError(f"expected a quoted string, found {text[:40]!r}")
    parts = []
    for piece in _PIECE.findall(text):
        body = piece[1:-1].encode("utf-8", "surrogateescape")
        if b"\\" in body:
            body = _ESCAPE.sub(_unescape_one, body)
        parts.append(body)
    return b"".join(parts)


def _unescape_one(match: re.Match[bytes]) -> bytes:
    octal, hexa, u4, u8, other = match.groups()
    if octal is not None:
        return bytes([int(octal, 8) & 0xFF])
    if hexa is not None:
        return bytes([int(hexa, 16)])
    if u4 is not None or u8 is not None:
        return chr(int(u4 or u8, 16)).encode("utf-8", "surrogatepass")
    simple = _SIMPLE_ESCAPES.get(other)
    if simple is None:
        raise ValueError(f"unknown escape \\{other.decode('latin-1')}")
    return simple


def _where(text: str, tokens: list[tuple[str, ...]], token: tuple[str, ...], problem: str) -> str:
    """'line L, column C: problem' for the failing token (found by identity, then its match position)."""
    position = len(text.rstrip())
    index = next((i for i, t in enumerate(tokens) if t is token), None)
    if index is not None and "ends inside" not in problem:
        for i, match in enumerate(_TOKEN.finditer(text)):
            if i == index:
                group = next(g for g in range(1, 6) if match.group(g))
                position = match.start(group)
                break
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}: {problem}"


# --- writer -----------------------------------------------------------------------------------------
_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f-\U0010ffff]*')


def quote(value: str | bytes) -> str:
    """A quoted text-format string; non-printable and non-ASCII bytes as octal escapes, as GE writes."""
    if isinstance(value, str):
        if _PLAIN.fullmatch(value):
            return f'"{value}"'
        value = value.encode("utf-8", "surrogateescape")
    out = []
    for byte in value:
        if byte == 0x22:
            out.append('\\"')
        elif byte == 0x5C:
            out.append("\\\\")
        elif byte == 0x0A:
            out.append("\\n")
        elif byte == 0x0D:
            out.append("\\r")
        elif byte == 0x09:
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def format_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def model(self, model: Model) -> None:
        add = self.lines.append
        if model.name:
            add(f"name: {quote(model.name)}")
        if model.version:
            add(f"version: {int(model.version)}")
        if model.custom_version:
            add(f"custom_version: {quote(model.custom_version)}")
        for graph in model.graphs:
            add("graph {")
            self.graph(graph, "  ")
            add("}")
        self.attrs(model.attrs, "")

    def graph(self, graph: Graph, pad: str) -> None:
        add = self.lines.append
        if graph.name:
            add(f"{pad}name: {quote(graph.name)}")
        for text in graph.inputs:
            add(f"{pad}input: {quote(text)}")
        for text in graph.outputs:
            add(f"{pad}output: {quote(text)}")
        inner = pad + "  "
        for op in graph.ops:
            add(f"{pad}op {{")
            add(f"{inner}name: {quote(op.name)}")
            if op.type:
                add(f"{inner}type: {quote(op.type)}")
            for text in op.inputs:
                add(f"{inner}input: {quote(text)}")
            self.attrs(op.attrs, inner)
            fields = dict(op.extra)
            if op.id:
                fields["id"] = op.id
            if op.stream_id:
                fields["stream_id"] = op.stream_id
            if op.dst_names:
                fields["dst_name"] = op.dst_names
            if op.dst_indexes:
                fields["dst_index"] = op.dst_indexes
            if op.subgraph_names:
                fields["subgraph_name"] = op.subgraph_names
            self.fields("OpDef", fields, inner, after=10, before=33)
            for desc in op.input_descs:
                add(f"{inner}input_desc {{")
                self.desc(desc, inner + "  ")
                add(f"{inner}}}")
            for desc in op.output_descs:
                add(f"{inner}output_desc {{")
                self.desc(desc, inner + "  ")
                add(f"{inner}}}")
            self.fields("OpDef", fields, inner, after=34, before=1000)
            add(f"{pad}}}")
        self.attrs(graph.attrs, pad)

    def fields(self, message: str, values: dict[str, Any], pad: str, after: int, before: int) -> None:
        """Scalar fields with numbers in (after, before), in field-number order."""
        schema = SCHEMA[message]
        chosen = sorted((schema[k][2], k) for k in values if k in schema and after < schema[k][2] < before)
        for _, key in chosen:
            kind, repeated, _ = schema[key]
            value = values[key]
            for item in (value if repeated else [value]):
                self.lines.append(f"{pad}{key}: {self.scalar(kind, item)}")

    @staticmethod
    def scalar(kind: str, value: Any) -> str:
        if kind is S or kind is B:
            return quote(value)
        if kind is O:
            return "true" if value else "false"
        if kind is F:
            return format_float(value)
        if kind is I:
            return str(int(value))
        return str(value)  # enum names

    def desc(self, desc: TensorDesc, pad: str) -> None:
        add = self.lines.append
        if "name" in desc.extra:
            add(f"{pad}name: {quote(desc.extra['name'])}")
        if desc.dtype and desc.dtype != "DT_UNDEFINED":
            add(f"{pad}dtype: {desc.dtype}")
        if desc.shape:
            add(f"{pad}shape {{")
            inner = pad + "  "
            for dim in desc.shape:
                add(f"{inner}dim: {int(dim)}")
            add(f"{pad}}}")
        if desc.layout:
            add(f"{pad}layout: {quote(desc.layout)}")
        self.attrs(desc.attrs, pad)
        self.fields("TensorDescriptor", desc.extra, pad, after=5, before=1000)

    def attrs(self, attrs: dict[str, Any], pad: str) -> None:
        add = self.lines.append
        inner = pad + "  "
        for key, value in attrs.items():
            add(f"{pad}attr {{")
            add(f"{inner}key: {quote(key)}")
            add(f"{inner}value {{")
            self.attr_value(value, inner + "  ")
            add(f"{inner}}}")
            add(f"{pad}}}")

    def attr_value(self, value: Any, pad: str) -> None:
        add = self.lines.append
        kind = attr_kind(value)
        if kind == "":
            return
        if kind == "s":
            add(f"{pad}s: {quote(value)}")
        elif kind == "i":
            add(f"{pad}i: {int(value)}")
        elif kind == "b":
            add(f"{pad}b: {'true' if value else 'false'}")
        elif kind == "f":
            add(f"{pad}f: {format_float(value)}")
        elif kind == "dt":
            add(f"{pad}dt: {int(value)}")
        elif kind == "bt":
            add(f"{pad}bt: {quote(bytes(value))}")
        elif kind == "list":
            add(f"{pad}list {{")
            self.list_value(value, pad + "  ")
            add(f"{pad}}}")
        else:
            add(f"{pad}{kind} {{")
            self.message_value(kind, value, pad + "  ")
            add(f"{pad}}}")

    def list_value(self, value: list[Any], pad: str) -> None:
        add = self.lines.append
        item_kind = list_item_kind(value)
        for item in value:
            if item_kind == "s":
                add(f"{pad}s: {quote(item)}")
            elif item_kind in ("i", "dt"):
                add(f"{pad}{item_kind}: {int(item)}")
            elif item_kind == "f":
                add(f"{pad}f: {format_float(item)}")
            elif item_kind == "b":
                add(f"{pad}b: {'true' if item else 'false'}")
            elif item_kind == "bt":
                add(f"{pad}bt: {quote(bytes(item))}")
            else:
                add(f"{pad}{item_kind} {{")
                self.message_value({"na": "func"}.get(item_kind or "", item_kind or ""), item, pad + "  ")
                add(f"{pad}}}")
        val_type = list_val_type(value)
        if val_type:
            add(f"{pad}val_type: {val_type}")

    def message_value(self, kind: str, value: Any, pad: str) -> None:
        add = self.lines.append
        if kind == "td":
            self.desc(value, pad)
        elif kind == "g":
            self.graph(value, pad)
        elif kind == "func":
            if value.name:
                add(f"{pad}name: {quote(value.name)}")
            self.attrs(value.attrs, pad)
        elif kind == "t":
            if value.desc is not None:
                add(f"{pad}desc {{")
                self.desc(value.desc, pad + "  ")
                add(f"{pad}}}")
            if value.data:
                add(f"{pad}data: {quote(bytes(value.data))}")
        elif kind in ("list_list_int", "list_list_float"):
            outer, inner_name = ("list_list_i", "list_i") if kind == "list_list_int" else ("list_list_f", "list_f")
            for row in value:
                add(f"{pad}{outer} {{")
                for item in row:
                    text = str(int(item)) if kind == "list_list_int" else format_float(item)
                    add(f"{pad}  {inner_name}: {text}")
                add(f"{pad}}}")
        else:
            raise TypeError(f"cannot write attribute kind {kind}")


def format_model(model: Model) -> str:
    """The text-format dump of a model (2-space indented, one field per line, like GE's own dumps)."""
    writer = _Writer()
    writer.model(model)
    return "\n".join(writer.lines) + "\n"



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
            from precision_tool.formats.ge_graph import VAL_TYPE_ITEM_KIND

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
    if text.isdigit() and (text[0] != "0" or len(text) == 1):
        return int(text)
    return _parse_int(text)


def spec_name(key: str) -> str:
    return key[:-2] if key.endswith(" {") else key


def parse_text_fast(text: str, path: Path, light: bool = False) -> Model | None:
    """The fast path; None when the file is not one field per line (or anything looks odd).
    Big files are parsed by two processes (see _parse_split) when the machine has two cores."""
    if len(text) >= PARALLEL_MIN_CHARS and _cores() >= 2 and hasattr(os, "fork"):
        split = _split_region(text)
        if split is not None:
            try:
                return _parse_split(text, path, *split, light=light)
            except (_NotFlat, ValueError, TypeError, AttributeError, KeyError, OSError, pickle.PickleError):
                pass  # anything odd: the one-process fast path below decides
    try:
        flat = flat_lists(text)
        return FlatReader(light).flat_model(flat, path)
    except (_NotFlat, ValueError, TypeError, AttributeError, KeyError):
        return None


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
