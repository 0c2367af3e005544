from npu_device.train.optimizer.npu_loss_scale_optimizer import NpuLossScaleOptimizer  # noqa: F401
