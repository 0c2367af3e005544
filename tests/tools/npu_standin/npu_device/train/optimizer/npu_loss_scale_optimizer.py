"""Stand-in of npu_device.train.optimizer.NpuLossScaleOptimizer: what NpuPrintLossScaleCallBack reads.

The real one subclasses Keras 2's LossScaleOptimizer (`loss_scale`, a tensor) and adds `last_step_finite`
(a bool variable, False when the step's gradients overflowed). Here both are TensorFlow variables the test
sets; `step(finite)` mimics the dynamic update: a finite step keeps the scale, an overflow halves it."""

import tensorflow as tf


class NpuLossScaleOptimizer:
    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
        self.inner_optimizer = inner_optimizer
        self.dynamic = dynamic
        self._loss_scale = tf.Variable(float(initial_scale or 2 ** 15), trainable=False)
        self._last_step_finite = tf.Variable(True, trainable=False)

    @property
    def loss_scale(self):
        return self._loss_scale

    @property
    def last_step_finite(self):
        return self._last_step_finite

    def step(self, finite):
        self._last_step_finite.assign(finite)
        if not finite and self.dynamic:
            self._loss_scale.assign(tf.maximum(self._loss_scale / 2.0, 1.0))
