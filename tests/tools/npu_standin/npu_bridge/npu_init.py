"""Stand-in of npu_bridge.npu_init: the names training scripts import from it (a subset). Like the real one
it imports TensorFlow; what the process looked like at that moment goes to import_record (tests)."""

import import_record

import_record.record("npu_bridge.npu_init")

import tensorflow  # noqa: E402,F401  (the real npu_init imports it, and so pins what was set before)

from npu_bridge.estimator.npu.npu_config import DumpConfig, NPURunConfig, ProfilingConfig  # noqa: E402,F401
from npu_bridge.estimator.npu import npu_scope  # noqa: E402,F401
