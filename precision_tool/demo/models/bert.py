"""BERT-base pre-training step (Google's modeling.py + run_pretraining.py heads) as a TF1 graph.

Built from `tf.nn` / `tf.math` ops and `tf.compat.v1.get_variable` resource variables, with Google's op
and variable names (`bert/encoder/layer_0/attention/self/query/MatMul`, `.../output/LayerNorm/gamma`):
- embeddings: word embeddings by `tf.gather` (GatherV2), token types by one-hot MatMul, positions by a
  slice of the position table, then LayerNorm (dropout rate 0, so no dropout ops);
- N transformer layers: query/key/value dense on [batch*seq, hidden], heads by Reshape/Transpose,
  scores = BatchMatMulV2 × 1/sqrt(head size) + (1 - mask) × -10000, Softmax, context = BatchMatMulV2,
  output dense, residual, LayerNorm; intermediate dense with GELU, output dense, residual, LayerNorm;
- LayerNorm as tf.contrib.layers.layer_norm builds it (tf.nn.moments + tf.nn.batch_normalization: Mean,
  SquaredDifference, Rsqrt, ...), GELU as modeling.py's current tanh approximation
  0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) (Pow, Tanh);
- pooler (first token → dense → tanh); heads of run_pretraining.py: masked LM on MASKED positions per
  sequence (gather → dense+GELU → LayerNorm → logits + bias; output weights untied, see _masked_lm_loss)
  and next sentence (2-way classification on the pooled output); loss = the mean sparse softmax
  cross-entropy of each, summed (`total_loss`);
- Adam (lr 1e-4) through `minimize_with_loss_scale` with a static loss scale of 2^12. Ascend's BERT
  scripts scale dynamically from 2^32 and back off on overflow; at 2^12 the first step's scaled loss
  (~31,000) and largest scaled gradient (~19,500, the MLM transform LayerNorm's variance gradient) stay
  under float16's 65504 (at 2^15 they would not).

Sizes: hidden 128, 4 heads, intermediate 512, vocab 1024, 64 positions, seq 32, batch 2, 5 masked
positions per sequence; size "full" has BERT-base's 12 layers, "reduced" 2 (the same op types).

The word embeddings take TF's v1 sparse Adam path: Unique + UnsortedSegmentSum de-duplicate the gathered
rows, m and v are scaled densely then updated by ResourceScatterAdd, the variable by a dense
AssignSubVariableOp (TF 2.21's v1 Adam builds no ResourceSparseApplyAdam). Every other variable gets
ResourceApplyAdam.

Measured with TF 2.21 on 2 shared CPU cores (`python -m precision_tool.demo.models.bert`):
  full: 10,463 ops; MatMul 231, BatchMatMulV2 72, Softmax 12, Tanh 14, Pow 26, Rsqrt 26,
        SquaredDifference 26, Mean 54, GatherV2 2, OneHot 1, SparseSoftmaxCrossEntropyWithLogits 2,
        Unique 1, UnsortedSegmentSum 2, ResourceScatterAdd 2, ResourceApplyAdam 206; build 3-10 s, one
        step 0.2-0.6 s, one step under a tfdbg dump of every tensor 2-3 s (6,179 tensors, 168 MiB);
  reduced: 2,523 ops; MatMul 51, BatchMatMulV2 12, Softmax 2, Tanh 4, Pow 6, Rsqrt 6, SquaredDifference 6,
        Mean 14, ResourceApplyAdam 46, the others as full; build 0.7-1.3 s, one step 0.07 s, under tfdbg
        0.9 s (1,509 tensors).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from typing import Any

from precision_tool.demo.models.model_graph import (NOT_RUN, SIZES, ModelGraph, graph_sha256, minimize_with_loss_scale,
                                                    model_main)

LAYERS = {"full": 12, "reduced": 2}
HIDDEN = 128
HEADS = 4
HEAD_SIZE = HIDDEN // HEADS
INTERMEDIATE = 512
VOCAB = 1024
TYPE_VOCAB = 2
MAX_POSITIONS = 64
SEQ = 32
BATCH = 2
MASKED = 5  # masked-LM predictions per sequence (BERT: 20 for seq 128)
INIT_RANGE = 0.02  # BERT's initializer_range (truncated normal)
LN_EPSILON = 1e-12  # modeling.layer_norm's (tf.contrib's) epsilon
LEARNING_RATE = 1e-4
LOSS_SCALE = 2.0 ** 12
GRAPH_SEED = 12345
DATA_SEED = 2024
# Reported by main() and checked by the test: the op types BERT's step is made of on the NPU side.
INTERESTING_OPS = ("MatMul", "BatchMatMulV2", "Softmax", "Tanh", "Pow", "Erf", "Rsqrt", "SquaredDifference",
                   "Mean", "GatherV2", "OneHot", "SparseSoftmaxCrossEntropyWithLogits", "Unique",
                   "UnsortedSegmentSum", "ResourceApplyAdam", "ResourceSparseApplyAdam", "ResourceScatterAdd")


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _weight(name: str, shape: list[int]) -> Any:
    tf = _tf()
    return tf.compat.v1.get_variable(name, shape, initializer=tf.compat.v1.truncated_normal_initializer(
        stddev=INIT_RANGE))


def _dense(x: Any, units: int, activation: Any = None) -> Any:
    """tf.layers.dense on a 2-D input, in the caller's variable scope: kernel, bias, MatMul, BiasAdd."""
    tf = _tf()
    kernel = _weight("kernel", [int(x.shape[-1]), units])
    bias = tf.compat.v1.get_variable("bias", [units], initializer=tf.compat.v1.zeros_initializer())
    out = tf.nn.bias_add(tf.matmul(x, kernel, name="MatMul"), bias, name="BiasAdd")
    return out if activation is None else activation(out)


def _gelu(x: Any) -> Any:
    """modeling.py's gelu (the tanh approximation its current version uses)."""
    tf = _tf()
    cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def _layer_norm(x: Any) -> Any:
    """tf.contrib.layers.layer_norm over the last axis as modeling.layer_norm calls it: moments, then
    batch_normalization's Rsqrt/Mul/Sub/Add, with beta/gamma in `LayerNorm`."""
    tf = _tf()
    v1 = tf.compat.v1
    with v1.variable_scope("LayerNorm"):
        beta = v1.get_variable("beta", [HIDDEN], initializer=v1.zeros_initializer())
        gamma = v1.get_variable("gamma", [HIDDEN], initializer=v1.ones_initializer())
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, LN_EPSILON)


def _heads(x: Any) -> Any:
    """[batch*seq, hidden] → [batch, heads, seq, head size] (modeling.transpose_for_scores)."""
    tf = _tf()
    return tf.transpose(tf.reshape(x, [BATCH, SEQ, HEADS, HEAD_SIZE]), [0, 2, 1, 3])


def _attention(x: Any, mask: Any) -> Any:
    """modeling.attention_layer (self-attention, in scope `self`); x is [batch*seq, hidden]."""
    tf = _tf()
    v1 = tf.compat.v1
    projections = {}
    for name in ("query", "key", "value"):
        with v1.variable_scope(name):
            projections[name] = _heads(_dense(x, HIDDEN))
    scores = tf.matmul(projections["query"], projections["key"], transpose_b=True)
    scores = tf.multiply(scores, 1.0 / math.sqrt(float(HEAD_SIZE)))
    # per layer, as modeling.py does: 0 where attended, -10000 on padding
    adder = (1.0 - tf.cast(tf.expand_dims(mask, axis=[1]), tf.float32)) * -10000.0
    probs = tf.nn.softmax(scores + adder)
    context = tf.transpose(tf.matmul(probs, projections["value"]), [0, 2, 1, 3])
    return tf.reshape(context, [BATCH * SEQ, HIDDEN])


def _encoder_layer(x: Any, mask: Any) -> Any:
    """One transformer layer (modeling.transformer_model's loop body) on [batch*seq, hidden]."""
    tf = _tf()
    v1 = tf.compat.v1
    with v1.variable_scope("attention"):
        with v1.variable_scope("self"):
            context = _attention(x, mask)
        with v1.variable_scope("output"):
            with v1.variable_scope("dense"):
                attended = _dense(context, HIDDEN)
            attended = _layer_norm(attended + x)
    with v1.variable_scope("intermediate"), v1.variable_scope("dense"):
        inner = _dense(attended, INTERMEDIATE, _gelu)
    with v1.variable_scope("output"):
        with v1.variable_scope("dense"):
            out = _dense(inner, HIDDEN)
        return _layer_norm(out + attended)


def _embeddings(input_ids: Any, token_type_ids: Any) -> Any:
    """The embedding output [batch, seq, hidden]: modeling.embedding_lookup and embedding_postprocessor,
    in scope `bert/embeddings`."""
    tf = _tf()
    table = _weight("word_embeddings", [VOCAB, HIDDEN])
    # gather on a read of the variable: GatherV2 as Google's BERT gets from its ref variable (tf.gather on
    # the resource variable itself would build ResourceGather)
    words = tf.gather(table.value(), tf.reshape(input_ids, [-1]))
    out = tf.reshape(words, [BATCH, SEQ, HIDDEN])
    type_table = _weight("token_type_embeddings", [TYPE_VOCAB, HIDDEN])
    one_hot = tf.one_hot(tf.reshape(token_type_ids, [-1]), depth=TYPE_VOCAB)
    out += tf.reshape(tf.matmul(one_hot, type_table), [BATCH, SEQ, HIDDEN])
    position_table = _weight("position_embeddings", [MAX_POSITIONS, HIDDEN])
    positions = tf.slice(position_table, [0, 0], [SEQ, -1])
    out += tf.reshape(positions, [1, SEQ, HIDDEN])
    return _layer_norm(out)


def _bert(input_ids: Any, input_mask: Any, token_type_ids: Any, layers: int) -> tuple[Any, Any]:
    """(sequence output [batch*seq, hidden], pooled output [batch, hidden]): modeling.BertModel."""
    tf = _tf()
    v1 = tf.compat.v1
    with v1.variable_scope("bert"):
        with v1.variable_scope("embeddings"):
            embedded = _embeddings(input_ids, token_type_ids)
        with v1.variable_scope("encoder"):
            # create_attention_mask_from_input_mask: [batch, seq (from), seq (to)]
            to_mask = tf.cast(tf.reshape(input_mask, [BATCH, 1, SEQ]), tf.float32)
            mask = tf.ones([BATCH, SEQ, 1], tf.float32) * to_mask
            x = tf.reshape(embedded, [-1, HIDDEN])
            for index in range(layers):
                with v1.variable_scope(f"layer_{index}"):
                    x = _encoder_layer(x, mask)
        with v1.variable_scope("pooler"):
            first_token = tf.squeeze(tf.reshape(x, [BATCH, SEQ, HIDDEN])[:, 0:1, :], axis=1)
            with v1.variable_scope("dense"):
                pooled = _dense(first_token, HIDDEN, tf.tanh)
    return x, pooled


def _masked_lm_loss(sequence: Any, positions: Any, label_ids: Any) -> Any:
    """run_pretraining.get_masked_lm_output: gather the masked positions, transform, logits; the mean
    sparse softmax cross-entropy (every label weight 1). The output weights are not tied to the word
    embeddings as run_pretraining.py ties them: TF 2.x sums a sparse and a dense gradient of one variable
    densely (add_n in backprop_util.AggregateIndexedSlicesGradients) where TF 1.x's gradients_util
    concatenated them as IndexedSlices, so here a tie would take the table off the sparse Adam path."""
    tf = _tf()
    v1 = tf.compat.v1
    offsets = tf.reshape(tf.range(0, BATCH, dtype=tf.int32) * SEQ, [-1, 1])
    picked = tf.gather(sequence, tf.reshape(positions + offsets, [-1]))  # gather_indexes
    with v1.variable_scope("cls/predictions"):
        with v1.variable_scope("transform"):
            with v1.variable_scope("dense"):
                picked = _dense(picked, HIDDEN, _gelu)
            picked = _layer_norm(picked)
        weights = _weight("output_weights", [VOCAB, HIDDEN])  # the word-embedding table's shape
        bias = v1.get_variable("output_bias", [VOCAB], initializer=v1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(picked, weights, transpose_b=True), bias)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(label_ids, [-1]),
                                                              logits=logits)
        return tf.reduce_mean(xent, name="loss")


def _next_sentence_loss(pooled: Any, labels: Any) -> Any:
    """run_pretraining.get_next_sentence_output: the 2-way classification head on the pooled output."""
    tf = _tf()
    v1 = tf.compat.v1
    with v1.variable_scope("cls/seq_relationship"):
        weights = _weight("output_weights", [2, HIDDEN])
        bias = v1.get_variable("output_bias", [2], initializer=v1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(pooled, weights, transpose_b=True), bias)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return tf.reduce_mean(xent, name="loss")


def input_batch(seed: int = DATA_SEED) -> dict[str, Any]:
    """A fixed pre-training batch keyed by placeholder tensor name: the second sequence is padded, each
    has two segments, the masked positions are distinct real tokens other than the first ([CLS])."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = [SEQ, SEQ - 7]
    input_ids = rng.integers(1, VOCAB, (BATCH, SEQ), dtype=np.int32)
    input_mask = np.zeros((BATCH, SEQ), np.int32)
    token_type_ids = np.zeros((BATCH, SEQ), np.int32)
    positions = np.zeros((BATCH, MASKED), np.int32)
    for row, length in enumerate(lengths):
        input_ids[row, length:] = 0
        input_mask[row, :length] = 1
        token_type_ids[row, length // 2:length] = 1
        positions[row] = np.sort(rng.choice(np.arange(1, length), MASKED, replace=False))
    return {"input_ids:0": input_ids, "input_mask:0": input_mask, "token_type_ids:0": token_type_ids,
            "masked_lm_positions:0": positions,
            "masked_lm_ids:0": rng.integers(1, VOCAB, (BATCH, MASKED), dtype=np.int32),
            "next_sentence_labels:0": rng.integers(0, 2, BATCH, dtype=np.int32)}


def build(size: str = "full") -> ModelGraph:
    """BERT's pre-training step with `LAYERS[size]` encoder layers in a fresh graph (see the module doc)."""
    if size not in SIZES:
        raise ValueError(f"bert.build: size must be one of {', '.join(SIZES)}, not {size!r}")
    tf = _tf()
    v1 = tf.compat.v1
    layers = LAYERS[size]
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(GRAPH_SEED)  # every initializer's op seed follows from it and its op's id
        input_ids = v1.placeholder(tf.int32, [BATCH, SEQ], name="input_ids")
        input_mask = v1.placeholder(tf.int32, [BATCH, SEQ], name="input_mask")
        token_type_ids = v1.placeholder(tf.int32, [BATCH, SEQ], name="token_type_ids")
        positions = v1.placeholder(tf.int32, [BATCH, MASKED], name="masked_lm_positions")
        label_ids = v1.placeholder(tf.int32, [BATCH, MASKED], name="masked_lm_ids")
        next_sentence = v1.placeholder(tf.int32, [BATCH], name="next_sentence_labels")
        sequence, pooled = _bert(input_ids, input_mask, token_type_ids, layers)
        loss = tf.add(_masked_lm_loss(sequence, positions, label_ids),
                      _next_sentence_loss(pooled, next_sentence), name="total_loss")
        optimizer = v1.train.AdamOptimizer(learning_rate=LEARNING_RATE)
        train_op, scaled_loss = minimize_with_loss_scale(optimizer, loss, LOSS_SCALE)
        init_op = v1.global_variables_initializer()
    description = (f"BERT-base: {layers} layers, hidden {HIDDEN}, {HEADS} heads, intermediate {INTERMEDIATE}, "
                   f"seq {SEQ}, batch {BATCH}, vocab {VOCAB}, {MASKED} masked positions per sequence")
    return ModelGraph(name="bert", size=size, graph=graph, train_op=train_op, loss=loss,
                      scaled_loss=scaled_loss, init_op=init_op, feeds=input_batch(), loss_scale=LOSS_SCALE,
                      description=description)


def op_counts(graph: Any) -> dict[str, Any]:
    """The graph's op count, its INTERESTING_OPS by type, and the forward Softmax ops (one per layer)."""
    ops = graph.get_operations()
    types = Counter(op.type for op in ops)
    forward_softmax = sum(op.type == "Softmax" and not op.name.startswith("gradients/") for op in ops)
    return {"ops": len(ops), "op_types": {name: types.get(name, 0) for name in INTERESTING_OPS},
            "forward_softmax": forward_softmax}


def main(argv: list[str] | None = None) -> int:
    """Build, initialise and run one training step; print one JSON line of op counts, loss, times and the
    graph's sha256 (`model_main`)."""
    return model_main(argv, "bert", build, lambda model: {
        "layers": LAYERS[model.size], **op_counts(model.graph), "graph_sha256": graph_sha256(model.graph),
        "loss_scale": model.loss_scale, "description": model.description, **NOT_RUN})


if __name__ == "__main__":
    sys.exit(main())
