"""A tiny TF1 training script for npu_dump/npu_overflow: prints the capture flags it sees and the options
tf_config builds for it with action=None, then trains two steps on the CPU and prints each loss."""

import os
import sys

import precision_tool.tf_config as npu_tf_config  # first, as the original's guide says
import tensorflow as tf

for name in ("PRECISION_TOOL_DUMP", "PRECISION_TOOL_OVERFLOW", "PRECISION_DATA"):
    print(f"flag {name}={os.environ.get(name, '<unset>')}", flush=True)
config = npu_tf_config.session_dump_config(None, action=None)
custom = [op for op in config.graph_options.rewrite_options.custom_optimizers if op.name == "NpuOptimizer"]
keys = sorted(custom[0].parameter_map) if custom else []
print("parameter_map keys: " + " ".join(keys), flush=True)

tf.compat.v1.disable_eager_execution()
x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.ones_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:  # on the CPU: the NPU config above is printed, not used
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(2):
        value, _ = sess.run([loss, train], {x: [[1.0, 2.0, 3.0]] * 4})
        print(f"step {step} loss {value:.4f}", flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
