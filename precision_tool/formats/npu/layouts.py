"""Ascend device layouts ↔ the framework's layouts (formats.md §2.4).

`from_device` turns NC1HWC0 / FRACTAL_Z / FRACTAL_NZ / NDC1HWC0 (and plain permutations) back into
NCHW, NHWC, HWCN, ND, NCDHW ..., cutting padding with the original shape; `to_device` goes the other
way, adding zero padding, as the NPU would. The original shape's own layout is not stored in a dump, so
it is inferred from which reading of the dims fits the device shape; when more than one reading fits
with different results (or none does) the conversion is refused instead of guessed.
"""

from __future__ import annotations

import functools

from typing import TYPE_CHECKING, Sequence

from precision_tool.errors import PrecisionToolError

if TYPE_CHECKING:
    import numpy as np

FRACTAL_ROWS = 16  # Ni: rows of one fractal block (N inner for FRACTAL_Z, rows for FRACTAL_NZ)
ONE_COPY_ELEMENTS = 1 << 16
"""Device tensors up to this size are reordered in one copy; bigger ones block by block, so their padding
is never copied."""

PLAIN_4D = ("NCHW", "NHWC", "HWCN", "CHWN")
PLAIN_5D = ("NCDHW", "NDHWC", "DHWCN", "DHWNC")
PLAIN_2D = ("NC", "CN")
DEVICE_FORMATS = ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "NDC1HWC0")


class LayoutError(PrecisionToolError):
    """A layout conversion the shapes at hand cannot determine (ambiguous or unfit original shape)."""


class AmbiguousLayout(LayoutError):
    """The original shape reads validly in more than one layout; the graph's origin_format would decide."""


class UnsupportedConversion(LayoutError):
    """The source layout has no conversion to the target at all (ND → NCHW, FRACTAL_NZ → NHWC ...)."""


def format_label(fmt: int | str) -> str:
    """A format given as a number (Format) or a name → its upper-case name."""
    if isinstance(fmt, str):
        return fmt.upper()
    from precision_tool.formats.npu.dump_types import format_name

    return format_name(int(fmt))


def default_c0(itemsize: int) -> int:
    """C0 is 32 for 1-byte types and 16 for all others."""
    return 32 if itemsize == 1 else 16


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _permute(array: "np.ndarray", src: str, dst: str) -> "np.ndarray":
    """Reorder axes between two layouts made of the same letters (NCHW → HWCN ...)."""
    if src == dst:
        return array
    if sorted(src) != sorted(dst) or len(set(src)) != len(src):
        raise UnsupportedConversion(f"cannot convert {src} to {dst}: they do not hold the same axes")
    if array.ndim != len(src):
        raise UnsupportedConversion(f"a {src} tensor needs {len(src)} dims, this one has shape {list(array.shape)}")
    return array.transpose([src.index(axis) for axis in dst])


# GE's default reshape types: which axes a shorter original shape fills when a tensor of that layout
# is laid out in 4-D/5-D on the device (a 1-D bias [C] of an NCHW net is NCHW [1,C,1,1]).
SHORT_SHAPE_AXES: dict[str, tuple[str, ...]] = {
    "NCHW": ("C", "CH", "CHW"), "NHWC": ("C", "WC", "HWC"), "HWCN": ("N", "CN", "WCN"),
    "CHWN": ("N", "WN", "HWN"), "NCDHW": ("C", "CD", "CDH", "CDHW"), "NDHWC": ("C", "WC", "HWC", "DHWC"),
}


def expanded_shape(original_shape: Sequence[int], layout: str) -> tuple[int, ...] | None:
    """`original_shape` (shorter than `layout`) filled to the layout's rank by GE's default reshape type,
    the missing axes 1; the shape itself when it has the layout's rank; None when neither applies."""
    layout = layout.upper()
    dims = tuple(int(d) for d in original_shape)
    if len(dims) == len(layout):
        return dims
    axes = SHORT_SHAPE_AXES.get(layout, ())
    if not 0 < len(dims) <= len(axes):
        return None
    sizes = dict(zip(axes[len(dims) - 1], dims))
    return tuple(sizes.get(axis, 1) for axis in layout)


def is_kept_as_dumped(src_format: int | str, ndim: int) -> bool:
    """Whether a comparison takes the dumped tensor as it is, whatever layout the golden side names: an ND
    tensor (its axes have no names), and one labelled NCHW/NHWC/HWCN (or another plain layout) whose shape
    does not have that layout's rank (GE keeps the label on 1-D biases and 3-D tensors). msaccucmp does the
    same; converting those would either fail or reorder axes that are not there."""
    src = format_label(src_format)
    if src == "ND":
        return True
    return src in PLAIN_4D + PLAIN_5D + PLAIN_2D and ndim != len(src)


def _readings(original_shape: Sequence[int], candidates: Sequence[str], original_format: str | None,
              expand: bool = True) -> list[tuple[str, dict[str, int]]]:
    """Each way of reading `original_shape` as one of `candidates`: (layout, {axis: size}). With `expand`, a
    shape with fewer dims than the layout is read the way GE expands a feature map (SHORT_SHAPE_AXES)."""
    layouts = [original_format.upper()] if original_format else list(candidates)
    out = []
    for layout in layouts:
        shape = expanded_shape(original_shape, layout) if expand else (
            tuple(int(d) for d in original_shape) if len(original_shape) == len(layout) else None)
        if shape is not None:
            out.append((layout, dict(zip(layout, shape))))
    return out


def _pick(found: dict[tuple[int, ...], list[str]], what: str, original_shape: Sequence[int]) -> tuple[int, ...]:
    if not found:
        raise LayoutError(
            f"original shape {list(original_shape)} does not fit the {what} device shape in any layout; "
            "cannot cut the padding"
        )
    if len(found) > 1:
        options = "; ".join(f"as {'/'.join(v)} it means {list(k)}" for k, v in found.items())
        raise AmbiguousLayout(
            f"original shape {list(original_shape)} is ambiguous for the {what} device shape ({options}); "
            "refusing to guess"
        )
    return next(iter(found))


# --- device → host ------------------------------------------------------------------------------
def from_device(
    array: "np.ndarray",
    src_format: int | str,
    dst_format: str,
    original_shape: Sequence[int] | None = None,
    *,
    original_format: str | None = None,
    sub_format: int = 0,
) -> "np.ndarray":
    """Convert a device-layout array to `dst_format`, cutting the padding that `original_shape` reveals.

    `original_format` names the layout of `original_shape` when it is known; otherwise it is inferred.
    Raises LayoutError when the conversion cannot be determined.
    """
    import numpy as np

    src = format_label(src_format)
    dst = dst_format.upper()
    array = np.asarray(array)
    original = tuple(int(d) for d in original_shape) if original_shape else ()
    if src == dst:
        return array
    if src in PLAIN_4D + PLAIN_5D + PLAIN_2D + ("ND",):
        if dst == "ND":
            return array
        if src == "ND":
            raise UnsupportedConversion(f"an ND tensor has no axis names; cannot convert it to {dst}")
        return _permute(array, src, dst)
    if src in ("NC1HWC0", "NC1HWC0_C04"):  # C04: the same blocks with C0 = 4 (read from the shape)
        return _from_nc1hwc0(array, dst, original, original_format)
    if src == "FRACTAL_Z":
        if sub_format > 1:
            raise LayoutError(f"FRACTAL_Z weights of a group convolution ({sub_format} groups) are not supported")
        return _from_fractal_z(array, dst, original, original_format)
    if src == "FRACTAL_NZ":
        return _from_fractal_nz(array, dst, original)
    if src == "NDC1HWC0":
        return _from_ndc1hwc0(array, dst, original, original_format)
    raise UnsupportedConversion(f"converting {src} to {dst} is not supported")


@functools.lru_cache(maxsize=256)
def _nc1hwc0_channels(shape: tuple[int, ...], original: tuple[int, ...], original_format: str | None) -> int:
    """The real channels of an NC1HWC0 tensor of `shape` whose original shape is `original` (LayoutError when
    no reading fits or several do); cached: a network repeats a few shapes thousands of times."""
    n, c1, h, w, c0 = shape
    found: dict[tuple[int, ...], list[str]] = {}
    for layout, dims in _readings(original, ("NCHW", "NHWC"), original_format):
        if dims["N"] == n and dims["H"] == h and dims["W"] == w and _ceil_div(dims["C"], c0) == c1 and dims["C"] > 0:
            found.setdefault((dims["C"],), []).append(layout)
    (channels,) = _pick(found, f"NC1HWC0 {list(shape)}", original)
    return channels


def _from_nc1hwc0(array: "np.ndarray", dst: str, original: tuple[int, ...],
                  original_format: str | None) -> "np.ndarray":
    import numpy as np

    if array.ndim != 5:
        raise LayoutError(f"an NC1HWC0 tensor needs 5 dims, this one has shape {list(array.shape)}")
    if dst not in PLAIN_4D:
        raise UnsupportedConversion(f"NC1HWC0 converts to {', '.join(PLAIN_4D)}, not {dst}")
    n, c1, h, w, c0 = array.shape
    channels = _nc1hwc0_channels(array.shape, original, original_format) if original else c1 * c0
    if dst == "NCHW" and array.size <= ONE_COPY_ELEMENTS:
        # small: one copy of the whole (padding included) costs less than a numpy call per block
        whole = array.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
        return whole if channels == c1 * c0 else np.ascontiguousarray(whole[:, :channels])
    out = np.empty((n, channels, h, w), dtype=array.dtype) if dst == "NCHW" else None
    if out is not None:
        # One copy, block by block, so the padding is never materialised.
        for block in range(c1):
            low = block * c0
            high = min(channels, low + c0)
            if high <= low:
                break
            out[:, low:high] = array[:, block, :, :, : high - low].transpose(0, 3, 1, 2)
        return out
    nhwc = array.transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)[..., :channels]
    return np.ascontiguousarray(_permute(nhwc, "NHWC", dst))


def _from_fractal_z(array: "np.ndarray", dst: str, original: tuple[int, ...],
                    original_format: str | None) -> "np.ndarray":
    import numpy as np

    if array.ndim != 4:
        raise LayoutError(f"a FRACTAL_Z tensor needs 4 dims [C1*H*W, No, Ni, C0], this one has {list(array.shape)}")
    if dst not in PLAIN_4D:
        raise UnsupportedConversion(f"FRACTAL_Z converts to {', '.join(PLAIN_4D)}, not {dst}")
    c1hw, no, ni, c0 = array.shape
    if not original:
        raise LayoutError("FRACTAL_Z needs the original shape to split C1*H*W; the dump has none")
    found: dict[tuple[int, ...], list[str]] = {}
    for layout, dims in _readings(original, ("NCHW", "HWCN", "NHWC"), original_format, expand=False):
        n, c, h, w = dims["N"], dims["C"], dims["H"], dims["W"]
        if min(n, c, h, w) <= 0:
            continue
        c1 = _ceil_div(c, c0)
        if c1 * h * w == c1hw and _ceil_div(n, ni) == no:
            found.setdefault((n, c, h, w), []).append(layout)
    n, c, h, w = _pick(found, f"FRACTAL_Z {list(array.shape)}", original)
    c1 = _ceil_div(c, c0)
    nchw = array.reshape(c1, h, w, no, ni, c0).transpose(3, 4, 0, 5, 1, 2).reshape(no * ni, c1 * c0, h, w)
    return np.ascontiguousarray(_permute(nchw[:n, :c], "NCHW", dst))


def _from_fractal_nz(array: "np.ndarray", dst: str, original: tuple[int, ...]) -> "np.ndarray":
    import numpy as np

    if array.ndim < 4:
        raise LayoutError(f"a FRACTAL_NZ tensor needs at least 4 dims [..., C1, No, Ni, C0], this one has {list(array.shape)}")
    if dst != "ND":
        raise UnsupportedConversion(f"FRACTAL_NZ converts to ND only, not {dst}")
    *batch, c1, no, ni, c0 = array.shape
    batch_count = int(np.prod(batch)) if batch else 1
    if original:
        if len(original) == 1:
            rows, cols, out_shape = 1, original[0], original
        else:
            rows, cols = original[-2], original[-1]
            out_shape = original
        orig_batch = int(np.prod(original[:-2])) if len(original) > 2 else 1
        if _ceil_div(cols, c0) != c1 or _ceil_div(rows, ni) != no or orig_batch != batch_count:
            raise LayoutError(
                f"original shape {list(original)} does not fit the FRACTAL_NZ device shape {list(array.shape)}"
            )
    else:
        rows, cols = no * ni, c1 * c0
        out_shape = (*batch, rows, cols)
    nd = array.reshape(batch_count, c1, no, ni, c0).transpose(0, 2, 3, 1, 4).reshape(batch_count, no * ni, c1 * c0)
    return np.ascontiguousarray(nd[:, :rows, :cols]).reshape(out_shape)


def _from_ndc1hwc0(array: "np.ndarray", dst: str, original: tuple[int, ...],
                   original_format: str | None) -> "np.ndarray":
    import numpy as np

    if array.ndim != 6:
        raise LayoutError(f"an NDC1HWC0 tensor needs 6 dims, this one has shape {list(array.shape)}")
    if dst not in PLAIN_5D:
        raise UnsupportedConversion(f"NDC1HWC0 converts to {', '.join(PLAIN_5D)}, not {dst}")
    n, d, c1, h, w, c0 = array.shape
    if original:
        found: dict[tuple[int, ...], list[str]] = {}
        for layout, dims in _readings(original, ("NCDHW", "NDHWC"), original_format):
            if (dims["N"], dims["D"], dims["H"], dims["W"]) == (n, d, h, w) and dims["C"] > 0 \
                    and _ceil_div(dims["C"], c0) == c1:
                found.setdefault((dims["C"],), []).append(layout)
        (channels,) = _pick(found, f"NDC1HWC0 {list(array.shape)}", original)
    else:
        channels = c1 * c0
    ncdhw = array.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)[:, :channels]
    return np.ascontiguousarray(_permute(ncdhw, "NCDHW", dst))


# --- host → device ------------------------------------------------------------------------------
def to_device(
    array: "np.ndarray",
    src_format: str,
    dst_format: int | str,
    *,
    c0: int | None = None,
) -> "np.ndarray":
    """Lay out a framework tensor as the NPU stores it, zero-padding C (and N / rows) to whole blocks."""
    import numpy as np

    src = src_format.upper()
    dst = format_label(dst_format)
    array = np.asarray(array)
    c0 = c0 or default_c0(array.dtype.itemsize)
    if src == dst:
        return array
    if dst in PLAIN_4D + PLAIN_5D + PLAIN_2D:
        return np.ascontiguousarray(_permute(array, src, dst))
    if dst == "ND":
        return array
    if dst == "NC1HWC0":
        nchw = _permute(array, src, "NCHW") if src in PLAIN_4D else _refuse(src, dst)
        n, c, h, w = nchw.shape
        c1 = _ceil_div(c, c0)
        padded = _pad_axis(nchw, 1, c1 * c0)
        return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if dst == "FRACTAL_Z":
        nchw = _permute(array, src, "NCHW") if src in PLAIN_4D else _refuse(src, dst)
        n, c, h, w = nchw.shape
        c1, no = _ceil_div(c, c0), _ceil_div(n, FRACTAL_ROWS)
        padded = _pad_axis(_pad_axis(nchw, 1, c1 * c0), 0, no * FRACTAL_ROWS)
        blocks = padded.reshape(no, FRACTAL_ROWS, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(blocks).reshape(c1 * h * w, no, FRACTAL_ROWS, c0)
    if dst == "FRACTAL_NZ":
        if src not in ("ND",) + PLAIN_4D + PLAIN_5D + PLAIN_2D:
            _refuse(src, dst)
        matrix = array.reshape(1, -1) if array.ndim == 1 else array
        *batch, rows, cols = matrix.shape
        c1, no = _ceil_div(cols, c0), _ceil_div(rows, FRACTAL_ROWS)
        padded = _pad_axis(_pad_axis(matrix, -1, c1 * c0), -2, no * FRACTAL_ROWS)
        blocks = padded.reshape(*batch, no, FRACTAL_ROWS, c1, c0)
        k = len(batch)
        order = list(range(k)) + [k + 2, k, k + 1, k + 3]
        return np.ascontiguousarray(blocks.transpose(order))
    if dst == "NDC1HWC0":
        ncdhw = _permute(array, src, "NCDHW") if src in PLAIN_5D else _refuse(src, dst)
        n, c, d, h, w = ncdhw.shape
        c1 = _ceil_div(c, c0)
        padded = _pad_axis(ncdhw, 1, c1 * c0)
        return np.ascontiguousarray(padded.reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2))
    _refuse(src, dst)
    raise AssertionError("unreachable")


def _refuse(src: str, dst: str) -> "np.ndarray":
    raise UnsupportedConversion(f"converting {src} to {dst} is not supported")


def _pad_axis(array: "np.ndarray", axis: int, size: int) -> "np.ndarray":
    import numpy as np

    extra = size - array.shape[axis]
    if extra <= 0:
        return array
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, extra)
    return np.pad(array, widths)
