"""What "agrees" means for a replay (replay_verdict.agreement), on plain arrays: tolerance by dtype, Inf/NaN
at the same places, integers and booleans only when equal, sizes that differ never agree."""

from __future__ import annotations

import numpy as np

from precision_tool.analysis.replay.replay_verdict import Tolerance, agreement, tolerance
from precision_tool.config import Settings

FP16 = tolerance(Settings(), "float16")


def test_float16_rounding_agrees_and_a_shifted_channel_does_not():
    rng = np.random.default_rng(0)
    exact = rng.standard_normal(4096).astype(np.float32)
    assert agreement(exact.astype(np.float16), exact, FP16).agrees
    assert not agreement(np.roll(exact, 1).astype(np.float16), exact, FP16).agrees


def test_inf_must_sit_where_the_reference_has_it():
    reference = np.array([1.0, 70000.0, 3.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        overflowed = reference.astype(np.float16)  # 70000 → inf
    result = agreement(overflowed, reference, FP16)
    assert not result.agrees and result.nonfinite_mismatch == 1
    assert agreement(overflowed, overflowed, FP16).agrees
    both_nan = np.array([np.nan, 1.0])
    assert agreement(both_nan, both_nan, FP16).agrees


def test_integers_and_booleans_must_be_equal():
    index = np.arange(1000, 2000, dtype=np.int32)
    off_by_one = index.copy()
    off_by_one[7] += 1
    loose = Tolerance(cosine=0.9, error=0.5)
    assert agreement(index, index, loose).agrees
    assert not agreement(off_by_one, index, loose).agrees  # cosine 0.9999999 would pass a float tolerance
    assert not agreement(np.array([True, False]), np.array([True, True]), loose).agrees


def test_sizes_that_differ_never_agree():
    result = agreement(np.zeros(4, np.float16), np.zeros(5, np.float32), FP16)
    assert result.size_mismatch and not result.agrees and result.text() == "sizes differ"


def test_tolerances_by_dtype_come_from_the_settings():
    settings = Settings(REPLAY_FLOAT16_COSINE=0.5, REPLAY_FLOAT32_ERROR=0.25)
    assert tolerance(settings, "float16") == Tolerance(0.5, 0.01)
    assert tolerance(settings, "int32") == Tolerance(0.99999, 0.25)  # every other dtype: float32's
    assert tolerance(settings, "bfloat16") == Tolerance(0.99, 0.05)
