"""The layout a dump tensor is shown in (`pt`, `ni`, the overflow check, `dc -f`): the origin layout
the run's Build graph names for it, else the usual host layout, with the device padding cut.

Device shapes such as FRACTAL_Z [9,1,16,16] with original shape [3,3,3,16] read validly as HWCN and as
NHWC; only the graph says which, so the graph's descriptors are looked up for dumps inside a workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from precision_tool.errors import FormatError, PrecisionToolError
from precision_tool.formats.npu.dump_types import DataType, data_type_name, format_name, numpy_dtype_of
from precision_tool.formats.npu.npu_dump import DumpFile, TensorHeader, read_dump_header, read_tensor

if TYPE_CHECKING:
    import numpy as np

    from precision_tool.workspace import Workspace


# The layout a device-layout tensor is shown in when no graph names its origin layout.
HOST_LAYOUT = {"NC1HWC0": "NCHW", "NC1HWC0_C04": "NCHW", "FRACTAL_Z": "NCHW", "FRACTAL_NZ": "ND",
               "NDC1HWC0": "NCDHW"}
DEVICE_LAYOUTS = tuple(HOST_LAYOUT)


@dataclass(frozen=True)
class LayoutStory:
    """How `pt` shows a dump tensor: from the device layout it was dumped in to the layout shown."""

    device: str  # the dump's layout (NC1HWC0, FRACTAL_Z, ND ...)
    device_shape: tuple[int, ...]
    layout: str  # the layout shown
    shape: tuple[int, ...]
    source: str  # "graph": origin layout from the run's Build graph; "host": the usual host layout; "dump": as dumped
    problem: str | None = None  # why the tensor is shown as dumped although it has a device layout


def origin_layout_array(tensor: TensorHeader, array: "np.ndarray", origin: str | None) -> tuple["np.ndarray", LayoutStory]:
    """The tensor in its origin layout, as `pt`, `ni`, the overflow check and `dc -f` read it: the layout the
    run's Build graph gives (`origin`, see graph_origin_formats / op_origin_formats), else the usual host
    layout; the device padding cut. Tensors already in a plain layout stay as dumped."""
    from precision_tool.formats.npu.layouts import LayoutError, from_device

    device = format_name(tensor.format)
    device_shape = tuple(int(d) for d in array.shape)
    if device not in DEVICE_LAYOUTS:
        return array, LayoutStory(device, device_shape, device, device_shape, "dump")
    if origin is not None and len(origin) != len(tensor.original_shape):
        origin = None  # the graph's layout does not describe this shape (as in dc -f)
    target = origin or HOST_LAYOUT[device]
    try:
        converted = from_device(array, tensor.format, target, tensor.original_shape or None, original_format=origin,
                                sub_format=tensor.sub_format)
    except LayoutError as exc:
        return array, LayoutStory(device, device_shape, device, device_shape, "dump", str(exc))
    return converted, LayoutStory(device, device_shape, target, tuple(int(d) for d in converted.shape),
                                  "graph" if origin else "host")


MAP_FROM = 64 << 20
"""Bytes from which a tensor that needs no conversion is mapped from its file instead of read."""
_DECODED = (DataType.UINT1, DataType.COMPLEX32, DataType.HIFLOAT8)  # read_tensor decodes these: never mapped


def shown_tensor(dump: DumpFile, tensor: TensorHeader, origin: str | None) -> tuple["np.ndarray", LayoutStory]:
    """origin_layout_array of the tensor (as `pt`, `ni` and the overflow check show it) in bounded memory: a
    big tensor already in a plain layout, of a type numpy reads as stored, is mapped from the file, not read
    (tensor_stats then streams it: a 10 GB dump costs a few steps of memory); a big one that must be held
    to be converted or decoded is refused in one line, before it is read, when that would not fit."""
    from precision_tool.analysis.dumps.tensor_memory import require_memory, size_text

    device = format_name(tensor.format)
    try:
        dtype = numpy_dtype_of(tensor.data_type)
    except ValueError:
        dtype = None  # read_tensor says why it cannot decode it
    if dtype is not None and tensor.size >= MAP_FROM:
        nbytes = tensor.element_count * dtype.itemsize
        if device not in DEVICE_LAYOUTS and tensor.data_type not in _DECODED:
            mapped = _mapped(dump, tensor, dtype)
            if mapped is not None:
                return mapped, LayoutStory(device, mapped.shape, device, mapped.shape, "dump")
        require_memory(dump.path, 3 * nbytes,
                       f"{tensor.label} ({size_text(nbytes)} of {data_type_name(tensor.data_type)} in {device}) held "
                       f"{'and converted to its origin layout' if device in DEVICE_LAYOUTS else 'and decoded'}",
                       "`dc FILE` writes it as dumped, streamed (no conversion), and pt shows that .npy")
    return origin_layout_array(tensor, read_tensor(dump, tensor), origin)


def _mapped(dump: DumpFile, tensor: TensorHeader, dtype: "np.dtype") -> "np.ndarray | None":
    """The tensor's block mapped read-only; None when its header is odd (read_tensor then names the problem)."""
    import numpy as np

    shape = tensor.array_shape
    if len(shape) > 32 or any(d < 0 for d in shape) or tensor.element_count * dtype.itemsize > tensor.size:
        return None
    try:
        return np.memmap(dump.path, dtype=dtype, mode="r", offset=tensor.offset, shape=shape)
    except (OSError, ValueError) as exc:
        raise FormatError(dump.path, f"{tensor.label}: cannot map its data ({exc})") from None


# --- the layouts the graph names ------------------------------------------------------------------
OriginFormats = dict[tuple[str, int], str]  # ("input", 1) → "HWCN": the layout a graph names for a tensor
_PLAIN_LAYOUTS = ("NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "DHWNC")


def graph_origin_formats(workspace: "Workspace", paths: Sequence[Path]) -> dict[Path, OriginFormats]:
    """For dumps that belong to the workspace (under npu/debug_N/dump, their op in that run's Build graph):
    the origin layout of each input and output as the graph's descriptors give it (origin_format). Device
    shapes such as FRACTAL_Z [9,1,16,16] with original shape [3,3,3,16] read validly as HWCN and as NHWC;
    the graph says which. Files outside the workspace, unreadable ones and ops not in the graph are left out."""
    runs = dump_runs(workspace, paths)
    if not runs:
        return {}  # (before importing the graph index: dumps outside a workspace need no graph)
    from precision_tool.analysis.graphs.graph_index import index_for

    index = index_for(workspace)
    by_op: dict[tuple[int, str], OriginFormats | None] = {}
    out: dict[Path, OriginFormats] = {}
    for path in paths:
        debug_id = runs.get(Path(path))
        if debug_id is None:
            continue
        try:
            op_name = read_dump_header(path).op_name
        except PrecisionToolError:
            continue  # decoding reports it
        if not op_name:
            continue
        key = (debug_id, op_name)
        if key not in by_op:
            by_op[key] = _op_origin_formats(index, debug_id, op_name)
        found = by_op[key]
        if found:
            out[Path(path)] = found
    return out


def dump_runs(workspace: "Workspace", paths: Sequence[Path]) -> dict[Path, int]:
    """The debug run (N of npu/debug_N/dump) each dump file belongs to; files outside every run are left out."""
    roots = []
    for debug_id in workspace.debug_ids():
        root = workspace.dump_root(debug_id)
        if root.is_dir():
            roots.append((debug_id, root.resolve()))
    out: dict[Path, int] = {}
    if not roots:
        return out
    for path in paths:
        resolved = Path(path).resolve()
        debug_id = next((n for n, root in roots if resolved.is_relative_to(root)), None)
        if debug_id is not None:
            out[Path(path)] = debug_id
    return out


def _op_origin_formats(index: Any, debug_id: int, op_name: str) -> OriginFormats | None:
    try:
        entries = [e for e in index.find(op_name) if e.debug_id == debug_id]
        if not entries:
            return None
        op = index.op(entries[0])
    except (PrecisionToolError, OSError):
        return None
    return op_origin_formats(op) or None


def op_origin_formats(op: Any) -> OriginFormats:
    """The origin layout (origin_format) the graph op's descriptors give each input and output, where it is
    a plain layout (NCHW, HWCN ...)."""
    formats: OriginFormats = {}
    for kind, descs in (("input", op.input_descs), ("output", op.output_descs)):
        for position, desc in enumerate(descs):
            origin = (desc.origin_format or "").upper()
            if origin in _PLAIN_LAYOUTS:
                formats[(kind, position)] = origin
    return formats
