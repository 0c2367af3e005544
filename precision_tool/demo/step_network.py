"""The multi-step demo's TensorFlow side: N golden training steps on CPU, then N simulated NPU steps.

`python -m precision_tool.demo.step_network WORKSPACE --steps N` (what `demo --steps N` starts). The graph
is the demo network (`network.build_model`) on placeholders `input` / `labels` (step k is fed batch
`steps.DATA_SEED + k`), the loss scaled by `steps.LOSS_SCALE`, each gradient unscaled by a Mul, one SGD update
at `steps.LEARNING_RATE`: the single demo's step, with the scale and rate of `steps`.

Golden: the N steps run in one session under tf_config.sess_dump (one tfdbg run folder per step in
tf/tf_debug; the session is a PrecisionTfSession, so step 0 is captured into tf/checkpoints), each step
from the weights the step before left. NPU: the graph derived from the same GraphDef runs N times, step k
from the weights its own step k-1 wrote (its ApplyGradientDescent outputs), the dumps of step k in
iteration folder k. Both sides' loss, global gradient norm and loss scale go to their loss.csv.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.demo import network, steps

USAGE = "usage: python -m precision_tool.demo.step_network WORKSPACE --steps N"


@dataclass
class StepGraph:
    graph: Any
    train_op: Any
    loss: Any
    scaled_loss: Any
    gradients: list[Any]  # the unscaled gradients the update applies
    init_op: Any
    images: Any  # the `input` placeholder
    labels: Any  # the `labels` placeholder
    variable_names: list[str]


def build_step_graph() -> StepGraph:
    """The training step (names as the single demo's: loss_scale/mul, loss_scale/unscale_<variable>)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    size = network.IMAGE_SIZE
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(7)
        images = v1.placeholder(tf.float32, [network.BATCH, size, size, network.IMAGE_CHANNELS], name="input")
        labels = v1.placeholder(tf.float32, [network.BATCH, network.CLASSES], name="labels")
        loss = network.build_model(images, labels)
        with v1.name_scope("loss_scale"):
            scaled = tf.multiply(loss, steps.LOSS_SCALE, name="mul")
        optimizer = v1.train.GradientDescentOptimizer(steps.LEARNING_RATE)
        grads_and_vars = optimizer.compute_gradients(scaled)
        with v1.name_scope("loss_scale/"):  # the same scope again (a trailing / re-enters it)
            reciprocal = tf.constant(1.0 / steps.LOSS_SCALE, name="reciprocal")
            unscaled = [(tf.multiply(g, reciprocal, name="unscale_" + v.op.name.replace("/", "_")), v)
                        for g, v in grads_and_vars]
        train_op = optimizer.apply_gradients(unscaled)
        init_op = v1.global_variables_initializer()
        variable_names = [v.op.name for v in v1.global_variables()]
    return StepGraph(graph, train_op, loss, scaled, [g for g, _ in unscaled], init_op, images, labels,
                     variable_names)


def step_batch(step: int) -> tuple[Any, Any]:
    """The batch training step `step` reads (the next batch of the data set each step)."""
    return network.input_batch(steps.DATA_SEED + step)


def global_norm(arrays: list[Any]) -> float:
    """sqrt of the sum of squares of every element (inf when one is inf, nan when one is nan)."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        return float(math.sqrt(sum(float(np.square(np.asarray(a, dtype=np.float64)).sum()) for a in arrays)))


def golden_steps(root: Path, training: StepGraph, session: Any, count: int) -> list[Any]:
    """The N golden steps under the dump hook (tf/tf_debug/run_*, one per step); their loss points."""
    from precision_tool import tf_config
    from precision_tool.formats.loss_record import LossPoint

    dumping = tf_config.sess_dump(sess=session)
    points = []
    for step in range(count):
        images, labels = step_batch(step)
        _, loss, _scaled, grads = dumping.run([training.train_op, training.loss, training.scaled_loss,
                                               training.gradients], {training.images: images, training.labels: labels})
        points.append(LossPoint(step, float(loss), global_norm(grads), steps.LOSS_SCALE))
    return points


def write_golden_loss(path: Path, points: list[Any]) -> None:
    """tf/loss.csv with every golden step's loss, gradient norm and loss scale. Where the capture hooks
    record the loss themselves (capture/records/loss_recorder.py, when present), this process's recorder of
    that file gets the same points, so what it writes at exit is this record, not a poorer one."""
    from precision_tool.formats.loss_record import write_loss

    write_loss(path, points)
    try:
        from precision_tool.capture.records import loss_recorder  # type: ignore[attr-defined]
    except ImportError:
        return
    recorder = loss_recorder.recorder_for(path, "demo --steps")
    for point in points:
        recorder.add(point.loss, point.grad_norm, point.loss_scale, step=point.step)
    recorder.flush()


def _variable_of(graph: Any, ref: tuple[str, int]) -> str:
    """The variable an update op writes: its first input, followed back through Cast/TransData."""
    op = graph.op(ref[0])
    while op.kind != "variable":
        if not op.inputs:
            raise AssertionError(f"{ref[0]}: no variable behind the update's first input")
        op = graph.op(op.inputs[0][0])
    return op.name


@dataclass(frozen=True)
class NpuStepsReport:
    ops: int
    dump_files: int
    points: list[Any]
    overflows: list[tuple[int, str]]  # (step, op) of each op that turned finite inputs into inf/nan
    seconds: float

    def __str__(self) -> str:
        losses = ", ".join(f"{p.loss:.4f}" for p in self.points)
        first = (f"step {self.overflows[0][0]}: {self.overflows[0][1]}" if self.overflows else "none")
        return (f"NPU side: {len(self.points)} steps from its own weights, {self.ops} ops, {self.dump_files} dump "
                f"files per step, losses {losses}; first float16 overflow: {first}; {self.seconds:.1f} s")


def npu_steps(root: Path, graph: Any, start: dict[str, Any], count: int) -> NpuStepsReport:
    """The N NPU steps, each from the weights the step before wrote; one dump/<stamp>/ with N iterations."""
    from precision_tool.demo.npu_side import record_npu_run
    from precision_tool.formats.loss_record import LossPoint, write_loss
    from precision_tool.simulate.kernels import SimOptions, simulate
    from precision_tool.simulate.run_files import find_overflows, write_fusion_file, write_run
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    workspace = Workspace(root)
    now = time.time()
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    updates = [op for op in graph.ops if op.type == "ApplyGradientDescent"]
    written = {op.name: _variable_of(graph, op.inputs[0]) for op in updates}
    state = dict(start)
    points, overflows, files = [], [], 0
    for step in range(count):
        images, labels = step_batch(step)
        values = simulate(graph, {**state, "input": images, "labels": labels}, SimOptions())
        # iteration folders 0..N-1 under one dump/<stamp>/, a second apart as the steps' dump times
        files = write_run(workspace, 0, graph, values, stamp=stamp, start_us=int((now + step) * 1_000_000),
                          iteration=step)
        overflows.extend((step, found.op_name) for found in find_overflows(graph, values))
        grads = [values[op.inputs[2]] for op in updates]  # the unscaled gradients the updates apply
        points.append(LossPoint(step, float(values[(network.LOSS_NAME, 0)]), global_norm(grads), steps.LOSS_SCALE))
        state.update({written[op.name]: values[(op.name, 0)] for op in updates})  # the next step's weights
    write_loss(workspace.loss_file(0), points)
    write_fusion_file(workspace.fusion_file, graph)
    record_npu_run(workspace, 0, None)
    return NpuStepsReport(len(graph.ops), files, points, overflows, time.perf_counter() - started)


def run(root: Path, count: int) -> str:
    """Golden steps, their loss record, the NPU derivation and its steps; returns the log."""
    import tensorflow as tf

    from precision_tool.capture.session import PrecisionTfSession
    from precision_tool.demo.npu_side import DEMO_POLICY
    from precision_tool.simulate import npu_graph
    from precision_tool.workspace import Workspace

    workspace = Workspace(root)
    training = build_step_graph()
    session = PrecisionTfSession(graph=training.graph, config=network.session_config(),
                                 checkpoint_dir=workspace.checkpoint_dir)
    session.run(training.init_op)
    with training.graph.as_default():
        reads = {name: tf.raw_ops.ReadVariableOp(resource=training.graph.get_operation_by_name(name).outputs[0],
                                                 dtype=tf.float32) for name in training.variable_names}
    start = dict(session.run(reads))
    graph_def = training.graph.as_graph_def(add_shapes=True)
    images, labels = step_batch(0)

    def fold(tensor_names: list[str]) -> list[Any]:  # the compiler's constant folding (shapes, the seed)
        return list(session.run(tensor_names, {training.images: images, training.labels: labels}))

    roots = [n.name for n in graph_def.node if n.op == "ResourceApplyGradientDescent"]
    graph = npu_graph.derive_npu_graph(graph_def, roots=roots + [network.LOSS_NAME, network.SCALED_LOSS_NAME],
                                       data_nodes=["input", "labels"], fold=fold, graph_name=network.graph_name(),
                                       policy=DEMO_POLICY)
    golden = golden_steps(root, training, session, count)
    write_golden_loss(workspace.golden_loss_file, golden)
    report = npu_steps(root, graph, start, count)
    shown = ", ".join(f"{p.loss:.4f}" for p in golden)
    return (f"golden steps on CPU: {count} steps, losses {shown}; tfdbg dumps (one run folder per step) in "
            f"{workspace.tf_debug_dir}\n{report}")


def main(argv: list[str] | None = None) -> int:
    return network.counted_main(argv, "--steps", USAGE, steps.check_steps, run)


if __name__ == "__main__":
    sys.exit(main())
