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
    from precision_tool.analysis.checks.same_step import same_step_check
    from precision_tool.render.compare.same_step import same_step_view
    from precision_tool.render.messages import note_line

    report = same_step_check(ctx.workspace)
    if report is None:
        return note_line("same step: not checked (needs npu/debug_0's Build graph and dump, and golden tensors "
                         "in tf/dump)")
    args.same_step = report  # the answer section may say why no op can be blamed
    return same_step_view(report, args.limit)


AC_SECTIONS = [AcSection("same step", _ac_same_step, order=12)]
