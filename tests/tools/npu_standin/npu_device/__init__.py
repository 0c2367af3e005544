"""Stand-in of Huawei's npu_device (the TF2 side of the CANN TensorFlow adapter) for tests; see ../README.md.

`global_options()` is the one process-wide NpuConfig; `open()` only records the options it would hand to
the graph engine (`as_dict()`), so a test can see what a real device would have been given."""

import threading

import import_record

import_record.record("npu_device")  # the real npu_device reads NPU_DUMP_GRAPH here, at import

import tensorflow  # noqa: E402,F401  (the real npu_device imports it)

from npu_device.configs.npu_config import NpuConfig  # noqa: E402

_global_options = None
_global_options_lock = threading.Lock()
opened_with = None  # the as_dict() given to open(), for tests


def global_options():
    """The process-wide options; set them before open()."""
    global _global_options
    if _global_options is None:
        with _global_options_lock:
            if _global_options is None:
                _global_options = NpuConfig()
    return _global_options


def open(device_id=None):  # noqa: A001  (the adapter's name)
    global opened_with
    opened_with = global_options().as_dict()
    return opened_with
