"""The ten msaccucmp metrics of one NPU tensor against its golden tensor (compare.md §2).

Numbers agree with msaccucmp's after `'{:.6f}'` formatting, bit for bit: every float32 sum follows
numpy's own pairwise-summation tree, so a tensor too large for memory is read in leaves of that tree
and the leaf sums are combined exactly as numpy would combine them. A tensor that fits in one leaf
(`LEAF_ELEMENTS`) is computed with the very expressions msaccucmp uses, so it is read once; a larger
one is read three times (moments, then cosine/KL normalisation, then the KL sum) and never held whole.
Each leaf is swept in cache-sized blocks (`metrics_sweeps.BLOCK_ELEMENTS`, also nodes of that tree) on
scratch buffers that are reused from tensor to tensor (metrics_sweeps.py).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol, Sequence

import numpy as np

from precision_tool.analysis.results import metrics_sweeps as sweeps
from precision_tool.analysis.results.metric_names import METRIC_NAMES, NAN_TEXT  # (re-exported)


EPS = sweeps.EPS
"""msaccucmp's FLOAT_EPSILON: the float64 machine epsilon, applied to float32 data."""
KL_FLOOR = sweeps.KL_FLOOR
STD_ZERO_BELOW = 0.001
LEAF_ELEMENTS = 1 << 22
"""Largest leaf of the summation tree held in memory at once (16 MB of float32 per side)."""
_BOOL_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance")
_PW_BLOCK = 128  # numpy's pairwise-summation block; leaves must not be smaller


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class TensorMetrics:
    """The ten metric cells of one CSV row, as msaccucmp prints them, and the reasons behind NaNs."""

    values: tuple[str, ...]
    """One string per METRIC_NAMES entry: '0.999998', 'NaN' (not computed), 'nan'/'inf' (data held them)."""
    reasons: tuple[str, ...] = ()
    """Messages for CompareFailReason, joined with ',' in the CSV."""

    @property
    def cosine(self) -> float:
        """The cosine as a number; NaN when it was not computed."""
        return _to_float(self.values[0])

    def value(self, name: str) -> float:
        return _to_float(self.values[METRIC_NAMES.index(name)])

    @property
    def reason_text(self) -> str:
        return ",".join(self.reasons)


def _to_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def not_compared(*reasons: str) -> TensorMetrics:
    """A row whose metrics could not be computed (no golden, unreadable file, size mismatch)."""
    return TensorMetrics(values=(NAN_TEXT,) * len(METRIC_NAMES), reasons=tuple(r for r in reasons if r))


def is_scalar_shape(shape: Sequence[int]) -> bool:
    """msaccucmp's test: the dims add up to their count ([1], [1,1], [], and degenerate [2,0])."""
    return sum(map(int, shape)) == len(shape)


def format_value(value: float) -> str:
    return "{:.6f}".format(value)


class TensorSource(Protocol):
    """A flat tensor that can be read piece by piece (in memory, or from a file without loading it)."""

    @property
    def size(self) -> int: ...

    @property
    def dtype(self) -> np.dtype: ...

    def read(self, start: int, stop: int) -> np.ndarray: ...


@dataclass  # not frozen: made once per golden tensor, and a frozen one costs four times as much to make
class ArraySource:
    """A tensor already in memory."""

    array: np.ndarray

    @property
    def size(self) -> int:
        return int(self.array.size)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def read(self, start: int, stop: int) -> np.ndarray:
        return self.array.reshape(-1)[start:stop]


@dataclass(frozen=True)
class FileSource:
    """A C-ordered tensor stored raw in a file at byte `offset`; read with pread so pages are not kept."""

    path: str
    offset: int
    element_type: np.dtype
    count: int

    @property
    def size(self) -> int:
        return self.count

    @property
    def dtype(self) -> np.dtype:
        return self.element_type

    def read(self, start: int, stop: int) -> np.ndarray:
        itemsize = self.element_type.itemsize
        nbytes = (stop - start) * itemsize
        buffer = bytearray(nbytes)
        view = memoryview(buffer)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            done = 0
            position = self.offset + start * itemsize
            while done < nbytes:
                n = os.preadv(fd, [view[done:]], position + done)
                if n <= 0:
                    raise OSError(f"{self.path}: file ends {nbytes - done} bytes early")
                done += n
        finally:
            os.close(fd)
        return np.frombuffer(buffer, dtype=self.element_type)


# --- numpy's pairwise summation tree ------------------------------------------------------------
def _split(size: int) -> int:
    half = size // 2
    return half - half % 8


def leaf_ranges(size: int, leaf: int = LEAF_ELEMENTS) -> list[tuple[int, int]]:
    """The (start, stop) leaves numpy's pairwise sum recursion reaches when cut off at `leaf` elements."""
    leaf = max(leaf, _PW_BLOCK)
    ranges: list[tuple[int, int]] = []
    stack = [(0, size)]
    while stack:
        start, n = stack.pop()
        if n <= leaf:
            ranges.append((start, start + n))
            continue
        half = _split(n)
        stack.append((start + half, n - half))
        stack.append((start, half))
    return ranges


def tree_sum(size: int, leaf_sums: Sequence[np.floating], leaf: int = LEAF_ELEMENTS) -> np.floating:
    """Combine leaf sums (in leaf order) as numpy's pairwise recursion adds its two halves."""
    leaf = max(leaf, _PW_BLOCK)
    values: Iterator[np.floating] = iter(leaf_sums)

    def combine(n: int) -> np.floating:
        if n <= leaf:
            return next(values)
        half = _split(n)
        left = combine(half)
        right = combine(n - half)
        return left + right  # same dtype as numpy's accumulator (float32 stays float32)

    return combine(size)


# --- the metrics --------------------------------------------------------------------------------
def compare_arrays(
    npu: np.ndarray,
    golden: np.ndarray,
    *,
    shape: Sequence[int] | None = None,
    npu_file: str = "",
    golden_file: str = "",
    leaf: int = LEAF_ELEMENTS,
) -> TensorMetrics:
    """The ten metrics of two in-memory tensors (flattened). `shape`: the NPU shape for the scalar rule."""
    return compare_sources(
        ArraySource(np.asarray(npu)),
        ArraySource(np.asarray(golden)),
        shape=npu.shape if shape is None else shape,
        npu_file=npu_file,
        golden_file=golden_file,
        leaf=leaf,
    )


def compare_sources(
    npu: TensorSource,
    golden: TensorSource,
    *,
    shape: Sequence[int],
    npu_file: str = "",
    golden_file: str = "",
    leaf: int = LEAF_ELEMENTS,
) -> TensorMetrics:
    """The ten metrics, reading each side leaf by leaf. Sizes must match (the caller reports mismatches)."""
    if npu.size != golden.size:
        return not_compared(
            f"Cannot compare: the NPU tensor has {npu.size} elements but the golden tensor has {golden.size}."
        )
    with np.errstate(all="ignore"):
        if npu.dtype == np.bool_ and golden.dtype == np.bool_:
            return _compare_bool(
                npu.read(0, npu.size), golden.read(0, golden.size), shape, npu_file, golden_file
            )
        if npu.size == 0:
            return _compare_empty(shape)
        return _Computation(npu, golden, leaf, is_scalar_shape(shape), npu_file, golden_file).run()


_EMPTY_VALUES: dict[str, str] = {
    "AccumulatedRelativeError": format_value(0), "RelativeEuclideanDistance": format_value(0),
    "StandardDeviation": "(nan;nan),(nan;nan)", "MeanAbsoluteError": "nan", "RootMeanSquareError": "nan",
    "MeanRelativeError": "nan",
}
"""What msaccucmp prints for a tensor with a 0 dimension (its sums are 0, its means nan)."""
_EMPTY_FAILS = ("MaxAbsoluteError", "KullbackLeiblerDivergence", "MaxRelativeError")
"""The metrics whose numpy max() fails on zero elements in msaccucmp."""


def _compare_empty(shape: Sequence[int]) -> TensorMetrics:
    """Zero elements, as msaccucmp reports them: cosine 1 (scalar rule, else both norms are 0: '1.0'),
    sums 0, means nan, and the max()-based metrics fail with numpy's message."""
    values: list[str] = []
    reasons: list[str] = []
    for name in METRIC_NAMES:
        if name == "CosineSimilarity":
            if is_scalar_shape(shape):
                values.append(format_value(1))
                reasons.append("This tensor is scalar.")
            else:
                values.append("1.0")
        elif name in _EMPTY_FAILS:
            values.append(NAN_TEXT)
            reasons.append(f"Failed to execute 'compare' in '{name}'. zero-size array to reduction operation "
                           "maximum which has no identity")
        else:
            values.append(_EMPTY_VALUES[name])
    return TensorMetrics(tuple(values), tuple(reasons))


def _compare_bool(
    x: np.ndarray, y: np.ndarray, shape: Sequence[int], npu_file: str, golden_file: str
) -> TensorMetrics:
    """Both sides bool: msaccucmp attempts only the cosine (in float64) and the relative distance."""
    values: list[str] = []
    reasons: list[str] = []
    for name in METRIC_NAMES:
        if name not in _BOOL_METRICS:
            values.append(NAN_TEXT)
            reasons.append(f"Algorithm {name} does not support Boolean types.")
        elif name == "CosineSimilarity":
            value, reason = _cosine_from_norms(
                x.astype(np.float64), y.astype(np.float64), is_scalar_shape(shape), npu_file, golden_file
            )
            values.append(value)
            if reason:
                reasons.append(reason)
        else:
            if math.sqrt(int(np.count_nonzero(y))) <= EPS:  # y**2 sums to the count of True
                values.append(format_value(0.0))
            else:
                values.append(NAN_TEXT)
                reasons.append(
                    "Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy boolean subtract, "
                    "the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the "
                    "logical_xor function instead."
                )
    return TensorMetrics(tuple(values), tuple(reasons))


def _cosine_from_norms(
    x: np.ndarray, y: np.ndarray, scalar: bool, npu_file: str, golden_file: str
) -> tuple[str, str]:
    """Single-leaf cosine exactly as msaccucmp: normalise each side, then sum the products."""
    if scalar:
        return format_value(1), "This tensor is scalar."
    nx = np.sqrt(np.add.reduce(x * x))
    ny = np.sqrt(np.add.reduce(y * y))
    return _cosine_verdict(nx, ny, npu_file, golden_file, lambda: (x / nx * (y / ny)).sum())


def _cosine_verdict(
    nx: np.floating, ny: np.floating, npu_file: str, golden_file: str, total: Callable[[], np.floating]
) -> tuple[str, str]:
    if nx <= EPS and ny < EPS:
        return "1.0", ""
    if nx**0.5 <= EPS:
        return NAN_TEXT, f"Cannot compare by Cosine Similarity. All the data is zero in {npu_file}."
    if ny**0.5 <= EPS:
        return NAN_TEXT, f"Cannot compare by Cosine Similarity. All the data is zero in {golden_file}."
    return format_value(min(total(), 1.0)), ""


class _Computation:
    """All ten metrics in three sweeps over the leaves (one read of memory when there is one leaf); the
    arithmetic is metrics_sweeps.py's, on buffers reused from tensor to tensor."""

    def __init__(
        self, npu: TensorSource, golden: TensorSource, leaf: int, scalar: bool, npu_file: str, golden_file: str
    ) -> None:
        self.npu, self.golden = npu, golden
        self.size = npu.size
        self.leaf = max(leaf, _PW_BLOCK)
        self.ranges = leaf_ranges(self.size, self.leaf)
        self.block = min(self.leaf, sweeps.BLOCK_ELEMENTS)
        self.scalar = scalar
        self.npu_file, self.golden_file = npu_file, golden_file
        self._cached: tuple[np.ndarray, np.ndarray] | None = None

    def _leaves(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        if self._cached is not None:
            yield self._cached
            return
        for start, stop in self.ranges:
            n = stop - start
            x = sweeps.as_float32(np.asarray(self.npu.read(start, stop)), sweeps.SCRATCH.get("x", n))
            y = sweeps.as_float32(np.asarray(self.golden.read(start, stop)), sweeps.SCRATCH.get("y", n))
            if len(self.ranges) == 1:
                self._cached = (x, y)
            yield x, y

    def _blocks(self, x: np.ndarray, y: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, slice]]:
        """The leaf cut into blocks that stay in the CPU cache: nodes of numpy's summation tree too."""
        for start, stop in leaf_ranges(x.size, self.block):
            yield x[start:stop], y[start:stop], slice(start, stop)

    def _sum(self, parts: list[np.floating]) -> np.floating:
        return tree_sum(self.size, parts, self.block)

    def run(self) -> TensorMetrics:
        n = self.size
        # sweep 1: moments, errors, extremes
        firsts, s64_x, s64_y = [], [], []
        for x, y in self._leaves():
            firsts.extend(sweeps.first_sweep(xb, yb) for xb, yb, _ in self._blocks(x, y))
            s64_x.append(np.add.reduce(x, dtype=np.float64))  # as np.mean: over the whole leaf
            s64_y.append(np.add.reduce(y, dtype=np.float64))
        s_ad, max_ads, s_d2, s_x2, s_y2, s_rel, max_rels, x_mins, x_maxs, y_mins, y_maxs = (
            list(column) for column in zip(*firsts))
        max_ad, max_rel = _fold(max_ads, np.maximum), _fold(max_rels, np.maximum)
        x_min, x_max = _fold(x_mins, np.minimum), _fold(x_maxs, np.maximum)
        y_min, y_max = _fold(y_mins, np.minimum), _fold(y_maxs, np.maximum)
        sum_ad, sum_d2, sum_rel = self._sum(s_ad), self._sum(s_d2), self._sum(s_rel)
        sum_x2, sum_y2 = self._sum(s_x2), self._sum(s_y2)
        nx, ny = np.sqrt(sum_x2), np.sqrt(sum_y2)
        mean_x = np.float64(math.fsum(s64_x) if len(s64_x) > 1 else s64_x[0]) / n
        mean_y = np.float64(math.fsum(s64_y) if len(s64_y) > 1 else s64_y[0]) / n
        # the stds' 3-decimal text, when Σx² already settles it; else sweep 2 sums the float64 moments
        std_x, std_y = std_settled(sum_x2, mean_x, n), std_settled(sum_y2, mean_y, n)

        # sweep 2: cosine, KL normalisation, second moments about the mean where the std is not settled
        x_range, y_range = x_max - x_min, y_max - y_min
        s_cos, s_p, s_q, m2s_x, m2s_y = [], [], [], [], []
        one_leaf = len(self.ranges) == 1
        need_cosine = not self.scalar and not (
            (nx <= EPS and ny < EPS) or nx**0.5 <= EPS or ny**0.5 <= EPS
        )
        for x, y in self._leaves():
            p, q = sweeps.SCRATCH.get("p", x.size), sweeps.SCRATCH.get("q", y.size)
            for xb, yb, where in self._blocks(x, y):
                if need_cosine:
                    s_cos.append(sweeps.cosine_sum(xb, yb, nx, ny))
                s_p.append(np.add.reduce(sweeps.kl_floor(xb, x_min, x_range, p[where])))
                s_q.append(np.add.reduce(sweeps.kl_floor(yb, y_min, y_range, q[where])))
                if std_x is None:
                    m2s_x.append(sweeps.sum_squares_about(xb, mean_x))
                if std_y is None:
                    m2s_y.append(sweeps.sum_squares_about(yb, mean_y))
        sum_p, sum_q = self._sum(s_p), self._sum(s_q)
        if std_x is None:
            std_x = np.sqrt(np.float64(self._sum(m2s_x)) / n)  # float64, as np.std sums them
        if std_y is None:
            std_y = np.sqrt(np.float64(self._sum(m2s_y)) / n)

        # sweep 3: the KL sum itself (one leaf: p and q are still in their buffers)
        s_kl = []
        for x, y in self._leaves():
            p, q = sweeps.SCRATCH.get("p", x.size), sweeps.SCRATCH.get("q", y.size)
            if not one_leaf:
                sweeps.kl_floor(x, x_min, x_range, p)
                sweeps.kl_floor(y, y_min, y_range, q)
            s_kl.extend(sweeps.kl_sum(p[where], q[where], sum_p, sum_q) for _, _, where in self._blocks(p, q))
        kl = self._sum(s_kl)

        values: list[str] = []
        reasons: list[str] = []
        cos_value, cos_reason = _cosine_verdict(
            nx, ny, self.npu_file, self.golden_file, lambda: self._sum(s_cos)
        ) if not self.scalar else (format_value(1), "This tensor is scalar.")
        values.append(cos_value)
        if cos_reason:
            reasons.append(cos_reason)
        values.append(format_value(max_ad))
        values.append(format_value(sum_rel))
        if sum_y2**0.5 <= EPS:
            values.append(format_value(0.0))
        else:
            values.append(format_value((sum_d2 / sum_y2) ** 0.5))
        kl_value = 0.0 if abs(kl) < EPS else kl
        values.append(format_value(kl_value))
        if str(kl_value) == "inf":
            reasons.append(f"Cannot compare by KL Divergence. The data contains 0 in {self.golden_file!r}.")
        values.append(_std_text(mean_x, std_x, mean_y, std_y))
        values.append(format_value(sum_ad.dtype.type(sum_ad / n)))
        values.append(format_value(np.sqrt(sum_d2.dtype.type(sum_d2 / n))))
        values.append(format_value(max_rel))
        values.append(format_value(sum_rel.dtype.type(sum_rel / n)))
        return TensorMetrics(tuple(values), tuple(reasons))


def _fold(values: list, how: Callable) -> np.floating:  # type: ignore[type-arg]
    """max/min of the leaves' max/min, as numpy's own reduction would give it (NaN wins)."""
    result = values[0]
    for value in values[1:]:
        result = how(result, value)
    return result


def _std_cell(v: float) -> str:
    return "%.3f" % (0.0 if abs(v) < STD_ZERO_BELOW else v)


def _std_text(mean_x: float, std_x: float, mean_y: float, std_y: float) -> str:
    return "(%s;%s),(%s;%s)" % (_std_cell(mean_x), _std_cell(std_x), _std_cell(mean_y), _std_cell(std_y))


_U32 = 2.0**-24  # float32 unit roundoff


def std_settled(sum_squares: np.floating, mean: np.float64, n: int) -> float | None:
    """A std printing as np.std's float64 value would (3 decimals), from the float32 Σx² of sweep 1 and the
    float64 mean; None when the text is not certain, and the float64 Σ(x-mean)² must be summed.

    Every term of a float32 pairwise sum of squares passes through at most k roundings (the square, numpy's
    8-way unrolled block of 128, one per level of the tree), so Σx² is within 2·k·u of itself (k counted
    generously); the variance Σx²/n - mean² then lies in a known interval, and when the std at both ends
    prints the same, so does np.std's. Off only for std ≪ |mean| (cancellation widens the interval) and near
    a rounding boundary: a few tensors in a thousand."""
    second, m = float(sum_squares) / n, float(mean)
    if not (math.isfinite(second) and math.isfinite(m)):
        return None  # NaN/Inf data: the float64 sweep says what np.std says
    levels = max(0, math.ceil(math.log2(max(n, 1) / _PW_BLOCK))) + 1
    slack = (2 * (40 + levels) * _U32 + 1e-13) * (second + m * m) + 1e-44  # 1e-13: the float64 steps
    variance = second - m * m
    low = math.sqrt(max(variance - slack, 0.0)) * (1 - 1e-15)
    high = math.sqrt(max(variance + slack, 0.0)) * (1 + 1e-15)
    return low if _std_cell(low) == _std_cell(high) else None
