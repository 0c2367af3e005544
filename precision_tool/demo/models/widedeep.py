"""Wide&Deep CTR training step (Cheng et al. 2016, as Ascend's model zoo trains it on Criteo) as a TF1 graph.

Built from `tf.nn` / `tf.math` ops and `tf.compat.v1.get_variable` resource variables (no Keras layers,
no feature columns or estimators):
- inputs as the model zoo feeds them: 13 dense Criteo features (log-transformed counts) and one hashed id
  per categorical field; `ids/add` shifts each field's ids by its offset into one shared vocabulary;
- wide part: a linear model, `wide/embedding` [vocab, 1] gathered by the ids (GatherV2) and summed over the
  fields, plus the dense features × `wide/dense_kernel` and a bias;
- deep part: `deep/embedding` [vocab, EMBEDDING] gathered by the same ids (GatherV2), flattened and
  concatenated with the dense features, ReLU layers (MatMul, BiasAdd, Relu), one output unit;
- logit = wide + deep, loss = mean tf.nn.sigmoid_cross_entropy_with_logits;
- the paper's optimizers: FTRL (with L1) on the wide variables, Adagrad on the deep ones, one gradient
  pass of the loss × a static loss scale (`loss_scale/mul`, unscaled per variable by
  `loss_scale/unscale_<variable>` as `model_graph.minimize_with_loss_scale` does), both updates in one
  `tf.group` (`train_op`), the only member of the TRAIN_OP collection.

The tables are gathered from a read of the variable (`table.value()`), so the lookups are GatherV2 as the
model zoo's ref variables give on the NPU (a resource variable's own gather would be ResourceGather). Their
gradients stay IndexedSlices: GatherV2's gradient (Size/ExpandDims/StridedSlice/ConcatV2 for the rows'
shape, Reshape of values and indices), then TF1's `_resource_apply_sparse_duplicate_indices` sums repeated
ids with Unique + UnsortedSegmentSum before ResourceSparseApplyFtrl / ResourceSparseApplyAdagrad (the batch
repeats ids, so the de-duplication matters). The dense variables get ResourceApplyFtrl / ResourceApplyAdagrad.

Sizes: "full": 26 fields, vocab 52,000 (26 × 2,000 hash buckets), embedding 16, MLP 1024-512-256, batch 256;
"reduced": 4 fields, vocab 10,000, embedding 16, MLP 64-32, batch 64 (the same op types).

Measured with TF 2.21 on 2 CPU cores (`python -m precision_tool.demo.models.widedeep`):
  full: 451 ops (GatherV2 2, Unique 2, UnsortedSegmentSum 2, ResourceSparseApplyFtrl 1,
        ResourceSparseApplyAdagrad 1, ResourceApplyFtrl 2, ResourceApplyAdagrad 8, MatMul 15, BiasAdd 5,
        Relu 3, ReluGrad 3); build 0.2-0.5 s, one step 0.07-0.15 s, first loss 0.772 (ln 2 = 0.693: the
        Glorot-initialised output unit starts at about +0.2); one step under a tfdbg dump of every tensor
        0.2-0.3 s: 242 tensors, 39 MB (the largest: the deep table's read, 3.3 MB, and the 1024×512 kernel);
  reduced: 404 ops (MatMul 12, BiasAdd 4, Relu 2, ResourceApplyAdagrad 6; the rest as full), first loss
        0.786; tfdbg dump 223 tensors, 1.4 MB.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

from precision_tool.demo.models.model_graph import NOT_RUN, SIZES, ModelGraph, graph_sha256, model_main, unscale

DENSE_FEATURES = 13  # Criteo's integer features I1..I13


@dataclass(frozen=True)
class Shape:
    """One size of the model."""

    fields: int  # categorical fields (Criteo: C1..C26)
    buckets: int  # hash buckets per field; the shared vocabulary is fields × buckets
    hidden: tuple[int, ...]  # the deep part's ReLU layers
    batch: int

    @property
    def vocab(self) -> int:
        return self.fields * self.buckets


SHAPES = {"full": Shape(fields=26, buckets=2_000, hidden=(1024, 512, 256), batch=256),
          "reduced": Shape(fields=4, buckets=2_500, hidden=(64, 32), batch=64)}
EMBEDDING = 16
WIDE_INIT_STDDEV = 0.01  # small but not zero: the wide path's forward tensors carry values worth comparing
LOSS_SCALE = 1024.0
FTRL_LEARNING_RATE = 0.1
FTRL_L1 = 1e-4  # the paper's wide part: FTRL with L1 regularisation
ADAGRAD_LEARNING_RATE = 0.05  # the canned DNNLinearCombinedClassifier's deep default
CLICK_RATE = 0.25  # about Criteo's share of clicks
GRAPH_SEED = 20160624  # the paper's arXiv date
DATA_SEED = 2024
# Reported by main() and checked by the test: the op types Wide&Deep's step is made of.
INTERESTING_OPS = ("GatherV2", "Unique", "UnsortedSegmentSum", "ResourceSparseApplyFtrl",
                   "ResourceSparseApplyFtrlV2", "ResourceSparseApplyAdagrad", "ResourceSparseApplyAdagradV2",
                   "ResourceScatterAdd", "ResourceApplyFtrl", "ResourceApplyAdagrad", "MatMul", "BiasAdd",
                   "Relu", "ReluGrad", "BiasAddGrad", "ConcatV2", "Sum", "GreaterEqual", "Select", "Exp",
                   "Log1p", "Mean")


def _tf() -> Any:
    import tensorflow as tf

    return tf


def input_batch(size: str = "full", seed: int = DATA_SEED) -> dict[str, Any]:
    """A fixed batch by placeholder name: log1p of heavy-tailed counts (many zeros, as Criteo's missing
    values), per-field hashed ids skewed towards the first buckets (popular ids repeat within the batch),
    and labels clicked with probability CLICK_RATE."""
    import numpy as np

    shape = SHAPES[size]
    rng = np.random.default_rng(seed)
    counts = np.floor(rng.lognormal(0.5, 1.5, (shape.batch, DENSE_FEATURES)))
    dense = np.log1p(counts).astype(np.float32)
    ids = np.floor(shape.buckets * rng.random((shape.batch, shape.fields)) ** 3).astype(np.int32)
    labels = (rng.random((shape.batch, 1)) < CLICK_RATE).astype(np.float32)
    return {"dense_features:0": dense, "sparse_ids:0": ids, "labels:0": labels}


def _dense(x: Any, units: int, activation: Any = None) -> Any:
    """A fully connected layer in the caller's variable scope: kernel (Glorot), bias, MatMul, BiasAdd."""
    tf = _tf()
    v1 = tf.compat.v1
    kernel = v1.get_variable("kernel", [int(x.shape[-1]), units], initializer=v1.initializers.glorot_uniform())
    bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
    out = tf.nn.bias_add(tf.matmul(x, kernel, name="MatMul"), bias, name="BiasAdd")
    return out if activation is None else activation(out, name="Relu")


def _wide(ids: Any, dense: Any, shape: Shape) -> Any:
    """The linear model: one weight per id (summed over the fields) + dense features × kernel + bias."""
    tf = _tf()
    v1 = tf.compat.v1
    init = v1.initializers.random_normal(0.0, WIDE_INIT_STDDEV)
    with v1.variable_scope("wide"):
        table = v1.get_variable("embedding", [shape.vocab, 1], initializer=init)
        kernel = v1.get_variable("dense_kernel", [DENSE_FEATURES, 1], initializer=init)
        bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
        weights = tf.gather(table.value(), ids, name="lookup")  # [batch, fields, 1]
        sparse = tf.reduce_sum(weights, axis=1, name="Sum")
        linear = tf.add(sparse, tf.matmul(dense, kernel, name="MatMul"), name="add")
        return tf.nn.bias_add(linear, bias, name="BiasAdd")


def _deep(ids: Any, dense: Any, shape: Shape) -> Any:
    """Embeddings of every field, concatenated with the dense features, through the ReLU MLP to one unit."""
    tf = _tf()
    v1 = tf.compat.v1
    with v1.variable_scope("deep"):
        # feature columns' embedding default: truncated normal with stddev 1/sqrt(dimension)
        init = v1.initializers.truncated_normal(0.0, 1.0 / math.sqrt(EMBEDDING))
        table = v1.get_variable("embedding", [shape.vocab, EMBEDDING], initializer=init)
        vectors = tf.gather(table.value(), ids, name="lookup")  # [batch, fields, EMBEDDING]
        flat = tf.reshape(vectors, [shape.batch, shape.fields * EMBEDDING], name="Reshape")
        h = tf.concat([flat, dense], axis=1, name="concat")
        for index, units in enumerate(shape.hidden, start=1):
            with v1.variable_scope(f"layer_{index}"):
                h = _dense(h, units, tf.nn.relu)
        with v1.variable_scope("output"):
            return _dense(h, 1)


def _train(scaled_loss: Any, wide_vars: list[Any], deep_vars: list[Any]) -> Any:
    """One gradient pass of the scaled loss, unscaled per variable (the naming of minimize_with_loss_scale),
    FTRL on the wide variables and Adagrad on the deep ones, grouped; the group alone is in TRAIN_OP."""
    tf = _tf()
    v1 = tf.compat.v1
    ftrl = v1.train.FtrlOptimizer(FTRL_LEARNING_RATE, l1_regularization_strength=FTRL_L1)
    adagrad = v1.train.AdagradOptimizer(ADAGRAD_LEARNING_RATE)
    # one backward pass for both parts (the canned estimator minimizes twice and builds it twice)
    grads_and_vars = adagrad.compute_gradients(scaled_loss, var_list=wide_vars + deep_vars)
    unscaled = {var.op.name: grad for grad, var in unscale(grads_and_vars, LOSS_SCALE)}
    global_step = v1.train.get_or_create_global_step()
    wide_update = ftrl.apply_gradients([(unscaled[v.op.name], v) for v in wide_vars], global_step=global_step)
    deep_update = adagrad.apply_gradients([(unscaled[v.op.name], v) for v in deep_vars])
    train_op = tf.group(wide_update, deep_update, name="train_op")
    v1.get_default_graph().get_collection_ref(v1.GraphKeys.TRAIN_OP)[:] = [train_op]  # not each half
    return train_op


def build(size: str = "full") -> ModelGraph:
    """Wide&Deep's training step of `size` (SHAPES) in a fresh graph (see the module doc)."""
    if size not in SIZES:
        raise ValueError(f"widedeep.build: size must be one of {', '.join(SIZES)}, not {size!r}")
    tf = _tf()
    v1 = tf.compat.v1
    shape = SHAPES[size]
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(GRAPH_SEED)  # every initializer's op seed follows from it and its op's id
        dense = v1.placeholder(tf.float32, [shape.batch, DENSE_FEATURES], name="dense_features")
        field_ids = v1.placeholder(tf.int32, [shape.batch, shape.fields], name="sparse_ids")
        labels = v1.placeholder(tf.float32, [shape.batch, 1], name="labels")
        with v1.name_scope("ids"):  # field i's buckets are rows i*buckets.. of the shared tables
            offsets = tf.constant([i * shape.buckets for i in range(shape.fields)], tf.int32, name="offsets")
            ids = tf.add(field_ids, offsets, name="add")
        wide = _wide(ids, dense, shape)
        deep = _deep(ids, dense, shape)
        logit = tf.add(wide, deep, name="logit")
        with v1.name_scope("loss"):
            xent = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logit, name="xent")
            loss = tf.reduce_mean(xent, name="Mean")
        with v1.name_scope("loss_scale"):
            scaled_loss = tf.multiply(loss, LOSS_SCALE, name="mul")
        train_op = _train(scaled_loss, v1.trainable_variables("wide"), v1.trainable_variables("deep"))
        init_op = v1.global_variables_initializer()
    hidden = "-".join(str(units) for units in shape.hidden)
    description = (f"Wide&Deep: {DENSE_FEATURES} dense + {shape.fields} sparse fields, vocab {shape.vocab:,}, "
                   f"embedding {EMBEDDING}, MLP {hidden}, batch {shape.batch}, FTRL (wide) + Adagrad (deep)")
    return ModelGraph(name="widedeep", size=size, graph=graph, train_op=train_op, loss=loss,
                      scaled_loss=scaled_loss, init_op=init_op, feeds=input_batch(size), loss_scale=LOSS_SCALE,
                      description=description)


def op_counts(graph: Any) -> dict[str, Any]:
    """The graph's op count and its INTERESTING_OPS by type."""
    types = Counter(op.type for op in graph.get_operations())
    return {"ops": sum(types.values()), "op_types": {name: types.get(name, 0) for name in INTERESTING_OPS}}


def main(argv: list[str] | None = None) -> int:
    """Build, initialise and run one training step; print one JSON line of sizes, op counts, loss, times and
    the graph's sha256 (`model_main`)."""
    return model_main(argv, "widedeep", build, _details)


def _details(model: ModelGraph) -> dict[str, Any]:
    ids = model.feeds["sparse_ids:0"]
    shape = SHAPES[model.size]
    return {"fields": shape.fields, "vocab": shape.vocab, "hidden": list(shape.hidden), "batch": shape.batch,
            **op_counts(model.graph),
            # ids the batch repeats within a field (what Unique + UnsortedSegmentSum fold together)
            "repeated_ids": int(ids.size - sum(len(set(column)) for column in ids.T.tolist())),
            "graph_sha256": graph_sha256(model.graph), "loss_scale": model.loss_scale,
            "description": model.description, **NOT_RUN}


if __name__ == "__main__":
    sys.exit(main())
