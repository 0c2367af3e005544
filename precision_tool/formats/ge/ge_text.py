"""Protobuf text format of ge ModelDef: the reader's entry point and its general path.

Why our own: protobuf's Python text parser handles ~2 MB/s, and real Build graphs are 50-300 MB.
The fast path (ge_text_fast: files printed one field per line, as GE and protobuf print them) turns the
text into JSON with a few C-speed string replacements. Text in another layout (a whole graph on one line)
is first rewritten one field per line (`reflow`), also at C speed. Anything else goes to the general path
here: one regular expression cuts the file into field units (`name: value`, `name {`, `}`), read one at a
time, and a loop builds the message tree guided by the schema in ge_tree, reporting file, line and column
on errors. `op_spans` finds each op block of a text graph in any layout (what `ni` reads instead of the
whole file). The writer is ge_text_write; its names are re-exported here.
"""

from __future__ import annotations

import re
import sys
from itertools import chain
from pathlib import Path
from typing import Any, Iterator

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_model import Model
from precision_tool.formats.ge.ge_text_fast import SUMMARY_ATTRS, parse_text_fast  # noqa: F401  (re-exported)
from precision_tool.formats.ge.ge_text_scalar import _TOKEN, _Many, _scalar, unexpected, unquote  # noqa: F401
from precision_tool.formats.ge.ge_text_write import format_float, format_model, quote  # noqa: F401  (re-exported)
from precision_tool.formats.ge.ge_tree import SCHEMA, I, S, TreeReader, bytes_from_text
from precision_tool.gc_pause import without_gc_keeping

# Above this size the fast path parses in two processes (ge_text_fast); a benchmark sets it to compare.
PARALLEL_MIN_CHARS = 8_000_000
MAX_DEPTH = 200  # nesting the general path accepts: far above real graphs, far below the recursion limit

class _Problem(Exception):
    """A parse problem at the current field unit; turned into a FormatError with line and column."""

    position: int = -1  # where in the text; -1: at its end


@without_gc_keeping  # millions of small objects and no cycles; the model lives on (gc_pause.py)
def parse_text(text: str, path: Path, light: bool = False) -> Model:
    """Parse protobuf text of a ModelDef into the model. FormatError names file, line and column.
    `light` (for indexes): ops keep only the attributes in SUMMARY_ATTRS and no tensor descriptors,
    which the fast path then does not decode (their structure is still checked)."""
    return _parse_text(text, path, light)


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
    fast = parse_text_fast(text, path, light, PARALLEL_MIN_CHARS)
    if fast is not None:
        return fast
    if len(text) > REFLOW_MIN_LINE * (text.count("\n") + 1):
        lines = reflow(text)
        if lines is not None:
            fast = parse_text_fast(lines, path, light, PARALLEL_MIN_CHARS)
            if fast is not None:
                return fast
            del lines
    return parse_general(text, path)


def parse_general(text: str, path: Path) -> Model:
    """The general path alone (any layout, every problem named with line and column); parse_text tries
    the fast ways first. Tests hold the fast ways to it."""
    reader = TreeReader(bytes_from_text)
    try:
        # field units one at a time: a list of them all held ~10 bytes per byte of text
        tree = _build_tree(_TOKEN.finditer(text), reader)
    except _Problem as problem:
        raise FormatError(path, _where(text, problem.position, str(problem))) from None
    try:
        return reader.model(tree, path)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        # Python's own wording may advise sys.set_int_max_str_digits(): keep the first sentence only
        raise FormatError(path, f"not a GE graph: {str(exc).split(';')[0][:200]}") from None
    except RecursionError:
        raise FormatError(path, "not a GE graph: graphs nested in attributes deeper than any GE graph; "
                                "the file is damaged") from None


def _build_tree(tokens: Iterator[re.Match[str]], reader: TreeReader) -> dict[str, Any]:
    """The message tree of the field units; raises _Problem with the failing unit's position."""
    skip: dict[str, tuple[str, bool, int]] = {}  # schema of an unknown block: everything inside is skipped
    schemas = {name: fields for name, fields in SCHEMA.items()}
    schema = schemas["ModelDef"]
    message = "ModelDef"
    root: dict[str, Any] = {}
    current = root
    stack: list[tuple[dict[str, Any], dict[str, tuple[str, bool, int]], str, str]] = []
    match: re.Match[str] | None = None
    try:
        for match in tokens:
            name, scalar, opening, closing, bad = match.groups()
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
                if len(stack) >= MAX_DEPTH:
                    raise _Problem(f"blocks nested deeper than {MAX_DEPTH} levels (GE graphs use about 12); "
                                   "the file is damaged")
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
                raise _Problem(unexpected(bad))
    except (ValueError, OverflowError) as exc:
        problem = _Problem(str(exc))
        problem.position = _start(match)
        raise problem from None
    except _Problem as problem:
        problem.position = _start(match)
        raise
    if stack:
        raise _Problem(f"the file ends inside a {message} block ({len(stack)} unclosed)")
    return root


def _start(match: re.Match[str] | None) -> int:
    """Where a field unit starts (after the blanks and comments the match also took)."""
    if match is None:
        return -1
    return match.start(next(g for g in range(1, 6) if match.group(g)))


def _where(text: str, position: int, problem: str) -> str:
    """'line L, column C: problem' at `position` (-1: the end of the text)."""
    if position < 0:
        position = len(text.rstrip())
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}: {problem}"


# --- text in another layout -----------------------------------------------------------------------------
# The same graph on one line (minified, or re-saved by a tool) went to the general path, which handles each
# field unit in Python: 6 s and 1.3 GB for a 50 MB line, and `ni` parsed the whole file every time because
# its op blocks could not be found. `reflow` puts one field per line with C-speed string operations on the
# text with its quoted strings taken out (nothing inside a string is touched); the fast path then reads it.
REFLOW_MIN_LINE = 100  # average characters per line above which text is not GE's one field per line
_STRING = re.compile(r'("[^"\\\n]*(?:\\.[^"\\\n]*)*")')
_BYTES_STRING = re.compile(rb'("[^"\\\n]*(?:\\.[^"\\\n]*)*")')
_PLACE = "\x01"  # stands for a string while the rest is rewritten
# what may stand between strings in text reflow handles: names, numbers, enum names, ':', braces, blanks
_PLAIN = bytes(c for c in range(128) if chr(c).isalnum() or chr(c) in "_.+-:{} \t\n\r\f\v\x01")


def reflow(text: str) -> str | None:
    """Protobuf text in any layout, rewritten one field per line (strings unchanged); None when it holds
    what the rewrite leaves to the general path: comments, single quotes, `[a, b]` lists, `<>` blocks,
    `;`/`,` separators, adjacent strings, a quote that does not close, non-ASCII outside strings."""
    if _PLACE in text:
        return None
    parts = _STRING.split(text)
    strings = parts[1::2]
    skeleton = _PLACE.join(parts[0::2])
    del parts
    if not skeleton.isascii() or skeleton.encode("ascii").translate(None, _PLAIN):
        return None
    lines = "\n".join(skeleton.replace("{", " { ").replace("}", " } ").replace(":", " : ").split())
    del skeleton
    # every unit is on its own line now: join `name` `:` `value` and `name` `{`
    lines = lines.replace("\n:\n{", " {").replace("\n:\n", ": ").replace("\n{", " {")
    if lines.count(": " + _PLACE) != len(strings):
        return None  # a string that is not a field's value (adjacent strings, a string as a name)
    lines = _indent_top_ops(lines)
    pieces = lines.split(_PLACE)
    del lines
    return "".join(chain.from_iterable(zip(pieces, strings))) + pieces[-1] + "\n"


def _indent_top_ops(lines: str) -> str:
    """Each op block directly inside a graph indented as GE indents it (`  op {` ... `  }`, nothing else is):
    the fast path then cuts a big graph between two of them and parses it in two processes."""
    blocks = _top_blocks(lines.encode("ascii"))  # no strings in it yet: every brace is structure
    if not blocks:
        return lines
    pieces = []
    previous = 0
    for start, end in blocks:
        pieces += [lines[previous:start], "  ", lines[start:end - 1], "  }"]
        previous = end
    pieces.append(lines[previous:])
    return "".join(pieces)


_OP_OPEN = re.compile(rb"op\s*:?\s*\{")  # no look-behind: a literal start keeps the search at C speed
_BEFORE_NAME = b" \t\n\r\f\v{}"  # what may stand before a field name
_BRACE = re.compile(rb"[{}]")


def op_spans(data: bytes) -> list[tuple[int, int]] | None:
    """(offset, length) in bytes of each op block directly inside a top-level graph, in a text graph of any
    layout (GE's one field per line has a faster search: graph_summary.op_blocks); None when its strings do
    not close or its braces do not balance. The caller checks the count against the parsed ops."""
    parts = _BYTES_STRING.split(data)
    parts[1::2] = [b" " * len(p) for p in parts[1::2]]  # strings blanked: every brace left is structure
    masked = b"".join(parts)
    del parts
    if len(masked) != len(data) or b'"' in masked:
        return None
    blocks = _top_blocks(masked)
    return None if blocks is None else [(start, end - start) for start, end in blocks]


def _top_blocks(masked: bytes) -> list[tuple[int, int]] | None:
    """(start, end) of each `op {...}` block directly inside a top-level graph of text whose braces are all
    structure (strings blanked or taken out); None when one does not close."""
    starts = []
    depth = previous = 0
    for match in _OP_OPEN.finditer(masked):
        start = match.start()
        if start and masked[start - 1] not in _BEFORE_NAME:
            continue  # the end of another name (`loop {`)
        depth += masked.count(b"{", previous, start) - masked.count(b"}", previous, start)
        previous = start
        if depth == 1:  # inside a graph block of the model
            starts.append(start)
    blocks = []
    for number, start in enumerate(starts):
        bound = starts[number + 1] if number + 1 < len(starts) else len(masked)
        end = _block_end(masked, start, bound)
        if end is None:
            return None
        blocks.append((start, end))
    return blocks


def _block_end(masked: bytes, start: int, bound: int) -> int | None:
    """Where the block opening at `start` ends: before the next op when only blanks separate them (the
    common case, found in C), else by walking its braces."""
    end = masked.rfind(b"}", start, bound)
    if end >= 0 and not masked[end + 1:bound].strip() \
            and masked.count(b"{", start, end) == masked.count(b"}", start, end + 1):
        return end + 1
    depth = 0
    for match in _BRACE.finditer(masked, start, bound):
        depth += 1 if match.group() == b"{" else -1
        if depth == 0:
            return match.end()
    return None
