"""Summary numbers of one tensor (what `pt` and the overflow check show)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class TensorStats:
    """max/min/mean are over the finite values (None when there are none); NaN and Inf are counted apart.
    For complex tensors max/min/mean are of the magnitudes |x| (`magnitudes` is True then)."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    max: float | None
    min: float | None
    mean: float | None
    nan_count: int
    inf_count: int
    zero_count: int
    magnitudes: bool = False


class NotNumeric(ValueError):
    """The array holds strings, records, dates ...: there are no max/min/mean to show."""


def non_numeric_reason(dtype: "np.dtype") -> str | None:
    """None for numbers (bool, int, float, complex, ml_dtypes floats); else why there are no statistics."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.kind in "biufc":
        return None
    if dtype.kind == "V" and dtype.fields is None and dtype.type.__module__.startswith("ml_dtypes"):
        return None
    if dtype.fields:
        return f"dtype {dtype} is a structured (record) type, not numeric"
    return f"dtype {dtype} is not numeric"


def as_float_values(array: "np.ndarray") -> "np.ndarray":
    """A numeric view fit for statistics: ml_dtypes types (bf16, fp8) widen to float32, bool to uint8."""
    import numpy as np

    if array.dtype == np.bool_:
        return array.astype(np.uint8)
    if array.dtype.kind == "V" or array.dtype.type.__module__.startswith("ml_dtypes"):
        return array.astype(np.float32)
    return array


def tensor_stats(array: "np.ndarray") -> TensorStats:
    import numpy as np

    reason = non_numeric_reason(np.asarray(array).dtype)
    if reason is not None:
        raise NotNumeric(reason)
    values = as_float_values(np.asarray(array))
    count = int(values.size)
    zero_count = int(count - np.count_nonzero(values))
    if values.dtype.kind == "c":
        magnitude = np.abs(values)
        nan_count = int(np.isnan(values).sum())
        inf_count = int(np.isinf(values).sum())
        finite = magnitude[np.isfinite(values)]
    elif values.dtype.kind == "f":
        nan_mask = np.isnan(values)
        inf_mask = np.isinf(values)
        nan_count, inf_count = int(nan_mask.sum()), int(inf_mask.sum())
        finite = values[~(nan_mask | inf_mask)] if (nan_count or inf_count) else values
    else:
        nan_count = inf_count = 0
        finite = values
    if finite.size:
        wide = finite.astype(np.float64) if finite.dtype.kind == "f" and finite.dtype.itemsize < 8 else finite
        maximum, minimum, mean = float(np.max(finite)), float(np.min(finite)), float(np.mean(wide, dtype=np.float64))
    else:
        maximum = minimum = mean = None
    return TensorStats(
        shape=tuple(int(d) for d in np.shape(array)), dtype=str(np.asarray(array).dtype), count=count,
        max=maximum, min=minimum, mean=mean, nan_count=nan_count, inf_count=inf_count, zero_count=zero_count,
        magnitudes=values.dtype.kind == "c",
    )
