"""metrics_batch computes many small pairs at once and must print exactly what metrics.py prints for each
pair alone: every length up to 300 and the lengths around each change of numpy's pairwise tree up to
BATCH_ELEMENTS (each meets it differently: the 8-way unrolled block of 128, the sequential tail, the
splits above 128, numpy's 8,192-element buffer), every dtype the engine meets, and the
edge rows (zeros, constants, NaN, Inf, scalar shapes, all-zero sides, huge values)."""

from __future__ import annotations

import numpy as np
import pytest

from precision_tool.analysis.results.metrics import compare_arrays
from precision_tool.analysis.results.metrics_batch import BATCH_ELEMENTS, MetricsBatch, batchable


def _variants(rng: np.random.Generator, n: int) -> list[tuple[np.ndarray, np.ndarray, tuple[int, ...]]]:
    y = rng.standard_normal(n).astype(np.float32) * np.float32(rng.uniform(0.001, 1000))
    x = (y + rng.standard_normal(n).astype(np.float32) * np.float32(0.01)).astype(np.float16)
    out = [(x, y, (n,)), (x.astype(np.float32), y.astype(np.float64), (1, n))]
    zeros = y.copy()
    zeros[::3] = 0
    zeros[n // 2] = np.float32(1e-30)
    out.append((x, zeros, (n,)))
    nan = x.copy()
    nan[n // 2] = np.nan
    out.append((nan, y, (n,)))
    inf = y.copy()
    inf[n // 3] = np.inf
    out.append((x, inf, (n,)))
    out.append((np.full(n, 3, np.float16), np.full(n, 3.0, np.float32), (n,)))  # constant: no KL spread
    out.append((np.zeros(n, np.float16), y, (n,)))  # all-zero NPU side: no cosine
    out.append((x, np.zeros(n, np.float32), (n,)))
    out.append((np.zeros(n, np.float16), np.zeros(n, np.float32), (n,)))
    out.append((rng.integers(-5, 5, n).astype(np.int32), rng.integers(-5, 5, n).astype(np.int64), (n,)))
    out.append(((y * np.float32(1e18)).astype(np.float32), y * np.float32(1e18), (n,)))  # squares overflow
    out.append((x, y, (1,) * 2 if n == 1 else (n, 1)))
    return out


def _check(pairs: list[tuple[np.ndarray, np.ndarray, tuple[int, ...]]]) -> None:
    batch = MetricsBatch()
    expected = []
    for i, (x, y, shape) in enumerate(pairs):
        assert batchable(x, y)
        batch.add(x, y, shape, f"npu{i}", f"golden{i}")
        expected.append(compare_arrays(x, y, shape=shape, npu_file=f"npu{i}", golden_file=f"golden{i}"))
    got = batch.compute()
    for i, (want, have) in enumerate(zip(expected, got)):
        assert have == want, (i, pairs[i][0].size, pairs[i][0].dtype, want, have)
    assert len(batch) == 0


@pytest.mark.parametrize("start", range(1, 300, 50))
def test_every_small_length_prints_what_one_pair_prints(start: int) -> None:
    rng = np.random.default_rng(start)
    pairs = []
    for n in range(start, start + 50):
        pairs.extend(_variants(rng, n))
    _check(pairs)


@pytest.mark.parametrize("lengths", [(300, 511, 512, 513, 1000, 1023, 1024, 1025),
                                     (2047, 2048, 4095, 4096, 4097, 5000, 8191, 8192),
                                     (8193, 10000, 16383, 16384, 16385, 40000, 65535, BATCH_ELEMENTS)])
def test_lengths_above_one_block_of_128(lengths: tuple[int, ...]) -> None:
    rng = np.random.default_rng(lengths[0])
    pairs = []
    for n in lengths:
        for _ in range(3):  # several rows of one length: they share a stack
            pairs.extend(_variants(rng, n))
    _check(pairs)


def test_a_random_sweep_of_lengths_in_one_batch() -> None:
    rng = np.random.default_rng(7)
    pairs = []
    for n in rng.integers(1, 20_000, 60):
        pairs.extend(_variants(rng, int(n))[:3])
    _check(pairs)


def test_what_is_not_batched() -> None:
    small = np.ones(4, np.float32)
    assert not batchable(np.ones(BATCH_ELEMENTS + 1, np.float32), np.ones(BATCH_ELEMENTS + 1, np.float32))
    assert not batchable(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert not batchable(small, np.ones(5, np.float32))
    assert not batchable(small.astype(bool), small.astype(bool))
    assert not batchable(small.astype(np.complex64), small)
