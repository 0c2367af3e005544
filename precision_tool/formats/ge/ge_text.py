"""Protobuf text format of ge ModelDef: the reader's entry point and its general path.

Why our own: protobuf's Python text parser handles ~2 MB/s, and real Build graphs are 50-300 MB.
The fast path (ge_text_fast: files printed one field per line, as GE and protobuf print them) turns the
text into JSON with a few C-speed string replacements. Anything else goes to the general path here: one
regular expression cuts the file into field units (`name: value`, `name {`, `}`) and a loop builds the
message tree guided by the schema in ge_tree, reporting file, line and column on errors. The writer is
ge_text_write; its names are re-exported here.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_model import Model
from precision_tool.formats.ge.ge_text_fast import SUMMARY_ATTRS, parse_text_fast  # noqa: F401  (re-exported)
from precision_tool.formats.ge.ge_text_scalar import _TOKEN, _Many, _scalar, unexpected, unquote  # noqa: F401
from precision_tool.formats.ge.ge_text_write import format_float, format_model, quote  # noqa: F401  (re-exported)
from precision_tool.formats.ge.ge_tree import SCHEMA, I, S, TreeReader, bytes_from_text

# Above this size the fast path parses in two processes (ge_text_fast); a benchmark sets it to compare.
PARALLEL_MIN_CHARS = 8_000_000
MAX_DEPTH = 200  # nesting the general path accepts: far above real graphs, far below the recursion limit

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
    fast = parse_text_fast(text, path, light, PARALLEL_MIN_CHARS)
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
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        # Python's own wording may advise sys.set_int_max_str_digits(): keep the first sentence only
        raise FormatError(path, f"not a GE graph: {str(exc).split(';')[0][:200]}") from None
    except RecursionError:
        raise FormatError(path, "not a GE graph: graphs nested in attributes deeper than any GE graph; "
                                "the file is damaged") from None


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
