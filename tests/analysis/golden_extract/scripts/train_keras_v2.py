"""A small Keras model trained 2 steps with a tfdbg v2 FULL_TENSOR dump into argv[1]."""

import sys

import numpy as np
import tensorflow as tf


def main() -> None:
    tf.debugging.experimental.enable_dump_debug_info(sys.argv[1], tensor_debug_mode="FULL_TENSOR",
                                                     circular_buffer_size=-1)
    model = tf.keras.Sequential([tf.keras.Input((6,)),
                                 tf.keras.layers.Dense(4, activation="relu", name="dense"),
                                 tf.keras.layers.Dense(1, name="out")])
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    model.fit(rng.random((8, 6)), rng.random((8, 1)), batch_size=4, epochs=1, verbose=0, shuffle=False)
    tf.debugging.experimental.disable_dump_debug_info()


if __name__ == "__main__":
    main()
