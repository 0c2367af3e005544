"""`ac`'s same-step section: did the NPU run and the golden run start from the same inputs and weights?

Placed right after the comparison section (and before replay, overflow and the per-op findings) because it
says whether those can be trusted at all. No command of its own: `ac` shows it, and `vc` shows its verdict
line when it fails (compare.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import AcSection, Context


def _ac_same_step(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.same_step_cache import cached_same_step_check
    from precision_tool.render.compare.same_step import same_step_view
    from precision_tool.render.messages import note_line

    dump_dir = ctx.workspace.newest_dump_dir(0)
    report = cached_same_step_check(ctx.workspace, 0, dump_dir) if dump_dir is not None else None
    if report is None:
        return note_line("same step: not checked (needs npu/debug_0's Build graph and dump, and golden tensors "
                         "in tf/dump)")
    args.same_step = report  # the answer section may say why no op can be blamed
    return same_step_view(report, args.limit)


def vc_same_step_line(runs: list[Any], ctx: Context) -> Any:
    """`vc`'s line when an NPU run it compared with tf/dump did not start from the golden step's inputs and
    weights (None when it did, or when that cannot be said: the check is `ac`'s, vc only warns)."""
    from pathlib import Path

    from precision_tool.analysis.checks.same_step_cache import cached_same_step_check
    from precision_tool.errors import PrecisionToolError
    from precision_tool.render.compare.same_step import verdict_line

    workspace = ctx.workspace
    golden = workspace.golden_dir.resolve()
    for run in runs:
        spec = run.spec
        if spec is None or spec.npu_vs_npu or spec.rank is not None or spec.golden_dir is None:
            continue
        if workspace.relocate(spec.golden_dir).resolve() != golden:
            continue  # another golden folder than the one the check reads
        npu_dir = workspace.relocate(spec.npu_dir)
        debug_id = workspace.run_of(npu_dir)
        if debug_id is None:
            continue
        try:
            report = cached_same_step_check(workspace, debug_id, Path(npu_dir))
        except PrecisionToolError:
            continue  # `ac` says what it cannot read; vc's own results stand
        if report is not None and report.same_step is False:
            line = verdict_line(report)
            line.append(" (`ac` lists each input and weight that differs)")
            return line
    return None


AC_SECTIONS = [AcSection("same step", _ac_same_step, order=12)]
