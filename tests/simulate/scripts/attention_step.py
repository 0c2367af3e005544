"""A user's TF1 training script: a one-layer transformer encoder (embedding lookup, self-attention with
BatchMatMul and softmax, layer norm from tf.nn.moments, a GELU feed-forward) trained with Adam and a
static loss scale, its session a PrecisionTfSession (so its first training step is captured).

    python attention_step.py LOSS_SCALE RECORD_JSON
"""

import json
import sys

import precision_tool.tf_config  # noqa: F401  (first: oneDNN off, seeds)
import numpy as np
import tensorflow as tf

from precision_tool.tf_session import PrecisionTfSession

v1 = tf.compat.v1
BATCH, SEQ, HIDDEN, HEADS, VOCAB, CLASSES = 4, 8, 32, 4, 64, 3


def layer_norm(x, scope):
    with v1.variable_scope(scope):
        gamma = v1.get_variable("gamma", [HIDDEN], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [HIDDEN], initializer=v1.zeros_initializer())
        mean, variance = tf.nn.moments(x, [-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(variance + 1e-6) * gamma + beta


def dense(x, units, scope):
    with v1.variable_scope(scope):
        w = v1.get_variable("kernel", [x.shape[-1], units], initializer=v1.initializers.glorot_uniform(seed=1))
        b = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        return tf.nn.bias_add(tf.matmul(x, w), b)


def main(loss_scale: float, record: str) -> None:
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(3)
        ids = v1.placeholder(tf.int32, [BATCH, SEQ], name="input_ids")
        labels = v1.placeholder(tf.int32, [BATCH], name="labels")
        table = v1.get_variable("embeddings", [VOCAB, HIDDEN], initializer=v1.initializers.random_normal(0, 1, seed=2))
        x = tf.reshape(tf.gather(table, ids), [BATCH * SEQ, HIDDEN])
        x = layer_norm(x, "embeddings_ln")
        q, k, v = (tf.transpose(tf.reshape(dense(x, HIDDEN, n), [BATCH, SEQ, HEADS, HIDDEN // HEADS]), [0, 2, 1, 3])
                   for n in ("query", "key", "value"))
        scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(HIDDEN // HEADS))
        context = tf.matmul(tf.nn.softmax(scores), v)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [BATCH * SEQ, HIDDEN])
        x = layer_norm(x + dense(context, HIDDEN, "attention_output"), "attention_ln")
        h = dense(x, 4 * HIDDEN, "intermediate")
        h = 0.5 * h * (1.0 + tf.math.erf(h / np.sqrt(2.0)))  # GELU, as BERT writes it
        x = layer_norm(x + dense(h, HIDDEN, "output"), "output_ln")
        logits = dense(tf.reduce_mean(tf.reshape(x, [BATCH, SEQ, HIDDEN]), axis=1), CLASSES, "classifier")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        optimizer = v1.train.AdamOptimizer(1e-3)
        scaled = loss * loss_scale
        grads = [(tf.IndexedSlices(g.values * (1.0 / loss_scale), g.indices, g.dense_shape)
                  if isinstance(g, tf.IndexedSlices) else g * (1.0 / loss_scale), var)
                 for g, var in optimizer.compute_gradients(scaled)]
        train_op = optimizer.apply_gradients(grads)
        init = v1.global_variables_initializer()
    rng = np.random.default_rng(5)
    feed = {"input_ids:0": rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32),
            "labels:0": rng.integers(0, CLASSES, BATCH).astype(np.int32)}
    session = PrecisionTfSession(graph=graph)
    session.run(init)
    _, value = session.run([train_op, loss], feed_dict=feed)
    with open(record, "w") as out:
        json.dump({"loss": float(value), "ops": len(graph.get_operations())}, out)


if __name__ == "__main__":
    main(float(sys.argv[1]), sys.argv[2])
