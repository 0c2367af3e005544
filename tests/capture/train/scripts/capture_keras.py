"""A small Keras model trained 2 batches with PrecisionKerasCapture (capture) or under keras_dump (golden).

usage: capture_keras.py capture|golden|logs_fail RECORD_JSON
logs_fail: capture, with a callback that damages the manifest before the capture adds the first batch's
logs to it (the write must fail with a warning, and training go on).
RECORD_JSON: the starting weights and the batches, so a test can compute the first step's loss; the
warnings raised during fit and how many batches trained.
"""

import json
import sys
import warnings

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


class Damage(tf.keras.callbacks.Callback):
    """Runs before the capture's own batch-end: leaves a manifest that cannot be read back."""

    def __init__(self, capture: PrecisionKerasCapture) -> None:
        super().__init__()
        self.capture = capture

    def on_train_batch_end(self, batch, logs=None):
        if batch == 0:
            (self.capture.checkpoint_dir / "manifest.json").write_text("{")


class Count(tf.keras.callbacks.Callback):
    done = 0

    def on_train_batch_end(self, batch, logs=None):
        Count.done += 1


callbacks = []
if mode in ("capture", "logs_fail"):
    capture = PrecisionKerasCapture()
    callbacks = [Damage(capture), capture] if mode == "logs_fail" else [capture]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=[*callbacks, Count()])
if mode == "golden":
    tf.debugging.experimental.disable_dump_debug_info()
with open(record_path, "w") as handle:
    json.dump({"start": start, "x": x.tolist(), "y": y.tolist(), "batches_done": Count.done,
               "warnings": [str(w.message) for w in caught]}, handle)
