"""An NPU tensor as the comparison sees it: widened from bf16/fp8, converted from its device layout to the
golden tensor's host layout with the padding cut (compare.md §1), or, NPU against NPU, cut the same way
on both sides. The worker (compare_worker.py) calls these once per tensor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precision_tool.analysis.compare.matching import TensorMatch
from precision_tool.errors import FormatError


def usual_host_layout(npu_format: str, golden_dims: int) -> str:
    """Without a graph: where a device layout usually comes from (the .npy shape then picks NCHW/NHWC)."""
    if npu_format in ("NC1HWC0", "NC1HWC0_C04", "FRACTAL_Z") and golden_dims == 4:
        return "NCHW"
    if npu_format == "NDC1HWC0" and golden_dims == 5:
        return "NCDHW"
    if npu_format == "FRACTAL_NZ":
        return "ND"
    return npu_format if npu_format not in ("NC1HWC0", "NC1HWC0_C04", "FRACTAL_Z", "NDC1HWC0") else "ND"


_WIDENED: dict[Any, bool] = {}


def as_compared(array: Any) -> Any:
    """bf16/fp8 (ml_dtypes) as float32, the rest unchanged (metrics cast to float32 themselves)."""
    dtype = array.dtype
    widen = _WIDENED.get(dtype)
    if widen is None:
        widen = _WIDENED[dtype] = dtype.kind == "V" or dtype.name in (
            "bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu")
    if widen:
        import numpy as np

        return array.astype(np.float32)
    return array


def to_golden_layout(array: Any, npu_format: str, layout: str, header: Any, match: TensorMatch,
             golden_shape: tuple[int, ...], dump_path: Path) -> Any:
    """Device layout → the golden layout, padding cut to the golden .npy's shape (compare.md §1)."""
    from precision_tool.formats.npu.layouts import LayoutError, from_device, is_kept_as_dumped

    if is_kept_as_dumped(npu_format, array.ndim):
        # ND (or NCHW on a 1-D bias): no axes to reorder; compared as dumped, sliced below if padded
        return _sliced_to(array, golden_shape)
    target = header.original_shape or (match.golden.origin_shape if match.golden else None) or ()
    # The original shape is written in the graph's origin layout; naming it lets small weights whose
    # shape fits several readings (3x3x3x16 FRACTAL_Z) convert instead of being refused as ambiguous.
    original_format = match.golden.layout if match.golden and not match.golden.guess_layout else None
    if layout in ("NCHW", "NHWC") and len(golden_shape) == 4 and len(target) == 4 \
            and tuple(golden_shape) != tuple(target):
        swapped = (target[0], target[2], target[3], target[1]) if layout == "NCHW" \
            else (target[0], target[3], target[1], target[2])
        if tuple(golden_shape) == swapped:
            layout = "NHWC" if layout == "NCHW" else "NCHW"
    try:
        converted = from_device(array, npu_format, layout, target or None,
                                original_format=original_format, sub_format=header.sub_format)
    except LayoutError as exc:
        raise FormatError(dump_path, f"{header.label}: cannot convert {npu_format} to {layout}: {exc}") from None
    return _sliced_to(converted, golden_shape)


def _sliced_to(converted: Any, golden_shape: tuple[int, ...]) -> Any:
    """Cut what is left of the padding: slice to the golden shape where it is smaller in every dim."""
    if converted.ndim == len(golden_shape) and converted.shape != tuple(golden_shape) and all(
        c >= g for c, g in zip(converted.shape, golden_shape)
    ):
        converted = converted[tuple(slice(0, g) for g in golden_shape)]
    return converted


HOST_CANDIDATES: dict[str, tuple[str, ...]] = {
    "NC1HWC0": ("NCHW", "NHWC"),
    "NC1HWC0_C04": ("NCHW", "NHWC"),
    "FRACTAL_Z": ("NCHW", "NHWC", "HWCN"),
    "FRACTAL_NZ": ("ND",),
    "NDC1HWC0": ("NCDHW", "NDHWC"),
}
"""Host layouts a device layout can come from, the usual one first (what `cp` converts to)."""



def without_padding(x: Any, x_header: Any, y: Any, y_header: Any) -> tuple[Any, Any]:
    """Two NPU tensors in the same device layout, with its zero padding cut the same way on both sides
    (so means and deviations are those of the real values); unchanged when the shapes do not decide it."""
    from precision_tool.formats.npu.layouts import LayoutError, format_label, from_device

    layout = format_label(x_header.format)
    if (layout not in HOST_CANDIDATES or format_label(y_header.format) != layout or not x_header.original_shape
            or tuple(x_header.original_shape) != tuple(y_header.original_shape)):
        return x, y
    host = HOST_CANDIDATES[layout][0]
    try:
        return (from_device(x, layout, host, x_header.original_shape, sub_format=x_header.sub_format),
                from_device(y, layout, host, y_header.original_shape, sub_format=y_header.sub_format))
    except LayoutError:
        return x, y
