"""Rank replayed ops by their own error (`replay --all`): how far each NPU output is from TensorFlow's
float32 answer on the NPU's *own* inputs, free of the error the inputs brought with them, measured against
what the op's dtype can do on those same inputs.

- LocalError: ‖npu − float32 replay‖ / ‖float32 replay‖ over the values finite on both sides.
- Float16Error: the same distance for the float16 replay (TensorFlow's float16 kernel on the same inputs):
  float16's own rounding on this op and these inputs.
- ErrorRatio: LocalError / what the dtype can do: for an op the NPU computed in float16, its Float16Error (at
  least float16's unit roundoff 2⁻¹¹), so an op as good as float16 itself is near 1 whatever its size; for
  float32 (and bfloat16, which has no replay of its own yet) the replay tolerance of that dtype
  (REPLAY_FLOAT32_ERROR, REPLAY_BFLOAT16_ERROR). Inf/NaN where the float32 replay has finite values count as
  explained when the float16 replay has them at the same places (an overflow float16 itself makes);
  otherwise the ratio is infinite.

An op with several outputs is ranked by its worst one.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from precision_tool.analysis.replay.replay_plan import read_child_result
from precision_tool.analysis.replay.replay_verdict import (
    CANNOT, INHERITED, KERNEL, OK, PRECISION, Verdict, agreement, case_dtype, tolerance, verdict_reason,
)
from precision_tool.atomic import write_text_atomic

if TYPE_CHECKING:
    from precision_tool.analysis.results.metrics import TensorMetrics
    from precision_tool.config import Settings

FLOAT16_UNIT_ROUNDOFF = 2.0 ** -11
RANKED_CSV = "ranked.csv"


@dataclass(frozen=True)
class LocalError:
    verdict: Verdict
    output: int
    dtype: str
    error: float
    apart: int  # Inf/NaN positions apart from the float32 replay
    float16_error: float | None  # None: no float16 replay (the op computed in float32, or bfloat16)
    unexplained: int  # of `apart`, those the float16 replay does not have at the same places
    ratio: float
    baseline: str  # what the ratio divides by: "float16 replay", "float32 tolerance", "bfloat16 tolerance"
    metrics: "TensorMetrics | None"  # the ten metrics against the float32 replay


def _load(folder: Path, name: str) -> Any:
    import numpy as np

    return np.load(folder / name, allow_pickle=False)


def local_error(verdict: Verdict, settings: "Settings") -> LocalError | None:
    """The op's worst output by ErrorRatio; None for an op that was not replayed."""
    if verdict.verdict == CANNOT or not verdict.outputs:
        return None
    case = verdict.case
    folder = Path(case.folder)
    result = read_child_result(folder)
    variants = result.variants if result is not None else {}
    dtype = case_dtype(case)
    worst: LocalError | None = None
    for output in verdict.outputs:
        vs32 = output.against.get("float32 replay")
        if vs32 is None or vs32.size_mismatch:
            continue
        error = vs32.error if math.isfinite(vs32.error) else math.inf
        f16_error = None
        unexplained = vs32.nonfinite_mismatch
        vs16 = output.against.get("float16 replay")
        f32_file = variants.get("float32", {}).get(str(output.index))
        f16_file = variants.get("float16", {}).get(str(output.index))
        if vs16 is not None and f32_file and f16_file and not vs16.size_mismatch:
            f16, f32 = _load(folder, f16_file), _load(folder, f32_file)
            own = agreement(f16, f32, tolerance(settings, "float16"))
            f16_error = own.error if math.isfinite(own.error) else math.inf
            if unexplained:
                tensor = case.tensor("output", output.index)
                npu = _load(folder, tensor.file) if tensor is not None else None
                unexplained = _unexplained(npu, f32, f16) if npu is not None else unexplained
            floor, baseline = max(f16_error, FLOAT16_UNIT_ROUNDOFF), "float16 replay"
        else:
            kind = "bfloat16" if dtype == "bfloat16" else "float32"
            floor, baseline = tolerance(settings, kind).error, f"{kind} tolerance"
        ratio = math.inf if unexplained else (error / floor if floor > 0 else (0.0 if error == 0 else math.inf))
        found = LocalError(verdict, output.index, output.dtype, error, vs32.nonfinite_mismatch, f16_error,
                           unexplained, ratio, baseline, output.metrics.get("float32 replay"))
        if worst is None or (found.ratio, found.error) > (worst.ratio, worst.error):
            worst = found
    return worst


def _unexplained(npu: Any, f32: Any, f16: Any) -> int:
    """Positions where the NPU's Inf/NaN differ from the float32 replay's and the float16 replay does not
    hold the same value there (float16 overflowing where the NPU did not is no fault of the NPU's)."""
    import numpy as np

    a, b, c = (np.asarray(x, dtype=np.float64).ravel() for x in (npu, f32, f16))
    if not a.size == b.size == c.size:
        return int(a.size != b.size)

    def same(x: Any, y: Any) -> Any:
        return (x == y) | (np.isnan(x) & np.isnan(y))

    special = ~np.isfinite(a) | ~np.isfinite(b)
    apart = special & ~same(a, b)
    return int(np.count_nonzero(apart & ~(~np.isfinite(a) & same(a, c))))


def ranked(verdicts: Sequence[Verdict], settings: "Settings") -> list[LocalError]:
    """The replayed ops, worst ErrorRatio first (ties: the larger LocalError, then graph order)."""
    found = [e for e in (local_error(v, settings) for v in verdicts) if e is not None]
    order = {id(v): n for n, v in enumerate(verdicts)}
    return sorted(found, key=lambda e: (-_sortable(e.ratio), -_sortable(e.error), order[id(e.verdict)]))


def _sortable(value: float) -> float:
    return -1.0 if math.isnan(value) else value


@dataclass(frozen=True)
class Explained:
    """Whether an abnormal op of the whole-network comparison is wrong by itself or inherits its error."""

    op_name: str
    op_id: Any
    kind: str  # "own" (kernel / precision), "inherited", "ok" (within tolerance on its own inputs), "not replayed"
    verdict: Verdict | None
    text: str


def explain_abnormal(abnormal_ops: Sequence[Any], verdicts: Sequence[Verdict]) -> list[Explained]:
    """For each abnormal op of a comparison (in its order), what its replay says about it."""
    by_name = {v.case.op_name: v for v in verdicts}
    out = []
    for op in abnormal_ops:
        name = getattr(op, "npu_op", str(op))
        verdict = by_name.get(name)
        if verdict is None:
            out.append(Explained(name, getattr(op, "op_id", None), "not replayed", None, "not replayed (not in this NPU run's compute ops)"))
        elif verdict.verdict in (KERNEL, PRECISION):
            out.append(Explained(name, verdict.case.op_id, "own", verdict,
                                 f"its own error explains it ({verdict.verdict})"))
        elif verdict.verdict == INHERITED:
            nxt = f"; look at {verdict.upstream}" if verdict.upstream else ""
            out.append(Explained(name, verdict.case.op_id, "inherited", verdict, f"inherits it{nxt}"))
        elif verdict.verdict == OK:
            out.append(Explained(name, verdict.case.op_id, "ok", verdict,
                                 "computes within tolerance on its own inputs, and they agree with golden"))
        else:
            out.append(Explained(name, verdict.case.op_id, "not replayed", verdict,
                                 verdict_reason(verdict.verdict, verdict.line)))
    return out


RANKED_COLUMNS = ("Rank", "OpId", "Op", "OpType", "Verdict", "Output", "DataType", "LocalError", "InfNanApart",
                  "Float16Error", "ErrorRatio", "Baseline")


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.6g}"


def save_ranked(folder: Path, errors: Sequence[LocalError], cannot: Sequence[Verdict]) -> Path:
    """ranked.csv: a row per replayed op, worst first (msaccucmp's ten metrics against the float32 replay,
    the verdict columns), then every op that could not be replayed with why."""
    from precision_tool.analysis.results.metrics import METRIC_NAMES

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*RANKED_COLUMNS, *METRIC_NAMES, "Upstream", "Reason"])
    for rank, e in enumerate(errors, 1):
        case = e.verdict.case
        metrics = list(e.metrics.values) if e.metrics is not None else ["NaN"] * len(METRIC_NAMES)
        writer.writerow([rank, case.op_id, case.op_name, case.op_type, e.verdict.verdict, e.output, e.dtype,
                         _number(e.error), e.apart, _number(e.float16_error), _number(e.ratio), e.baseline,
                         *metrics, e.verdict.upstream or "", verdict_reason(e.verdict.verdict, e.verdict.line)])
    for verdict in cannot:
        case = verdict.case
        writer.writerow(["", case.op_id, case.op_name, case.op_type, verdict.verdict, "", "", "", "", "", "", "",
                         *["NaN"] * len(METRIC_NAMES), "", verdict_reason(verdict.verdict, verdict.line)])
    path = folder / RANKED_CSV
    write_text_atomic(path, buffer.getvalue())
    return path


def read_ranked(path: Path) -> list[dict[str, str]]:
    """The rows of a ranked.csv (for the report); FormatError naming the file when it is not one."""
    from precision_tool.errors import FormatError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"cannot be read ({exc})") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    if text and not set(RANKED_COLUMNS) <= set(rows[0].keys() if rows else next(csv.reader(io.StringIO(text)))):
        raise FormatError(path, f"is not a replay ranking (its header lacks {', '.join(RANKED_COLUMNS)})")
    return rows
