"""A small TF1-style network (tf.nn + get_variable) trained a few steps with tfdbg v1 dumping.

usage: python3 train_tf1.py sess|hook STEPS   (run with PRECISION_DATA set to the workspace)
tf_config is imported before tensorflow, as training scripts do.
"""

import sys

import precision_tool.tf_config as npu_tf_config  # noqa: I001  (must come before tensorflow)
import numpy as np
import tensorflow as tf


def build() -> tuple:
    tf.compat.v1.disable_eager_execution()
    images = tf.compat.v1.placeholder(tf.float32, [4, 8, 8, 3], name="images")
    labels = tf.compat.v1.placeholder(tf.int32, [4], name="labels")
    with tf.compat.v1.variable_scope("conv1"):
        w = tf.compat.v1.get_variable("w", [3, 3, 3, 8])
        b = tf.compat.v1.get_variable("b", [8], initializer=tf.compat.v1.constant_initializer(0.1))
        conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(images, w, 1, "SAME"), b))
    pool = tf.nn.max_pool2d(conv, 2, 2, "VALID", name="pool1")
    flat = tf.reshape(pool, [4, 4 * 4 * 8], name="flat")
    with tf.compat.v1.variable_scope("dense"):
        dw = tf.compat.v1.get_variable("w", [128, 5])
        db = tf.compat.v1.get_variable("b", [5])
        logits = tf.nn.bias_add(tf.matmul(flat, dw), db)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    half = tf.cast(conv, tf.bfloat16, name="relu_bf16")
    words = tf.constant(["a", "b"], name="words")
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    return images, labels, train, [loss, half, words]


def main() -> None:
    mode, steps = sys.argv[1], int(sys.argv[2])
    images, labels, train, fetches = build()
    rng = np.random.default_rng(0)
    feeds = [{images: rng.random((4, 8, 8, 3), dtype=np.float32), labels: rng.integers(0, 5, 4)}
             for _ in range(steps)]
    if mode == "sess":
        sess = tf.compat.v1.Session()
        sess.run(tf.compat.v1.global_variables_initializer())
        sess = npu_tf_config.sess_dump(sess)
        for feed in feeds:
            sess.run([train, *fetches], feed_dict=feed)
    else:
        with tf.compat.v1.train.MonitoredSession(hooks=[npu_tf_config.estimator_dump()]) as sess:
            for feed in feeds:
                sess.run([train, *fetches], feed_dict=feed)


if __name__ == "__main__":
    main()
