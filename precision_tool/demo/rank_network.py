"""The rank demo's TensorFlow side: N data-parallel golden steps on CPU, then the simulated N-rank NPU run.

`python -m precision_tool.demo.rank_network WORKSPACE --ranks N` (what `demo --ranks N` starts, one
process for all ranks). The graph is the demo network (`network.build_model`) on placeholders `input` /
`labels` (each rank feeds its own batch, seed DATA_SEED + rank), no loss scale, one SGD step whose
gradients go through an all-reduce stand-in first, per trained variable v (names in `ranks`):

    allreduce/<v>/HcomAllReduce = AddV2(gradient, allreduce/<v>/others)   the collective's sum
    allreduce/<v>/truediv       = RealDiv(that, N)                         the data-parallel mean

where `allreduce/<v>/others` is a Placeholder fed with the sum of the other ranks' gradients. Pass 1
computes every rank's gradients (no capture); pass 2 runs each rank's step, from the same starting
weights, under tf_config.sess_dump into tf/tf_debug/rank_<r>/, feeding the others' sum: so TensorFlow
itself computes the golden of the all-reduce, of its mean and of the updated weights, per rank.

The NPU graph is derived from the same GraphDef, with each stand-in AddV2 turned into the
`HcomAllReduce` node npu_bridge's `hccl_ops.allreduce(grad, "sum")` puts there (the `others`
Placeholder is gone); `rank_sim` computes and writes it for every rank.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.demo import network, ranks

USAGE = "usage: python -m precision_tool.demo.rank_network WORKSPACE --ranks N"


@dataclass
class RankGraph:
    graph: Any
    train_op: Any
    loss: Any
    init_op: Any
    images: Any  # the `input` placeholder
    labels: Any  # the `labels` placeholder
    variable_names: list[str]
    gradients: dict[str, Any]  # variable → its gradient tensor (the all-reduce's input)
    others: dict[str, Any]  # variable → the placeholder of the other ranks' sum


def build_rank_graph(rank_count: int) -> RankGraph:
    """The data-parallel training step of one rank (the same graph on every rank)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    size = network.IMAGE_SIZE
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(7)
        images = v1.placeholder(tf.float32, [network.BATCH, size, size, network.IMAGE_CHANNELS], name="input")
        labels = v1.placeholder(tf.float32, [network.BATCH, network.CLASSES], name="labels")
        loss = network.build_model(images, labels)
        optimizer = v1.train.GradientDescentOptimizer(network.LEARNING_RATE)
        gradients, others, averaged = {}, {}, []
        for grad, var in optimizer.compute_gradients(loss):
            name = var.op.name
            with v1.name_scope(f"{ranks.ALLREDUCE_SCOPE}/{ranks.variable_key(name)}/"):
                other = v1.placeholder(tf.float32, grad.shape, name="others")
                total = tf.add(grad, other, name=ranks.ALLREDUCE_TYPE)
                mean = tf.math.truediv(total, float(rank_count), name="truediv")
            gradients[name], others[name] = grad, other
            averaged.append((mean, var))
        train_op = optimizer.apply_gradients(averaged)
        init_op = v1.global_variables_initializer()
        variable_names = [v.op.name for v in v1.global_variables()]
    return RankGraph(graph, train_op, loss, init_op, images, labels, variable_names, gradients, others)


def npu_graph_def(graph_def: Any) -> Any:
    """The GraphDef as the NPU graph has it: each all-reduce stand-in (AddV2 of the gradient and the
    others' placeholder) is an HcomAllReduce of the gradient alone, with hccl_ops.allreduce's attributes."""
    from tensorflow.core.framework import graph_pb2

    result = graph_pb2.GraphDef()
    result.CopyFrom(graph_def)
    for node in result.node:
        if node.op == "AddV2" and node.name.startswith(ranks.ALLREDUCE_SCOPE + "/") \
                and node.name.endswith("/" + ranks.ALLREDUCE_TYPE):
            node.op = ranks.ALLREDUCE_TYPE
            del node.input[1:]
            for key, value in ranks.HCCL_ATTRS.items():
                if isinstance(value, str):
                    node.attr[key].s = value.encode()
                else:
                    node.attr[key].i = value
    return result


def _reads(training: RankGraph) -> dict[str, Any]:
    import tensorflow as tf

    with training.graph.as_default():
        return {name: tf.raw_ops.ReadVariableOp(resource=training.graph.get_operation_by_name(name).outputs[0],
                                                dtype=tf.float32) for name in training.variable_names}


def _reset_op(training: RankGraph, start: dict[str, Any]) -> Any:
    """Assign every variable its starting value again (each rank's step starts from the same weights)."""
    import tensorflow as tf

    with training.graph.as_default():
        return tf.group(*[tf.raw_ops.AssignVariableOp(
            resource=training.graph.get_operation_by_name(name).outputs[0], value=tf.constant(value))
            for name, value in start.items()], name="rank_demo_reset")


def run(root: Path, rank_count: int) -> str:
    """Both passes, the golden captures, the NPU derivation and the simulated ranks; returns the log."""
    import numpy as np
    import tensorflow as tf

    from precision_tool import tf_config
    from precision_tool.demo import rank_sim
    from precision_tool.demo.npu_side import DEMO_POLICY
    from precision_tool.simulate import npu_graph
    from precision_tool.workspace import Workspace

    workspace = Workspace(root)
    training = build_rank_graph(rank_count)
    session = tf.compat.v1.Session(graph=training.graph, config=network.session_config())
    session.run(training.init_op)
    start = dict(session.run(_reads(training)))
    graph_def = training.graph.as_graph_def(add_shapes=True)
    batches = [network.input_batch(network.DATA_SEED + rank) for rank in range(rank_count)]
    names = list(training.gradients)

    def feeds(rank: int, others: dict[str, Any] | None = None) -> dict[Any, Any]:
        fed = {training.images: batches[rank][0], training.labels: batches[rank][1]}
        for name in names if others is not None else ():
            fed[training.others[name]] = others[name]
        return fed

    # pass 1: every rank's gradients (nothing captured, nothing updated)
    grads = [dict(zip(names, session.run([training.gradients[n] for n in names], feeds(rank))))
             for rank in range(rank_count)]
    total = {n: np.sum([g[n] for g in grads], axis=0, dtype=np.float64) for n in names}
    reset = _reset_op(training, start)
    losses, wrappers = [], []  # a dropped tfdbg wrapper closes the session it wraps: keep them
    for rank in range(rank_count):  # pass 2: each rank's step under the dump hook, from the same weights
        session.run(reset)
        others = {n: (total[n] - grads[rank][n]).astype(np.float32) for n in names}
        tf_config.TF_DEBUG_DUMP_DIR = str(workspace.tf_debug_dir / ranks.rank_dir_name(rank))
        wrappers.append(tf_config.sess_dump(session))
        _, loss = wrappers[-1].run([training.train_op, training.loss], feeds(rank, others))
        losses.append(float(loss))

    def fold(tensor_names: list[str]) -> list[Any]:  # shapes of fed tensors need a feed
        return list(session.run(tensor_names, feeds(0, {n: np.zeros_like(grads[0][n]) for n in names})))

    roots = [n.name for n in graph_def.node if n.op == "ResourceApplyGradientDescent"]
    graph = npu_graph.derive_npu_graph(npu_graph_def(graph_def), roots=roots + [network.LOSS_NAME],
                                       data_nodes=["input", "labels"], fold=fold, graph_name=network.graph_name(),
                                       policy=DEMO_POLICY)
    rank_feeds = [{**start, "input": images, "labels": labels} for images, labels in batches]
    report = rank_sim.write_rank_side(workspace, graph, rank_feeds)
    shown = ", ".join(f"{loss:.4f}" for loss in losses)
    return (f"golden steps on CPU: {rank_count} ranks, losses {shown}; tfdbg dumps in "
            f"{workspace.tf_debug_dir}/{ranks.RANK_DIR_PREFIX}<r>\n{report}")


def main(argv: list[str] | None = None) -> int:
    return network.counted_main(argv, "--ranks", USAGE, ranks.check_ranks, run)


if __name__ == "__main__":
    sys.exit(main())
