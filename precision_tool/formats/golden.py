"""Golden tensor file names: `<node with / and . → _>.<slot>.<µs timestamp>.npy` (formats.md §6.1).

These are the names msaccucmp reads as "Numpy" dumps (pattern `^[.A-Za-z0-9_-]+\\.[0-9]+\\.[0-9]{1,255}\\.npy$`)
and the names our own compare looks up, so both sides share this one module.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# msaccucmp's NUMPY_DUMP_PATTERN: group 1 is the key "<name>.<slot>"
GOLDEN_NAME = re.compile(r"^([.A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]{1,255})\.npy$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
TIMESTAMP_DIGITS = 16


def safe_node_name(node_name: str) -> str:
    """`/` and `.` become `_` (as NPU dump names do); any other character msaccucmp rejects too."""
    return _UNSAFE.sub("_", node_name)


def golden_key(op_name: str, slot: int) -> str:
    """The lookup key of one tensor: 'conv1/Relu', 0 → 'conv1_Relu.0'."""
    return f"{safe_node_name(op_name)}.{int(slot)}"


def golden_file_name(node_name: str, slot: int, timestamp_us: int) -> str:
    """'conv1/Relu', 0, 1796026429735657 → 'conv1_Relu.0.1796026429735657.npy'.

    The timestamp is zero-padded to 16 digits because msaccucmp sorts any other length as 0.
    """
    if timestamp_us < 0:
        raise ValueError(f"negative timestamp {timestamp_us}")
    return f"{golden_key(node_name, slot)}.{int(timestamp_us):0{TIMESTAMP_DIGITS}d}.npy"


def parse_golden_name(file_name: str) -> tuple[str, int, int] | None:
    """'conv1_Relu.0.1796026429735657.npy' → ('conv1_Relu', 0, 1796026429735657); None if not a golden name.

    Like msaccucmp, the slot and timestamp are the second and third dot-separated fields; a name with
    more dots is not one of ours (and msaccucmp would misread it), so it is refused.
    """
    match = GOLDEN_NAME.match(file_name)
    if match is None or "." in match.group(1):
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def _sort_timestamp(timestamp_text: str) -> int:
    """msaccucmp's ordering: a timestamp that is not exactly 16 digits counts as 0."""
    return int(timestamp_text) if len(timestamp_text) == TIMESTAMP_DIGITS else 0


def scan_golden_dir(folder: str | os.PathLike[str]) -> dict[str, Path]:
    """key ('conv1_Relu.0') → file, for every golden .npy directly in `folder`; the latest timestamp wins.

    A missing folder gives {}; files that do not match the pattern are ignored (msaccucmp ignores them too).
    """
    root = Path(folder)
    if not root.is_dir():
        return {}
    best: dict[str, tuple[int, str, Path]] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            if not entry.name.endswith(".npy"):
                continue
            match = GOLDEN_NAME.match(entry.name)
            if match is None or "." in match.group(1):
                continue
            if not entry.is_file():
                continue
            key = f"{match.group(1)}.{match.group(2)}"  # literal, as msaccucmp keys it
            rank = (_sort_timestamp(match.group(3)), entry.name, root / entry.name)
            current = best.get(key)
            if current is None or rank[:2] > current[:2]:
                best[key] = rank
    return {key: value[2] for key, value in sorted(best.items())}
