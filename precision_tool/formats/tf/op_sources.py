"""Where in the user's code each TensorFlow op was created: tf/source/op_sources.json.

The capture side (tf_config.sess_dump, estimator_dump) records, for every op of the golden graph, the
Python stack at which TensorFlow created it (`op.traceback`) and the lines of the user's files around each
of its frames, so the record travels with the workspace and answers on another machine. `ni` shows the
user's frame of an NPU op through its original TF ops: the innermost frame outside TensorFlow, Keras,
the Python library and this tool (the demo's network counts as the user's code).

The file: {"format", "version", "files": [{"path", "user"}], "frames": [[file, line, function]],
"stacks": [[frame, ...] outermost first], "ops": {op name: stack}, "lines": {file: {line: text}}}.
Frames and stacks are shared: ops made by the same code path share one stack.
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError

FORMAT_NAME = "precision_tool.op_sources"
FORMAT_VERSION = 1
CONTEXT_LINES = 4
"""Lines kept on each side of a user frame's line (the report shows the code around it)."""
MAX_LINE_CHARS = 400
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DEMO_DIR = os.path.join(_PACKAGE_DIR, "demo") + os.sep
_LIBRARY_MARKS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    user: bool
    """The user's code (not TensorFlow, Keras, the Python library or this tool)."""
    text: str | None = None
    """The line itself, when the record holds it."""

    @property
    def place(self) -> str:
        """'network.py:92 in build_model()'."""
        return f"{os.path.basename(self.path)}:{self.line} in {self.function}()"


@dataclass(frozen=True)
class OpSources:
    """A record read back."""

    path: Path
    data: dict

    def stack(self, op_name: str) -> tuple[Frame, ...] | None:
        """The frames at which `op_name` was created, outermost first; None when the record lacks the op."""
        index = self.data["ops"].get(op_name)
        if index is None:
            return None
        files, frames, lines = self.data["files"], self.data["frames"], self.data["lines"]
        out = []
        for frame in self.data["stacks"][index]:
            file_index, line, function = frames[frame]
            entry = files[file_index]
            out.append(Frame(entry["path"], line, function, bool(entry["user"]),
                             lines.get(str(file_index), {}).get(str(line))))
        return tuple(out)

    def context(self, frame: Frame) -> list[tuple[int, str]]:
        """(line number, text) of the lines kept around `frame`'s line, in order."""
        for file_index, entry in enumerate(self.data["files"]):
            if entry["path"] == frame.path:
                kept = self.data["lines"].get(str(file_index), {})
                return [(n, kept[str(n)]) for n in range(frame.line - CONTEXT_LINES, frame.line + CONTEXT_LINES + 1)
                        if str(n) in kept]
        return []


def user_frame(stack: Iterable[Frame]) -> Frame | None:
    """The innermost frame of the user's code, or None."""
    found = None
    for frame in stack:
        if frame.user:
            found = frame
    return found


def is_user_file(path: str) -> bool:
    """Whether frames in `path` are the user's code (decided where the capture ran: paths are its paths)."""
    if path.startswith("<"):  # <string>, <stdin>: code typed or exec'd by the user; <frozen runpy>: Python's
        return not path.startswith("<frozen")
    full = os.path.abspath(path)
    if full.startswith(_DEMO_DIR):
        return True  # the demo's network plays the user's model
    if full.startswith(_PACKAGE_DIR + os.sep) or any(mark in full for mark in _LIBRARY_MARKS):
        return False
    return not any(full.startswith(prefix + os.sep) for prefix in _library_prefixes())


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.abspath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
                 | {os.path.abspath(os.path.dirname(os.__file__))})


class SourceRecord:
    """Builds a record op by op (the capture side), then writes it."""

    def __init__(self, lines_of: "Callable[[str], Sequence[str] | None] | None" = None) -> None:
        """`lines_of`: a file's lines as the capture saw them (tfdbg v2 keeps them in its dump); default:
        read from the file itself."""
        self._lines_of = lines_of
        self._files: dict[str, int] = {}
        self._user: list[bool] = []
        self._frames: dict[tuple[int, int, str], int] = {}
        self._stacks: dict[tuple[int, ...], int] = {}
        self.ops: dict[str, int] = {}

    def add(self, op_name: str, frames: Iterable[tuple[str, int, str]]) -> None:
        """`frames`: (file, line, function), outermost first, as TensorFlow's op.traceback lists them."""
        stack = tuple(self._frame(path, int(line), str(function)) for path, line, function in frames)
        self.ops[op_name] = self._stacks.setdefault(stack, len(self._stacks))

    def _frame(self, path: str, line: int, function: str) -> int:
        file_index = self._files.get(path)
        if file_index is None:
            file_index = self._files[path] = len(self._files)
            self._user.append(is_user_file(path))
        return self._frames.setdefault((file_index, line, function), len(self._frames))

    def as_json(self) -> dict:
        wanted: dict[int, set[int]] = {}
        for file_index, line, _ in self._frames:
            if self._user[file_index]:
                wanted.setdefault(file_index, set()).update(range(line - CONTEXT_LINES, line + CONTEXT_LINES + 1))
        lines: dict[str, dict[str, str]] = {}
        paths = list(self._files)
        for file_index, numbers in wanted.items():
            kept = {}
            given = self._lines_of(paths[file_index]) if self._lines_of is not None else None
            for number in sorted(n for n in numbers if n > 0):
                if given is not None:
                    if number > len(given):
                        continue
                    text = given[number - 1]
                else:
                    text = linecache.getline(paths[file_index], number)
                    if not text:
                        continue
                kept[str(number)] = text.rstrip("\n")[:MAX_LINE_CHARS]
            if kept:
                lines[str(file_index)] = kept
        return {
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "python": sys.version.split()[0],
            "files": [{"path": p, "user": u} for p, u in zip(paths, self._user)],
            "frames": [list(key) for key in self._frames],
            "stacks": [list(stack) for stack in self._stacks],
            "ops": self.ops,
            "lines": lines,
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, json.dumps(self.as_json(), separators=(",", ":")))


def read_op_sources(path: str | os.PathLike[str]) -> OpSources | None:
    """The record at `path`; None when there is none; FormatError when it is damaged or of a newer version."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"cannot be read ({exc}); delete it and capture the golden run again") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"is not valid JSON ({exc.msg} at line {exc.lineno}); delete it and capture the "
                                "golden run again") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise FormatError(path, f"is not a source-line record of this tool (no \"format\": \"{FORMAT_NAME}\")")
    version = data.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise FormatError(path, f"is version {version!r}, newer than this tool reads ({FORMAT_VERSION}); "
                                "update precision_tool")
    if not _well_formed(data):
        raise FormatError(path, "has missing or mistyped fields (files, frames, stacks, ops, lines); delete it "
                                "and capture the golden run again")
    return OpSources(path, data)


def _well_formed(data: dict) -> bool:
    files, frames, stacks = data.get("files"), data.get("frames"), data.get("stacks")
    ops, lines = data.get("ops"), data.get("lines")
    if not (isinstance(files, list) and isinstance(frames, list) and isinstance(stacks, list)
            and isinstance(ops, dict) and isinstance(lines, dict)):
        return False
    if not all(isinstance(f, dict) and isinstance(f.get("path"), str) for f in files):
        return False
    if not all(isinstance(f, list) and len(f) == 3 and isinstance(f[0], int) and 0 <= f[0] < len(files)
               and isinstance(f[1], int) and isinstance(f[2], str) for f in frames):
        return False
    if not all(isinstance(s, list) and all(isinstance(i, int) and 0 <= i < len(frames) for i in s) for s in stacks):
        return False
    if not all(isinstance(i, int) and 0 <= i < len(stacks) for i in ops.values()):
        return False
    return all(isinstance(v, dict) and all(isinstance(t, str) for t in v.values()) for v in lines.values())
