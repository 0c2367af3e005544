"""Stand-in of npu_bridge.npu_init: the names training scripts import from it (a subset)."""

from npu_bridge.estimator.npu.npu_config import DumpConfig, NPURunConfig, ProfilingConfig  # noqa: F401
from npu_bridge.estimator.npu import npu_scope  # noqa: F401
