"""The same-step check drawn: one verdict line, and when an input or weight differs, a table of them."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from precision_tool.analysis.checks.same_step import SameStepReport, SourceCheck, first_difference


def verdict_line(report: SameStepReport) -> Text:
    """The one line `ac` (and `vc`, when it fails) shows."""
    inputs, weights = report.count("input"), report.count("weight")
    ranks = {c.rank for c in report.checks if c.rank is not None}
    checked = f"{inputs} input(s), {weights} weight(s) checked" + (f" on {len(ranks)} ranks" if ranks else "")
    first = first_difference(report)
    if first is not None:
        where = f" of rank {first.rank}" if first.rank is not None else ""
        others = len(report.differing) - 1
        more = f", and {others} more input(s)/weight(s)" if others else ""
        how_much = f"{first.differing:,} of {first.elements:,} values, max abs diff {first.max_abs_diff:.4g}{more}"
        return Text(f"same step: NO — {first.kind} '{first.source}'{where} differs between the NPU run and the "
                    f"golden ({how_much}); the comparison cannot be trusted until it is fixed", style="error")
    if report.same_step is None:
        return Text("same step: not checked (no input or weight could be compared with a golden tensor)",
                    style="warning")
    if inputs and weights:
        return Text(f"same step: yes — same inputs, same weights ({checked}): both runs computed the same step")
    what = "same weights" if weights else "same inputs"
    missing = "no input" if weights else "no weight"
    return Text(f"same step: yes as far as checked — {what} ({checked}; {missing} could be compared)")


def same_step_view(report: SameStepReport, limit: int) -> list[Any]:
    """The verdict; a table of what differs (the first `limit`), with the likely cause; what was not checked."""
    shown: list[Any] = [verdict_line(report)]
    differing = report.differing
    if differing:
        table = Table(title=Text("inputs and weights that differ (first NPU reader vs golden)"),
                      title_justify="left")
        table.add_column("tensor", overflow="fold")
        table.add_column("read by (NPU)", overflow="fold")
        table.add_column("differ", justify="right", no_wrap=True)
        table.add_column("max abs", justify="right", no_wrap=True)
        table.add_column("max rel", justify="right", no_wrap=True)
        table.add_column("golden", overflow="fold")
        for check in differing[:limit]:
            table.add_row(Text(f"{check.kind} {check.label}"), Text(f"{check.reader} in{check.reader_input}"),
                          f"{check.differing:,}/{check.elements:,}", f"{check.max_abs_diff:.4g}",
                          f"{check.max_rel_diff:.4g}", Text(check.golden))
        shown.append(table)
        if len(differing) > limit:
            shown.append(Text(f"... {len(differing) - limit} more (ac -l N shows more)", style="dim"))
        causes = dict.fromkeys(_cause(c) for c in differing)
        shown.extend(Text(f"  likely: {cause}", style="dim") for cause in causes)
    by_reason: dict[str, list[str]] = {}
    for source, why in report.unchecked:
        by_reason.setdefault(why, []).append(source)
    for why, sources in by_reason.items():
        more = f" and {len(sources) - limit} more" if len(sources) > limit else ""
        shown.append(Text(f"  not checked: {', '.join(sources[:limit])}{more} ({why})", style="dim"))
    return shown


def _cause(check: SourceCheck) -> str:
    return f"{check.kind}: {check.likely_cause}"
