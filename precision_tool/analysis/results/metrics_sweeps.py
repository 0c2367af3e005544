"""The arithmetic of metrics.py's three sweeps, on reusable scratch buffers: the hot loop allocates nothing.

Every expression is the one msaccucmp evaluates (compare.md §2), element for element and in the same
dtype; only where the results land differs (`out=` into per-process buffers instead of fresh temporaries,
which on Linux are each a new mmap and a page fault per 4 KB). tests/analysis/results/test_engine_speed_exact.py
pins each of them against the plain expressions.

Also here: float16 → float32 by a 65,536-entry table (bit-identical to `astype`, twice as fast), and
`keep_freed_memory`, which tells glibc to keep freed memory for the next tensor instead of unmapping it.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

EPS = float(np.finfo(float).eps)
"""msaccucmp's FLOAT_EPSILON (a Python float, so comparisons with float32 data stay in float32)."""
KL_FLOOR = np.finfo(np.float32).eps
BLOCK_ELEMENTS = 1 << 16
"""Elements of one block of a sweep (a node of numpy's summation tree): its float32 temporaries (256 KB
each) and float64 one stay in the core's cache, and scratch memory does not grow with the tensor."""


# --- scratch buffers --------------------------------------------------------------------------------
class Scratch(threading.local):
    """Named buffers of this thread, grown on demand and kept: `get(name, n, dtype)` is a view of n elements."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[str, Any], np.ndarray] = {}

    def get(self, name: str, n: int, dtype: Any = np.float32) -> np.ndarray:
        key = (name, dtype)
        buffer = self.buffers.get(key)
        if buffer is None or buffer.size < n:
            buffer = np.empty(max(n, 1024), dtype=dtype)
            self.buffers[key] = buffer
        return buffer[:n]

    def floor(self, n: int) -> np.ndarray:
        """n copies of the KL floor: np.maximum against an array takes half the time of against a scalar."""
        buffer = self.buffers.get(("floor", None))
        if buffer is None or buffer.size < n:
            buffer = np.full(max(n, 1024), KL_FLOOR, dtype=np.float32)
            self.buffers[("floor", None)] = buffer
        return buffer[:n]


SCRATCH = Scratch()


# --- float16 → float32 ------------------------------------------------------------------------------
_F16_TABLE: np.ndarray | None = None


def f16_table() -> np.ndarray:
    """float32 value of every float16 bit pattern, made by numpy's own cast (NaN payloads, -0, subnormals)."""
    global _F16_TABLE
    if _F16_TABLE is None:
        _F16_TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    return _F16_TABLE


def as_float32(array: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`array.astype(np.float32, copy=False)` (flattened), bit for bit; float16 goes through the table into
    `out` when given (a scratch buffer of the same size)."""
    flat = array.reshape(-1)
    if flat.dtype == np.float32:
        return flat
    if flat.dtype == np.float16 and flat.size >= 4096:
        return np.take(f16_table(), flat.view(np.uint16), out=out, mode="clip")
    if out is not None and flat.dtype.kind in "biuf":
        np.copyto(out, flat, casting="unsafe")
        return out
    return flat.astype(np.float32)


# --- the sweeps (one block each) ---------------------------------------------------------------------
def first_sweep(x: np.ndarray, y: np.ndarray) -> tuple[Any, ...]:
    """(Σ|x−y|, max|x−y|, Σ(x−y)², Σx², Σy², Σrel, max rel, min x, max x, min y, max y) of one block, each
    float32 sum as numpy's pairwise reduce adds the block."""
    n = x.size
    a = SCRATCH.get("a", n)
    b = SCRATCH.get("b", n)
    big = SCRATCH.get("mask", n, np.bool_)
    add = np.add.reduce
    np.subtract(x, y, out=a)
    np.abs(a, out=b)
    s_ad, max_ad = add(b), b.max()
    np.multiply(a, a, out=a)
    s_d2 = add(a)
    np.multiply(x, x, out=a)
    s_x2 = add(a)
    np.multiply(y, y, out=a)
    s_y2 = add(a)
    # where(|y| > eps, |x/y - 1|, 0); the mask only when some |y| is that small (a NaN min fails too)
    np.abs(y, out=a)
    everywhere = bool(a.min() > EPS)
    np.divide(x, y, out=b)
    np.subtract(b, 1, out=b)
    np.abs(b, out=b)
    if not everywhere:
        np.greater(a, EPS, out=big)
        np.logical_not(big, out=big)
        np.copyto(b, 0, where=big)
    s_rel, max_rel = add(b), b.max()
    return s_ad, max_ad, s_d2, s_x2, s_y2, s_rel, max_rel, x.min(), x.max(), y.min(), y.max()


def cosine_sum(x: np.ndarray, y: np.ndarray, nx: Any, ny: Any) -> Any:
    """Σ((x/‖x‖)·(y/‖y‖)) over the block, in float32."""
    a = SCRATCH.get("a", x.size)
    b = SCRATCH.get("b", x.size)
    np.divide(x, nx, out=a)
    np.divide(y, ny, out=b)
    np.multiply(a, b, out=a)
    return np.add.reduce(a)


def kl_floor(values: np.ndarray, low: Any, spread: Any, out: np.ndarray) -> np.ndarray:
    """max((v − min)/(max − min), float32 eps) into `out`; v itself when max == min."""
    if spread != 0:
        np.subtract(values, low, out=out)
        np.divide(out, spread, out=out)
    else:
        np.copyto(out, values)
    return np.maximum(out, SCRATCH.floor(out.size), out=out)


def sum_squares_about(values: np.ndarray, mean: np.float64) -> np.float64:
    """Σ(v − mean)² in float64, as np.std evaluates it (the float64 difference, squared, pairwise-summed)."""
    c = SCRATCH.get("c64", values.size, np.float64)
    np.subtract(values, mean, out=c, dtype=np.float64)
    np.multiply(c, c, out=c)
    return np.add.reduce(c)


def kl_sum(p: np.ndarray, q: np.ndarray, sum_p: Any, sum_q: Any) -> Any:
    """Σ p'·log(p'/q') with p' = p/Σp, q' = q/Σq (p and q are overwritten)."""
    a = SCRATCH.get("a", p.size)
    np.divide(p, sum_p, out=p)
    np.divide(q, sum_q, out=q)
    np.divide(p, q, out=a)
    np.log(a, out=a)
    np.multiply(p, a, out=a)
    return np.add.reduce(a)


# --- the allocator ----------------------------------------------------------------------------------
_KEPT = False


def keep_freed_memory() -> bool:
    """Ask glibc to serve tensor-sized blocks from the heap and keep freed memory (no mmap/munmap and page
    faults per tensor read). Once per process; a no-op (False) off glibc or when anything fails."""
    global _KEPT
    if _KEPT:
        return True
    try:
        import ctypes
        import os

        # (os.confstr answers at once; platform.libc_ver() would scan the interpreter's binary)
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
        libc = ctypes.CDLL(None)  # this process's own libc (find_library would run ldconfig)
        mallopt = libc.mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
        m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
        ok = mallopt(m_mmap_threshold, 32 << 20)  # glibc's maximum; larger blocks are still mapped
        ok &= mallopt(m_trim_threshold, 256 << 20)  # give memory back only past 256 MB free at the top
        ok &= mallopt(m_top_pad, 64 << 20)
        _KEPT = bool(ok)
    except (OSError, AttributeError, ValueError):  # no such confstr name, or None: not glibc
        return False
    return _KEPT
