"""A training script's two sides, in one process, as a user writes them (tests/capture/test_run_config_capture.py):

    python run_config_capture.py PRECISION_MODE DROPOUT_RATE

- the NPU side's session config: the user's own NpuOptimizer with `precision_mode`, then tf_config's
  session_dump_config(config, action="dump") (it writes npu/debug_0/run_config.json);
- the golden side: a TF1 step with dropout, captured by PrecisionTfSession (tf/run_config.json).
The seed comes from $PRECISION_TOOL_SEED, read when tf_config is imported.
"""

import sys

import precision_tool.tf_config as npu_tf_config  # before TensorFlow
import numpy as np
import tensorflow as tf

from precision_tool.tf_session import PrecisionTfSession

mode, rate = sys.argv[1], float(sys.argv[2])
v1 = tf.compat.v1
npu_config = v1.ConfigProto()
custom = npu_config.graph_options.rewrite_options.custom_optimizers.add()
custom.name = "NpuOptimizer"
custom.parameter_map["precision_mode"].s = mode.encode()
npu_tf_config.session_dump_config(npu_config, action="dump")

graph = tf.Graph()
with graph.as_default():
    x = v1.placeholder(tf.float32, [4, 3], name="x")
    w = v1.get_variable("w", [3, 2], initializer=v1.initializers.glorot_uniform(seed=1))
    hidden = tf.nn.dropout(tf.matmul(x, w), rate=rate)
    loss = tf.reduce_mean(hidden * hidden)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    init = v1.global_variables_initializer()
session = PrecisionTfSession(graph=graph, config=npu_tf_config.golden_session_config())
session.run(init)
session.run(train_op, {x: np.ones((4, 3), np.float32)})
print("captured")
