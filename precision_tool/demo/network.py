"""The demo's TensorFlow network and its golden (CPU, fp32) training step.

A small TF1-style classifier built from `tf.nn` ops and `tf.compat.v1.get_variable` (Keras 3 removed
`tf.compat.v1.layers`): conv → relu → pool → conv → batch-norm → relu → pool → dense → relu → dense,
softmax cross-entropy, a static loss scale (LOSS_SCALE), one plain SGD step on the unscaled gradients.
Every seed is fixed, so each build gives the same numbers.

Run it as `python -m precision_tool.demo.network WORKSPACE` (what `precision-tool demo` does): the
module imports `precision_tool.tf_config` before TensorFlow, so oneDNN and grappler leave the graph as
written and the golden dump holds `conv1/Conv2D:0`, `conv1/BiasAdd:0`, ... Then the same process
simulates the NPU run (`npu_side`), which needs the graph and the starting weights.

`python -m precision_tool.demo.network WORKSPACE --npu-start other-weights|other-data` (`demo --npu-start`)
starts the NPU runs from other weights or another batch than the golden step: the same-step check's demo.

`python -m precision_tool.demo.network WORKSPACE --fixed OPS_INFO` (what `demo --fixed` does) builds the
same network again but runs no golden step (tf/ is left as it is): it simulates the NPU step with the op
types of OPS_INFO's block list kept in float32 and the fixed kernel, into npu/debug_2.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

BATCH = 8
IMAGE_SIZE = 16
IMAGE_CHANNELS = 3
CLASSES = 10
LEARNING_RATE = 0.1
DATA_SEED = 2024
LOSS_NAME = "loss/Mean"
# Static loss scale, in the graph on both sides (as LossScaleOptimizer / NPULossScaleOptimizer with a
# FixedLossScaleManager): harmless in the float32 golden run; on the NPU the float16 gradient of fc2's
# weights (gradients/fc2/MatMul_grad/MatMul_1) exceeds 65504 and overflows to inf.
LOSS_SCALE = 2.0 ** 17
SCALED_LOSS_NAME = "loss_scale/mul"


@dataclass
class TrainingGraph:
    """The built graph and the handles the golden run and the NPU simulation need."""

    graph: Any  # tf.Graph
    train_op: Any
    loss: Any
    scaled_loss: Any  # loss * LOSS_SCALE, fetched with the loss (so both runs compute it)
    init_op: Any
    variable_names: list[str]  # VarHandleOp names, in creation order


def prepare_environment(workspace_root: Path) -> None:
    """Before TensorFlow is imported: point tf_config at the demo workspace and let it set up the golden
    run (TF_ENABLE_ONEDNN_OPTS=0, grappler off, seeds). tf_config imports TensorFlow itself."""
    os.environ["PRECISION_DATA"] = str(workspace_root)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The demos' NPU runs are simulated, not trained: a golden loss record alone would only make `ac` ask for
    # the NPU run's (docs/steps.md#loss-curves). `train` on a demo records the step it replays.
    os.environ["PRECISION_TOOL_LOSS_RECORD"] = "0"
    import precision_tool.tf_config  # noqa: F401


def input_batch(seed: int = DATA_SEED) -> tuple["Any", "Any"]:
    """A fixed batch of images (NHWC) and one-hot labels (`seed`: another batch, e.g. another rank's)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    images = rng.standard_normal((BATCH, IMAGE_SIZE, IMAGE_SIZE, IMAGE_CHANNELS)).astype(np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH)]
    return images, labels


def build_model(x: Any, labels: Any) -> Any:
    """The classifier and its mean softmax cross-entropy on `x` (NHWC images) and one-hot `labels`, in the
    default graph; returns the loss tensor (`loss/Mean`). The op names are what the NPU graph refers to."""
    import tensorflow as tf

    v1 = tf.compat.v1
    glorot = v1.initializers.glorot_uniform(seed=1)
    with v1.variable_scope("conv1"):
        kernel = v1.get_variable("kernel", [3, 3, IMAGE_CHANNELS, 16], initializer=glorot)
        bias = v1.get_variable("bias", [16], initializer=v1.initializers.random_normal(0.0, 0.1, seed=2))
        h = tf.nn.conv2d(x, kernel, 1, "SAME", name="Conv2D")
        h = tf.nn.bias_add(h, bias, name="BiasAdd")
        h = tf.nn.relu(h, name="Relu")
    h = tf.nn.max_pool2d(h, 2, 2, "VALID", name="pool1/MaxPool")
    with v1.variable_scope("conv2"):
        kernel = v1.get_variable("kernel", [3, 3, 16, 24], initializer=glorot)
        h = tf.nn.conv2d(h, kernel, 1, "SAME", name="Conv2D")
    with v1.variable_scope("bn2"):
        # gamma/beta as a restored checkpoint would have them (not the 1/0 of a fresh start)
        gamma = v1.get_variable("gamma", [24], initializer=v1.initializers.random_normal(1.0, 0.2, seed=3))
        beta = v1.get_variable("beta", [24], initializer=v1.initializers.random_normal(0.0, 0.5, seed=4))
        h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, epsilon=1e-3, is_training=True,
                                        name="FusedBatchNormV3")
        h = tf.nn.relu(h, name="Relu")
    h = tf.nn.max_pool2d(h, 2, 2, "VALID", name="pool2/MaxPool")
    flat = 4 * 4 * 24
    h = tf.reshape(h, [BATCH, flat], name="flatten/Reshape")
    with v1.variable_scope("fc1"):
        weights = v1.get_variable("kernel", [flat, 64], initializer=glorot)
        bias = v1.get_variable("bias", [64], initializer=v1.initializers.random_normal(0.0, 0.1, seed=5))
        h = tf.nn.bias_add(tf.matmul(h, weights, name="MatMul"), bias, name="BiasAdd")
        h = tf.nn.relu(h, name="Relu")
    with v1.variable_scope("fc2"):
        weights = v1.get_variable("kernel", [64, CLASSES], initializer=glorot)
        bias = v1.get_variable("bias", [CLASSES], initializer=v1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(h, weights, name="MatMul"), bias, name="BiasAdd")
    with tf.name_scope("loss"):
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
        loss = tf.reduce_mean(xent, name="Mean")
    return loss


def build_training_graph() -> TrainingGraph:
    """The network, loss and one SGD step as a TF1 graph (names are what the NPU graph refers to)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    images, labels_value = input_batch()
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(7)
        x = tf.constant(images, name="input")
        labels = tf.constant(labels_value, name="labels")
        loss = build_model(x, labels)
        with v1.name_scope("loss_scale"):
            scaled = tf.multiply(loss, LOSS_SCALE, name="mul")
        optimizer = v1.train.GradientDescentOptimizer(LEARNING_RATE)
        grads_and_vars = optimizer.compute_gradients(scaled)
        with v1.name_scope("loss_scale/"):  # the same scope again (a trailing / re-enters it)
            reciprocal = tf.constant(1.0 / LOSS_SCALE, name="reciprocal")
            # g * (1 / scale), as TF's loss-scale optimizer unscales
            unscaled = [(tf.multiply(g, reciprocal, name="unscale_" + v.op.name.replace("/", "_")), v)
                        for g, v in grads_and_vars]
        train_op = optimizer.apply_gradients(unscaled)
        init_op = v1.global_variables_initializer()
        variable_names = [v.op.name for v in v1.global_variables()]
    return TrainingGraph(graph, train_op, loss, scaled, init_op, variable_names)


def session_config() -> Any:
    """The golden session config (grappler and the classic optimizer off: without that `labels` and the
    gradient seed become `..._cf_` nodes and their golden tensors are missing), on one thread: the CPU
    graph runs exactly as written, reproducibly."""
    from precision_tool import tf_config

    config = tf_config.golden_session_config()
    config.intra_op_parallelism_threads = 1
    config.inter_op_parallelism_threads = 1
    return config


def _golden_session(session: Any) -> Any:
    """Wrap the session with the project's tfdbg dumping hook (tf_config.sess_dump → tf/tf_debug)."""
    from precision_tool import tf_config

    return tf_config.sess_dump(sess=session)


@dataclass
class GoldenRun:
    """What the NPU side takes from the CPU side: the same graph, weights and input batch."""

    training: TrainingGraph
    graph_def: Any  # GraphDef with _output_shapes, as built (before the step)
    feeds: dict[str, Any]  # Data inputs and variables' starting values by name (np.ndarray)
    fold: Any  # callable: ['node:slot', ...] → values (the compiler's constant folding)
    session: Any  # the plain session; variables still hold their starting values until the step
    loss: float = float("nan")


def prepare(workspace_root: Path, *, capture: bool = True) -> GoldenRun:
    """Build the graph, initialise the variables and remember their starting values. The session is a
    PrecisionTfSession: the golden step (the first run fetching the train op) is captured into
    tf/checkpoints, so `train -d cpu -a dump` replays it and gets the same golden tensors bit for bit.
    `capture=False`: a plain session, for a run that only needs the graph and the starting values."""
    import tensorflow as tf

    from precision_tool.capture.session import PrecisionTfSession
    from precision_tool.workspace import Workspace

    training = build_training_graph()
    if capture:
        session = PrecisionTfSession(graph=training.graph, config=session_config(),
                                     checkpoint_dir=Workspace(workspace_root).checkpoint_dir)
    else:
        session = tf.compat.v1.Session(graph=training.graph, config=session_config())
    session.run(training.init_op)
    with training.graph.as_default():
        reads = {name: tf.raw_ops.ReadVariableOp(resource=training.graph.get_operation_by_name(name).outputs[0],
                                                 dtype=tf.float32)
                 for name in training.variable_names}
    feeds = dict(session.run(reads))
    images, labels = input_batch()
    feeds.update({"input": images, "labels": labels})
    graph_def = training.graph.as_graph_def(add_shapes=True)

    def fold(tensor_names: list[str]) -> list[Any]:
        return list(session.run(tensor_names))

    return GoldenRun(training, graph_def, feeds, fold, session)


def run_golden_step(run: GoldenRun) -> float:
    """One training step under the project's dump hook: writes tf/tf_debug/run_*/..."""
    dump_session = _golden_session(run.session)
    _, loss, _scaled = dump_session.run([run.training.train_op, run.training.loss, run.training.scaled_loss])
    run.loss = float(loss)
    return run.loss


def counted_main(argv: list[str] | None, option: str, usage: str, check: Callable[[int], int],
                 run: Callable[[Path, int], str]) -> int:
    """The main of a demo child taking `WORKSPACE --OPTION N` (`--ranks N`, `--steps N`): N checked by `check`
    (ValueError: its one line), the environment prepared before TensorFlow, `run`'s summary printed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 3 or argv[1] != option:
        print(usage, file=sys.stderr)
        return 2
    try:
        count = check(int(argv[2]))
    except ValueError as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    prepare_environment(root)
    print(run(root, count))
    return 0


USAGE = "usage: python -m precision_tool.demo.network WORKSPACE [--fixed OPS_INFO | --npu-start START]"


def derive(run: GoldenRun, keep_fp32: frozenset[str] = frozenset()) -> Any:
    """The compiled NPU graph of the step (what the optimizer updates, the loss and the scaled loss)."""
    from precision_tool.demo.npu_side import DEMO_POLICY
    from precision_tool.simulate import npu_graph

    roots = [n.name for n in run.graph_def.node if n.op == "ResourceApplyGradientDescent"]
    return npu_graph.derive_npu_graph(run.graph_def, roots=roots + [LOSS_NAME, SCALED_LOSS_NAME],
                                      data_nodes=["input", "labels"], fold=run.fold, graph_name=graph_name(),
                                      keep_fp32=keep_fp32, policy=DEMO_POLICY)


def main(argv: list[str] | None = None) -> int:
    """`python -m precision_tool.demo.network WORKSPACE [--fixed OPS_INFO]`: golden step, then the
    simulated NPU side; with --fixed, only the fixed NPU run (npu/debug_2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] not in ("--fixed", "--npu-start")):
        print(USAGE, file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    if len(argv) == 3 and argv[1] == "--fixed":
        return _fixed(root, Path(argv[2]))
    start = argv[2] if len(argv) == 3 else "same"
    prepare_environment(root)
    from precision_tool.demo import npu_side
    from precision_tool.workspace import Workspace

    run = prepare(root)
    graph = derive(run)
    loss = run_golden_step(run)
    workspace = Workspace(root)
    print(f"golden step on CPU: loss {loss:.6f}, tfdbg dump in {workspace.tf_debug_dir}")
    if start not in npu_side.NPU_STARTS:
        print(f"--npu-start: one of {', '.join(npu_side.NPU_STARTS)}, not {start!r}", file=sys.stderr)
        return 2
    from precision_tool.capture.records.run_config_record import dropout_rates

    report = npu_side.write_npu_side(workspace, graph, npu_side.npu_start_feeds(run.feeds, start),
                                     dropout_rates(run.training.graph))
    print(report)
    if start != "same":
        print(f"the NPU runs start from {npu_side.NPU_STARTS[start]}")
    return 0


def _fixed(root: Path, ops_info: Path) -> int:
    """npu/debug_2: the same network and weights, the block list's op types in float32, the fixed kernel."""
    from precision_tool.errors import PrecisionToolError
    from precision_tool.formats.npu.mixlist import read_mixlist

    try:
        keep = read_mixlist(ops_info).kept_in_float32
    except (OSError, PrecisionToolError) as exc:
        print(f"cannot read {ops_info}: {exc}", file=sys.stderr)
        return 1
    prepare_environment(root)
    from precision_tool.demo import npu_side
    from precision_tool.workspace import Workspace

    run = prepare(root, capture=False)  # no golden step: tf/ keeps the golden run of the first build
    report = npu_side.write_fixed_run(Workspace(root), derive(run, keep), run.feeds, str(ops_info.resolve()))
    kept = ", ".join(sorted(keep)) or "nothing"
    overflows = ", ".join(f.op_name for f in report.overflows) or "none"
    print(f"npu/debug_2: the NPU step with {kept} kept in float32 and the fixed {npu_side.PLANTED_FAULT_OP} "
          f"kernel: {report.ops} ops, {report.dump_files} dump files, overflows: {overflows}, {report.seconds:.1f} s")
    return 0


def graph_name() -> str:
    """GE names a session's graph ge_default_<time>_<n>."""
    import time

    return f"ge_default_{time.strftime('%Y%m%d%H%M%S')}_1"


if __name__ == "__main__":
    sys.exit(main())
