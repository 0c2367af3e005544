"""`demo --bad-fusion [DIR]`: the small demo built again with a simulated device whose fused kernels of one
fusion pass are wrong, for `bisect fusion` to find.

The demo is built as usual (golden step, captured step, debug_0/debug_1); then npu/sim_device.json names
the planted pass (`BAD_FUSION_PASS`), fix/ops_info.json keeps MatMulV2 in float32 (the demo's float16
overflow fixed, as `bisect precision` or `ac -c` leave it, so the fusion fault is the one problem left),
and `train -d sim` runs the step on that device into npu/debug_2, which `vc` compares with the golden run.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Context

BAD_FUSION_PASS = "MatMulBiasAddFusionPass"
DEFAULT_DIR = "./precision_data_demo_bad_fusion"


def run_bad_fusion(args: argparse.Namespace, ctx: Context) -> Any:
    import json
    import time

    from precision_tool.analysis.replay.replay_fixes import write_ops_info
    from precision_tool.atomic import write_text_atomic
    from precision_tool.capture.replay_run import run_replay
    from precision_tool.demo.build import run_network
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.demo.demo_steps import (demo_context, finished, prepare_root, run_checks,
                                                              tool_command)
    from precision_tool.simulate.sim_step import BAD_FUSION, SIM_DEVICE_NAME
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    dir_text, root = prepare_root(ctx, args.dir, DEFAULT_DIR, force=args.force)
    ctx.note(note_line(f"building the bad-fusion demo workspace in {root} (the demo, then a simulated device whose "
                       f"{BAD_FUSION_PASS} kernels are wrong)"))
    build = run_network(root)
    for line in build.log.splitlines():
        ctx.note(note_line(line))
    run_checks(demo_context(ctx, root), root, check=False)  # tf_dump: the golden .npy files
    ws = Workspace(root)
    write_text_atomic(ws.npu_dir / SIM_DEVICE_NAME, json.dumps(
        {"bad_fusion_pass": BAD_FUSION_PASS, "what": f"the simulated device's fused kernels of {BAD_FUSION_PASS} "
                                                     f"{BAD_FUSION}; written by demo --bad-fusion"}, indent=2) + "\n")
    write_ops_info(ws, ["MatMulV2"])
    ctx.note(note_line(f"planted: the fused kernels of {BAD_FUSION_PASS} {BAD_FUSION} ({ws.npu_dir / SIM_DEVICE_NAME}); "
                       f"MatMulV2 kept in float32 ({ws.ops_info_file}): the float16 overflow is not in the way"))
    report = run_replay(root, "sim", "dump")
    debug_id = int(report["debug_id"])
    ctx.note(note_line(f"npu/debug_{debug_id}: the step on that simulated device ({report['ops']} ops)"))
    shown: list[Any] = []
    if not args.no_check:
        from precision_tool.analysis.bisect.check import compare_run

        run = compare_run(ws, debug_id, ws.newest_dump_dir(debug_id), ws.new_result_dir(),
                          ctx.settings.COSINE_THRESHOLD)
        first = run.summary.first_divergent_op
        where = f"[{first.index}] {first.npu_op} ({first.op_type})" if first else "none"
        shown.append(note_line(f"npu/debug_{debug_id} vs golden: first divergent op {where}; "
                               f"{len(run.summary.abnormal_ops)} abnormal op(s): {run.csv_path}"))
    extra = [("\nFind the pass:\n  ", "bold"), (tool_command("--data", dir_text, "bisect", "fusion"), "bold green")]
    return finished("Bad-fusion demo workspace", root, dir_text, started, shown, extra)
