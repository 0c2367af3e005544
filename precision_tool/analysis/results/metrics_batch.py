"""The ten metrics of many small tensor pairs at once: one set of numpy calls per batch, not per pair.

Real networks are made of many ops with small tensors, where the ~45 numpy calls metrics.py makes per pair
(each a microsecond or more of fixed cost) outweigh the arithmetic. Here pairs of the same element count
are stacked into rows of a 2-D array and every sweep runs once over the stack. The numbers stay those of
metrics.py to the last bit, because every step is the same IEEE operation on the same values:
- elementwise arithmetic, sqrt, log, min and max do not care where an element sits;
- numpy reduces each contiguous row of a C-ordered 2-D array with the same pairwise tree it uses for a
  1-D array of that length, and a pair of at most BATCH_ELEMENTS elements is one block and one leaf in
  metrics.py, so its sums are single pairwise reductions there too (tests/analysis/results/
  test_metrics_batch.py pins this on every length up to 300 and on the lengths where the tree changes
  shape, up to BATCH_ELEMENTS);
- numpy's float32 `**` on a scalar calls powf, which on arrays would be sqrt (they differ in the last bit
  now and then), so the one printed power is taken row by row on scalars, as metrics.py takes it;
- np.std is settled from Σx² where that decides its three printed decimals, as metrics.py does, and
  summed in float64 as np.std sums it for the other rows (and for every row shorter than
  STD_SETTLED_FROM, where the sweep costs less than settling).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from precision_tool.analysis.results.metrics import (
    EPS,
    METRIC_NAMES,
    NAN_TEXT,
    STD_ZERO_BELOW,
    TensorMetrics,
    is_scalar_shape,
    std_settled,
)
from precision_tool.analysis.results.metrics_sweeps import SCRATCH, f16_table

BATCH_ELEMENTS = 1 << 16
"""Largest pair batched: one block of metrics.py's sweeps (metrics_sweeps.BLOCK_ELEMENTS), so each of its
sums is one pairwise reduction there too."""
STACK_ELEMENTS = 1 << 16
"""Elements of one side stacked at once (256 KB of float32): rows of small tensors share their numpy calls,
and a stack's temporaries stay in the core's cache as metrics.py's blocks do (a stack of 1 Mi elements
took twice as long per element, bound by memory)."""

_SCALAR_REASON = "This tensor is scalar."


def batchable(x: np.ndarray, y: np.ndarray) -> bool:
    """True for a pair metrics_batch computes: same non-zero size up to BATCH_ELEMENTS, real numbers on both
    sides (bool, complex and empty pairs keep metrics.py's own rules)."""
    return (0 < x.size <= BATCH_ELEMENTS and x.size == y.size
            and x.dtype.kind in "iuf" and y.dtype.kind in "iuf")


class MetricsBatch:
    """Pairs collected with `add`, computed together by `compute` (in the order added)."""

    def __init__(self) -> None:
        self._pairs: list[tuple[np.ndarray, np.ndarray, bool, str, str]] = []
        self.elements = 0
        """Elements queued (one side): the caller computes early past a bound, so memory stays flat."""

    def __len__(self) -> int:
        return len(self._pairs)

    def add(self, x: np.ndarray, y: np.ndarray, shape: Sequence[int], npu_file: str, golden_file: str) -> int:
        """Queue a pair (flat arrays, `batchable`); returns its slot in `compute`'s list. `shape`: the NPU
        shape, for msaccucmp's scalar rule."""
        self._pairs.append((x.reshape(-1), y.reshape(-1), is_scalar_shape(shape), npu_file, golden_file))
        self.elements += x.size
        return len(self._pairs) - 1

    def add_flat(self, x: np.ndarray, y: np.ndarray, scalar: bool, npu_file: str, golden_file: str) -> None:
        """`add` of flat arrays whose NPU shape's scalar rule (metrics.is_scalar_shape) is already known."""
        self._pairs.append((x, y, scalar, npu_file, golden_file))
        self.elements += x.size

    def compute(self) -> list[TensorMetrics]:
        """The metrics of every queued pair, then an empty batch."""
        pairs, self._pairs, self.elements = self._pairs, [], 0
        results: list[TensorMetrics | None] = [None] * len(pairs)
        by_size: dict[int, list[int]] = {}
        for slot, pair in enumerate(pairs):
            by_size.setdefault(pair[0].size, []).append(slot)
        for size, slots in by_size.items():
            rows = max(1, STACK_ELEMENTS // size)
            for start in range(0, len(slots), rows):
                chunk = slots[start:start + rows]
                x = np.empty((len(chunk), size), dtype=np.float32)
                y = np.empty((len(chunk), size), dtype=np.float32)
                for row, slot in enumerate(chunk):
                    _as_float32(pairs[slot][0], x[row])  # as metrics.py's as_float32, bit for bit
                    _as_float32(pairs[slot][1], y[row])
                metrics = _stack_metrics(x, y, [pairs[s][2:] for s in chunk])
                for slot, value in zip(chunk, metrics):
                    results[slot] = value
        return results  # type: ignore[return-value]


def _stack_metrics(x: np.ndarray, y: np.ndarray, about: list[tuple[bool, str, str]]) -> list[TensorMetrics]:
    """metrics.py's three sweeps over every row at once; `about`: (scalar, npu_file, golden_file) per row."""
    n = x.shape[1]
    add = np.add.reduce
    with np.errstate(all="ignore"):
        # sweep 1: moments, errors, extremes
        a = x - y
        b = np.abs(a)
        s_ad, max_ad = add(b, axis=1), b.max(axis=1)
        np.multiply(a, a, out=a)
        s_d2 = add(a, axis=1)
        s_x2 = add(x * x, axis=1)
        s_y2 = add(y * y, axis=1)
        small = ~(np.abs(y) > EPS)  # where(|y| > eps, |x/y - 1|, 0); NaN counts as small, as there
        np.divide(x, y, out=b)
        np.subtract(b, 1, out=b)
        np.abs(b, out=b)
        b[small] = 0
        s_rel, max_rel = add(b, axis=1), b.max(axis=1)
        x_min, x_max = x.min(axis=1), x.max(axis=1)
        y_min, y_max = y.min(axis=1), y.max(axis=1)
        mean_x, mean_y = add(x, axis=1, dtype=np.float64) / n, add(y, axis=1, dtype=np.float64) / n
        nx, ny = np.sqrt(s_x2), np.sqrt(s_y2)

        # sweep 2: cosine, KL normalisation, np.std's float64 deviations
        s_cos = add((x / nx[:, None]) * (y / ny[:, None]), axis=1)
        p, q = _kl_floor(x, x_min, x_max), _kl_floor(y, y_min, y_max)
        s_p, s_q = add(p, axis=1), add(q, axis=1)
        std_x, std_y = _stds(x, mean_x, s_x2), _stds(y, mean_y, s_y2)

        # sweep 3: the KL sum
        np.divide(p, s_p[:, None], out=p)
        np.divide(q, s_q[:, None], out=q)
        kl = add(p * np.log(p / q), axis=1)

        mae, rmse, mre = s_ad / n, np.sqrt(s_d2 / n), s_rel / n
        ratio = s_d2 / s_y2
        # numpy scalars, one by one: their ** is powf, as in metrics.py (an array's ** 0.5 would be sqrt)
        red = [0.0 if v ** 0.5 <= EPS else r ** 0.5 for v, r in zip(s_y2, ratio)]
        nx_small = [v ** 0.5 <= EPS for v in nx]
        ny_small = [v ** 0.5 <= EPS for v in ny]

    kl_values = [0.0 if abs(v) < EPS else v for v in kl.tolist()]
    texts = zip(*(_six_places(column) for column in (
        max_ad.tolist(), s_rel.tolist(), red, kl_values, mae.tolist(), rmse.tolist(), max_rel.tolist(), mre.tolist())))
    stds = _std_texts(mean_x.tolist(), std_x, mean_y.tolist(), std_y)
    cosines = _six_places([min(c, 1.0) for c in s_cos.tolist()])
    results = []
    for ((scalar, npu_file, golden_file), nxv, nyv, nx_tiny, ny_tiny, cos_text, klv, std, cells) in zip(
            about, nx.tolist(), ny.tolist(), nx_small, ny_small, cosines, kl_values, stds, texts):
        reasons: list[str] = []
        if scalar:
            cos_text = "1.000000"
            reasons.append(_SCALAR_REASON)
        elif nxv <= EPS and nyv < EPS:
            cos_text = "1.0"
        elif nx_tiny:
            cos_text = NAN_TEXT
            reasons.append(f"Cannot compare by Cosine Similarity. All the data is zero in {npu_file}.")
        elif ny_tiny:
            cos_text = NAN_TEXT
            reasons.append(f"Cannot compare by Cosine Similarity. All the data is zero in {golden_file}.")
        if klv == _INF:
            reasons.append(f"Cannot compare by KL Divergence. The data contains 0 in {golden_file!r}.")
        mad, srel, red_text, kl_text, mae_text, rmse_text, mrel, mre_text = cells
        results.append(TensorMetrics((cos_text, mad, srel, red_text, kl_text, std, mae_text, rmse_text, mrel,
                                      mre_text), tuple(reasons)))
    return results


_INF = float("inf")


def _six_places(values: list[float]) -> list[str]:
    """Each value as '{:.6f}' prints it (metrics.format_value), in one formatting call for the column."""
    if not values:
        return []
    return ("%.6f\0" * len(values) % tuple(values)).split("\0")[:-1]


def _std_texts(mean_x: list[float], std_x: list[float], mean_y: list[float], std_y: list[float]) -> list[str]:
    """StandardDeviation cells, '(mean;std),(mean;std)' to 3 places, |v| < 0.001 printed as 0."""
    cells = [0.0 if abs(v) < STD_ZERO_BELOW else v for column in zip(mean_x, std_x, mean_y, std_y) for v in column]
    if not cells:
        return []
    return ("(%.3f;%.3f),(%.3f;%.3f)\0" * len(mean_x) % tuple(cells)).split("\0")[:-1]


STD_SETTLED_FROM = 1024
"""From this length on a row's std is settled from Σx² where that decides its printed text, as metrics.py
does (its float64 sweep costs more than the Python that settles it); shorter rows always get the sweep."""


def _stds(values: np.ndarray, means: np.ndarray, sums_of_squares: np.ndarray) -> list[float]:
    """np.std of each row as printed to 3 places: settled from Σx² (metrics.std_settled) where that is
    certain, else Σ(v − mean)² in float64 as np.std sums it, for those rows only."""
    n = values.shape[1]
    stds: list[float | None] = [None] * len(values)
    if n >= STD_SETTLED_FROM:
        stds = [std_settled(s, m, n) for s, m in zip(sums_of_squares, means)]
    todo = [row for row, std in enumerate(stds) if std is None]
    if todo:
        rows = values if len(todo) == len(values) else values[todo]
        deviations = rows.astype(np.float64)
        np.subtract(deviations, means[todo][:, None], out=deviations)
        np.multiply(deviations, deviations, out=deviations)
        for row, value in zip(todo, np.sqrt(np.add.reduce(deviations, axis=1) / n).tolist()):
            stds[row] = value
    return stds  # type: ignore[return-value]


def _as_float32(values: np.ndarray, out: np.ndarray) -> None:
    """`values` into the float32 row `out` as astype would; float16 through metrics_sweeps' table (the same
    bits, twice as fast)."""
    if values.dtype == np.float16 and values.size >= 4096:
        np.take(f16_table(), values.view(np.uint16), out=out, mode="clip")
    else:
        out[...] = values


def _kl_floor(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """max((v − min)/(max − min), float32 eps) per row; v itself in a row where max == min."""
    spread = high - low
    flat = spread == 0
    out = (values - low[:, None]) / np.where(flat, np.float32(1), spread)[:, None]
    if flat.any():
        out[flat] = values[flat]
    # against an array of the floor, as metrics_sweeps does: half the time of against the scalar
    return np.maximum(out, SCRATCH.floor(out.size).reshape(out.shape), out=out)


NOT_YET = (NAN_TEXT,) * len(METRIC_NAMES)
"""The cells of metrics not yet measured."""


class PendingMetrics(TensorMetrics):
    """A row's metrics while its pair waits in the batch; `fill` gives it the batch's answer before the row
    leaves the worker (filled in place, so the row need not be rebuilt)."""

    def fill(self, metrics: TensorMetrics) -> None:
        self.values, self.reasons = metrics.values, metrics.reasons


class CopiedMetrics(PendingMetrics):
    """The metrics of a pair whose NPU bytes and golden file are those of a pair still queued: it takes that
    pair's answer when the batch is measured (an output is read again as the next op's input). `pair()` makes
    the pair's own arguments to measure, for when that answer names the other pair's file."""

    def __init__(self, values: tuple[str, ...], *, source: PendingMetrics, source_file: str,
                 pair: Callable[[], tuple]) -> None:  # type: ignore[type-arg]
        super().__init__(values)
        self.source, self.source_file, self.pair = source, source_file, pair
