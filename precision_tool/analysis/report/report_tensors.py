"""The report's op panels: statistics of both sides of each compared output, and a histogram of its errors.

The numbers are taken from the tensors exactly as the comparison compared them: the comparison engine's
own worker reads each pair (the NPU side brought to the golden layout, padding cut; bf16/fp8 widened),
and this module's subclass sees every pair at the one hook the engine measures through
(`GroupWorker.measure`). Big tensors are read leaf by leaf, never whole. Only outputs are read: an op's
inputs are the outputs of the ops before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from precision_tool.analysis.compare.engine.compare_worker import GroupWorker
from precision_tool.analysis.compare.matching import GroupPlan, OpPlan
from precision_tool.analysis.results.metrics import LEAF_ELEMENTS, TensorMetrics, not_compared
from precision_tool.analysis.results.result_writer import CompareRow

HIST_LOW = -12.0
"""log10 of the smallest absolute error the histogram has a bin for; smaller ones (and exact 0) are
counted as `zero_errors`."""
HIST_STEP = 0.5
"""Bin width in decades: two bins per power of ten."""
HIST_BINS = 40
"""Bins from 1e-12 up to 1e8; larger errors land in the last bin."""


@dataclass(frozen=True)
class SideStats:
    """One side's numbers over its finite values (max/min/mean/std None when there are none)."""

    count: int
    max: float | None
    min: float | None
    mean: float | None
    std: float | None
    nan_count: int
    inf_count: int
    zero_count: int


@dataclass(frozen=True)
class PairStats:
    """Both sides of one compared output, and how far apart they are element by element."""

    tensor: str
    """The result CSV's TensorIndex ('<npu op>:output:0')."""
    npu: SideStats
    golden: SideStats
    counts: tuple[int, ...]
    """Elements per bin of log10|npu − golden| (HIST_LOW, HIST_STEP, HIST_BINS), over pairs where both are finite."""
    zero_errors: int
    """Pairs closer than 10**HIST_LOW (exactly equal, usually)."""
    nonfinite_pairs: int
    """Pairs where either side is NaN or Inf: no error to bin."""


class _Side:
    """Running sums of one side, leaf by leaf."""

    def __init__(self) -> None:
        self.count = self.finite = self.nan = self.inf = self.zero = 0
        self.total = self.squares = 0.0
        self.high: float | None = None
        self.low: float | None = None

    def add(self, values: Any, finite: Any) -> None:
        import numpy as np

        self.count += int(values.size)
        self.zero += int(values.size - np.count_nonzero(values))
        nan = int(np.isnan(values).sum())
        kept = values[finite]
        self.nan += nan
        self.inf += int(values.size - kept.size) - nan
        if kept.size:
            self.finite += int(kept.size)
            self.total += float(kept.sum(dtype=np.float64))
            self.squares += float(np.square(kept, dtype=np.float64).sum())
            high, low = float(kept.max()), float(kept.min())
            self.high = high if self.high is None else max(self.high, high)
            self.low = low if self.low is None else min(self.low, low)

    def stats(self) -> SideStats:
        mean = std = None
        if self.finite:
            mean = self.total / self.finite
            std = math.sqrt(max(self.squares / self.finite - mean * mean, 0.0))
        return SideStats(self.count, self.high, self.low, mean, std, self.nan, self.inf, self.zero)


def pair_stats(tensor: str, x: Any, y: Any) -> PairStats:
    """Statistics of two equally long sources (ArraySource/FileSource), read a leaf at a time."""
    import numpy as np

    left, right = _Side(), _Side()
    counts = np.zeros(HIST_BINS, dtype=np.int64)
    zero_errors = nonfinite = 0
    for start in range(0, x.size, LEAF_ELEMENTS):
        stop = min(start + LEAF_ELEMENTS, x.size)
        a = np.asarray(x.read(start, stop), dtype=np.float64).reshape(-1)
        b = np.asarray(y.read(start, stop), dtype=np.float64).reshape(-1)
        fa, fb = np.isfinite(a), np.isfinite(b)
        left.add(a, fa)
        right.add(b, fb)
        both = fa & fb
        nonfinite += int(both.size - np.count_nonzero(both))
        error = np.abs(a[both] - b[both])
        tiny = error < 10.0 ** HIST_LOW
        zero_errors += int(np.count_nonzero(tiny))
        bins = np.floor((np.log10(error[~tiny]) - HIST_LOW) / HIST_STEP).astype(np.int64)
        counts += np.bincount(np.clip(bins, 0, HIST_BINS - 1), minlength=HIST_BINS)
    return PairStats(tensor, left.stats(), right.stats(), tuple(int(c) for c in counts), zero_errors, nonfinite)


class _StatsWorker(GroupWorker):
    """The comparison's worker, keeping statistics of each output pair instead of metrics."""

    def __init__(self, golden_files: dict[str, str], npu_vs_npu: bool) -> None:
        super().__init__(golden_files, npu_vs_npu)
        self.found: dict[str, PairStats] = {}
        self._tensor = ""

    def _tensor_row(self, group: GroupPlan, op: OpPlan, dump: Any, header: Any, right: Any) -> CompareRow:
        if header.kind != "output":  # not read: the op before produced it
            return CompareRow(index=group.index, op_type="", npu_dump="", npu_dtype="", npu_address="",
                              ground_truth="", golden_dtype="", tensor_index="", shape="", metrics=not_compared())
        self._tensor = f"{op.name}:{header.kind}:{header.index}"
        return super()._tensor_row(group, op, dump, header, right)

    def _metrics(self, x: Any, y: Any, shape: tuple[int, ...], npu_file: str, golden_file: str) -> TensorMetrics:
        return self.measure(x, y, shape, npu_file, golden_file)  # no reuse: every output gets its numbers

    def measure(self, x: Any, y: Any, shape: tuple[int, ...], npu_file: str, golden_file: str) -> TensorMetrics:
        self.found[self._tensor] = pair_stats(self._tensor, x, y)
        return not_compared()


def output_stats(groups: Iterable[GroupPlan], golden_files: dict[str, str], npu_vs_npu: bool) -> dict[str, PairStats]:
    """TensorIndex → PairStats for every output of `groups` that could be read (the rest are left out:
    the result CSV already says why they were not compared). One process: the report runs it in the
    background while it does the rest (report_data.py)."""
    worker = _StatsWorker(golden_files, npu_vs_npu)
    found: dict[str, PairStats] = {}
    for group in groups:
        worker.found = {}
        worker.run_group(group)
        found.update(worker.found)
    return found
