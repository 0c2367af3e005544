"""The answer of a comparison, gathered once and said the same way in the terminal (the block `ac` and `demo`
end with) and in the HTML report (under its headline): the first divergent op and the first op to produce
Inf/NaN, each with its replay verdict and what to do about it, then one line per comparison run.

It reads what the comparison wrote (the summaries of a result folder's CSVs) and what the replay wrote beside
them (replay/replay.json), so `ac`, `ac -c` and `report` all tell the same answer from the same files.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.results.results import CompareSummary, short_tensor
from precision_tool.analysis.results.result_ops import OpResult

FIRST_DIVERGENT = "first divergent op"
FIRST_NAN = "first op with Inf/NaN"
FLOAT16_ELSEWHERE = "float16 also"  # the replayed ops, past the first ones, that float16 alone gets wrong


@dataclass(frozen=True)
class Todo:
    """One thing to do: what, and the file it is about or the line to paste, each shown whole."""

    what: str
    path: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class Suspect:
    role: str
    """FIRST_DIVERGENT, FIRST_NAN or FLOAT16_ELSEWHERE."""
    op: OpResult
    run: str
    """The label of the comparison run that names it."""
    why: str
    """What the comparison saw: `out0 cosine 0.706158 ≤ 0.98 while its inputs pass`."""
    verdict: str | None
    """The replay's verdict (kernel, precision, inherited, ok, cannot replay); None: not replayed."""
    reason: str
    """The verdict's one line (or why it was not replayed)."""
    todo: tuple[Todo, ...]


@dataclass(frozen=True)
class RunResult:
    """One comparison run as the answer sees it (ac's results, or the report's runs), and as it shows it: a
    line with its first divergent op and counts."""

    label: str
    summary: Any
    """CompareSummary, or StatsSummary for a statistics compare."""
    npu_vs_npu: bool
    rank: int | None = None


@dataclass(frozen=True)
class Answer:
    suspects: tuple[Suspect, ...]
    runs: tuple[RunResult, ...]
    notes: tuple[str, ...] = ()
    """Said instead of suspects when there are none: all clear, or why no op can be named."""
    ranks: Any = None
    """The RankOverview of a multi-device comparison (analysis/ranks.py): its verdict speaks for the ranks."""


def first_nan_op(summary: CompareSummary) -> OpResult | None:
    """The first op whose output holds Inf/NaN while its inputs do not: a new failure, born there."""
    return next((op for op in summary.abnormal_ops
                 if op.nan_data_outputs and not any(t.nan_data for t in op.inputs)), None)


def suspects_of(summary: CompareSummary) -> list[tuple[str, OpResult]]:
    """The ops the answer names and `ac` replays: the first divergent op, then the first op to produce Inf/NaN
    when it is another one."""
    chosen: list[tuple[str, OpResult]] = []
    if summary.first_divergent_op is not None:
        chosen.append((FIRST_DIVERGENT, summary.first_divergent_op))
    born = first_nan_op(summary)
    if born is not None and all(op is not born for _, op in chosen):
        chosen.append((FIRST_NAN, born))
    return chosen


def deciding_output(op: OpResult, threshold: float) -> Any:
    """The failing output the answer (and the report's headline) quotes: the lowest finite cosine, else the
    first output holding Inf/NaN; None when no output fails."""
    failing = op.failing_outputs(threshold)
    finite = [t for t in failing if not t.nan_data]
    return min(finite, key=lambda t: t.cosine) if finite else (failing[0] if failing else None)


def _why(role: str, op: OpResult, threshold: float) -> str:
    if role == FIRST_NAN:
        names = ", ".join(short_tensor(t.tensor_index) for t in op.nan_data_outputs)
        return f"{names} hold{'s' if len(op.nan_data_outputs) == 1 else ''} Inf/NaN while its inputs do not"
    output = deciding_output(op, threshold)
    if output is None:
        return ""
    if output.nan_data:
        return f"{short_tensor(output.tensor_index)} holds Inf/NaN while its inputs pass"
    return f"{short_tensor(output.tensor_index)} cosine {output.cosine:.6f} ≤ {threshold} while its inputs pass"


def _float16_why(ops: Sequence[OpResult]) -> str:
    """`33 replayed op(s) agree only with their float16 replay: ReduceSumD ×33`."""
    counts: dict[str, int] = {}
    for op in ops:
        counts[op.op_type] = counts.get(op.op_type, 0) + 1
    kinds = ", ".join(f"{kind} ×{n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"the first of {len(ops)} replayed op(s) that agree only with their float16 replay ({kinds})"


_UPSTREAM_NAME = re.compile(r"^\[[^\]]*\] (\S+)")


def _todo(op: OpResult, verdict: dict[str, Any] | None) -> tuple[Todo, ...]:
    from precision_tool.analysis.replay.replay_fixes import tf_config_line

    if verdict is None:
        return (Todo(f"`replay {op.npu_op}` says whether its kernel, float16 or its inputs are to blame"),)
    kind = verdict.get("verdict")
    fixes = [str(f) for f in verdict.get("fixes") or ()]
    if kind == "kernel":
        if fixes:
            return (Todo("send the reproducer to the op's vendor (`python3 run.py` in it prints both results):",
                         path=fixes[0]),)
        return (Todo(f"`ni {op.npu_op}` shows its layouts: the NPU converts its input otherwise than numpy does"),)
    if kind == "precision":
        if fixes:
            return (Todo(f"keep {op.op_type} in float32 with the mixed-precision block list written to", path=fixes[0]),
                    Todo("by this line in the training script's session config:", code=tf_config_line(Path(fixes[0]))))
        return (Todo(f"keep {op.op_type} in float32: build it inside npu_scope.keep_dtype_scope()"),)
    if kind == "inherited" and verdict.get("upstream"):
        upstream = str(verdict["upstream"])
        match = _UPSTREAM_NAME.match(upstream)
        also = f"; `ni -c {match.group(1)}` replays it" if match else ""
        return (Todo(f"look at next: {upstream}{also}"),)
    if kind == "cannot replay":
        return (Todo(f"`ni {op.npu_op}` shows its dumps and both sides' statistics"),)
    return ()


def _reason(verdict: dict[str, Any] | None) -> str:
    from precision_tool.analysis.replay.replay_verdict import verdict_reason

    if verdict is None:
        return "not replayed"
    return verdict_reason(str(verdict.get("verdict") or ""), str(verdict.get("line") or ""))


def _no_suspect_note(summary: CompareSummary) -> str | None:
    """Why a run names no op: everything passes, or the inputs already differ, or the match is unsound."""
    if not summary.ops:
        return "nothing was compared (the CSV holds no rows)"
    if summary.problems:
        return "malformed rows in the CSV: no op is named (`vc` again rewrites it)"
    if summary.name_only and summary.abnormal_ops:
        return "matched by op name only: fused ops cannot be matched, so no op is named; `vc -g GRAPH` matches soundly"
    failure = summary.first_failure
    if failure is not None and failure.is_graph_input:
        tensor = f"{failure.tensor.tensor_index} (cosine {failure.tensor.cosine:.6f})"
        if failure.op.op_type.startswith("Hcom"):
            return (f"no first divergent op: the first failing tensor, {tensor}, is an input of the collective "
                    f"{failure.op.op_type} that no earlier op's output explains")
        return (f"no first divergent op: the first failing tensor, {tensor}, is an input no earlier op's output "
                "explains: the two runs were fed different data; check the input pipeline before the operators")
    if not summary.abnormal_ops:
        return f"no op output has cosine ≤ {summary.threshold}: every compared output meets the threshold"
    return None


def build_answer(runs: Sequence[RunResult], verdicts: Sequence[dict[str, Any]], *,
                 first_rank: int | None = None) -> Answer:
    """The answer of one result folder's runs and the replay verdicts of their ops. A multi-device
    comparison speaks through `first_rank`, the rank that went wrong first."""
    by_op = {str(v.get("op")): v for v in verdicts if isinstance(v, dict)}
    suspects: list[Suspect] = []
    notes: list[str] = []
    for run in runs:
        summary = run.summary
        if not isinstance(summary, CompareSummary):  # a statistics compare: no tensors to name an op by
            continue
        if run.npu_vs_npu or (first_rank is not None and run.rank not in (None, first_rank)):
            continue  # NPU vs NPU has no golden to judge by; one rank speaks for the others
        chosen = suspects_of(summary)
        for role, op in chosen:
            verdict = by_op.get(op.npu_op)
            suspects.append(Suspect(role, op, run.label, _why(role, op, summary.threshold),
                                    verdict.get("verdict") if verdict else None, _reason(verdict),
                                    _todo(op, verdict)))
        precision = [op for op in summary.abnormal_ops if (by_op.get(op.npu_op) or {}).get("verdict") == "precision"
                     and all(op is not named for _, named in chosen)]
        if precision:  # `ac --replay N` judged more ops on their own inputs: float16 alone loses these
            first, verdict = precision[0], by_op[precision[0].npu_op]
            suspects.append(Suspect(FLOAT16_ELSEWHERE, first, run.label, _float16_why(precision),
                                    "precision", _reason(verdict), _todo(first, verdict)))
        note = _no_suspect_note(summary) if not chosen else None
        if note and note not in notes:
            notes.append(note)
    return Answer(tuple(suspects), tuple(runs), tuple(notes))


def answer_for(workspace: Any, runs: Sequence[RunResult], result_folder: Path | None, debug_ids: set[int],
               ranks: Any = None) -> Answer:
    """The answer of a result folder's runs with each op's newest replay verdict (the replay beside them, or
    a later `replay OP`): what `ac` ends with and the report shows under its headline. `ranks`: the
    RankOverview of a multi-device comparison."""
    from precision_tool.analysis.report.op_results import newest_verdicts

    verdicts = newest_verdicts(workspace, result_folder, debug_ids) if result_folder is not None else []
    answer = build_answer(runs, verdicts, first_rank=ranks.first_rank if ranks is not None else None)
    notes = answer.notes
    if runs and all(run.npu_vs_npu for run in runs):  # NPU against NPU only: no golden to name an op by
        notes += (f"no golden tensors to judge the NPU by: {workspace.golden_hint()}",)
    return dataclasses.replace(answer, notes=notes, ranks=ranks)
