"""`train -d cpu|npu|sim|all -a ACTION`: replay the captured step (tf/checkpoints) on CPU, the NPU, or a
simulated NPU (precision_tool/simulate, in a child process like the others).

The shell never imports TensorFlow: each device's replay runs in a child process started by
capture/replay_run.py (its environment, its one-line failures, the CPU dump staged inside tf/ and renamed
to tf/tf_debug only when the child succeeds). Here: the options, the refusals made before any child
starts (impossible actions, old golden folders, folders that cannot be written), and the lines shown;
after a CPU replay the dump becomes golden .npy files exactly as `tf_dump` does it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.errors import CommandFailed, UsageError, WorkspaceError
from precision_tool.shell.command import Command, CommandParser, Context
from precision_tool.workspace import Workspace

DEVICES = ("cpu", "npu", "sim", "all")
ACTION_WORDS = ("dump", "overflow", "fusion_off", "fusion_switch")
CPU_ACTIONS = {"dump"}
SIM_ACTIONS = ("dump", "overflow")

_DESCRIPTION = """\
Rebuilds the step captured in precision_data/tf/checkpoints (by PrecisionTfSession or the Keras callback
PrecisionKerasCapture) and runs it once: the saved inputs fed back, dropout off, fixed seeds, op
determinism as the capture side has it (on only where a GPU is visible; $PRECISION_TOOL_OP_DETERMINISM=1|0
decides otherwise). -d cpu dumps every tensor through tfdbg into tf/tf_debug and extracts the golden .npy files
into tf/dump (as tf_dump); -d npu runs through the TF adapter (npu_bridge) with the action's options;
-d all does both (the CPU side always dumps; the action is for the NPU side). -d sim runs the step on a
simulated NPU (no NPU needed; TF1 captures): the graph Ascend's compiler would build, computed in
float16 where CANN's allow_mix_precision lists put it (fix/ops_info.json changes them), written as a new
npu/debug_N marked simulated (-a dump: every op's dump; -a overflow: the ops whose float16 results overflow;
add |fusion_switch or |fusion_off and the simulated compile skips the passes that file switches off).

actions (-a, combine with '|'): dump (CPU or NPU), overflow, fusion_off, fusion_switch (NPU only);
fusion_off/fusion_switch point the run at the workspace's fusion/*.cfg, which you edit between runs.

examples:
  train -d cpu -a dump              the golden tensors of the captured step
  train -d npu -a dump              the same step dumped on the NPU; then `vc`
  train -d npu -a "dump|fusion_off" the NPU step with every fusion pass off
  train -d sim                      what float16 does to this step, before any NPU time; then `ac -c`
  train -d npu --python python3.7   the NPU machine's TF 1.15 lives in Python 3.7
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("-d", "--device", choices=list(DEVICES), default="all",
                        help="where to replay the step: cpu, npu, sim (a simulated NPU) or all (cpu and npu; "
                             "default)")
    parser.add_argument("-a", "--action", default="dump", metavar="ACTION",
                        help="dump (default), overflow, fusion_off, fusion_switch; combine with '|'")
    parser.add_argument("--python", metavar="PY",
                        help="the Python that runs the replay (default: this one); e.g. the python3.7 that has "
                             "TensorFlow 1.15 and npu_bridge on the NPU machine")


def parse_train_actions(device: str, action: str) -> set[str]:
    """The action words, checked against the device (one line for an impossible combination)."""
    words = {word.strip() for word in action.split("|") if word.strip()}
    unknown = sorted(words - set(ACTION_WORDS))
    if unknown or not words:
        raise UsageError(f"train -a: unknown action {', '.join(unknown) or repr(action)}; use "
                         f"{', '.join(ACTION_WORDS)} (combine with '|', e.g. \"dump|fusion_off\")")
    if device == "sim" and (len(words & set(SIM_ACTIONS)) != 1 or len(words - set(SIM_ACTIONS)) > 1
                            or not words <= {*SIM_ACTIONS, "fusion_off", "fusion_switch"}):
        raise UsageError(f"train -d sim -a {action}: the simulated NPU takes one of {', '.join(SIM_ACTIONS)}, "
                         "with fusion_off or fusion_switch (the workspace's switch file) if you like, e.g. "
                         "\"dump|fusion_switch\"")
    if device == "cpu" and words - CPU_ACTIONS:
        npu_only = sorted(words - CPU_ACTIONS)
        raise UsageError(f"train -d cpu -a {action}: on CPU only 'dump' applies (a tfdbg golden dump); "
                         f"{', '.join(npu_only)} {'is' if len(npu_only) == 1 else 'are'} NPU-side: use -d npu")
    if {"dump", "overflow"} <= words:
        from precision_tool.capture.options import BOTH_DUMPS

        raise UsageError(f"train -a {action}: {BOTH_DUMPS}")
    return words


def _refuse_old_golden(ctx: Context, device: str) -> None:
    """A CPU replay writes a fresh tfdbg dump and fresh golden files: never mixed with older ones. Every
    occupied folder is named in the one line, so the user moves them all at once."""
    ws = ctx.workspace
    occupied = [(folder, what) for folder, what in ((ws.tf_debug_dir, "tfdbg dumps"),
                                                    (ws.golden_dir, "golden .npy files"))
                if folder.is_dir() and any(folder.iterdir())]
    if not occupied:
        return
    held = " and ".join(f"{folder} already holds {what}" for folder, what in occupied)
    moves = " && ".join(f"mv {folder} {folder}.old" for folder, _ in occupied)
    npu_only = " (or `train -d npu` to replay only the NPU side)" if device == "all" else ""
    them = "them" if len(occupied) > 1 else "it"
    raise WorkspaceError(f"train -d {device}: {held}; move {them} aside ({moves}) or delete {them}, "
                         f"then run train again{npu_only}")


def _check_writable(ctx: Context, devices: list[str], npu_action: str) -> None:
    """Every folder the replay will write, created and checked now: a read-only workspace is one line
    (WorkspaceWriteError), not a TensorFlow traceback from the child."""
    ws = ctx.workspace
    folders = [ws.root / "tf", ws.checkpoint_dir]  # tf/: the CPU dump's folder; checkpoints: replay_*.json
    if "cpu" in devices:
        folders.append(ws.golden_dir)
    if "sim" in devices:
        folders += [ws.npu_dir, ws.overflow_root, ws.fusion_file.parent]
    if "npu" in devices:
        from precision_tool.capture.options import plan

        npu_plan = plan(ws, npu_action, env={})  # the adapter options' folders: debug_0, dump, overflow, ...
        folders.extend(npu_plan.folders)
        if npu_plan.fusion_file:
            folders.append(ws.fusion_off_file.parent)
    for folder in dict.fromkeys(folders):
        Workspace.ensure_dir(folder, "replay folder")


def _extract_golden(ctx: Context) -> Any:
    from precision_tool.analysis.golden_extract import extract_golden, locate_tf_dumps

    location = locate_tf_dumps(ctx.workspace.tf_debug_dir, "auto")
    # (no sources_file: the replay's stacks are the replayer's, not the user's script's)
    summary = extract_golden(location, ctx.workspace.golden_dir, run="last")
    if summary.failed:
        raise CommandFailed(f"train -d cpu: extracting the golden tensors from {location.root} failed "
                            f"({len(summary.bad_files)} damaged file(s)); see `tf_dump`")
    return summary


def _report_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for fetch in report.get("fetches", []):
        if fetch.get("captured_not_saved"):
            value = f" = {fetch['value']:.6g}" if "value" in fetch else ""
            lines.append(f"{fetch['name']}{value} (not checked against the captured run: the capture could not "
                         f"save its value, {fetch['captured_not_saved']})")
        elif "value" in fetch:
            if fetch.get("same_as_captured"):
                was = " (bit for bit as in the captured run)"
            elif isinstance(fetch.get("captured"), float):
                was = f" (captured run: {fetch['captured']:.6g})"
            else:
                was = ""
            lines.append(f"{fetch['name']} = {fetch['value']:.6g}{was}")
    loss = report.get("loss") or {}
    if loss.get("file"):
        lines.append(f"loss {loss['value']:.6g} ({loss['tensor']}) of step {loss['step']} recorded in {loss['file']}")
    elif loss.get("not_recorded"):
        lines.append(f"the loss was not recorded: {loss['not_recorded']}")
    if report.get("dropout_off"):
        lines.append(f"dropout off in: {', '.join(report['dropout_off'])}")
    if report.get("dropout_not_switched"):
        lines.append(f"dropout NOT switched off: {'; '.join(report['dropout_not_switched'])}")
    return lines


def _fusion_file(ctx: Context, words: set[str]) -> str | None:
    if "fusion_switch" in words:
        return str(ctx.workspace.fusion_switch_file)
    if "fusion_off" in words:
        return str(ctx.workspace.fusion_off_file)
    return None


def _train(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.capture.step_manifest import read_manifest
    from precision_tool.render.messages import note_line, warning_line

    words = parse_train_actions(args.device, args.action)
    manifest = read_manifest(ctx.workspace.checkpoint_dir)
    from precision_tool.capture.replay_run import replay_cpu, run_replay

    root = ctx.workspace.root.resolve()
    devices = ["cpu", "npu"] if args.device == "all" else [args.device]
    if "cpu" in devices:
        _refuse_old_golden(ctx, args.device)
    _check_writable(ctx, devices, args.action)
    ctx.note(note_line(f"replaying the {manifest.kind} step captured in {manifest.folder}"))
    shown: list[Any] = []
    for device in devices:
        action = "dump" if device == "cpu" else args.action
        ctx.note(note_line(f"train -d {device} -a {action}: running the step in a TensorFlow child process"))
        try:
            if device == "sim":  # the switch file the simulated compile honours; the child takes one action word
                fusion = _fusion_file(ctx, words)
                if fusion:
                    from precision_tool.capture.fusion_switch import write_fusion_off, write_fusion_switch

                    (write_fusion_switch if "fusion_switch" in words else write_fusion_off)(ctx.workspace)
                report = run_replay(root, device, next(w for w in words if w in SIM_ACTIONS), python=args.python,
                                    fusion_switch=fusion)
            else:
                report = (replay_cpu(Workspace(root), args.python) if device == "cpu"
                          else run_replay(root, device, action, python=args.python))
        except CommandFailed:
            for line in shown:  # what the CPU side did stays on screen
                ctx.note(line)
            raise
        lines = _report_lines(report)
        shown.extend(note_line(f"{device}: {line}") for line in lines if "NOT" not in line)
        shown.extend(warning_line(f"{device}: {line}") for line in lines if "NOT" in line)
        if device == "sim":
            shown.extend(_sim_lines(ctx, report))
            continue
        if device == "cpu":
            summary = _extract_golden(ctx)
            shown.append(note_line(f"cpu: {summary.written} golden tensors in {ctx.workspace.golden_dir} "
                                   f"(tfdbg dump in {ctx.workspace.tf_debug_dir})"))
        else:
            fusion = _fusion_file(ctx, words)
            if fusion:
                shown.append(note_line(f"npu: fusion switch file {fusion}; edit it and run train -d npu again "
                                       "to bisect fusion passes"))
            shown.append(note_line(f"npu: adapter options in {ctx.workspace.checkpoint_dir / 'replay_npu_options.json'}"))
    if "npu" in devices and "dump" in words:
        shown.append(note_line("next: `vc` (or `ac -c`) to compare the NPU dump with the golden tensors"))
    return shown


def _sim_lines(ctx: Context, report: dict[str, Any]) -> list[Any]:
    """What the simulated run wrote, marked simulated, and the command that compares it."""
    from precision_tool.render.messages import note_line, warning_line

    ws = ctx.workspace
    debug_id = int(report["debug_id"])
    run = f"npu/debug_{debug_id}"
    lines = [note_line(f"sim: {run} is a SIMULATED NPU run ({report['graph']}): {report['ops']} ops, "
                       f"{report['tasks']} tasks, {report['float16_ops']} computing in float16 "
                       f"({report['precision_mode']}; lists: {report['mixlist']}); {report['seconds']} s")]
    if report.get("emulated_float16"):
        lines.append(note_line(f"sim: no float16 CPU kernel for {', '.join(report['emulated_float16'])}: computed "
                               "in float32 on the float16 inputs and rounded"))
    if report.get("fusion_switch"):
        off = report.get("passes_off") or []
        lines.append(note_line(f"sim: fusion switch file {report['fusion_switch']}: "
                               f"{', '.join(off) if off else 'no pass named'} off" + (" (and every pass its "
                               "\"ALL\": \"off\" covers)" if "ALL" in Path(report["fusion_switch"]).read_text(
                                   encoding="utf-8", errors="replace") else "")))
    overflows = report.get("overflows") or []
    if overflows:
        more = f" (+{len(overflows) - 3} more)" if len(overflows) > 3 else ""
        lines.append(warning_line(f"sim: {len(overflows)} op(s) turn finite inputs into float16 Inf/NaN: "
                                  f"{', '.join(overflows[:3])}{more}"))
    if report["action"] == "overflow":
        lines.append(note_line(f"sim: overflow records in {ws.overflow_root}; next: `ac`"))
    elif debug_id == 0:
        lines.append(note_line("next: `ac -c` (or `vc`) to compare the simulated run with the golden tensors"))
    else:
        graph = ws.build_graph_files(debug_id)
        dump = ws.newest_dump_dir(debug_id)
        lines.append(note_line(f"next: `vc -lt {dump} -g {graph[0] if graph else ws.graph_dir(debug_id)}` "
                               "to compare the simulated run with the golden tensors"))
    return lines


def _complete(request: Any) -> list[str]:
    if request.option in ("-d", "--device"):
        return list(DEVICES)
    if request.option in ("-a", "--action"):
        return list(ACTION_WORDS)
    return []


COMMANDS: list[Command] = [
    Command("train", "replay the captured training step on CPU (golden dump) and/or the NPU", _parser, _train,
            completer=_complete, description=_DESCRIPTION),
]
