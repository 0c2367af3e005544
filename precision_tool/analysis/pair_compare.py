"""Two tensors (`cp A B`): device layouts turned into host layouts, element errors, the ten metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_tool.analysis.compare_engine import HOST_CANDIDATES, _as_compared
from precision_tool.analysis.metrics import TensorMetrics
from precision_tool.analysis.results import shape_text
from precision_tool.atomic import atomic_path
from precision_tool.errors import FormatError


@dataclass(frozen=True)
class PairReport:
    """`cp A B`: how two tensors differ, element by element and by the ten metrics."""

    left_name: str
    right_name: str
    left_shape: tuple[int, ...]
    right_shape: tuple[int, ...]
    left_dtype: str
    right_dtype: str
    size: int
    allclose: bool
    atol: float
    rtol: float
    error_count: int
    error_items: tuple[tuple[int, float, float], ...]
    first_items: tuple[tuple[int, float, float], ...]
    metrics: TensorMetrics
    saved: tuple[Path, ...] = field(default=())
    conversions: tuple[str, ...] = ()
    """Device layouts turned into host layouts before comparing (one line each)."""


@dataclass(frozen=True)
class LoadedTensor:
    """A tensor named on the `cp` command line; `device_format`/`original_shape` are set for dump tensors."""

    array: Any
    name: str
    device_format: str | None = None
    """The dump's layout when it is a device layout (NC1HWC0 ...), else None (already a host layout)."""
    original_shape: tuple[int, ...] = ()
    sub_format: int = 0


def load_tensor(spec: str) -> LoadedTensor:
    """`x.npy`, or `DUMPFILE:output:0` / `DUMPFILE:input:1` (device layout, with its original shape)."""
    import numpy as np

    from precision_tool.formats.npu_dump import format_name, read_dump_header, read_tensor

    path = Path(spec)
    if path.is_file() and path.suffix == ".npy":
        try:
            return LoadedTensor(np.load(path, allow_pickle=False), path.name)
        except (OSError, ValueError) as exc:
            raise FormatError(path, f"not a readable numeric .npy file ({exc})") from None
    if path.is_file():
        dump = read_dump_header(path)
        if not dump.outputs:
            raise FormatError(path, "has no outputs; name the tensor as FILE:input:N")
        tensor, name = dump.outputs[0], f"{path.name}:output:0"
    else:
        head, sep, index = spec.rpartition(":")
        file_part, sep2, kind = head.rpartition(":")
        if not (sep and sep2 and kind in ("input", "output") and index.isdigit()):
            raise FormatError(spec, "is neither a file nor FILE:input:N / FILE:output:N")
        dump = read_dump_header(file_part)
        tensor, name = dump.tensor(kind, int(index)), f"{Path(file_part).name}:{kind}:{index}"
    array = _as_compared(read_tensor(dump, tensor))
    layout = format_name(tensor.format)
    if layout in HOST_CANDIDATES:
        return LoadedTensor(array, name, layout, tuple(tensor.original_shape), tensor.sub_format)
    return LoadedTensor(array, name)


def to_host_layout(tensor: LoadedTensor, wanted_shape: tuple[int, ...] | None) -> tuple[Any, str]:
    """A device-layout dump tensor in its host layout: the one whose shape is `wanted_shape` when one
    fits (the other side of `cp`), else the usual one (NCHW, ND, NCDHW). Returns (array, what was done)."""
    from precision_tool.formats.layouts import LayoutError, from_device

    assert tensor.device_format is not None
    original = tensor.original_shape or None
    results: list[tuple[str, Any]] = []
    errors: list[str] = []
    for layout in HOST_CANDIDATES[tensor.device_format]:
        try:
            converted = from_device(tensor.array, tensor.device_format, layout, original,
                                    sub_format=tensor.sub_format)
        except LayoutError as exc:
            errors.append(f"{layout}: {exc}")
            continue
        results.append((layout, converted))
        if wanted_shape is not None and tuple(converted.shape) == tuple(wanted_shape):
            break
    if not results:
        raise FormatError(tensor.name, f"cannot convert its {tensor.device_format} layout to a host layout "
                                       f"(original shape {shape_text(tensor.original_shape)}): " + "; ".join(errors))
    fitting = [r for r in results if wanted_shape is not None and tuple(r[1].shape) == tuple(wanted_shape)]
    layout, converted = fitting[0] if fitting else results[0]
    note = (f"{tensor.name}: {tensor.device_format} {shape_text(tensor.array.shape)} converted to {layout} "
            f"{shape_text(converted.shape)} (original shape {shape_text(tensor.original_shape)})")
    return converted, note


def compare_pair(
    left: str, right: str, *, items: int = 20, atol: float = 1e-4, rtol: float = 1e-4,
    save_dir: Path | None = None,
) -> PairReport:
    """Compare two tensors element by element; device layouts are turned into host layouts first;
    `save_dir` also writes both as .txt."""
    import numpy as np

    first, second = load_tensor(left), load_tensor(right)
    conversions: list[str] = []
    a, b = first.array, second.array
    if first.device_format is not None:
        a, note = to_host_layout(first, None if second.device_format else tuple(b.shape))
        conversions.append(note)
    if second.device_format is not None:
        b, note = to_host_layout(second, tuple(a.shape))
        conversions.append(note)
    a_name, b_name = first.name, second.name
    if conversions and tuple(a.shape) != tuple(b.shape):
        raise FormatError(right, f"shape {shape_text(b.shape)} differs from {a_name}'s {shape_text(a.shape)} after "
                                 f"converting the device layout ({'; '.join(conversions)}); they cannot be "
                                 "compared element by element")
    if a.size != b.size:
        raise FormatError(right, f"has {b.size} elements but {a_name} has {a.size}; they cannot be compared")
    x = a.reshape(-1).astype(np.float64)
    y = b.reshape(-1).astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(x - y) <= atol + rtol * np.abs(y))
    bad_index = np.flatnonzero(bad)
    error_items = tuple((int(i), float(x[i]), float(y[i])) for i in bad_index[:items])
    first_items = tuple((int(i), float(x[i]), float(y[i])) for i in range(min(items, x.size)))
    from precision_tool.analysis.metrics import compare_arrays

    metrics = compare_arrays(a.reshape(-1), b.reshape(-1), shape=a.shape, npu_file=a_name, golden_file=b_name)
    saved: list[Path] = []
    if save_dir is not None:
        save_dir.mkdir(parents=True, exist_ok=True)
        for array, name in ((a, a_name), (b, b_name)):
            target = save_dir / (name.replace(":", ".").replace("/", "_") + ".txt")
            with atomic_path(target) as temp:
                np.savetxt(temp, array.reshape(-1).astype(np.float64), fmt="%.8g")
            saved.append(target)
    return PairReport(a_name, b_name, tuple(a.shape), tuple(b.shape), a.dtype.name, b.dtype.name, int(a.size),
                      int(bad_index.size) == 0, atol, rtol, int(bad_index.size), error_items, first_items,
                      metrics, tuple(saved), tuple(conversions))

