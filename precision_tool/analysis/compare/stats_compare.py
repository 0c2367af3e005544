"""Comparing statistics dumps (dump_data="stats") with the golden tensors, where the NPU wrote no tensors.

Each row of each statistics CSV is paired with its golden tensor by the rules of a tensor compare
(matching.py: through the Build graph's output_desc origin names when a graph is given, else by op name,
outputs only). The golden's statistics are computed with the device's rules (stats_dump.array_stats), with
the device layout's padding zeros added when the NPU counted more elements than the golden holds in a padded
layout (NC1HWC0, FRACTAL_Z ...), since the device computes its numbers over the padded buffer.

Verdict per tensor (modelled on msprobe's summary compare, which warns when
|npu - bench| / (max(|npu|, |bench|) + 1e-10) > 0.5 for max, min or mean):
- error:   NaN or Inf counts differ; element counts differ (not explained by padding); one side's max/min/mean
           is NaN/Inf and the other's is not; or the magnitude difference of max, min or mean exceeds
           ERROR_MAGNITUDE (0.5, msprobe's threshold);
- warning: a magnitude difference above WARNING_MAGNITUDE (0.01: ten times float16 rounding);
- pass:    otherwise;
- no golden / not computed / unreadable: the tensor could not be judged.
For the mean, whose value can be near 0 while the data are not, the scale is at least 1% of the golden's
largest absolute value, so a mean of 1e-6 against 2e-6 in data reaching 3.0 is not an error.
Nothing here prints.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_tool.analysis.compare.graph_plan import plan_graph_compare
from precision_tool.analysis.compare.listing_cache import stats_only  # re-exported
from precision_tool.analysis.compare.matching import (
    DumpIndex, MatchPlan, TensorMatch, index_dumps, plan_name_compare,
)
from precision_tool.errors import FormatError, WorkspaceError
from precision_tool.formats.npu.stats_dump import (
    ArrayStats, StatsRow, array_stats, read_stats_csv,
)
from precision_tool.analysis.results.stats_results import (  # re-exported: the one module the commands import
    ERROR, NAN_TEXT, NO_GOLDEN, NOT_COMPUTED, PASS, STATS_RESULT_HEADER, UNREADABLE, WARNING, StatsResultRow,
    StatsSummary, cell_text, encode_rows, filter_stats_rows, is_stats_result, read_stats_result, rows_from_text,
    summarize_stats,
)

if TYPE_CHECKING:
    import numpy as np

WARNING_MAGNITUDE = 0.01
ERROR_MAGNITUDE = 0.5
EPSILON = 1e-10
MEAN_SCALE_FLOOR = 0.01
# Layouts whose device buffer is the tensor itself: a count that differs there is not padding.
_PLAIN_LAYOUTS = {"", "-", "ND", "NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "DHWNC", "NC", "CN",
                  "NCL", "MD", "RESERVED", "UNKNOW"}

# --- the dump folder ------------------------------------------------------------------------------
def index_stats(folder: Path, *, with_graph: bool = False, step: int | None = None) -> DumpIndex:
    """The statistics CSVs of a dump tree by op, indexed as tensor dumps are (the latest timestamp wins)."""
    return index_dumps(Path(folder), with_graph=with_graph, step=step, stats=True)


# --- judging one tensor ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StatsVerdict:
    result: str
    reasons: tuple[str, ...] = ()
    diffs: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """'max'/'min'/'mean' → (NPU − golden, |diff| / |golden|), None where it cannot be computed."""


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _same_special(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def judge(npu: StatsRow, golden: ArrayStats, *, other: str = "golden") -> StatsVerdict:
    """The verdict of one NPU statistics row against the golden's statistics (module docstring); `other` names
    the reference side in the reasons ("other run" in an NPU-vs-NPU compare)."""
    if not npu.computed:
        return StatsVerdict(NOT_COMPUTED, ("the CSV holds no statistics for this tensor",))
    errors: list[str] = []
    warnings: list[str] = []
    if npu.count is not None and npu.count != golden.count:
        errors.append(f"{npu.count} elements, {other} {golden.count}")
    if npu.nan_count is not None and npu.nan_count != golden.nan_count:
        errors.append(f"NaN count {npu.nan_count}, {other} {golden.nan_count}")
    for what, mine, theirs in (("-Inf", npu.neg_inf_count, golden.neg_inf_count),
                               ("+Inf", npu.pos_inf_count, golden.pos_inf_count)):
        if mine is not None and mine != theirs:
            errors.append(f"{what} count {mine}, {other} {theirs}")
    absmax = max((abs(v) for v in (golden.max, golden.min) if _finite(v)), default=0.0)
    diffs: dict[str, tuple[float | None, float | None]] = {}
    for what, mine, theirs in (("max", npu.max, golden.max), ("min", npu.min, golden.min),
                               ("mean", npu.mean, golden.mean)):
        if mine is None or theirs is None:
            diffs[what] = (None, None)
            continue
        if not (_finite(mine) and _finite(theirs)):
            diffs[what] = (None, None)
            if not _same_special(mine, theirs):
                errors.append(f"{what} {mine:g}, {other} {theirs:g}")
            continue
        diff = mine - theirs
        relative = abs(diff) / abs(theirs) if theirs != 0 else None
        diffs[what] = (diff, relative)
        scale = max(abs(mine), abs(theirs))
        if what == "mean":
            scale = max(scale, MEAN_SCALE_FLOOR * absmax)
        magnitude = abs(diff) / (scale + EPSILON)
        if magnitude > ERROR_MAGNITUDE:
            errors.append(f"{what} {mine:g}, {other} {theirs:g} ({magnitude:.0%} of its magnitude)")
        elif magnitude > WARNING_MAGNITUDE:
            warnings.append(f"{what} {mine:g}, {other} {theirs:g} ({magnitude:.1%} of its magnitude)")
    if errors:
        return StatsVerdict(ERROR, tuple(errors + warnings), diffs)
    if warnings:
        return StatsVerdict(WARNING, tuple(warnings), diffs)
    return StatsVerdict(PASS, (), diffs)


def padding_of(npu: StatsRow, golden_count: int) -> int:
    """Zeros the device counted beyond the golden's elements: a padded device layout's (NC1HWC0 ...)."""
    if npu.count is None or npu.count <= golden_count or npu.layout.upper() in _PLAIN_LAYOUTS:
        return 0
    return npu.count - golden_count


def golden_array(path: Path) -> "np.ndarray":
    """A golden .npy, checked as the tensor compare checks it (no objects, not truncated), memory-mapped."""

    from precision_tool.analysis.compare.engine.golden_source import npy_source

    npy_source(path)  # FormatError for object dtypes, truncated files, bad headers
    from precision_tool.formats.tf.golden import load_npy

    return load_npy(path)  # memory-mapped when big


# --- a whole run ----------------------------------------------------------------------------------
def plan_stats_run(npu_dir: Path, golden_dir: Path, graph_path: str | os.PathLike[str] | None, *,
                   graph_name: str | None = None, step: int | None = None) -> tuple[MatchPlan, dict[str, Path]]:
    from precision_tool.formats.tf.golden import scan_golden_dir

    if not Path(npu_dir).is_dir():
        raise WorkspaceError(f"NPU dump folder {npu_dir} does not exist; pass one with -lt DIR")
    stats = index_stats(Path(npu_dir), with_graph=graph_path is not None, step=step)
    if not stats.by_op:
        raise WorkspaceError(f"no statistics CSVs (OPTYPE.OPNAME.TASK.STREAM.TIMESTAMP.csv) in {npu_dir}")
    golden = scan_golden_dir(golden_dir)
    if not golden:
        raise WorkspaceError(f"no golden .npy tensors (<op>.<slot>.<timestamp>.npy) in {golden_dir}; "
                             "run `tf_dump` first")
    if graph_path is None:
        return plan_name_compare(stats, golden), golden
    from precision_tool.formats.ge.ge_graph import load_graph

    model = load_graph(graph_path)
    all_ops = [op for _, op in model.iter_ops()]
    ops = [op for g in model.graphs if graph_name in (None, g.name) for op in g.ops]
    return plan_graph_compare(ops, stats, all_ops=all_ops), golden


def compare_statistics(npu_dir: str | os.PathLike[str], golden_dir: str | os.PathLike[str],
                       graph_path: str | os.PathLike[str] | None, out_csv_path: str | os.PathLike[str] | None,
                       *, graph_name: str | None = None, step: int | None = None) -> StatsSummary:
    """Compare every statistics CSV under `npu_dir` with the golden tensors of `golden_dir` (paired through
    the Build graph at `graph_path`, or by op name when None); write the result CSV atomically at
    `out_csv_path` (None: nothing written) and return the summary. WorkspaceError when there is nothing to
    compare; a bad CSV or .npy is a row `unreadable` naming the file, listed in `unreadable_files`."""
    from precision_tool.atomic import write_text_atomic

    plan, golden = plan_stats_run(Path(npu_dir), Path(golden_dir), graph_path, graph_name=graph_name, step=step)
    rows: list[list[str]] = []
    unreadable: dict[str, str] = {}
    golden_cache: dict[Path, Any] = {}
    for group in plan.groups:
        for op in group.ops:
            if op.dump_path is None:
                continue
            try:
                stats_file = read_stats_csv(op.dump_path)
            except FormatError as exc:
                unreadable.setdefault(exc.path, exc.problem)
                rows.append(_row(group.index, op.op_type, op.name, group.ground_truth_text, f"{op.name}:file",
                                 None, None, UNREADABLE, exc.problem, op.dump_path, None))
                continue
            for stats_row in stats_file.rows:
                match = op.input_match(stats_row.index) if stats_row.kind == "input" else \
                    op.output_match(stats_row.index)
                skipped = op.skip_inputs if stats_row.kind == "input" else op.skip_outputs
                tensor = f"{op.name}:{stats_row.kind}:{stats_row.index}"
                rows.append(_tensor_row(group.index, op.op_type, op.name, tensor, stats_row, match, skipped,
                                        golden, golden_cache, unreadable, op.dump_path, plan.npu_vs_npu))
    text = encode_rows([STATS_RESULT_HEADER, *rows])
    if out_csv_path is not None:
        write_text_atomic(Path(out_csv_path), text)
    table = rows_from_text(text, Path(out_csv_path or "statistics result"))
    return summarize_stats(table, Path(out_csv_path) if out_csv_path is not None else None,
                           notes=plan.warnings, unreadable=tuple(unreadable.items()))


def compare_statistics_npu(left_dir: str | os.PathLike[str], right_dir: str | os.PathLike[str],
                           out_csv_path: str | os.PathLike[str] | None, *, step: int | None = None) -> StatsSummary:
    """NPU vs NPU where both runs dumped statistics: ops paired by the op field of their file names, tensors by
    input/output and index; the `Golden*` columns of the result hold the other run's numbers (GroundTruth its
    op, GoldenFile its CSV). Same verdicts, CSV and summary as compare_statistics."""
    from precision_tool.analysis.compare.matching import plan_npu_compare
    from precision_tool.atomic import write_text_atomic

    left = index_stats(Path(left_dir), step=step)
    right = index_stats(Path(right_dir), step=step)
    for folder, index in ((left_dir, left), (right_dir, right)):
        if not index.by_op:
            raise WorkspaceError(f"no statistics CSVs (OPTYPE.OPNAME.TASK.STREAM.TIMESTAMP.csv) in {folder}")
    plan = plan_npu_compare(left, right)
    rows: list[list[str]] = []
    unreadable: dict[str, str] = {}
    for group in plan.groups:
        for op in group.ops:
            files = []
            for path in (op.dump_path, op.right_dump_path):
                try:
                    files.append(read_stats_csv(path) if path is not None else None)
                except FormatError as exc:
                    unreadable.setdefault(exc.path, exc.problem)
                    rows.append(_row(group.index, op.op_type, op.name, group.ground_truth_text, f"{op.name}:file",
                                     None, None, UNREADABLE, exc.problem, op.dump_path, path))
                    files.append(None)
            mine, theirs = files
            if mine is None:
                continue
            for stats_row in mine.rows:
                tensor = f"{op.name}:{stats_row.kind}:{stats_row.index}"
                other = theirs.row(stats_row.kind, stats_row.index) if theirs is not None else None
                other_stats = _as_array_stats(other, stats_row) if other is not None else None
                if other_stats is None:
                    why = "the other run has no statistics of this tensor" if theirs is not None or \
                        op.right_dump_path is None else "the other run's CSV cannot be read"
                    rows.append(_row(group.index, op.op_type, op.name, "*", tensor, stats_row, None, NO_GOLDEN, why,
                                     op.dump_path, op.right_dump_path))
                    continue
                verdict = judge(stats_row, other_stats, other="other run")
                rows.append(_row(group.index, op.op_type, op.name, tensor, tensor, stats_row, other_stats,
                                 verdict.result, "; ".join(verdict.reasons), op.dump_path, op.right_dump_path,
                                 verdict))
    text = encode_rows([STATS_RESULT_HEADER, *rows])
    if out_csv_path is not None:
        write_text_atomic(Path(out_csv_path), text)
    return summarize_stats(rows_from_text(text, Path(out_csv_path or "statistics result")),
                           Path(out_csv_path) if out_csv_path is not None else None, notes=plan.warnings,
                           unreadable=tuple(unreadable.items()))


def _as_array_stats(row: StatsRow, like: StatsRow) -> ArrayStats | None:
    """Another run's row as the reference side; a count it lacks is taken as equal (nothing to compare)."""
    if not row.computed:
        return None

    def count(value: int | None, fallback: int | None) -> int:
        return value if value is not None else (fallback or 0)

    return ArrayStats(row.max, row.min, row.mean, count(row.count, like.count),
                      count(row.nan_count, like.nan_count), count(row.neg_inf_count, like.neg_inf_count),
                      count(row.pos_inf_count, like.pos_inf_count))


def _tensor_row(group: int, op_type: str, op_name: str, tensor: str, npu: StatsRow, match: TensorMatch,
                skipped: bool, golden: dict[str, Path], cache: dict[Path, Any], unreadable: dict[str, str],
                stats_path: Path, _npu_vs_npu: bool) -> list[str]:
    def row(result: str, reason: str, ground_truth: str = "*", gold: ArrayStats | None = None,
            golden_path: Path | None = None, verdict: StatsVerdict | None = None) -> list[str]:
        return _row(group, op_type, op_name, ground_truth, tensor, npu, gold, result, reason, stats_path,
                    golden_path, verdict)

    if skipped:
        return row(NO_GOLDEN, "not compared (a quantize op's int8 data, as msaccucmp)")
    if match.golden is None:
        return row(NO_GOLDEN, match.problem or "no golden tensor is known for this tensor")
    ref = match.golden
    path = golden.get(ref.key)
    truth = f"{ref.op_name}:output:{ref.index}"
    if path is None:
        return row(NO_GOLDEN, f"no golden file {ref.key}.*.npy", truth)
    try:
        # statistics (small) are kept per (file, padding): a tensor is the output of one op and the input of
        # the next, so each golden is read about twice; the arrays themselves are not kept
        size = cache.get(path)
        if size is None:
            size = cache[path] = int(golden_array(path).size)
        padding = padding_of(npu, size)
        gold = cache.get((path, padding))
        if gold is None:
            gold = cache[(path, padding)] = array_stats(golden_array(path), padding)
    except FormatError as exc:
        unreadable.setdefault(exc.path, exc.problem)
        return row(UNREADABLE, f"{exc.path}: {exc.problem}", truth, golden_path=path)
    except ValueError as exc:  # not numeric
        unreadable.setdefault(str(path), str(exc))
        return row(UNREADABLE, f"{path}: {exc}", truth, golden_path=path)
    verdict = judge(npu, gold)
    reasons = list(verdict.reasons)
    if padding:
        reasons.append(f"golden counted with {padding} padding zeros of {npu.layout}")
    return row(verdict.result, "; ".join(reasons), truth, gold, path, verdict)


def _row(group: int, op_type: str, op_name: str, ground_truth: str, tensor: str, npu: StatsRow | None,
         gold: ArrayStats | None, result: str, reason: str, stats_path: Path | None, golden_path: Path | None,
         verdict: StatsVerdict | None = None) -> list[str]:
    diffs = verdict.diffs if verdict is not None else {}

    def stat(name: str, mine: float | None, theirs: float | None) -> list[str]:
        diff, relative = diffs.get(name, (None, None))
        return [cell_text(mine), cell_text(theirs), cell_text(diff), cell_text(relative)]

    shape = "NaN" if npu is None or npu.shape is None else ("x".join(str(d) for d in npu.shape) or "scalar")
    return [
        str(group), op_type, op_name, ground_truth, tensor,
        npu.data_type if npu else NAN_TEXT, npu.layout if npu else NAN_TEXT, shape,
        cell_text(npu.count if npu else None), cell_text(gold.count if gold else None),
        *stat("max", npu.max if npu else None, gold.max if gold else None),
        *stat("min", npu.min if npu else None, gold.min if gold else None),
        *stat("mean", npu.mean if npu else None, gold.mean if gold else None),
        cell_text(npu.nan_count if npu else None), cell_text(gold.nan_count if gold else None),
        cell_text(npu.inf_count if npu else None), cell_text(gold.inf_count if gold else None),
        result, reason, str(stats_path) if stats_path else "", str(golden_path) if golden_path else "",
    ]


__all__ = [
    "ERROR", "NAN_TEXT", "NO_GOLDEN", "NOT_COMPUTED", "PASS", "STATS_RESULT_HEADER", "UNREADABLE", "WARNING",
    "StatsResultRow", "StatsSummary", "compare_statistics", "filter_stats_rows", "is_stats_result", "judge",
    "compare_statistics_npu", "read_stats_result", "stats_only", "summarize_stats",
]
