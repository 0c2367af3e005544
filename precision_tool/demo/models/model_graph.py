"""What every model builder of `demo --model` returns: one training step of a real architecture.

A builder (`resnet50.build`, `bert.build`, `widedeep.build`) makes a fresh tf.Graph in TF1 style
(placeholders, `tf.compat.v1.get_variable` resource variables, a `tf.compat.v1.train` optimizer whose
update op is in the TRAIN_OP collection), with fixed seeds so each build gives the same numbers. The batch
is fed through placeholders, so `PrecisionTfSession` captures it as the step's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

SIZES = ("full", "reduced")  # full: every layer of the original; reduced: the same op types, fewer repeats


@dataclass
class ModelGraph:
    """A built training step and the handles the golden run and the NPU simulation need."""

    name: str  # "resnet50", "bert", "widedeep"
    size: str  # one of SIZES
    graph: Any  # tf.Graph
    train_op: Any  # the update op (optimizer.minimize / apply_gradients: in the TRAIN_OP collection)
    loss: Any  # the scalar float32 loss (unscaled)
    scaled_loss: Any  # loss * loss_scale (the tensor the gradients are taken of); `loss` when loss_scale == 1
    init_op: Any  # initialises every variable
    feeds: dict[str, Any] = field(default_factory=dict)  # placeholder tensor name ('images:0') → np.ndarray
    loss_scale: float = 1.0  # the static loss scale built into the graph (1.0: none)
    description: str = ""  # one line: the architecture and its sizes (batch, image / sequence, hidden...)


def minimize_with_loss_scale(optimizer: Any, loss: Any, loss_scale: float) -> tuple[Any, Any]:
    """(train_op, scaled_loss): a static loss scale as TF's LossScaleOptimizer and the NPU's
    NPULossScaleOptimizer with a FixedLossScaleManager build it: `loss_scale/mul` = loss × scale, the
    gradients of that, each unscaled by `loss_scale/unscale_<variable>` (g × 1/scale; an embedding's
    IndexedSlices keeps its indices), then `apply_gradients` with a global step. Call it inside the
    model's graph; the update op lands in the TRAIN_OP collection."""
    import tensorflow as tf

    v1 = tf.compat.v1
    global_step = v1.train.get_or_create_global_step()
    if loss_scale == 1.0:
        return optimizer.minimize(loss, global_step=global_step), loss
    with v1.name_scope("loss_scale"):
        scaled = tf.multiply(loss, loss_scale, name="mul")
    grads_and_vars = [(g, v) for g, v in optimizer.compute_gradients(scaled) if g is not None]
    unscaled = unscale(grads_and_vars, loss_scale)
    return optimizer.apply_gradients(unscaled, global_step=global_step), scaled  # in TRAIN_OP: TF1 puts it there


def unscale(grads_and_vars: list[tuple[Any, Any]], loss_scale: float) -> list[tuple[Any, Any]]:
    """Each gradient times 1/scale, as `loss_scale/unscale_<variable>` (an embedding's IndexedSlices keeps
    its indices), in the scope of `loss_scale/mul`."""
    import tensorflow as tf

    unscaled = []
    with tf.compat.v1.name_scope("loss_scale/"):  # the same scope again (a trailing / re-enters it)
        reciprocal = tf.constant(1.0 / loss_scale, name="reciprocal")
        for grad, var in grads_and_vars:
            name = "unscale_" + var.op.name.replace("/", "_")
            if isinstance(grad, tf.IndexedSlices):
                grad = tf.IndexedSlices(tf.multiply(grad.values, reciprocal, name=name), grad.indices,
                                        grad.dense_shape)
            else:
                grad = tf.multiply(grad, reciprocal, name=name)
            unscaled.append((grad, var))
    return unscaled


def graph_sha256(graph: Any) -> str:
    """The GraphDef's hash; deterministic serialisation, or protobuf orders node attrs differently per process."""
    import hashlib

    return hashlib.sha256(graph.as_graph_def().SerializeToString(deterministic=True)).hexdigest()


def timed_step(session: Any, model: ModelGraph) -> dict[str, Any]:
    """Initialise the variables and run one training step in `session`: the seconds of each, and the loss of
    the step's forward pass (before the update)."""
    import time

    start = time.perf_counter()
    session.run(model.init_op)
    init_seconds = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    _, loss = session.run([model.train_op, model.loss], feed_dict=model.feeds)
    return {"init_seconds": init_seconds, "step_seconds": round(time.perf_counter() - start, 3), "loss": float(loss)}


NOT_RUN = {"loss": None, "init_seconds": None, "step_seconds": None}  # a report's step keys before the step


def model_main(argv: list[str] | None, name: str, build: Callable[[str], ModelGraph],
               details: Callable[[ModelGraph], dict[str, Any]],
               after_step: Callable[[Any, ModelGraph], dict[str, Any]] | None = None) -> int:
    """`python -m precision_tool.demo.models.<name> [--size full|reduced] [--no-run]`: build the model,
    initialise it and run one training step on CPU; print one JSON line: `details(model)` (its counts and
    sizes), the build's seconds, then the step's (`timed_step`, and `after_step`'s) unless --no-run."""
    import argparse
    import json
    import time

    parser = argparse.ArgumentParser(prog=f"python -m precision_tool.demo.models.{name}",
                                     description=f"Build {name} and run one training step on CPU.")
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--no-run", action="store_true", help="build and count only")
    args = parser.parse_args(argv)
    from precision_tool.capture import tf_setup  # before TensorFlow: oneDNN and grappler off, seeds
    import tensorflow as tf

    start = time.perf_counter()
    model = build(args.size)
    build_seconds = round(time.perf_counter() - start, 3)
    report: dict[str, Any] = {"model": model.name, "size": model.size, **details(model),
                              "build_seconds": build_seconds}
    if not args.no_run:
        with tf.compat.v1.Session(graph=model.graph, config=tf_setup.golden_session_config()) as session:
            report.update(timed_step(session, model))
            if after_step is not None:
                report.update(after_step(session, model))
    print(json.dumps(report))  # noqa: T201 (the module's command-line report)
    return 0
