"""`ac`'s last section: the answer block, right above the prompt (analysis/report/answer.py, render/answer.py).

It reads what the sections before it left on `args`: the comparison's results (`compared`, `rank_overview`),
the report just written (`report_path`), the same-step check (`same_step`: when the runs did not compute the
same step, the answer says so first); each op's newest replay verdict is found as the report finds it
(analysis/answer.answer_for). `demo` sets `defer_answer` and shows the block itself, after its own lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.shell.command import AcSection, Context


def answer_of(found: list[Any], workspace: Any, overview: Any = None) -> Any:
    """The Answer of the results `vcs`/`ac` show (result_summaries.Shown) and the newest verdict of each op:
    from the replay beside them (`ac -c`) or a later `replay OP` (temp/replay/<time>/)."""
    from precision_tool.analysis.report.answer import RunResult, answer_for

    runs = [RunResult(s.label, s.summary, s.npu_vs_npu, s.spec.rank if s.spec is not None else None) for s in found]
    debug_ids = {workspace.run_of(workspace.relocate(s.spec.npu_dir)) for s in found
                 if s.spec is not None and not s.npu_vs_npu}
    return answer_for(workspace, runs, _result_folder(found), debug_ids - {None}, overview)


def _result_folder(found: list[Any]) -> Path | None:
    paths = [getattr(s.summary, "path", None) or getattr(s.summary, "csv_path", None) for s in found]
    return Path(paths[0]).parent if paths and paths[0] is not None else None


def _answer(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.render.answer import answer_view
    from precision_tool.shell.commands.auto_check import SectionResult
    from precision_tool.shell.commands.compare.source_lines import op_sources

    found = getattr(args, "compared", None)
    if not found:
        return None  # no comparison yet: the comparison section said what to run
    overview = getattr(args, "rank_overview", None)
    steps = getattr(args, "step_overview", None)  # vc --step all: the first diverging step speaks (docs/steps.md)
    if steps is not None and steps.first is not None:
        found = [s for s in found if s.spec is None or not s.spec.label.startswith("step ")
                 or s.spec.step == steps.first.step]
    width = ctx.console.width if ctx.console.is_terminal else None  # a pipe keeps each line to paste whole
    view = answer_view(answer_of(found, ctx.workspace, overview), results=_result_folder(found),
                       report=getattr(args, "report_path", None), width=width,
                       sources=args.op_sources if hasattr(args, "op_sources") else op_sources(ctx))
    if steps is not None:
        from precision_tool.render.compare.steps import verdict_line as step_verdict

        view.insert(1, step_verdict(steps))
    same_step = getattr(args, "same_step", None)  # left by the same-step section (compare/same_step.py)
    if same_step is not None and same_step.same_step is False:
        from precision_tool.render.compare.same_step import verdict_line

        view.insert(1, verdict_line(same_step))  # first in the answer: no op below can be blamed before it is fixed
    if getattr(args, "defer_answer", False):
        args.answer_block = view  # demo shows it last, after its own lines
        return None
    return SectionResult(None, recap=view)


AC_SECTIONS = [AcSection("answer", _answer, order=99)]
