"""`demo --model resnet50|bert|widedeep [DIR]`: a real architecture's training step, golden on CPU and on
a simulated NPU with one planted kernel fault; then `tf_dump` and `ac -c --report` on it.

TensorFlow runs only in the child process (`python -m precision_tool.demo.model_demo DIR --model NAME`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from precision_tool.shell.command import Context

SIZES = ("full", "reduced")
REPLAY_ALL = 1000  # more than the abnormal ops of any of the three


def run_model(args: argparse.Namespace, ctx: Context) -> Any:
    import time

    from rich.text import Text

    from precision_tool.demo.build import run_network
    from precision_tool.demo.model_demo import DEFAULT_DIRS
    from precision_tool.errors import UsageError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo.demo_steps import demo_context, finished, prepare_root, run_checks

    if args.fixed or args.ranks is not None:
        raise UsageError("demo: --model builds its own workspace; it does not go with --fixed or --ranks")
    started = time.perf_counter()
    dir_text, root = prepare_root(ctx, args.dir, DEFAULT_DIRS[args.model], force=args.force)
    ctx.note(note_line(f"building the {args.model} demo workspace ({args.size} size) in {root}: the TensorFlow "
                       "golden step, then that step on a simulated NPU"))
    build = run_network(root, model=args.model, size=args.size)
    report = json.loads([line for line in build.log.splitlines() if line.startswith("{")][-1])
    held = Text("What it holds:", style="bold")
    held.append("\n  network: ", style="bold")
    held.append(f"{report['description']}; {report['tf_ops']:,} TF ops, loss {report['loss']:.6g}, static loss "
                f"scale {report['loss_scale']:g}")
    held.append("\n  simulated NPU run: ", style="bold")
    held.append(f"npu/debug_0, {report['npu_ops']:,} ops ({report['tasks']:,} tasks dumped, {report['float16_ops']:,} "
                "computing in float16 under CANN's allow_mix_precision lists); no NPU ran it")
    held.append("\n  planted fault: ", style="bold")
    held.append(report["planted"] + ".")
    held.append("\n  float16: ", style="bold")
    overflows = report.get("overflows") or []
    held.append("nothing planted; " + (f"{len(overflows)} op(s) overflow in float16: {', '.join(overflows[:3])}"
                                       if overflows else "no op overflows in float16; what rounding does, the checks say"))
    held.append("\n  times: ", style="bold")
    held.append(f"build {report['build_seconds']} s, golden step with its tfdbg dump {report['golden_seconds']} s, "
                f"simulated NPU run {report['sim_seconds']} s")
    ctx.note(held)
    demo_ctx = demo_context(ctx, root)
    # every abnormal op replayed on its own inputs: the planted kernel and what float16 alone gets wrong
    answer = run_checks(demo_ctx, root, check=not args.no_check, ac_line=f"ac -c --replay {REPLAY_ALL} --report")
    return finished(f"{args.model} demo workspace", root, dir_text, started, answer)
