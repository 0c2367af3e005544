"""The engine's fast arithmetic gives msaccucmp's numbers: each sweep of metrics_sweeps.py against the plain
numpy expression it replaces (bit for bit), the float16 table against `astype`, and the std settled from
sweep 1's Σx² against the float64 second moment it skips (same text, on tensors built to sit on the
edges: rounding boundaries, the 0.001 clip, std ≪ |mean|, constants, NaN/Inf)."""

from __future__ import annotations

import numpy as np
import pytest

from precision_tool.analysis.results import metrics
from precision_tool.analysis.results import metrics_sweeps as sweeps


def _bits_equal(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _pair(rng: np.random.Generator, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    y = rng.standard_normal(n).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * 0.01).astype(np.float16).astype(np.float32)
    if kind == "zeros":
        y[:: 7] = 0
        y[3 % n] = np.float32(1e-30)  # |y| <= eps: no relative error there
    elif kind == "nan":
        x[n // 2] = np.nan
    elif kind == "inf":
        y[n // 3] = np.inf
    return x, y


@pytest.mark.parametrize("n", [1, 7, 128, 1000, 65536])
@pytest.mark.parametrize("kind", ["plain", "zeros", "nan", "inf"])
def test_sweeps_equal_the_plain_expressions(n: int, kind: str) -> None:
    rng = np.random.default_rng(n)
    x, y = _pair(rng, n, kind)
    with np.errstate(all="ignore"):
        d = x - y
        rel = np.where(np.abs(y) > sweeps.EPS, np.abs(x / y - 1), 0)
        plain = (np.add.reduce(np.abs(d)), np.abs(d).max(), np.add.reduce(d * d), np.add.reduce(x * x),
                 np.add.reduce(y * y), np.add.reduce(rel), rel.max(), x.min(), x.max(), y.min(), y.max())
        fast = sweeps.first_sweep(x, y)
        assert all(_bits_equal(a, b) for a, b in zip(fast, plain)), (fast, plain)

        nx, ny = np.sqrt(np.add.reduce(x * x)), np.sqrt(np.add.reduce(y * y))
        assert _bits_equal(sweeps.cosine_sum(x, y, nx, ny), np.add.reduce(x / nx * (y / ny)))

        low, spread = x.min(), x.max() - x.min()
        expected_p = np.maximum((x - low) / spread, np.finfo(np.float32).eps) if spread != 0 else \
            np.maximum(x, np.finfo(np.float32).eps)
        p = sweeps.kl_floor(x, low, spread, np.empty_like(x))
        assert _bits_equal(p, expected_p)
        q = sweeps.kl_floor(y, y.min(), y.max() - y.min(), np.empty_like(y))
        sp, sq = np.add.reduce(p), np.add.reduce(q)
        p1, q1 = p / sp, q / sq
        assert _bits_equal(sweeps.kl_sum(p.copy(), q.copy(), sp, sq), np.add.reduce(p1 * np.log(p1 / q1)))

        mean = np.float64(np.add.reduce(x, dtype=np.float64)) / n
        c = x.astype(np.float64) - mean
        assert _bits_equal(sweeps.sum_squares_about(x, mean), np.add.reduce(c * c))


def test_float16_table_is_astype_for_every_bit_pattern() -> None:
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    every = np.tile(every, 2)  # above the table's 4096-element threshold
    assert _bits_equal(sweeps.as_float32(every, np.empty(every.size, np.float32)), every.astype(np.float32))
    small = every[:100]
    assert _bits_equal(sweeps.as_float32(small), small.astype(np.float32))


def _std_cases(rng: np.random.Generator) -> list[np.ndarray]:
    cases = []
    for n in (1, 2, 9, 130, 1000, 70000):
        cases.append(rng.standard_normal(n))
        cases.append(rng.standard_normal(n) * 1e-3 + 1000)  # std ≪ |mean|
        cases.append(np.full(n, rng.uniform(-5, 5)))  # constant
        cases.append(rng.standard_normal(n) * rng.uniform(0.0009, 0.0011))  # around the 0.001 clip
        cases.append(rng.uniform(0, 1, n) ** 8 * 3)  # skewed, positive
    # std right on a rounding boundary of '%.3f': scale unit-std data to k + 0.0005
    for k in (0.1235, 1.0005, 2.4995):
        z = rng.standard_normal(4096)
        z = (z - z.mean()) / z.std()
        cases.append(z * k)
    return cases


def test_settled_std_prints_as_the_float64_moment_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare_arrays with the settled std and with the float64 sweep forced give the same ten cells."""
    rng = np.random.default_rng(11)
    settled = 0
    for data in _std_cases(rng):
        x = data.astype(np.float32)
        y = (data + rng.standard_normal(data.size) * 1e-3).astype(np.float32)
        for leaf in (metrics.LEAF_ELEMENTS, 128):
            fast = metrics.compare_arrays(x, y, leaf=leaf)
            with monkeypatch.context() as patch:
                patch.setattr(metrics, "std_settled", lambda *args: None)
                exact = metrics.compare_arrays(x, y, leaf=leaf)
            assert fast == exact, (data[:4], leaf)
        n = x.size
        mean = np.float64(np.add.reduce(x, dtype=np.float64)) / n
        value = metrics.std_settled(np.add.reduce(x * x), mean, n)
        if value is not None:
            settled += 1
            assert metrics._std_cell(value) == metrics._std_cell(float(np.std(x.astype(np.float64))))
    assert settled >= 10  # the shortcut is taken, not only its fallback


def test_std_settles_ordinary_tensors_and_declines_what_it_cannot_know() -> None:
    rng = np.random.default_rng(5)
    taken = 0
    for _ in range(200):
        x = (rng.standard_normal(65536) * rng.uniform(0.1, 10)).astype(np.float32)
        mean = np.float64(np.add.reduce(x, dtype=np.float64)) / x.size
        value = metrics.std_settled(np.add.reduce(x * x), mean, x.size)
        if value is not None:
            taken += 1
            assert metrics._std_cell(value) == metrics._std_cell(float(np.std(x.astype(np.float64))))
    assert taken >= 190
    assert metrics.std_settled(np.float32(np.nan), np.float64(0), 10) is None
    assert metrics.std_settled(np.float32(np.inf), np.float64(0), 10) is None
    big = (rng.standard_normal(1000) * 1e-4 + 3000).astype(np.float32)  # cancellation: the interval is wide
    mean = np.float64(np.add.reduce(big, dtype=np.float64)) / big.size
    assert metrics.std_settled(np.add.reduce(big * big), mean, big.size) is None
