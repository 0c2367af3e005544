"""Drawing comparison results: run summaries, `vcs` panels, the first divergent op, `cp` tables."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from rich.columns import Columns
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_tool.analysis.results.results import CompareSummary, short_tensor
from precision_tool.analysis.results.result_ops import OpResult, TensorCosine

if TYPE_CHECKING:
    from precision_tool.formats.tf.op_sources import OpSources


def cosine_text(value: float, threshold: float, nan_data: bool = False) -> Text:
    if nan_data:
        return Text("nan (NaN/Inf data)", style="bad")
    if math.isnan(value):
        return Text("NaN", style="dim")
    return Text(f"{value:.6f}", style="bad" if value <= threshold else "ok")


def _tensor_cell(tensors: Sequence[TensorCosine], threshold: float) -> Any:
    """`out0 0.706158  out1 1.000000 ...`: pairs laid out in columns that wrap as whole pairs, so a label
    never ends one line while its value starts the next."""
    if not tensors:
        return Text("-", style="dim")
    pairs = []
    for tensor in tensors:
        pair = Text(short_tensor(tensor.tensor_index, "?") + " ", style="dim", no_wrap=True)
        pair.append_text(cosine_text(tensor.cosine, threshold, tensor.nan_data))
        pairs.append(pair)
    return Columns(pairs, padding=(0, 2))


def op_ref(op: OpResult) -> str:
    """How an op is named in every panel and line: `[<index>] <name>` (the Build graph's id and name when
    the run's graph is known: the ones `ni` shows)."""
    return f"[{op.index}] {op.npu_op}"


def op_panel(op: OpResult, threshold: float, right_label: str = "golden", width: int | None = None,
             sources: "OpSources | None" = None) -> Panel:
    """One op's panel; given the golden run's `sources`, a `made at` row per user's line that made it."""
    body = Table.grid(padding=(0, 1))
    body.add_column(style="dim", no_wrap=True)
    body.add_column(overflow="fold")
    body.add_row("NPU", Text(op.npu_op, style="op"))
    body.add_row(right_label, op.golden_op)
    body.add_row("type", op.op_type)
    if sources is not None:
        made = [Text(place).append(f": {code}" if code else "", style="cyan")
                for place, code in made_at(sources, op.golden_op)]
        body.add_row("made at", Text("\n").join(made) if made else Text("(not in the golden run's record)",
                                                                        style="dim"))
    body.add_row("inputs", _tensor_cell(op.inputs, threshold))
    body.add_row("outputs", _tensor_cell(op.outputs, threshold))
    return Panel(body, title=op_ref(op), title_align="left", width=width, expand=width is not None)


def divergence_lines(summary: CompareSummary, sources: "OpSources | None" = None) -> list[Text]:
    """The verdict: where the error is born (and, given the golden run's `sources`, the user's line that
    made the op), and whether the inputs already disagreed."""
    lines: list[Text] = []
    thr = summary.threshold
    op = summary.first_divergent_op
    if op is not None:
        line = Text("first divergent op: ", style="bold")
        line.append(op_ref(op), style="op")
        worst = min((t.cosine for t in op.failing_outputs(thr) if not t.nan_data), default=math.nan)
        right = "other NPU run" if summary.npu_vs_npu else "golden"
        how = f"cosine {worst:.6f} ≤ {thr}" if not math.isnan(worst) else "NaN/Inf data"
        line.append(f" ({op.op_type}; {right} {op.golden_op}) — its outputs fail ({how}) "
                    "while its inputs pass: the error is born here; later failures may only inherit it")
        lines.append(line)
        if sources is not None and not summary.npu_vs_npu:
            lines.extend(made_at_lines(sources, op.golden_op))
    failure = summary.first_failure
    if failure is not None and failure.is_graph_input and failure.op.op_type.startswith("Hcom"):
        # an HCCL op's input that its producer's output does not explain: not the input pipeline
        lines.append(Text(
            f"the first failing tensor is {failure.tensor.tensor_index} (cosine {failure.tensor.cosine:.6f}), an "
            f"input of the collective {failure.op.op_type} that no earlier op's output explains: the collective "
            "read other data than its producer wrote on this rank (a corrupted buffer, memory overwritten between "
            "the two, or a stream/event ordering fault); every rank that takes part receives the error",
            style="warning"))
    elif failure is not None and failure.is_graph_input:
        lines.append(Text(
            f"the first failing tensor is {failure.tensor.tensor_index} (cosine {failure.tensor.cosine:.6f}), an "
            f"input that no earlier op's output explains: a graph input — the NPU and golden runs were fed "
            f"different data (inconsistent inputs); check the input pipeline before the operators",
            style="warning"))
    if summary.nan_data_outputs:
        lines.append(Text(f"{summary.nan_data_outputs} output(s) hold NaN/Inf data, so they have no cosine: counted "
                          "as compared and abnormal", style="bad"))
    if summary.name_only and summary.abnormal_ops:
        lines.append(Text("name-only matching: fused ops cannot be matched, so no op is named as the first "
                          "divergent one; pass -g GRAPH (the run's *_Build.txt) for a sound match", style="warning"))
    if not summary.abnormal_ops:
        lines.append(Text(f"no op output has cosine ≤ {thr}: every compared output meets the threshold", style="ok"))
    return lines


def made_at(sources: "OpSources", golden_ops: str) -> list[tuple[str, str | None]]:
    """(place, line) of the user's code that made each golden op (a fused op names several, comma-joined)
    whose creation the record holds, each place once: ('network.py:91 in build_model()', 'h = ...')."""
    from precision_tool.formats.tf.op_sources import user_frame

    found: list[tuple[str, str | None]] = []
    seen: set[tuple[str, int]] = set()
    for name in (n.strip() for n in golden_ops.split(",")):
        stack = sources.stack(name) if name else None
        frame = user_frame(stack) if stack else None
        if frame is not None and (frame.path, frame.line) not in seen:
            seen.add((frame.path, frame.line))
            found.append((frame.place, frame.text.strip() if frame.text else None))
    return found


def made_at_lines(sources: "OpSources", golden_ops: str) -> list[Text]:
    """'  made at network.py:91 in build_model(): <the line>' for each of made_at's places."""
    lines = []
    for place, code in made_at(sources, golden_ops):
        line = Text("  made at ", style="dim").append(place, style="bold")
        if code:
            line.append(": ", style="dim").append(code, style="cyan")
        lines.append(line)
    return lines


PROBLEMS_SHOWN = 10
"""How many malformed CSV rows/values a summary names before counting the rest."""


def counts_text(summary: CompareSummary, rule: bool = True) -> str:
    """The one way every summary counts a result (analysis/results/counts.py: ops, then outputs compared / abnormal /
    not compared); `rule`: and what abnormal means."""
    from precision_tool.analysis.results.counts import abnormal_rule, counts_line, counts_of

    text = counts_line(counts_of(summary))
    return f"{text} ({abnormal_rule(summary.threshold)})" if rule else text


def verdict_and_counts(summary: Any) -> tuple[Text, str]:
    """The verdict and counts of one result line: a tensor compare, or a statistics compare (StatsSummary)."""
    from precision_tool.analysis.results.stats_results import StatsSummary

    if isinstance(summary, StatsSummary):
        from precision_tool.render.compare.stats import stats_counts_text

        first = summary.first_failing
        line = Text("statistics: first divergent tensor ")
        if first is not None:
            line.append(f"[{first.index}] {first.tensor_index}", style="op")
        else:
            line.append("none", style="dim")
        return line, stats_counts_text(summary)
    return _first_divergent(summary), counts_text(summary, rule=False)


def _first_divergent(summary: CompareSummary) -> Text:
    """`first divergent op [16] bn2/FusedBatchNormV3`, or why none is named."""
    line = Text("first divergent op ")
    op = summary.first_divergent_op
    if op is not None:
        line.append(op_ref(op), style="op")
    elif summary.problems:
        line.append("not named (malformed rows in the CSV)", style="warning")
    elif summary.name_only and summary.abnormal_ops:
        line.append("not named (name-only matching; pass -g GRAPH)", style="warning")
    elif summary.first_failure is not None and summary.first_failure.is_graph_input:
        # every failing op has a failing input: the first of them says where it starts
        line.append("none (inputs fail first: ", style="warning")
        line.append(op_ref(summary.first_failure.op), style="op")
        line.append(f" {summary.first_failure.tensor.tensor_index.rsplit(':', 2)[-2]})", style="warning")
    else:
        line.append("none", style="dim")
    return line


def overflow_lines(summary: CompareSummary, limit: int) -> list[Text]:
    """The OverFlow column of a result: which ops have a tensor marked YES (the first `limit`), or that none
    has; nothing for a CSV without the column."""
    if not summary.overflow_column:
        return []
    ops = summary.overflow_ops
    if not ops:
        return [Text("OverFlow: no tensor is marked YES", style="ok")]
    lines = [Text(f"OverFlow YES in {len(ops)} op(s):", style="bad")]
    for op in ops[:limit]:
        line = Text("  ")
        line.append(op_ref(op), style="op")
        names = [short_tensor(t, "(no tensor: Opdebug record)") for t in op.overflowed]
        line.append(f" ({op.op_type}): {', '.join(names)}")
        lines.append(line)
    if len(ops) > limit:
        lines.append(Text(f"  ... {len(ops) - limit} more (vcs -l N shows more)", style="dim"))
    return lines


def result_view(summary: Any, limit: int, label: str | None = None, width: int | None = None, *,
                overflow_only: bool = False, npu_vs_npu: bool = False, stats_rows: Sequence[Any] = (),
                sources: "OpSources | None" = None, source_rows: bool = False) -> list[Any]:
    """One result as vc/vcs/ac show it: a tensor compare's summary_view, or for a statistics compare
    (StatsSummary) its summary and, given its rows (vcs), the warning and error rows up to `limit`."""
    from precision_tool.analysis.results.stats_results import StatsSummary

    if not isinstance(summary, StatsSummary):
        return summary_view(summary, limit, label, width, overflow_only=overflow_only, sources=sources,
                            source_rows=source_rows)
    from precision_tool.analysis.compare.stats_compare import filter_stats_rows
    from precision_tool.render.compare.stats import stats_summary, stats_table

    right = "other run" if npu_vs_npu else "golden"
    parts = list(stats_summary(summary, label, right))
    if stats_rows:
        parts.extend(stats_table(filter_stats_rows(stats_rows, results=["warning", "error"]), limit, right))
    return parts


def summary_view(summary: CompareSummary, limit: int, label: str | None = None,
                 width: int | None = None, overflow_only: bool = False,
                 sources: "OpSources | None" = None, source_rows: bool = False) -> list[Any]:
    """`vcs`'s view of one result: the run's label, the CSV path (a line of its own, whole), the counts,
    one panel per abnormal op (all `width` wide; with `overflow_only`, per op marked OverFlow YES), the
    OverFlow column's ops when the CSV has one, and the verdict as prose."""
    parts: list[Any] = []
    head = Text(label or "", style="bold")
    if not summary.complete:
        head.append(" (interrupted: `vc --resume` finishes it)" if label else
                    "interrupted (`vc --resume` finishes it)", style="warning")
    if head.plain:
        head.append(": ", style="bold")
    head.append(str(summary.path), style="bold")  # the path last: it copies whole
    parts.append(head)
    for problem in summary.problems[:PROBLEMS_SHOWN]:
        parts.append(Text(f"warning: {summary.path}: {problem}", style="warning"))
    if len(summary.problems) > PROBLEMS_SHOWN:
        parts.append(Text(f"warning: {summary.path}: ... and {len(summary.problems) - PROBLEMS_SHOWN} more "
                          "malformed rows or values", style="warning"))
    if not summary.ops:
        parts.append(Text(f"{summary.path} holds no rows (only a header): nothing was compared", style="warning"))
        return parts
    parts.append(Text(counts_text(summary), style="dim"))
    right = "NPU (other)" if summary.npu_vs_npu else "golden"
    shown = summary.overflow_ops if overflow_only else summary.abnormal_ops
    for op in shown[:limit]:
        parts.append(op_panel(op, summary.threshold, right, width, sources if source_rows else None))
    if len(shown) > limit:
        parts.append(Text(f"... {len(shown) - limit} more (vcs -l N shows more)", style="dim"))
    parts.extend(overflow_lines(summary, limit))
    if summary.problems:
        # a malformed value can hide the real first divergent op: name none rather than a wrong one
        parts.append(Text(f"{len(summary.problems)} malformed rows or values in this CSV were read as NaN, so no "
                          "first divergent op is named; re-run `vc` to rewrite the CSV", style="warning"))
        return parts
    parts.extend(divergence_lines(summary, sources))
    return parts


def npu_pair_view(summary: CompareSummary, label: str, other: str | None) -> list[Any]:
    """An NPU-vs-NPU run as `ac` shows it: which runs, what the second one is (`other`, from their graphs), the
    counts and where they first part; its panels would repeat the NPU-vs-golden ones (`vcs` shows them)."""
    head = Text(f"{label}: ", style="bold")
    head.append(str(summary.path), style="bold")
    parts: list[Any] = [head]
    if other:
        parts.append(Text(other, style="dim"))
    if not summary.ops:
        parts.append(Text(f"{summary.path} holds no rows (only a header): nothing was compared", style="warning"))
        return parts
    parts.append(Text(counts_text(summary), style="dim"))
    line = _first_divergent(summary)
    line.append(" (`vcs -f` on the CSV shows its ops)", style="dim")
    parts.append(line)
    return parts


def run_lines(runs: Sequence[Any], listed: Sequence[bool] | None = None) -> list[Text]:
    """The short summary `vc` ends with: per run one line of counts and verdict, its CSV path last (prose:
    wrapped at words, so the path is never cut and copies whole). `listed`: which runs get a line (many
    ranks: the others are counted, with their folder)."""
    lines = [Text("comparison runs:", style="bold")]
    hidden = [run for run, show in zip(runs, listed) if not show] if listed is not None else []
    for run in (r for i, r in enumerate(runs) if listed is None or listed[i]):
        # as ac's recap: the verdict first, then the counts
        verdict, counts = verdict_and_counts(run.summary)
        line = Text(f"  {run.label}: ")
        line.append_text(verdict)
        line.append(f"; {counts}; {run.elapsed_s:.1f} s: ")
        line.append(str(run.csv_path), style="path")
        lines.append(line)
    if hidden:
        more = " more" if len(hidden) < len(runs) else ""
        line = Text(f"  {len(hidden)}{more} result CSVs (one per rank) in ")
        line.append(str(hidden[0].csv_path.parent), style="path")
        lines.append(line)
    return lines


def interrupted_lines(exc: Any, resume: str = "vc --resume") -> list[Text]:
    """Ctrl-C during `vc`: what was kept (complete CSVs, the .partial one with how far it got, runs not
    started), one path per line, and how to finish (`resume`, the command line that does)."""
    lines = [Text("vc interrupted (Ctrl-C); kept:", style="warning")]
    for path in exc.complete:
        lines.append(Text(f"  complete: {path}"))
    if exc.partial is not None:
        done = f" ({exc.done} of {exc.total} ops)" if exc.total else ""
        lines.append(Text(f"  partial{done}: {exc.partial}"))
    for label in exc.not_started:
        lines.append(Text(f"  not started: {label}", style="dim"))
    lines.append(Text(f"`{resume}` finishes the run", style="bold"))
    return lines


UNREADABLE_SHOWN = 10
"""How many unreadable files `vc` lists one per line before counting the rest."""


def unreadable_lines(runs: Sequence[Any], list_path: Any = None, limit: int = UNREADABLE_SHOWN) -> list[Text]:
    """One warning line per NPU dump / golden .npy that could not be read (the first `limit`, then a count),
    and where the whole list (file and reason) was written."""
    found: dict[str, str] = {}
    for run in runs:
        for name, problem in getattr(run, "unreadable", ()):
            found.setdefault(name, problem)
    lines: list[Text] = []
    for name, problem in list(found.items())[:limit]:
        line = Text("warning: could not read ", style="warning")
        line.append(name, style="path")
        line.append(f": {problem}")
        lines.append(line)
    if len(found) > limit:
        lines.append(Text(f"warning: ... and {len(found) - limit} more unreadable files", style="warning"))
    if found:
        lines.append(Text(f"{len(found)} file(s) could not be read; their rows in the CSV say why "
                          "(CompareFailReason; Reason in a statistics compare)", style="warning"))
        if list_path is not None:
            lines.append(Text("the whole list (file and reason):", style="warning"))
            lines.append(Text(str(list_path), style="path"))
    return lines
