"""msaccucmp's optional CSV columns, computed while comparing: OverFlow and OpSequence (compare.md).

OverFlow (msaccucmp -overflow_detection) follows the reference for fp16 tensors (|x| >= 65504 is YES)
and goes further where it is blind: NaN counts as overflow too (the reference takes the maximum, which
NaN hides), and an op the run's Opdebug records name (checks/overflow.py's opdebug_overflow_ops) is
YES on its outputs. OpSequence is the graph op's id, written when a range or selection of ops is
compared (-r / -s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from precision_tool.analysis.results.metric_names import NAN_TEXT


@dataclass(frozen=True)
class Columns:
    """msaccucmp's optional CSV columns for one run: OverFlow (`overflow`) and OpSequence (`sequence`).
    `overflow_ops`: graph op names the run's Opdebug records say overflowed (their outputs are YES)."""

    overflow: bool = False
    sequence: bool = False
    overflow_ops: frozenset[str] = frozenset()


FP16_MAX = 65504.0  # msaccucmp's bound: |x| >= 65504 in an fp16 tensor is an overflow


def overflow_text(header: Any, read: Callable[[], Any]) -> str:
    """OverFlow of one NPU tensor: YES when an fp16 tensor holds |x| >= 65504, inf or NaN (msaccucmp looks
    at the maximum only, so it misses NaN), NO for other fp16 tensors, NaN for other types. `read` gives
    the flat data (a FileSource or an array)."""
    import numpy as np

    from precision_tool.analysis.results.metrics import FileSource
    from precision_tool.formats.npu.dump_types import DataType

    if header.data_type != DataType.FLOAT16:
        return NAN_TEXT
    data = read()
    if isinstance(data, FileSource):
        chunk = 1 << 22
        for start in range(0, data.size, chunk):
            if _overflows(data.read(start, min(start + chunk, data.size))):
                return "YES"
        return "NO"
    return "YES" if _overflows(np.asarray(data)) else "NO"


def _overflows(values: Any) -> bool:
    import numpy as np

    if values.size == 0:
        return False
    with np.errstate(invalid="ignore"):
        biggest = np.max(np.abs(values.astype(np.float32, copy=False)))
    return bool(np.isnan(biggest) or biggest >= FP16_MAX)
