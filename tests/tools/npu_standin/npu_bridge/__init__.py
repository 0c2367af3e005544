"""Stand-in of Huawei's npu_bridge (the TF1 side of the CANN TensorFlow adapter) for tests; see ../README.md."""
