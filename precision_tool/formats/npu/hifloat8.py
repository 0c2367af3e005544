"""HiFloat8 (HiF8), Huawei's tapered-precision 8-bit float (dump data type 33), decoded by hand.

No library has a HiF8 type, so values go through a 256-entry table built from the format's definition
(CANN's `opbase/include/nnopbase/opdev/hifloat8.h`, `asc-tools/cpudebug/include/kernel_hif8.h` and the
AMCT HiFloat8 note): `S | dot (prefix code) | exponent | mantissa`:

    dot  11  → 4 exponent bits, 1 mantissa bit      |E| in [8, 15]
    dot  10  → 3 exponent bits, 2 mantissa bits     |E| in [4, 7]
    dot  01  → 2 exponent bits, 3 mantissa bits     |E| in [2, 3]
    dot 001  → 1 exponent bit,  3 mantissa bits     |E| = 1
    dot 0001 → no exponent (E = 0), 3 mantissa bits
    dot 0000 → denormal: value 2^(M - 23), M = 1..7 (M = 0: zero, or NaN when the sign is set)

The exponent is sign-magnitude with the magnitude's leading 1 implied: its first bit is the sign, the
other bits the magnitude below that implied 1. A normal value is (-1)^S * 2^E * (1 + M / 2^m).
Special codes: 0x00 zero, 0x80 NaN, 0x6F / 0xEF +/-infinity (what would be 1.5 * 2^15).
The reference tool's own decoder gets the 001 and 0001 groups and -Inf wrong; this table follows the
definition above.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

NAN_CODE = 0x80
INF_CODE = 0x6F


def _value_of(code: int) -> float:
    """The real number one HiF8 code stands for (float('nan') / +-inf for the special codes)."""
    sign = -1.0 if code & 0x80 else 1.0
    if code == NAN_CODE:
        return float("nan")
    if code & 0x7F == INF_CODE:
        return sign * float("inf")
    body = code & 0x7F
    if body >> 5 == 0b11:
        exp_bits, mant_bits = 4, 1
    elif body >> 5 == 0b10:
        exp_bits, mant_bits = 3, 2
    elif body >> 5 == 0b01:
        exp_bits, mant_bits = 2, 3
    elif body >> 4 == 0b001:
        exp_bits, mant_bits = 1, 3
    elif body >> 3 == 0b0001:
        exp_bits, mant_bits = 0, 3
    else:  # dot 0000: denormal
        mantissa = body & 0x7
        return 0.0 if mantissa == 0 else sign * 2.0 ** (mantissa - 23)
    mantissa = body & ((1 << mant_bits) - 1)
    exponent = 0
    if exp_bits:
        field = (body >> mant_bits) & ((1 << exp_bits) - 1)
        magnitude = (1 << (exp_bits - 1)) | (field & ((1 << (exp_bits - 1)) - 1))
        exponent = -magnitude if field >> (exp_bits - 1) else magnitude
    return sign * 2.0 ** exponent * (1.0 + mantissa / (1 << mant_bits))


@lru_cache(maxsize=1)
def hifloat8_table() -> "np.ndarray":
    """float32 value of each of the 256 codes."""
    import numpy as np

    return np.array([_value_of(code) for code in range(256)], dtype=np.float32)


def decode_hifloat8(codes: "np.ndarray") -> "np.ndarray":
    """uint8 HiF8 codes → float32 values (same shape)."""
    import numpy as np

    return hifloat8_table()[np.asarray(codes, dtype=np.uint8)]


def encode_hifloat8(values: "np.ndarray") -> "np.ndarray":
    """float values → the nearest HiF8 codes (ties away from zero, as CANN rounds; beyond 2^15 → inf).

    Used by the writer so tests can build HiF8 dumps from real numbers.
    """
    import numpy as np

    table = hifloat8_table()
    values = np.asarray(values, dtype=np.float64)
    positive_codes = np.array([c for c in range(0x80) if c != INF_CODE and np.isfinite(table[c])], dtype=np.uint8)
    order = np.argsort(table[positive_codes], kind="stable")
    grid = table[positive_codes][order].astype(np.float64)  # 0 .. 2^15, ascending
    codes_sorted = positive_codes[order]
    magnitude = np.abs(values)
    upper = np.clip(np.searchsorted(grid, magnitude, side="left"), 1, len(grid) - 1)
    lower = upper - 1
    pick_upper = (grid[upper] - magnitude) <= (magnitude - grid[lower])
    code = np.where(pick_upper, codes_sorted[upper], codes_sorted[lower]).astype(np.uint8)
    code = np.where(magnitude >= grid[-1] * 1.25, np.uint8(INF_CODE), code)  # past the last rounding midpoint
    negative = (np.signbit(values)) & (code != 0)
    code = np.where(negative, code | np.uint8(0x80), code).astype(np.uint8)
    return np.where(np.isnan(values), np.uint8(NAN_CODE), code).astype(np.uint8)
