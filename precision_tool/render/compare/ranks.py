"""The rank summary of a multi-device comparison (vc, vcs, ac): one row per rank, which rank went wrong first
and through which collective the error reached the others, and which ranks disagree with rank 0."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.ranks import RankFinding, RankOverview, RankReport, ranks_text
from precision_tool.analysis.results.results import short_tensor
from precision_tool.analysis.results.result_ops import OpResult
from precision_tool.render.compare.compare import op_ref


def _failure_text(finding: RankFinding) -> Text:
    failure = finding.summary.first_failure
    if failure is None:
        return Text("none", style="green")
    text = Text(op_ref(failure.op), style="bold" if finding.summary.first_failure else "")
    text.append(f" {short_tensor(failure.tensor.tensor_index)} ")
    text.append("NaN/Inf" if failure.tensor.nan_data else f"{failure.tensor.cosine:.6f}", style="red")
    return text


def rank_table(report: RankReport) -> Table:
    table = Table(title=None, show_edge=False, pad_edge=False, box=None, header_style="bold")
    from precision_tool.analysis.results.counts import counts_of

    # compact, to fit 100 columns: the op's type is in the verdict line below, in0/out0 say input or output
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("outputs", justify="right", no_wrap=True)  # compared/all: the counting of every summary
    table.add_column("abnormal", justify="right", no_wrap=True)  # ops
    table.add_column("first failing tensor (execution order)", overflow="fold")
    first = set(report.first_ranks)
    for finding in report.findings:
        counts = counts_of(finding.summary)
        rank = Text(f"▶ {finding.rank}" if finding.rank in first else str(finding.rank),
                    style="bold red" if finding.rank in first else "")
        abnormal = Text(str(counts.abnormal_ops), style="red" if counts.abnormal_ops else "green")
        table.add_row(rank, f"{counts.compared}/{counts.outputs}", abnormal, _failure_text(finding))
    return table


def verdict_lines(report: RankReport) -> list[Text]:
    """Which rank went wrong first, and how the error reached the others."""
    if not report.first_ranks:
        return [Text(f"ranks: every one of the {len(report.findings)} ranks agrees with its golden", style="green")]
    first = [f for f in report.findings if f.rank in report.first_ranks]
    op = first[0].first_op
    lines = []
    if len(first) == len(report.findings):
        line = Text("ranks: every rank first fails at the same place: ", style="bold")
        line.append(_op_text(op, first[0].first_is_input))
        line.append(" (not one rank's fault: the op itself, or the data every rank shares)")
        return [line]
    line = Text(f"rank{'s' if len(first) > 1 else ''} {ranks_text(report.first_ranks)} went wrong first: ",
                style="bold red")
    line.append(_op_text(op, first[0].first_is_input))
    lines.append(line)
    if report.boundary is not None:
        crossed = Text(f"  the error reached rank{'s' if len(report.spread_to) > 1 else ''} "
                       f"{ranks_text(report.spread_to)} through the collective ")
        crossed.append(op_ref(report.boundary), style="bold")
        crossed.append(f" ({report.boundary.op_type}): their first failure is its output; look at rank "
                       f"{ranks_text(report.first_ranks)} first")
        lines.append(crossed)
    if report.shared_golden:
        lines.append(Text("  (every rank was compared with the same golden tensors: right only when every rank was "
                          "fed the same batch; tf/dump/rank_<r>/ gives each its own)"))
    return lines


def _op_text(op: OpResult | None, is_input: bool) -> Text:
    if op is None:
        return Text("?")
    text = Text(("an input of " if is_input else "the output of "))
    text.append(op_ref(op), style="bold")
    text.append(f" ({op.op_type})")
    return text


def across_lines(overview: RankOverview) -> list[Any]:
    """Each rank against rank 0 on the ops that must agree after the collectives."""
    found = overview.disagreements
    if not found:
        return []
    checked = max(d.checked for d in found)
    if checked == 0:
        return [Text("ranks vs rank 0: no op of the Build graph must agree across ranks (no all-reduce, broadcast "
                     "or all-gather found); the NPU-vs-NPU CSVs show the differences", style="yellow")]
    bad = [d for d in found if d.ops]
    if not bad:
        spread = overview.report is not None and overview.report.boundary is not None
        # agreement after the collectives is no all-clear when a rank's error went into them: say which it is
        why = (": the collective handed every rank the same result, the error included; no device diverges on its own"
               if spread else "")
        return [Text(f"ranks vs rank 0: all {len(found) + 1} ranks hold the same values on the {checked} ops that must "
                     f"agree after the collectives{why}", style="yellow" if spread else "green")]
    lines: list[Any] = []
    if len(bad) == len(found) and len(found) > 1:
        lines.append(Text("ranks vs rank 0: every other rank differs from rank 0 after the collectives: rank 0 is "
                          "the odd one out (a bad device or a broken collective on it)", style="bold red"))
    else:
        lines.append(Text(f"ranks vs rank 0: rank{'s' if len(bad) > 1 else ''} {ranks_text(d.rank for d in bad)} "
                          f"disagree{'' if len(bad) > 1 else 's'} with rank 0 on ops that must agree after the "
                          "collectives (a bad device or a broken collective):", style="bold red"))
    for d in bad:
        line = Text(f"  rank {d.rank}: {len(d.ops)} of {d.checked} ops differ, first ")
        line.append(op_ref(d.ops[0]), style="bold")
        errors = [t.max_abs_error for t in d.ops[0].outputs if t.max_abs_error == t.max_abs_error]
        line.append(f" ({d.ops[0].op_type})" + (f", max |difference| {max(errors):.6g}" if errors else "") + ": ")
        line.append(str(d.summary.path), style="path")
        lines.append(line)
    return lines


def overview_view(overview: RankOverview) -> list[Any]:
    """The rank table and verdict, then the across-ranks lines."""
    parts: list[Any] = []
    if overview.report is not None:
        parts.append(Text(f"ranks ({len(overview.report.findings)}), each against its golden (outputs: compared of "
                          "all; abnormal: ops; ▶ went wrong first):", style="bold"))
        parts.append(rank_table(overview.report))
        parts.extend(verdict_lines(overview.report))
    parts.extend(across_lines(overview))
    return parts


def ranks_shown(overview: RankOverview | None, specs: Sequence[Any]) -> list[tuple[bool, bool]]:
    """(full view, own line) per run: every run without a rank gets both; of the ranks' runs against golden,
    those of the rank that went wrong first (else of the lowest rank); an across-ranks run neither (its
    per-rank differences before the collectives are expected; across_lines names the CSVs that matter)."""
    if overview is None:
        return [(True, True)] * len(specs)
    report = overview.report
    pick = report.first_ranks[:1] if report is not None and report.first_ranks else overview.ranks[:1]
    shown = []
    for spec in specs:
        rank = getattr(spec, "rank", None)
        if rank is None:
            shown.append((True, True))
        elif getattr(spec, "across_ranks", False):
            shown.append((False, False))  # across_lines names the disagreeing ranks' CSVs
        else:
            shown.append((rank in pick, rank in pick))
    return shown
