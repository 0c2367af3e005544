"""tfdbg v1 dump folders (`DumpingDebugWrapperSession`, `DumpingDebugHook`), read without TensorFlow.

Layout (formats.md §6.1): `<root>/run_<µs>_<counter>/_tfdbg_device_<device>/<node path>_<slot>_<debug op>_<µs>`,
one serialized `Event` per tensor file, the tensor in `summary.value[0].tensor`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from precision_tool.errors import FormatError

RUN_DIR = re.compile(r"^run_(\d+)_(\d+)$")
DEVICE_PREFIX = "_tfdbg_device_"
METADATA_PREFIX = "_tfdbg_"
# <node>_<slot>_<debug op>_<µs>[-<k>]: parsed from the right, as TensorFlow's DebugTensorDatum does
_TENSOR_FILE = re.compile(r"^(.+)_(\d+)_([A-Za-z0-9]+)_(\d+)(?:-(\d+))?$")
FULL_TENSOR_OP = "DebugIdentity"


@dataclass(frozen=True)
class V1Run:
    """One `run_<µs>_<counter>` folder: one wrapped `Session.run` call."""

    path: Path
    timestamp_us: int
    counter: int

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class V1TensorFile:
    """One dumped tensor, described by its file name alone (nothing read yet)."""

    path: Path
    device: str  # 'job_localhost,replica_0,task_0,device_CPU_0'
    node_name: str  # 'conv1/Relu'
    output_slot: int
    debug_op: str  # 'DebugIdentity' holds the full tensor; other debug ops hold summaries
    timestamp_us: int
    repeat: int  # the k of a '-k' suffix (same node dumped twice in the same µs), else 0


def is_run_dir(path: Path) -> bool:
    return RUN_DIR.match(path.name) is not None and path.is_dir()


def find_runs(root: Path) -> list[V1Run]:
    """The run_* folders directly in `root`, oldest first (by creation µs, then counter)."""
    runs: list[V1Run] = []
    if not root.is_dir():
        return runs
    with os.scandir(root) as entries:
        for entry in entries:
            match = RUN_DIR.match(entry.name)
            if match and entry.is_dir():
                runs.append(V1Run(Path(entry.path), int(match.group(1)), int(match.group(2))))
    return sorted(runs, key=lambda run: (run.timestamp_us, run.counter, run.name))


def run_from_dir(path: Path) -> V1Run:
    """A V1Run for a folder the user named directly (FormatError when it is not one)."""
    match = RUN_DIR.match(path.name)
    if match is None or not path.is_dir():
        raise FormatError(path, "not a tfdbg run folder (expected run_<µs>_<n>)")
    return V1Run(path, int(match.group(1)), int(match.group(2)))


def parse_tensor_file_name(base_name: str) -> tuple[str, int, str, int, int] | None:
    """'Relu_0_DebugIdentity_1796026429735657' → ('Relu', 0, 'DebugIdentity', 1796026429735657, 0)."""
    match = _TENSOR_FILE.match(base_name)
    if match is None:
        return None
    node, slot, debug_op, stamp, repeat = match.groups()
    return node, int(slot), debug_op, int(stamp), int(repeat or 0)


def list_tensor_files(run: V1Run) -> tuple[list[V1TensorFile], list[Path]]:
    """Every tensor file of a run, and the files whose names are not tensor dumps (for the report).

    Metadata files (`_tfdbg_graph_hash...`, `_tfdbg_core_metadata...`) are neither.
    """
    tensors: list[V1TensorFile] = []
    strays: list[Path] = []
    with os.scandir(run.path) as entries:
        device_dirs = sorted(e.path for e in entries if e.name.startswith(DEVICE_PREFIX) and e.is_dir())
    for device_dir in device_dirs:
        device = os.path.basename(device_dir)[len(DEVICE_PREFIX):]
        prefix_len = len(device_dir) + 1
        for dirpath, dirnames, filenames in os.walk(device_dir, followlinks=True):
            dirnames.sort()
            rel_dir = dirpath[prefix_len:]
            for file_name in sorted(filenames):
                if file_name.startswith(METADATA_PREFIX):
                    continue
                parsed = parse_tensor_file_name(file_name)
                if parsed is None:
                    strays.append(Path(dirpath, file_name))
                    continue
                node, slot, debug_op, stamp, repeat = parsed
                node_name = f"{rel_dir.replace(os.sep, '/')}/{node}" if rel_dir else node
                tensors.append(V1TensorFile(Path(dirpath, file_name), device, node_name, slot, debug_op,
                                            stamp, repeat))
    return tensors, strays


def read_tensor_file(path: Path):  # -> DecodedTensor
    """Decode one tensor file (an `Event`). FormatError when it is cut short or is not an Event."""
    from google.protobuf.message import DecodeError

    from precision_tool.formats.tf.tf_protos import decode_tensor_proto, parse_event

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if not data:
        raise FormatError(path, "empty file (the run was interrupted while dumping?)")
    try:
        event = parse_event(data)
    except DecodeError:
        raise FormatError(path, "not a complete tensorflow Event (file truncated or damaged)") from None
    if not event.HasField("summary") or not event.summary.value:
        raise FormatError(path, "the Event holds no tensor summary (file truncated or not a tfdbg dump)")
    value = event.summary.value[0]
    if not value.HasField("tensor"):
        raise FormatError(path, "the Event's summary holds no tensor (file truncated?)")
    try:
        return decode_tensor_proto(value.tensor)
    except ValueError as exc:
        raise FormatError(path, str(exc)) from None
