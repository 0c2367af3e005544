"""`replay --all` (every compute op of an NPU run replayed on its own inputs, ranked by its own error) and
`ac -c --precheck`, which does it after the comparison and says for each abnormal op whether its own error
explains it. The work is analysis/replay/replay_all.py's; TensorFlow runs in child processes only.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from precision_tool.errors import CommandFailed, WorkspaceError
from precision_tool.shell.command import AcSection, Context

_STAGES = {"plan": "planning (reading the dumps)", "replay": "replaying in TensorFlow", "judge": "judging"}


def _run(ctx: Context, args: argparse.Namespace, debug_id: int, folder: Path, summary: Any = None,
         step: int | None = None) -> Any:
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.analysis.replay.replay import tensorflow_missing
    from precision_tool.analysis.replay.replay_all import replay_all

    python = getattr(args, "python", None)
    scheduler = getattr(args, "scheduler", None) or ctx.settings.DASK_SCHEDULER or None
    missing = tensorflow_missing(python) if not scheduler else None
    if missing:
        raise WorkspaceError(f"replay --all: {missing}")
    index = index_for(ctx.workspace)
    index.load(getattr(args, "graph", None))
    workers = getattr(args, "workers", None) or ctx.settings.workers
    with ctx.progress() as bar:
        tasks: dict[str, Any] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(_STAGES.get(stage, stage), total=total or None)
            if done in (0, 1, total) or done % 16 == 0:
                bar.update(tasks[stage], completed=done, total=total or None)

        return replay_all(index, debug_id, folder, ctx.settings, graph_filter=getattr(args, "graph", None),
                          summary=summary, python=python, workers=workers, scheduler=scheduler, progress=tick,
                          step=step)


def replay_all_command(args: argparse.Namespace, ctx: Context) -> Any:
    """`replay --all [-d N] [-g G] [-l N] [-j N] [--scheduler A] [--python PY]`."""
    debug_id = args.debug if args.debug is not None else 0
    folder = ctx.workspace.temp_dir / "replay" / time.strftime("%Y%m%d%H%M%S")
    result = _run(ctx, args, debug_id, folder, step=args.step)
    lines = _lines(result, args)
    _raise_if_every_replay_failed(result, lines, ctx, "replay --all")
    return lines


def _lines(result: Any, args: argparse.Namespace) -> list[Any]:
    from precision_tool.render.replay import all_lines

    return all_lines(result, limit=getattr(args, "limit", None) or 10)


def _raise_if_every_replay_failed(result: Any, lines: list[Any], ctx: Context, command: str) -> None:
    """The replay machinery failing for every op (no TensorFlow on a worker, a Python that cannot run) is no
    finding: show what there is, then exit 1. Some ops failing among many is shown and counted only."""
    tried = [v for v in result.run.verdicts if v.case.problem is None]
    failed = [v for v in tried if v.failed]
    if tried and len(failed) == len(tried):
        for line in lines:
            ctx.note(line)
        raise CommandFailed(f"{command}: the replay failed for all {len(tried)} ops it tried (the reason is "
                            "above); nothing was ranked")


# --- ac -c --precheck ------------------------------------------------------------------------------------
def _ac_precheck(args: argparse.Namespace, ctx: Context) -> Any:
    """After the comparison: replay every op of the compared NPU run into its result folder (precheck/)."""
    from precision_tool.analysis.compare.compare_runs import result_spec
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.compare.result_summaries import summaries

    if not getattr(args, "precheck", False):
        return None
    found = getattr(args, "compared", None)
    found = list(found if found is not None else summaries(ctx, None, ctx.settings.COSINE_THRESHOLD))
    runs = [s for s in found if not s.npu_vs_npu and hasattr(s.summary, "abnormal_ops")]
    if not runs:
        return note_line("precheck: no NPU-vs-golden comparison to replay against; run `ac -c --precheck`")
    # the first diverging step of `vc --step all` (else the first run: rank 0, the first graph) speaks for all
    steps = getattr(args, "step_overview", None)
    first_step = steps.first.step if steps is not None and steps.first is not None else None
    shown = next((s for s in runs if first_step is None or (s.spec is not None and s.spec.step == first_step)),
                 runs[0])
    summary = shown.summary
    spec = result_spec(Path(summary.path))
    debug_id = (ctx.workspace.run_of(Path(spec.npu_dir)) if spec is not None else None) or 0
    step = getattr(spec, "step", None) if spec is not None else None
    result = _run(ctx, args, debug_id, Path(summary.path).parent / "precheck", summary=summary, step=step)
    lines = _lines(result, args)
    _raise_if_every_replay_failed(result, lines, ctx, "precheck")
    args.precheck_result = result  # the answer may say which abnormal ops inherit
    return lines


AC_SECTIONS = [AcSection("precheck", _ac_precheck, order=16)]
