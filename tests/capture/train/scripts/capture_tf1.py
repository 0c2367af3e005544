"""A small TF1 training run through PrecisionTfSession (or a plain Session), 3 steps.

usage: capture_tf1.py MODE RECORD_JSON
MODE: feed (placeholders; keep_prob fed 0.5 and a rate-0.3 dropout), iterator (a tf.data one-shot
iterator), plain_feed (feed, with a plain tf.compat.v1.Session), finalized (feed, the graph finalized
before the first run: the capture cannot add its Saver), manual (no TRAIN_OP collection: the
update is a hand-made assign_sub), string_fetch (feed, and the loss also fetched as a string, which the
capture cannot save without pickle). RECORD_JSON gets what a test needs to check the capture: the starting
weights, each step's inputs and loss.
"""

import json
import sys

import precision_tool.tf_config  # noqa: F401  (before TensorFlow)
import numpy as np
import tensorflow as tf

from precision_tool.tf_session import PrecisionTfSession

v1 = tf.compat.v1
mode, record_path = sys.argv[1], sys.argv[2]
batches = [(np.arange(12, dtype=np.float32).reshape(4, 3) / (step + 1), np.full((4, 1), step, np.float32))
           for step in range(3)]
graph = tf.Graph()
with graph.as_default():
    v1.set_random_seed(1)
    if mode == "iterator":
        xs = np.concatenate([b[0] for b in batches])
        ys = np.concatenate([b[1] for b in batches])
        iterator = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices((xs, ys)).batch(4))
        x, y = iterator.get_next()
    else:
        x = v1.placeholder(tf.float32, [4, 3], name="x")
        y = v1.placeholder(tf.float32, [4, 1], name="y")
    keep_prob = v1.placeholder_with_default(1.0, [], name="keep_prob")
    w = v1.get_variable("w", [3, 1], initializer=v1.initializers.glorot_uniform(seed=1))
    b = v1.get_variable("b", [1], initializer=v1.initializers.random_normal(0.0, 0.5, seed=2))
    h = tf.nn.dropout(tf.matmul(x, w) + b, rate=0.3)
    h = v1.nn.dropout(h, keep_prob=keep_prob)
    loss = tf.reduce_mean(tf.square(h - y), name="loss")
    if mode == "manual":
        grad_w, grad_b = tf.gradients(loss, [w, b])
        train = tf.group(w.assign_sub(0.01 * grad_w), b.assign_sub(0.01 * grad_b), name="manual_train")
    else:
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
    init = v1.global_variables_initializer()
    if mode == "string_fetch":
        loss_text = tf.strings.as_string(tf.stack([loss, 2 * loss]), name="loss_text")  # an object array
if mode == "finalized":
    graph.finalize()
config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
session = v1.Session(graph=graph, config=config) if mode == "plain_feed" else PrecisionTfSession(graph=graph, config=config)
session.run(init)
start = {"w": session.run(w).tolist(), "b": session.run(b).tolist()}
losses = []
for step, (xb, yb) in enumerate(batches):
    feed = {keep_prob: 0.5} if mode == "iterator" else {x: xb, y: yb, keep_prob: 0.5}
    fetches = [train, loss, loss_text] if mode == "string_fetch" else [train, loss]
    losses.append(float(session.run(fetches, feed_dict=feed)[1]))
record = {"start": start, "losses": losses, "batches": [[xb.tolist(), yb.tolist()] for xb, yb in batches]}
with open(record_path, "w") as handle:
    json.dump(record, handle)
