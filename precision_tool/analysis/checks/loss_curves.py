"""The two loss curves side by side: where the NPU run's loss parts from the golden run's, and which step to
dump to see why (docs/steps.md#loss-curves).

Reads the loss records both capture sides write (formats/loss_record.py: tf/loss.csv, npu/debug_N/loss.csv).
Two curves *part* at the first step both recorded where the relative difference |npu - golden| / |golden|
exceeds the tolerance (LOSS_TOLERANCE), or where one loss is finite and the other is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from precision_tool.formats.loss_record import LossPoint, read_loss

TINY = 1e-12
"""A golden loss of 0 would make every difference infinitely relative: below this it is absolute."""


@dataclass(frozen=True)
class StepDifference:
    step: int
    golden: float
    npu: float
    difference: float  # npu - golden (nan when one is not finite)
    relative: float  # |difference| / |golden|; inf when exactly one side is finite


@dataclass(frozen=True)
class LossComparison:
    golden: tuple[LossPoint, ...]
    npu: tuple[LossPoint, ...]
    golden_file: Path
    npu_file: Path
    tolerance: float
    differences: tuple[StepDifference, ...]  # at the steps both recorded, in step order

    def parts(self, d: StepDifference) -> bool:
        return d.relative > self.tolerance

    @property
    def first_parting(self) -> StepDifference | None:
        return next((d for d in self.differences if self.parts(d)), None)

    @property
    def last_agreeing_before(self) -> StepDifference | None:
        """The last common step before the parting where the curves still agreed."""
        first = self.first_parting
        if first is None:
            return None
        return next((d for d in reversed(self.differences) if d.step < first.step and not self.parts(d)), None)

    @property
    def largest(self) -> StepDifference | None:
        """The step with the largest relative difference (a non-finite one counts as the largest)."""
        return max(self.differences, key=lambda d: d.relative, default=None)

    @property
    def parted_steps(self) -> int:
        return sum(1 for d in self.differences if self.parts(d))


def step_difference(golden: LossPoint, npu: LossPoint) -> StepDifference:
    g, n = golden.loss, npu.loss
    if math.isfinite(g) and math.isfinite(n):
        diff = n - g
        return StepDifference(golden.step, g, n, diff, abs(diff) / max(abs(g), TINY))
    same = (math.isnan(g) and math.isnan(n)) or g == n  # both NaN, or the same infinity: no parting
    return StepDifference(golden.step, g, n, math.nan, 0.0 if same else math.inf)


def compare_curves(golden: Sequence[LossPoint], npu: Sequence[LossPoint], tolerance: float,
                   golden_file: Path = Path("tf/loss.csv"), npu_file: Path = Path("npu/debug_0/loss.csv")) -> LossComparison:
    by_step = {p.step: p for p in npu}
    differences = tuple(step_difference(p, by_step[p.step]) for p in golden if p.step in by_step)
    return LossComparison(tuple(golden), tuple(npu), golden_file, npu_file, tolerance, differences)


@dataclass(frozen=True)
class LossRecords:
    """Which loss records a workspace holds for the golden side and one NPU run."""

    golden_file: Path
    npu_file: Path
    debug_id: int
    golden: tuple[LossPoint, ...] | None  # None: no record
    npu: tuple[LossPoint, ...] | None


def loss_records(workspace: Any, debug_id: int | None = None) -> LossRecords:
    """The golden record and npu/debug_N's (`debug_id` None: the lowest run that has one, else debug_0).
    A damaged record raises FormatError naming it."""
    if debug_id is None:
        debug_id = next((n for n in sorted(workspace.debug_ids()) if workspace.loss_file(n).is_file()), 0)
    golden_file, npu_file = workspace.golden_loss_file, workspace.loss_file(debug_id)
    golden = tuple(read_loss(golden_file)) if golden_file.is_file() else None
    npu = tuple(read_loss(npu_file)) if npu_file.is_file() else None
    return LossRecords(golden_file, npu_file, debug_id, golden, npu)


def compare_workspace(workspace: Any, tolerance: float, debug_id: int | None = None) -> tuple[LossRecords, LossComparison | None]:
    """The records, and their comparison when both exist."""
    records = loss_records(workspace, debug_id)
    if records.golden is None or records.npu is None:
        return records, None
    return records, compare_curves(records.golden, records.npu, tolerance, records.golden_file, records.npu_file)


def dump_advice(comparison: LossComparison) -> str | None:
    """Which step to dump to see why the curves part, in the words `ac` and the report use."""
    first = comparison.first_parting
    if first is None:
        return None
    before = comparison.last_agreeing_before
    if before is None:
        return (f"dump step {first.step}: TF_DUMP_STEP='{first.step}' for the NPU run and the golden run's step "
                f"{first.step} alike, or resume from the checkpoint nearest before step {first.step} under "
                "PrecisionTfSession and `train` the step it captures")
    # a step's loss comes from the weights the step before updated: the cause is in either step
    prev = first.step - 1
    gap = (f"; the records skip from step {before.step}, still agreeing, to {first.step}, so an earlier step may "
           "be the one" if before.step < prev else "")
    return (f"dump steps {prev} and {first.step}: TF_DUMP_STEP='{prev}|{first.step}' for the NPU run and the "
            f"golden run alike (step {first.step}'s loss is computed from the weights step {prev} updated, so what "
            f"went wrong is in step {prev}'s gradients and update or in step {first.step}'s forward pass; "
            f"`vc --step all` compares both{gap}), or resume from the checkpoint nearest before step {prev} under "
            "PrecisionTfSession and `train` the step it captures")
