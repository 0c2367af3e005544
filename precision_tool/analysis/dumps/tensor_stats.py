"""Summary numbers of one tensor (what `pt` and the overflow check show)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

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


STATS_CHUNK = 1 << 24
"""Elements per step of a bigger tensor's statistics: its masks and float64 copies are made a step at a
time (one-shot they took 4-6x the tensor: 40-60 GB for a 10 GB one)."""


def tensor_stats(array: "np.ndarray", chunk: int = STATS_CHUNK) -> TensorStats:
    """The statistics of a tensor in memory or memory-mapped. A tensor of more than `chunk` elements is
    swept a step at a time, so memory stays a few steps whatever its size; a mapped one (a big .npy, a dump's
    block) is read from its file a window at a time, so its pages do not stay resident either."""
    import numpy as np

    reason = non_numeric_reason(np.asarray(array).dtype)
    if reason is not None:
        raise NotNumeric(reason)
    shape = tuple(int(d) for d in np.shape(array))
    count = int(np.size(array))
    dtype = str(np.asarray(array).dtype)
    if count <= chunk:
        return _stats_of(_Sums(), as_float_values(np.asarray(array))).result(shape, dtype, count)
    sums = _Sums()
    for piece in _steps(array, chunk):
        _step_stats(sums, as_float_values(piece))
    return sums.result(shape, dtype, count)


class _Sums:
    """What the statistics need, added up step by step."""

    def __init__(self) -> None:
        self.zeros = self.nans = self.infs = 0
        self.means: list[tuple[float, int]] = []  # (mean, finite values) of each step
        self.maximum: float | None = None
        self.minimum: float | None = None
        self.magnitudes = False

    def result(self, shape: tuple[int, ...], dtype: str, count: int) -> TensorStats:
        finite = sum(n for _, n in self.means)
        if len(self.means) == 1:
            mean: float | None = self.means[0][0]  # one step: numpy's own mean, as it always was
        else:
            mean = sum(m * n for m, n in self.means) / finite if finite else None
        return TensorStats(shape=shape, dtype=dtype, count=count, max=self.maximum, min=self.minimum, mean=mean,
                           nan_count=self.nans, inf_count=self.infs, zero_count=self.zeros,
                           magnitudes=self.magnitudes)


def _stats_of(sums: _Sums, values: "np.ndarray") -> _Sums:
    import numpy as np

    sums.zeros += int(values.size - np.count_nonzero(values))
    if values.dtype.kind == "c":
        sums.magnitudes = True
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
    sums.nans += nan_count
    sums.infs += inf_count
    if finite.size:
        wide = finite.astype(np.float64) if finite.dtype.kind == "f" and finite.dtype.itemsize < 8 else finite
        high, low = float(np.max(finite)), float(np.min(finite))
        sums.maximum = high if sums.maximum is None else max(sums.maximum, high)
        sums.minimum = low if sums.minimum is None else min(sums.minimum, low)
        sums.means.append((float(np.mean(wide, dtype=np.float64)), int(finite.size)))
    return sums


def _step_stats(sums: _Sums, values: "np.ndarray") -> None:
    """One step of a big tensor, in as few passes as its data allows: float16 is widened to float32 first
    (exact; numpy reduces float16 several times slower), and max/min come first because they carry any NaN
    or Inf, so a step without either (the usual one) needs no masks. The mean adds up in float64 without a
    float64 copy."""
    import numpy as np

    if values.dtype.kind != "f":
        _stats_of(sums, values)
        return
    if values.dtype == np.float16:
        values = values.astype(np.float32)
    high, low = float(np.max(values)), float(np.min(values))
    if not (np.isfinite(high) and np.isfinite(low)):
        _stats_of(sums, values)
        return
    sums.zeros += int(values.size - np.count_nonzero(values))
    sums.maximum = high if sums.maximum is None else max(sums.maximum, high)
    sums.minimum = low if sums.minimum is None else min(sums.minimum, low)
    sums.means.append((float(np.mean(values, dtype=np.float64)), int(values.size)))


def _steps(array: "np.ndarray", chunk: int) -> "Iterator[np.ndarray]":
    """The tensor's elements, `chunk` at a time, in memory order (the statistics do not depend on it)."""
    import mmap

    import numpy as np

    flat = array.ravel(order="K") if array.flags.c_contiguous or array.flags.f_contiguous else None
    mapped = _file_of(flat) if flat is not None else None
    if mapped is None:
        source = flat if flat is not None else np.asarray(array).reshape(-1)
        for start in range(0, source.size, chunk):
            yield source[start:start + chunk]
        return
    path, offset = mapped
    itemsize = array.dtype.itemsize
    with open(path, "rb", buffering=0) as handle:
        for start in range(0, flat.size, chunk):
            # a window of the file mapped for one step, unmapped when the step is dropped: pages do not pile
            # up in the process (a whole-file map would keep 10 GB resident), nor are they copied (pread),
            # and a hole of a sparse file maps the zero page instead of being read
            where = offset + start * itemsize
            aligned = where - where % mmap.ALLOCATIONGRANULARITY
            count = min(chunk, flat.size - start)
            try:
                window = mmap.mmap(handle.fileno(), where - aligned + count * itemsize, offset=aligned,
                                   access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: cannot read its data for the statistics ({exc})") from None
            if hasattr(window, "madvise"):
                window.madvise(mmap.MADV_SEQUENTIAL)
            yield np.frombuffer(window, dtype=array.dtype, count=count, offset=where - aligned)


def _file_of(array: "np.ndarray") -> tuple[str, int] | None:
    """(file, byte offset of the first element) of a contiguous np.memmap or view of one, found from the
    mapping it lives in; None for an array in memory."""
    import mmap

    import numpy as np

    if not isinstance(array, np.memmap) or not array.filename:
        return None
    base = array.base
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is None:
        return None
    start = np.frombuffer(base, dtype=np.uint8, count=1).ctypes.data  # where the mapping begins
    mapped_from = array.offset - array.offset % mmap.ALLOCATIONGRANULARITY  # as np.memmap maps it
    return array.filename, mapped_from + (array.ctypes.data - start)
