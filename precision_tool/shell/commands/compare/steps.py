"""Several steps in `vc`, `vcs` and `ac -c` (docs/steps.md): `vc --step all` plans one run per dump
iteration with golden tensors (analysis/steps/step_runs.py), and the results of such a run are shown with
the step that diverges first (render/compare/steps.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from precision_tool.shell.arg_types import non_negative_int
from precision_tool.shell.command import Context


def step_arg(text: str) -> int | str:
    """vc --step: a dump iteration number, or 'all' (every iteration, step by step)."""
    if text == "all":
        return "all"
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a dump iteration number (0, 1, ...) nor 'all'") \
            from None


def step_all_specs(ws: Any, npu_dir: str | None, golden_dir: str | None, graph: str | None, notes: list[str],
                   across: bool, resolve_graph: Callable[[Any, str, int | None], Path]) -> list[Any] | None:
    """vc --step all: one run per dump iteration with golden tensors; None when the dump holds a single
    iteration (plain vc compares it). `resolve_graph`: how vc finds the -g file (compare.resolve_graph_file)."""
    from precision_tool.analysis.steps.step_runs import step_specs
    from precision_tool.errors import UsageError, WorkspaceError
    from precision_tool.workspace import absolute_path

    if across:
        raise UsageError("vc --step all compares each step with its golden tensors; --across-ranks compares one "
                         "step (vc --across-ranks --step N)")
    left = absolute_path(npu_dir) if npu_dir else ws.newest_dump_dir(0)
    if left is None:
        raise WorkspaceError(f"no NPU dumps in {ws.dump_root(0)}; {ws.npu_dump_hint()} (or pass a dump folder "
                             "with -lt DIR)")
    right = absolute_path(golden_dir) if golden_dir else ws.golden_dir
    graph_path = str(resolve_graph(ws, graph, ws.run_of(left))) if graph is not None else None
    # as plain vc: the workspace's own runs also debug_0 against debug_1, step by step
    second = ws.newest_dump_dir(1) if not (npu_dir or golden_dir or graph) and 1 in ws.debug_ids() else None
    return step_specs(ws, left, right, "{stamp}", notes, graph_path, second)


def golden_per_step(ctx: Context) -> bool:
    """The workspace's golden tensors are kept per step and its newest dump is of one device (`ac -c` then
    compares every step)."""
    from precision_tool.workspace import rank_dirs, step_golden_folders

    dump = ctx.workspace.newest_dump_dir(0)
    return bool(step_golden_folders(ctx.workspace.golden_dir)) and dump is not None and not rank_dirs(dump)


def by_step(pairs: list[tuple[Any, Any]], listed: list[tuple[bool, bool]]) -> tuple[Any, list[tuple[bool, bool]]]:
    """A `vc --step all` result: its step overview, and the full view kept for the step that diverges first
    (else the lowest step) alone, the other steps shown by their summary lines; (None, `listed`) for any
    other result."""
    from precision_tool.analysis.steps.step_overview import step_overview

    overview = step_overview(pairs)
    if overview is None:
        return None, listed
    shown_step = overview.first.step if overview.first is not None else overview.steps[0]
    kept = [(view and (spec is None or spec.step == shown_step or not spec.label.startswith("step ")), line)
            for (spec, _summary), (view, line) in zip(pairs, listed)]
    return overview, kept


def steps_view(overview: Any) -> list[Any]:
    """The step verdict and one line per step; nothing for a result of one step."""
    if overview is None:
        return []
    from precision_tool.render.compare.steps import steps_view as view

    return view(overview)
