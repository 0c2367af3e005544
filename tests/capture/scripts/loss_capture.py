"""Small real trainings whose loss tf_config's hooks record (tests/capture/test_loss_capture.py).

usage: loss_capture.py MODE RECORD_JSON
MODE: session (PrecisionTfSession; the loss from tf.compat.v1.losses, in the LOSSES collection), hook
(MonitoredSession with npu_tf_config.loss_hook()), named (sess_dump's wrapper around a plain session; the loss
is a tensor called `objective`, named by $PRECISION_TOOL_LOSS, the gradient norm by $PRECISION_TOOL_GRAD_NORM),
eval (PrecisionTfSession; runs that fetch the loss without the train op are not steps), keras (model.fit with
PrecisionLossRecord). RECORD_JSON gets each training step's loss (and gradient norm) as the script saw it, and
the warnings the hooks gave.
"""

import json
import sys
import warnings

import precision_tool.tf_config as npu_tf_config  # before TensorFlow
import numpy as np
import tensorflow as tf

warnings.simplefilter("always")
mode, record_path = sys.argv[1], sys.argv[2]
v1 = tf.compat.v1
STEPS = 5
rng = np.random.default_rng(0)
xs = rng.normal(size=(STEPS, 8, 3)).astype(np.float32)
ys = rng.normal(size=(STEPS, 8, 1)).astype(np.float32)
losses, norms = [], []

with warnings.catch_warnings(record=True) as caught:
    if mode == "keras":
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")

        class Seen(tf.keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                losses.append(float(logs["loss"]))

        model.fit(xs.reshape(-1, 3), ys.reshape(-1, 1), batch_size=8, epochs=2, shuffle=False, verbose=0,
                  callbacks=[npu_tf_config.PrecisionLossRecord(), Seen()])
    else:
        graph = tf.Graph()
        with graph.as_default():
            x = v1.placeholder(tf.float32, [8, 3], name="x")
            y = v1.placeholder(tf.float32, [8, 1], name="y")
            w = v1.get_variable("w", [3, 1], initializer=v1.initializers.glorot_uniform(seed=1))
            prediction = tf.matmul(x, w)
            if mode == "named":
                loss = tf.reduce_mean(tf.square(prediction - y), name="objective")
            else:
                loss = v1.losses.mean_squared_error(y, prediction)  # in the LOSSES collection
            step = v1.train.get_or_create_global_step()
            grads = tf.gradients(loss, [w])
            grad_norm = tf.identity(tf.linalg.global_norm(grads), name="grad_norm")
            train = v1.train.GradientDescentOptimizer(0.1).apply_gradients(zip(grads, [w]), global_step=step)
            v1.add_to_collection(v1.GraphKeys.TRAIN_OP, train)
            init = v1.global_variables_initializer()
        config = npu_tf_config.golden_session_config(v1.ConfigProto())
        if mode == "hook":
            with graph.as_default():
                creator = v1.train.ChiefSessionCreator(config=config)
                with v1.train.MonitoredSession(session_creator=creator, hooks=[npu_tf_config.loss_hook()]) as sess:
                    for i in range(STEPS):
                        losses.append(float(sess.run([train, loss], {x: xs[i], y: ys[i]})[1]))
        else:
            if mode == "named":
                sess = npu_tf_config.sess_dump(v1.Session(graph=graph, config=config))
            else:
                sess = npu_tf_config.PrecisionTfSession(graph=graph, config=config)
            sess.run(init)
            for i in range(STEPS):
                if mode == "eval":
                    sess.run(loss, {x: xs[i], y: ys[i]})  # an evaluation: no step
                _, value, norm = sess.run([train, loss, grad_norm], {x: xs[i], y: ys[i]})
                losses.append(float(value))
                norms.append(float(norm))

with open(record_path, "w") as handle:
    json.dump({"losses": losses, "norms": norms, "warnings": [str(w.message) for w in caught]}, handle)
