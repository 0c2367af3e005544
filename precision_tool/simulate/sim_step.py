"""The child process of `train -d sim`: the captured step run on a simulated NPU.

    python -m precision_tool.simulate.sim_step [--action dump|overflow] WORKSPACE

Reads the step PrecisionTfSession captured (tf/checkpoints: meta graph, variables before the step, fed
inputs), derives the graph Ascend's compiler would build from it (`npu_graph`), computes every op in the
NPU's dtypes under `allow_mix_precision` (`kernels`; nothing planted) and writes a new run
`npu/debug_N/` (the Build graph, and with `dump` a dump of every task; with `overflow` the Opdebug records
of the ops whose float16 results overflow, under overflow/), `fusion/fusion_result.json`, and
`npu/debug_N/simulated.json`, which marks the run as simulated for every command that shows it.

The mixed-precision lists are CANN's (`mix_precision`), changed by the captured session's
`modify_mixlist` when its NpuOptimizer names one, else by the workspace's fix/ops_info.json when it
exists; $PRECISION_TOOL_MODIFY_MIXLIST (a `bisect precision` round's file) beats both. Fusion passes a
switch file turns "off" are not applied, as GE skips them: the file $PRECISION_TOOL_FUSION_SWITCH names (a
`bisect fusion` round's), else the session's `fusion_switch_file`. A workspace whose npu/sim_device.json
names a `bad_fusion_pass` (`demo --bad-fusion`) gets that pass's fused kernels wrong on purpose: their
product skips the last half of the reduction axis (a tiling bug; the unfused ops compute right). Dropout
is switched off as `train` does it. A user mistake is one line on stderr starting with 'train -d sim' and
exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_tool.workspace import SIMULATED_MARKER as MARKER_NAME

EXIT_USAGE = 2
RESULT_NAME = "replay_sim.json"
ACTIONS = ("dump", "overflow")


class SimFailed(Exception):
    """One line for the user: what cannot be simulated and what to do."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m precision_tool.simulate.sim_step")
    parser.add_argument("--action", choices=list(ACTIONS), default="dump")
    parser.add_argument("workspace")
    args = parser.parse_args(argv)
    root = Path(args.workspace).resolve()
    os.environ["PRECISION_DATA"] = str(root)
    from precision_tool.errors import PrecisionToolError

    try:
        result = simulate_step(root, args.action)
    except (SimFailed, PrecisionToolError) as error:
        text = str(error)
        print(text if text.startswith("train") else f"train -d sim: {text}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(result))
    return 0


def _policy(workspace: Any, config: Any) -> Any:
    """CANN's lists, changed by the captured session's modify_mixlist, else by fix/ops_info.json."""
    from precision_tool.capture.replay_step import npu_options_of
    from precision_tool.formats.npu.mixlist import read_mixlist
    from precision_tool.simulate.mix_precision import MIXED, MODES, policy_from_mixlist

    # the NpuOptimizer's parameters, as `train -d npu` reads them (a Keras capture has no ConfigProto)
    options = npu_options_of(config) if config is not None else {}
    mode = str(options.get("precision_mode") or MIXED)
    if mode not in MODES:
        mode = MIXED  # allow_mix_precision_fp16 and the like: the same lists
    from precision_tool.config import MIXLIST_ENV

    named = os.environ.get(MIXLIST_ENV) or str(options.get("modify_mixlist") or "")
    if os.environ.get(MIXLIST_ENV) and not Path(named).is_file():
        raise SimFailed(f"train -d sim: ${MIXLIST_ENV} names {named}, which is no file; unset it or point it at a "
                        "modify_mixlist JSON file")
    path = Path(named) if named and Path(named).is_file() else workspace.ops_info_file
    mixlist = read_mixlist(path) if path.is_file() else None
    return policy_from_mixlist(mixlist, mode=mode)


def _pass_switch(config: Any) -> Any:
    """(pass name → applied?) from $PRECISION_TOOL_FUSION_SWITCH or the session's fusion_switch_file, and the
    switch read (None: every pass runs)."""
    from precision_tool.capture.fusion_switch import read_fusion_switch
    from precision_tool.capture.replay_step import npu_options_of
    from precision_tool.config import FUSION_SWITCH_ENV
    from precision_tool.simulate.npu_fusion import UB_PASSES, all_on

    named = os.environ.get(FUSION_SWITCH_ENV) or ""
    if not named and config is not None:
        named = str(npu_options_of(config).get("fusion_switch_file") or "")
        if named and not Path(named).is_file():
            named = ""  # the NPU machine's path: not here
    if not named:
        return all_on, None
    switch = read_fusion_switch(Path(named))  # FormatError names the file

    def enabled(pass_name: str) -> bool:
        return switch.enabled(pass_name, "UBFusion" if pass_name in UB_PASSES else "GraphFusion")

    return enabled, switch


SIM_DEVICE_NAME = "sim_device.json"  # npu/sim_device.json: what the simulated device gets wrong (demo --bad-fusion)


def bad_fusion_pass(workspace: Any) -> str | None:
    """The fusion pass whose fused kernels the simulated device computes wrongly, when the workspace plants one."""
    path = workspace.npu_dir / SIM_DEVICE_NAME
    if not path.is_file():
        return None
    try:
        named = json.loads(path.read_text(encoding="utf-8")).get("bad_fusion_pass")
    except (OSError, ValueError, AttributeError):
        raise SimFailed(f"train -d sim: {path} is not the JSON object demo --bad-fusion writes; delete it") from None
    return str(named) if named else None


def _half_reduction(ins: list[Any]) -> list[Any]:
    import numpy as np

    x = np.array(ins[0])
    x[..., x.shape[-1] // 2:] = 0  # THE PLANTED FUSION FAULT: the last half of the reduction axis is skipped
    return [x, *ins[1:]]


BAD_FUSION = "add their bias to a product that skips the last half of the reduction axis (a tiling bug)"


def bad_fusion_faults(derived: Any, pass_name: str | None) -> tuple[Any, ...]:
    """A fault on every op the planted pass fused that adds a bias (none when the pass is off)."""
    from precision_tool.simulate.kernels import Fault

    if not pass_name:
        return ()
    return tuple(Fault(op.name, f"the fused kernels of {pass_name} {BAD_FUSION}", inputs=_half_reduction)
                 for op in derived.ops if pass_name in (op.pass_name, op.pass_name_ub) and op.params.get("bias"))


def _closure(graph: Any, fetches: list[str]) -> list[str]:
    """Every op the fetched ones need, through data and control edges (what the step runs)."""
    seen: set[str] = set()
    stack = [name.split(":")[0] for name in fetches]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        op = graph.get_operation_by_name(name)
        stack.extend(t.op.name for t in op.inputs)
        stack.extend(c.name for c in op.control_inputs)
    return sorted(seen)


def _load_step(workspace: Any) -> tuple[Any, Any, dict[str, Any], list[str], Any]:
    """(graph, session with the variables restored, feeds by tensor name, fetch names, the saved ConfigProto):
    the captured step as `train` rebuilds it, its fetches with the train op's."""
    import tensorflow as tf

    from precision_tool.capture import step_manifest as sm
    from precision_tool.capture import tf_setup
    from precision_tool.capture.replay_step import restore_tf1_step, saved_config

    manifest = sm.read_manifest(workspace.checkpoint_dir)
    if manifest.kind != sm.KIND_TF1:  # Keras: the graph its train_on_batch runs (no ConfigProto of its own)
        from precision_tool.simulate.keras_step import KerasStepUnsupported, load_keras_step

        try:
            graph, session, feeds, fetches = load_keras_step(manifest)
        except KerasStepUnsupported as error:
            raise SimFailed(f"train -d sim: {error}") from None
        return graph, session, feeds, fetches, None
    step = restore_tf1_step(manifest, tf_setup.golden_session_config())
    fetches = step.fetches + [op.name for op in step.graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP)]
    return step.graph, step.session, step.feeds, fetches, saved_config(manifest)


@dataclass
class Simulation:
    """One simulated step: the derived graph, every op's values, the lists it ran under."""

    graph: Any  # npu_graph.NpuGraph
    values: Any  # kernels.Values
    policy: Any  # mix_precision.MixPolicy
    tf_ops: int
    started: float
    npu_options: dict = field(default_factory=dict)  # the captured session's NpuOptimizer options
    loss_tensor: str | None = None  # the captured step's loss among its fetches (capture/records/loss_recorder)
    step: int = 0  # the captured step's number in the loss record
    passes_off: tuple[str, ...] = ()  # the fusion passes the switch file turned off
    switch_file: str | None = None


def run_simulation(workspace: Any, faults: tuple[Any, ...] = ()) -> Simulation:
    """The captured step derived and computed (`faults`: planted kernel bugs, for the demos)."""
    from precision_tool.capture import tf_setup  # before TensorFlow: oneDNN off, seeds

    tf_setup.disable_graph_rewriter()
    tf_setup.seed_everything()

    started = time.perf_counter()
    graph, session, feeds, fetches, config = _load_step(workspace)
    policy = _policy(workspace, config)
    enabled, switch = _pass_switch(config)
    name = "sim_" + time.strftime("ge_default_%Y%m%d%H%M%S_1")
    derived, computed = simulate_session(graph, session, feeds, fetches, policy=policy, graph_name=name,
                                         faults=faults, pass_enabled=enabled, bad_pass=bad_fusion_pass(workspace))
    session.close()
    from precision_tool.capture.records.loss_recorder import loss_tensor_name
    from precision_tool.capture.replay_step import npu_options_of
    from precision_tool.capture.step_manifest import read_manifest

    options = npu_options_of(config) if config is not None else {}
    step = read_manifest(workspace.checkpoint_dir).data.get("step", 0)
    return Simulation(derived, computed, policy, len(graph.get_operations()), started, options,
                      loss_tensor_name(graph, [f for f in fetches if ":" in f]),
                      step if isinstance(step, int) and step >= 0 else 0,
                      switch.switched_off if switch is not None else (),
                      str(switch.path) if switch is not None else None)


def simulate_session(graph: Any, session: Any, feeds: dict[str, Any], fetches: list[str], *, policy: Any,
                     graph_name: str, faults: tuple[Any, ...] = (), training_passes: bool = True,
                     pass_enabled: Any = None, bad_pass: str | None = None) -> tuple[Any, Any]:
    """(derived NPU graph, every op's values) of the step `fetches` run in `session` (its variables set,
    `feeds` by tensor name): what `train -d sim` computes, under `policy`'s lists, without the fusion passes
    `pass_enabled` turns off, with `bad_pass`'s fused kernels planted wrong."""
    import numpy as np
    import tensorflow as tf

    from precision_tool.simulate import npu_graph
    from precision_tool.simulate.kernels import SimOptions, simulate

    if any(op.type in ("VariableV2", "Variable") for op in graph.get_operations()):
        raise SimFailed("train -d sim: the graph uses reference variables (VariableV2, TF1 without resource "
                        "variables); the simulation takes resource variables: build the graph with "
                        "tf.compat.v1.enable_resource_variables() (TF2's default) and capture it again")
    fed = {name.split(":")[0]: value for name, value in feeds.items() if name.endswith(":0")}
    missing = [name for name in feeds if not name.endswith(":0")]
    if missing:
        raise SimFailed(f"train -d sim: {missing[0]} is fed but is not an op's first output; the simulation "
                        "feeds whole ops only")
    graph_def = graph.as_graph_def(add_shapes=True)
    dtypes = {f"{op.name}:{n}": out.dtype.base_dtype.name for op in graph.get_operations()
              for n, out in enumerate(op.outputs)}
    handles = [op.name for op in graph.get_operations() if op.type == "VarHandleOp"]
    with graph.as_default():
        reads = {name: tf.raw_ops.ReadVariableOp(resource=graph.get_tensor_by_name(f"{name}:0"),
                                                 dtype=graph.get_operation_by_name(name).get_attr("dtype"))
                 for name in handles}
    values = {**session.run(reads), **fed}
    feed_dict = {graph.get_tensor_by_name(name): value for name, value in feeds.items()}

    def fold(tensors: list[str]) -> list[Any]:
        return [np.asarray(v) for v in session.run(tensors, feed_dict=feed_dict)]

    try:
        derived = npu_graph.derive_npu_graph(graph_def, roots=_closure(graph, fetches), data_nodes=sorted(fed),
                                             fold=fold, graph_name=graph_name, policy=policy, dtypes=dtypes,
                                             training_passes=training_passes,
                                             **({"pass_enabled": pass_enabled} if pass_enabled else {}))
    except npu_graph.SimulationUnsupported as error:
        raise SimFailed(f"train -d sim: {error}") from None
    faults = (*faults, *bad_fusion_faults(derived, bad_pass))
    return derived, simulate(derived, values, SimOptions(faults=tuple(faults)))


def write_simulation(workspace: Any, sim: Simulation, actions: tuple[str, ...],
                     planted: tuple[str, ...] = ()) -> dict[str, Any]:
    """The new npu/debug_N (Build graph; with "dump" every task's dump), with "overflow" the overflow
    records, fusion_result.json and the simulated.json marker; returns (and saves) the run's report."""
    from precision_tool.formats.ge.ge_graph import write_graph_text
    from precision_tool.simulate import generic_kernels, run_files

    derived, computed = sim.graph, sim.values
    debug_id = max(workspace.debug_ids(), default=-1) + 1
    now = time.time()
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    start_us = int(now * 1_000_000)
    dumps = 0
    overflows = run_files.find_overflows(derived, computed)
    if "dump" in actions:
        dumps = run_files.write_run(workspace, debug_id, derived, computed, stamp=stamp, start_us=start_us)
    else:
        write_graph_text(run_files.ge_model(derived), workspace.graph_dir(debug_id) / run_files.GRAPH_FILE_NAME)
    if "overflow" in actions:
        run_files.write_overflow_run(workspace.overflow_root, derived, computed, stamp=stamp,
                                     start_us=start_us + 1_000_000)
    run_files.write_fusion_file(workspace.fusion_file, derived)
    fp16 = sum(1 for op in derived.ops if op.has_task and any(t.dtype == "float16" for t in op.outputs))
    result = {"device": "sim", "action": "|".join(actions), "debug_id": debug_id, "graph": derived.name,
              "tf_ops": sim.tf_ops, "ops": len(derived.ops), "tasks": sum(op.has_task for op in derived.ops),
              "float16_ops": fp16, "dump_files": dumps, "overflows": [f.op_name for f in overflows],
              "mixlist": sim.policy.source, "precision_mode": sim.policy.mode,
              "emulated_float16": sorted(generic_kernels.emulated), "planted_faults": list(planted),
              "fusion_switch": sim.switch_file, "passes_off": list(sim.passes_off),
              "seconds": round(time.perf_counter() - sim.started, 2)}
    from precision_tool.atomic import write_text_atomic

    result["loss"] = _record_sim_loss(workspace, debug_id, sim)  # in replay_sim.json too: which tensor is the loss
    marker = {"simulated": True, "by": "precision-tool train -d sim", **result,
              "what": "a simulated NPU run: the captured step computed on CPU in the NPU's dtypes "
                      "(CANN's mixed-precision lists), no kernel of the NPU ran"}
    write_text_atomic(workspace.debug_dir(debug_id) / MARKER_NAME, json.dumps(marker, indent=2))
    write_text_atomic(workspace.checkpoint_dir / RESULT_NAME, json.dumps(result, indent=2))
    write_sim_run_config(workspace, debug_id, sim, actions)
    return result


def _record_sim_loss(workspace: Any, debug_id: int, sim: Simulation) -> dict[str, Any] | None:
    """npu/debug_N/loss.csv: the simulated step's loss, when the derived graph kept the loss op's name."""
    if not sim.loss_tensor:
        return None
    op, _, slot = sim.loss_tensor.rpartition(":")
    value = sim.values.get((op, int(slot)))
    if value is None or getattr(value, "size", 0) != 1:
        return None
    from precision_tool.capture.records.loss_recorder import add_replayed_step

    path = add_replayed_step(workspace.loss_file(debug_id), sim.step, float(value.reshape(-1)[0]))
    return {"tensor": sim.loss_tensor, "value": float(value.reshape(-1)[0]), "step": sim.step, "file": str(path)}


def write_sim_run_config(workspace: Any, debug_id: int, sim: Simulation, actions: tuple[str, ...]) -> None:
    """npu/debug_N/run_config.json: the options the simulated run was under — the captured session's, its
    precision_mode the simulation's when the session set none — with this process's seeds and versions.
    Dropout is null (unknown): the replay switches it off, so the graph's rates are not what ran."""
    from precision_tool.capture.records import run_config_record

    options = {**sim.npu_options, "enable_dump": "dump" in actions, "enable_dump_debug": "overflow" in actions}
    options.setdefault("precision_mode", sim.policy.mode)
    record = run_config_record.build("npu", "train -d sim", npu_options=options, simulated=True)
    run_config_record.write(workspace, record, debug_id)


def simulate_step(root: Path, action: str) -> dict[str, Any]:
    """`train -d sim -a ACTION`: the captured step simulated, nothing planted."""
    from precision_tool.workspace import Workspace

    workspace = Workspace(root)
    bad = bad_fusion_pass(workspace)
    planted = (f"the fused kernels of {bad} {BAD_FUSION} (npu/{SIM_DEVICE_NAME})",) if bad else ()
    return write_simulation(workspace, run_simulation(workspace), (action,), planted)


if __name__ == "__main__":
    sys.exit(main())
