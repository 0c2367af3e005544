"""A small Keras model trained 2 batches with PrecisionKerasCapture (capture) or under keras_dump (golden).

usage: capture_keras.py capture|golden RECORD_JSON
RECORD_JSON: the starting weights and the batches, so a test can compute the first step's loss.
"""

import json
import sys

import precision_tool.tf_config  # noqa: F401  (before TensorFlow)
import numpy as np
import tensorflow as tf

from precision_tool.capture.keras_capture import PrecisionKerasCapture, keras_dump

mode, record_path = sys.argv[1], sys.argv[2]
if mode == "golden":
    keras_dump()
model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(4, activation="relu", name="dense"),
                             tf.keras.layers.Dropout(0.5, name="drop"), tf.keras.layers.Dense(1, name="out")])
model.compile(tf.keras.optimizers.SGD(0.1), "mse")
rng = np.random.default_rng(0)
x = rng.random((8, 6)).astype("float32")
y = rng.random((8, 1)).astype("float32")
start = [w.tolist() for w in model.get_weights()]
callbacks = [PrecisionKerasCapture()] if mode == "capture" else []
model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=callbacks)
if mode == "golden":
    tf.debugging.experimental.disable_dump_debug_info()
with open(record_path, "w") as handle:
    json.dump({"start": start, "x": x.tolist(), "y": y.tolist()}, handle)
