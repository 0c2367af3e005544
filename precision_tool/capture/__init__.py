"""The capture side: what training scripts and `train` set on the NPU adapter and TensorFlow to dump,
check overflow, switch fusion passes, profile, and replay one step (docs/capture.md)."""
