"""CANN's mixed-precision list file (the `modify_mixlist` option's JSON, e.g. fix/ops_info.json).

    {"black-list": {"to-add": ["MatMulV2"]}, "white-list": {"to-remove": ["Conv2D"]}}

Top-level "black-list" (op types kept in float32), "white-list" (always float16) and "gray-list" (follow
their inputs), each with "to-add" / "to-remove" arrays of NPU op types. Reading only; no printing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from precision_tool.errors import FormatError

LISTS = ("black-list", "white-list", "gray-list")
BLOCK_LIST = LISTS[0]  # the op types it adds stay in float32
CHANGES = ("to-add", "to-remove")


@dataclass(frozen=True)
class Mixlist:
    """Each list's changes: {"black-list": {"to-add": ("MatMulV2",)}, ...}; absent ones are empty."""

    path: Path
    changes: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def types(self, list_name: str, change: str = "to-add") -> tuple[str, ...]:
        return self.changes.get(list_name, {}).get(change, ())

    @property
    def kept_in_float32(self) -> frozenset[str]:
        """The op types the block list adds (and does not remove again): they stay in float32."""
        return frozenset(self.types("black-list")) - frozenset(self.types("black-list", "to-remove"))


def read_mixlist(path: Path) -> Mixlist:
    """The file parsed and checked; FormatError (naming the file and what is wrong) otherwise.
    OSError when it cannot be read at all."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FormatError(path, f"not JSON ({exc})") from None
    shape = '{"black-list": {"to-add": ["OpType", ...]}}'
    if not isinstance(data, dict):
        raise FormatError(path, f"not a mixed-precision list: expected an object like {shape}")
    changes: dict[str, dict[str, tuple[str, ...]]] = {}
    for list_name, entry in data.items():
        if list_name not in LISTS:
            raise FormatError(path, f"unknown key {list_name!r} (a mixed-precision list has {', '.join(LISTS)})")
        if not isinstance(entry, dict):
            raise FormatError(path, f"{list_name!r} must be an object with {' / '.join(CHANGES)} arrays")
        changes[list_name] = {}
        for change, types in entry.items():
            if change not in CHANGES:
                raise FormatError(path, f"unknown key {change!r} in {list_name!r} (expected {' / '.join(CHANGES)})")
            if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
                raise FormatError(path, f"{list_name} {change} must be an array of op type names")
            changes[list_name][change] = tuple(types)
    return Mixlist(Path(path), changes)
