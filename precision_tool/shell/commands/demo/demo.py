"""`demo [DIR]`: build a complete example workspace (real TF network, simulated NPU run) and check it;
`demo --fixed [DIR]`: re-run its NPU step with fix/ops_info.json's block list in float32 and compare.

TensorFlow is loaded only in the child process the build starts; this module imports argparse only.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context
from precision_tool.shell.commands.demo.demo_steps import (demo_context, finished, prepare_root, run_checks,
                                                          tool_command)

_DESCRIPTION = """\
Build a complete workspace from a small TensorFlow network (conv, batch-norm, relu, pool, dense,
softmax cross-entropy with a static loss scale of 2^17, one SGD step): the golden CPU run dumped by
tf_config.sess_dump and extracted by tf_dump, and a simulated NPU run computed in float16 (GE Build
graph with fused ops, Cast and TransData, NC1HWC0 / FRACTAL_Z / FRACTAL_NZ dumps) with two problems: a
planted kernel fault, and float16 weight gradients that overflow to inf. Also an overflow-detection
run, fusion_result.json and a second NPU run with the kernel fixed (debug_1). Then runs `ac -c --report`
on it: the checks, and the HTML report of what they found.

--fixed: on a demo workspace, read fix/ops_info.json (the mixed-precision list CANN's modify_mixlist
option reads, {"black-list": {"to-add": ["MatMulV2"]}}; `ac -c` writes it when a replay finds a float16
precision problem), run the NPU step again with those op types kept in float32 and the vendor's fixed
kernel into npu/debug_2 (replacing an earlier one; tf/ is reused), and compare it with the golden run.

--ranks N: the same network trained data-parallel on N ranks (N from 2 to 64), each rank its own batch,
the gradients all-reduced (HcomAllReduce, reduction "sum", then a RealDiv by N) before the weight update;
the single demo's two problems are off, and one planted fault is in: on one rank (rank 3 from 4 ranks on)
the input of fc1's kernel all-reduce is corrupted. NPU dumps per rank in npu/debug_0/dump/<time>/<rank>/,
one Build graph for all ranks, golden per rank in tf/tf_debug/rank_<r> and (tf_dump) tf/dump/rank_<r>.

--model resnet50|bert|widedeep: a real architecture instead (ResNet-50 v1.5's 53 conv+BN; BERT-base's 12
transformer layers with a reduced hidden size; Wide&Deep's embedding tables and MLP), its training step
golden on CPU and run on a simulated NPU (what `train -d sim` does) with one planted kernel fault; the
rest is what float16 does to that network. --size reduced: the same op types, fewer repeats.

--bad-fusion: the small demo on a simulated device whose fused kernels of MatMulBiasAddFusionPass compute
wrongly (npu/sim_device.json; their product skips the last half of the reduction axis), MatMulV2 kept in
float32 (fix/ops_info.json) so that fault is the one problem; npu/debug_2 is that run. `bisect fusion`
names the pass.

--steps N: the same network trained N steps (2 to 16; 4 shows every stage) on both sides, each step on the next batch, with a
static loss scale of 2^14 and nothing planted; the NPU run trains from its own weights. Steps 0 and 1
compare fine; at step 2 the grown weight gradient of fc2 overflows float16 (inf), and every later NPU step
is NaN. NPU dumps of every step in one dump/<time>/ (iteration folders 0..N-1, as dump_step "0|1|2|3"
writes them), golden per step in tf/dump/step_<K>, both runs' loss, gradient norm and loss scale in
tf/loss.csv and npu/debug_0/loss.csv.

examples:
  demo                       build ./precision_data_demo and run `ac -c --report`
  demo --model bert          BERT-base in ./precision_data_demo_bert, then `ac -c --report`
  demo /tmp/pd --force       rebuild /tmp/pd (removes its npu/, tf/, overflow/, fusion/, temp/, fix/)
  demo --no-check            build only
  demo --npu-start other-weights   the NPU run starts from other weights: `ac` says it is not the same step
  demo --fixed               apply ./precision_data_demo/fix/ops_info.json: npu/debug_2, then `vc` against golden
  demo --ranks 8             build the 8-rank demo in ./precision_data_demo_ranks and run `ac -c --report`
  demo --steps 4             build the 4-step demo in ./precision_data_demo_steps and run `ac -c --report`
  demo --bad-fusion          a fusion pass planted wrong in ./precision_data_demo_bad_fusion; then `bisect fusion`
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("dir", nargs="?", default=None, metavar="DIR",
                        help="folder for the demo workspace (default: the --data folder when it does not exist "
                             "yet or is empty, else ./precision_data_demo)")
    parser.add_argument("--no-check", action="store_true",
                        help="build only; do not run `ac -c --report` afterwards (with --fixed: no `vc`)")
    parser.add_argument("--force", action="store_true",
                        help="rebuild when DIR already holds a workspace (removes only the demo's folders)")
    parser.add_argument("--fixed", action="store_true",
                        help="on a demo workspace (default: the --data folder when it holds one, else "
                             "./precision_data_demo): run its NPU step again with DIR/fix/ops_info.json's block "
                             "list kept in float32 and the fixed kernel, into npu/debug_2, and `vc` it against the "
                             "golden run (`ac -c` writes that file)")
    parser.add_argument("--model", choices=["resnet50", "bert", "widedeep"], default=None,
                        help="build a real architecture's demo instead (default DIR ./precision_data_demo_<model>): "
                             "ResNet-50 v1.5, BERT-base (12 layers) or Wide&Deep, golden on CPU and on a simulated "
                             "NPU with one planted kernel fault")
    parser.add_argument("--size", choices=["full", "reduced"], default="full",
                        help="with --model: full (every layer of the original; default) or reduced (the same op "
                             "types, fewer repeats: a quicker try)")
    parser.add_argument("--npu-start", choices=["same", "other-weights", "other-data"], default="same",
                        help="what the NPU runs start from: the golden step's weights and batch (same; default), "
                             "other starting weights (as if the checkpoint were not loaded) or another batch; `ac` "
                             "then says the two runs did not compute the same step")
    parser.add_argument("--ranks", metavar="N", default=None,
                        help="build the N-rank data-parallel demo instead (N from 2 to 64; default DIR "
                             "./precision_data_demo_ranks): each rank its own batch, an HcomAllReduce per gradient, "
                             "one rank's all-reduce input corrupted; golden per rank in tf/dump/rank_<r>")
    parser.add_argument("--bad-fusion", action="store_true",
                        help="build the demo with a simulated device whose MatMulBiasAddFusionPass kernels compute "
                             "wrongly (default DIR ./precision_data_demo_bad_fusion), for `bisect fusion` to find")
    parser.add_argument("--steps", metavar="N", default=None,
                        help="build the N-step demo instead (N from 2 to 16; 4 shows every stage; default DIR "
                             "./precision_data_demo_steps): both runs train N steps, a float16 overflow appears at "
                             "step 2 only; NPU iteration folders 0..N-1, golden per step in tf/dump/step_<K>, "
                             "the loss of every step in tf/loss.csv and npu/debug_0/loss.csv")


def _kept_in_float32(path: Any) -> list[str]:
    """The op types fix/ops_info.json keeps in float32; none when it is missing or unreadable."""
    from precision_tool.errors import WorkspaceError
    from precision_tool.shell.commands.demo.demo_fixed import kept_types

    try:
        return sorted(kept_types(path))
    except WorkspaceError:
        return []


def _demo(args: argparse.Namespace, ctx: Context) -> Any:
    if args.npu_start != "same" and (args.model is not None or args.ranks is not None or args.fixed
                                     or args.steps is not None):
        from precision_tool.errors import UsageError

        raise UsageError("demo --npu-start: it changes the small demo's NPU run; give it without --model, --ranks, "
                         "--steps and --fixed")
    if args.bad_fusion:
        if args.steps is not None or args.model is not None or args.ranks is not None or args.fixed:
            from precision_tool.errors import UsageError

            raise UsageError("demo --bad-fusion: it builds the small demo; give it without --model, --ranks, --steps "
                             "and --fixed")
        from precision_tool.shell.commands.demo.demo_bad_fusion import run_bad_fusion

        return run_bad_fusion(args, ctx)
    if args.steps is not None:
        if args.size != "full":
            from precision_tool.errors import UsageError

            raise UsageError("demo --size: it sizes a real architecture; give it with --model NAME, not --steps")
        from precision_tool.shell.commands.demo.demo_multistep import run_multistep

        return run_multistep(args, ctx)
    if args.model is not None:
        from precision_tool.shell.commands.demo.demo_models import run_model

        return run_model(args, ctx)
    if args.size != "full":
        from precision_tool.errors import UsageError

        raise UsageError("demo --size: it sizes a real architecture; give it with --model NAME")
    if args.ranks is not None:
        from precision_tool.shell.commands.demo.demo_ranks import run_ranks

        return run_ranks(args, ctx)
    if args.fixed:
        from precision_tool.shell.commands.demo.demo_fixed import run_fixed

        return run_fixed(args, ctx)
    import time

    from rich.text import Text

    from precision_tool.demo.build import DEFAULT_DIR, fused_ops, run_network
    from precision_tool.demo.npu_side import PLANTED_FAULT, PRECISION_PROBLEM
    from precision_tool.render.messages import note_line
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    dir_text, root = prepare_root(ctx, args.dir, DEFAULT_DIR, force=args.force)
    ctx.note(note_line(f"building the demo workspace in {root} (TensorFlow golden step, simulated NPU run)"))
    build = run_network(root, npu_start=args.npu_start)
    for line in build.log.splitlines():
        ctx.note(note_line(line))
    # what the checks below should find, said before they run
    held = Text("What it holds:", style="bold")
    held.append("\n  planted fault: ", style="bold")
    held.append(PLANTED_FAULT + ".")
    held.append("\n  float16 problem: ", style="bold")
    held.append(PRECISION_PROBLEM + ".")
    if args.npu_start != "same":
        from precision_tool.demo.npu_side import NPU_STARTS

        held.append("\n  not the same step: ", style="bold")
        held.append(f"the NPU runs start from {NPU_STARTS[args.npu_start]}.")
    fused = fused_ops(root)
    if fused:
        held.append("\n  fused by the NPU compiler:", style="bold")
        for op in fused:
            held.append(f"\n    {op.name} ({op.op_type}) ← {', '.join(op.original_names)}  [{op.fusion_pass}]")
    ctx.note(held)
    demo_ctx = demo_context(ctx, root)
    answer = run_checks(demo_ctx, root, check=not args.no_check)
    ops_info = Workspace(root).ops_info_file
    kept = _kept_in_float32(ops_info)
    extra = []
    if kept:  # `ac -c`'s replay wrote the fix: say how to see it applied
        extra = [(f"\nApply the fix ({ops_info.relative_to(root)}: {', '.join(kept)} in float32) with the vendor's "
                  "fixed kernel:\n  ", "bold"), (tool_command("demo", "--fixed", dir_text), "bold green")]
    return finished("Demo workspace", root, dir_text, started, answer, extra)


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    if request.option is None and not request.current.startswith("-"):
        return list(complete_paths(request.current))
    return []


COMMANDS = [
    Command("demo", "build an example workspace (TF golden + simulated NPU run with a planted fault and a float16 "
                    "overflow), run ac -c --report; --fixed: re-run its NPU step with fix/ops_info.json; "
                    "--ranks N: an N-rank data-parallel demo with one faulty rank; --model: ResNet-50, BERT or Wide&Deep; "
                    "--steps N: N training steps, a later one overflows",
            _parser, _demo, completer=_complete, description=_DESCRIPTION),
]
