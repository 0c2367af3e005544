"""ResNet-50 v1.5 and one training step of it, TF1 style, for `demo --model resnet50`.

Built from `tf.nn` ops and `tf.compat.v1.get_variable` resource variables (Keras 3 removed
`tf.compat.v1.layers`), as the original architecture (He et al. 2016, with torchvision's / NVIDIA's
"v1.5" change): conv1 7×7/2 (64) + batch norm + ReLU + max pool 3×3/2, then bottleneck stages of
[3, 4, 6, 3] blocks (widths 64/128/256/512, ×4 out), the stride 2 of stages 2-4 on the first block's
3×3 conv (v1.5; v1 has it on the 1×1), a projection shortcut (1×1 conv + BN) on each stage's first
block, global average pool (reduce_mean over H, W), a dense layer to the classes, mean softmax
cross-entropy on one-hot float32 labels. Every conv has no bias and is followed by
`fused_batch_norm(is_training=True)`: 53 conv+BN in all (1 + 16×3 + 4 projections). One step of
Momentum (lr 0.1, momentum 0.9) under a static loss scale of 512 (the fixed scale of Ascend's ResNet-50
model-zoo scripts).

Sizes (SIZES): "full" keeps every block and the real channel widths (64 … 2048, 23.5 M weights) on a
batch of 2 images 64×64×3 and 10 classes (64×64, not 32×32: stage 4 then still has 2×2 pixels, so each
of its batch norms averages 8 values, not 2); "reduced" (CI) has one block per stage ([1, 1, 1, 1]:
17 conv+BN) and a quarter of the widths (16 … 512), the same op types, batch and image.

Measured (TF 2.21 CPU, 2 cores, grappler and oneDNN off as tf_setup sets them):
- full: 3,902 graph ops: 53 each of Conv2D, FusedBatchNormV3, Conv2DBackpropFilter, Conv2DBackpropInput
  and FusedBatchNormGradV3; 49 Relu / ReluGrad; 1 MaxPool / MaxPoolGrad; 161 ResourceApplyMomentum
  (161 variables, 23.5 M weights). Build 1.5-3 s, init 0.6-0.8 s, one step 0.3-0.4 s, first loss 3.14
  (the two labels fall on low logits; ln 10 = 2.30). Under tfdbg's DumpingDebugWrapperSession (every
  tensor): one step 1.1-2.8 s, 2,110 tensors, 450 MB (weights, their gradients, the gradients' tuple
  identities and the unscaled gradients: 94 MB each);
- reduced: 1,304 graph ops (17 of each conv/BN type, 13 Relu, 53 ResourceApplyMomentum); build 0.4 s,
  one step 0.05 s, first loss 2.36; under tfdbg 0.6 s, 730 tensors, 16 MB.
At lr 0.1 a batch of 2 overshoots: the full model's loss after the step is 3.15 (lr 0.001: falls).

Not built: the moving mean/variance updates (they change neither the loss nor a gradient of the step)
and weight decay (1e-4 on the kernels would add 2.66 to the first loss, hiding ln(classes)). SAME
padding (a stride-2 conv pads one more row/column at the bottom/right), not the official model's
symmetric Pad + VALID: the same shapes without Pad ops.

`python -m precision_tool.demo.models.resnet50 [--size full|reduced] [--no-run]` builds it (and runs
one step) and prints one JSON line of counts, loss and timings.
"""

from __future__ import annotations

import sys
from typing import Any

from precision_tool.demo.models.model_graph import (SIZES, ModelGraph, graph_sha256, minimize_with_loss_scale,
                                                    model_main)

BATCH = 2
IMAGE_SIZE = 64
IMAGE_CHANNELS = 3
CLASSES = 10
LEARNING_RATE = 0.1
MOMENTUM = 0.9
LOSS_SCALE = 512.0  # Ascend's ResNet-50 scripts: a FixedLossScaleManager of 512
BN_EPSILON = 1e-5  # TF's official ResNet
DATA_SEED = 2024
GRAPH_SEED = 7
EXPANSION = 4  # a bottleneck block's output has 4× its width
BLOCKS = {"full": (3, 4, 6, 3), "reduced": (1, 1, 1, 1)}
BASE_WIDTH = {"full": 64, "reduced": 16}  # stage widths are base × 1, 2, 4, 8

# Op types the JSON line of main() counts: the forward, backward and update kernels of the step.
COUNTED_TYPES = (
    "Conv2D", "FusedBatchNormV3", "Relu", "MaxPool", "AddV2", "Mean", "MatMul", "BiasAdd",
    "SoftmaxCrossEntropyWithLogits", "Conv2DBackpropFilter", "Conv2DBackpropInput", "FusedBatchNormGradV3",
    "ReluGrad", "MaxPoolGrad", "BiasAddGrad", "ResourceApplyMomentum", "VarHandleOp", "ReadVariableOp",
    "Placeholder",
)


def conv_count(size: str) -> int:
    """The conv+BN pairs of `size`: conv1, three per block, one projection per stage."""
    return 1 + 3 * sum(BLOCKS[size]) + len(BLOCKS[size])


def description(size: str) -> str:
    base = BASE_WIDTH[size]
    return (f"ResNet-50 v1.5 ({size}): {conv_count(size)} conv+BN, bottleneck stages "
            f"[{','.join(map(str, BLOCKS[size]))}], widths {base}-{base * 8 * EXPANSION}, batch {BATCH}, "
            f"{IMAGE_SIZE}×{IMAGE_SIZE}×{IMAGE_CHANNELS}, {CLASSES} classes")


def input_batch(seed: int = DATA_SEED) -> tuple[Any, Any]:
    """A fixed batch: standard-normal images (NHWC, as after ImageNet's per-channel normalisation) and
    one-hot float32 labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    images = rng.standard_normal((BATCH, IMAGE_SIZE, IMAGE_SIZE, IMAGE_CHANNELS)).astype(np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH)]
    return images, labels


def _conv_bn(x: Any, filters: int, kernel_size: int, stride: int, scope: str, relu: bool = True) -> Any:
    """conv (no bias) → fused batch norm (batch statistics) → ReLU, variables and ops under `scope`."""
    import tensorflow as tf

    v1 = tf.compat.v1
    channels = int(x.shape[-1])
    with v1.variable_scope(scope):
        # He initialisation; the op seeds come from the graph seed, so every build draws the same weights
        kernel = v1.get_variable("kernel", [kernel_size, kernel_size, channels, filters],
                                 initializer=v1.initializers.variance_scaling(2.0, "fan_in", "truncated_normal"))
        # gamma 1 everywhere: a zero-initialised last gamma per block would zero the branch's conv gradients
        gamma = v1.get_variable("gamma", [filters], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [filters], initializer=v1.zeros_initializer())
        h = tf.nn.conv2d(x, kernel, stride, "SAME", name="Conv2D")
        h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, epsilon=BN_EPSILON, is_training=True,
                                        name="FusedBatchNormV3")
        if relu:
            h = tf.nn.relu(h, name="Relu")
    return h


def _bottleneck(x: Any, width: int, stride: int, project: bool, scope: str) -> Any:
    """1×1 (width) → 3×3/stride (width) → 1×1 (4·width), plus the shortcut, then ReLU."""
    import tensorflow as tf

    with tf.compat.v1.variable_scope(scope):
        # the projection strides with the block, so both branches meet at the same size
        shortcut = _conv_bn(x, EXPANSION * width, 1, stride, "shortcut", relu=False) if project else x
        h = _conv_bn(x, width, 1, 1, "conv1")
        h = _conv_bn(h, width, 3, stride, "conv2")  # v1.5: the stride on the 3×3
        h = _conv_bn(h, EXPANSION * width, 1, 1, "conv3", relu=False)
        return tf.nn.relu(tf.add(h, shortcut, name="add"), name="Relu")


def build_model(images: Any, labels: Any, blocks: tuple[int, ...], base_width: int) -> Any:
    """The network and its mean softmax cross-entropy (`loss/Mean`) in the default graph."""
    import tensorflow as tf

    v1 = tf.compat.v1
    h = _conv_bn(images, base_width, 7, 2, "conv1")
    with tf.name_scope("pool1"):
        h = tf.nn.max_pool2d(h, 3, 2, "SAME", name="MaxPool")
    for stage, repeats in enumerate(blocks, start=1):
        width = base_width * 2 ** (stage - 1)
        for block in range(1, repeats + 1):
            stride = 2 if stage > 1 and block == 1 else 1
            h = _bottleneck(h, width, stride, block == 1, f"stage{stage}/block{block}")
    with tf.name_scope("avg_pool"):
        h = tf.reduce_mean(h, [1, 2], name="Mean")
    with v1.variable_scope("fc"):
        # small logits, as TF's official ResNet initialises its dense layer: the first loss is ~ln(classes)
        weights = v1.get_variable("kernel", [int(h.shape[-1]), CLASSES],
                                  initializer=v1.initializers.random_normal(0.0, 0.01))
        bias = v1.get_variable("bias", [CLASSES], initializer=v1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(h, weights, name="MatMul"), bias, name="BiasAdd")
    with tf.name_scope("loss"):
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
        return tf.reduce_mean(xent, name="Mean")


def build(size: str = "full") -> ModelGraph:
    """A fresh graph of one ResNet-50 v1.5 training step; the batch in `feeds` ('images:0', 'labels:0')."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, not {size!r}")
    import tensorflow as tf

    v1 = tf.compat.v1
    images_value, labels_value = input_batch()
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(GRAPH_SEED)
        images = v1.placeholder(tf.float32, images_value.shape, name="images")
        labels = v1.placeholder(tf.float32, labels_value.shape, name="labels")
        loss = build_model(images, labels, BLOCKS[size], BASE_WIDTH[size])
        optimizer = v1.train.MomentumOptimizer(learning_rate=LEARNING_RATE, momentum=MOMENTUM)
        train_op, scaled_loss = minimize_with_loss_scale(optimizer, loss, LOSS_SCALE)
        init_op = v1.global_variables_initializer()
    return ModelGraph(name="resnet50", size=size, graph=graph, train_op=train_op, loss=loss,
                      scaled_loss=scaled_loss, init_op=init_op,
                      feeds={images.name: images_value, labels.name: labels_value},
                      loss_scale=LOSS_SCALE, description=description(size))


def main(argv: list[str] | None = None) -> int:
    """Build, initialise and run one training step; print one JSON line (counts, loss, seconds; `model_main`)."""
    return model_main(argv, "resnet50", build, _details, after_step=lambda session, model: {
        "loss_after": float(session.run(model.loss, feed_dict=model.feeds))})


def _details(model: ModelGraph) -> dict[str, Any]:
    import tensorflow as tf

    types = [op.type for op in model.graph.get_operations()]
    return {"description": model.description, "ops": len(types),
            "op_types": {name: types.count(name) for name in COUNTED_TYPES},
            "variables": len(model.graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)),
            "sha256": graph_sha256(model.graph)}


if __name__ == "__main__":
    sys.exit(main())
