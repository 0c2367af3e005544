"""Hooks for training scripts: `import precision_tool.tf_config as npu_tf_config` (the original's API).

Import it at the top of the training script, BEFORE tensorflow, so that a CPU/GPU golden run keeps every
original tensor (formats.md §6.1): importing sets `TF_ENABLE_ONEDNN_OPTS=0` (oneDNN would fuse
Conv2D+BiasAdd+Relu) and, when Huawei's npu_bridge is absent (a golden run), turns TensorFlow's graph
rewriter off for the sessions created afterwards (grappler would fuse MatMul+BiasAdd, etc.). It also
seeds python, numpy and TensorFlow and points GE graph dumps (DUMP_GE_GRAPH...) into the workspace.

Actions for the NPU run, combined with '|': dump, overflow, fusion_off, fusion_switch, prof.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import warnings
from pathlib import Path
from typing import Any

from precision_tool.config import load_settings
from precision_tool.errors import ConfigError, UsageError, WorkspaceError
from precision_tool.workspace import Workspace

_TF_ALREADY_IMPORTED = "tensorflow" in sys.modules
if not _TF_ALREADY_IMPORTED:
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
else:
    warnings.warn("precision_tool.tf_config was imported after tensorflow: oneDNN still fuses "
                  "Conv2D+BiasAdd on CPU, so the golden dump may lack tensors such as conv/Conv2D:0; "
                  "import precision_tool.tf_config before tensorflow", stacklevel=2)

import tensorflow as tf  # noqa: E402  (TensorFlow is the point of this module; env must be set first)

ACTIONS = ("dump", "overflow", "fusion_off", "fusion_switch", "prof")
DEFAULT_SEED = 0
_PACKAGE_DIR = Path(__file__).resolve().parent
FUSION_OFF_FILE = str(_PACKAGE_DIR / "fusion_switch" / "fusion_off.json")
FUSION_SWITCH_FILE = str(_PACKAGE_DIR / "fusion_switch" / "fusion_switch.json")

_settings = load_settings()
_workspace = Workspace(_settings.root_dir.resolve())
TF_DEBUG_DUMP_DIR = str(_workspace.tf_debug_dir)
NPU_DUMP_DIR = str(_workspace.dump_root(0))
NPU_GRAPH_DIR = str(_workspace.graph_dir(0))
OVERFLOW_DUMP_DIR = str(_workspace.overflow_root)
PROFILING_DIR = str(_workspace.root / "profiling")
NPU_BRIDGE_PRESENT = importlib.util.find_spec("npu_bridge") is not None

# GE writes its graphs where these say (read when the NPU session starts); the user's values win.
os.environ.setdefault("DUMP_GE_GRAPH", "2")
os.environ.setdefault("DUMP_GRAPH_LEVEL", "3")
os.environ.setdefault("DUMP_GRAPH_PATH", NPU_GRAPH_DIR)


def disable_graph_rewriter() -> None:
    """Keep every original op in sessions created from now on (no grappler fusion, no constant folding)."""
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


if not NPU_BRIDGE_PRESENT:  # a CPU/GPU golden run; on the NPU the NpuOptimizer is itself a grappler pass
    disable_graph_rewriter()


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Same seed for python, numpy and TensorFlow, so the golden and the NPU run start alike."""
    import numpy as np

    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)


seed_everything()


def parse_actions(action: str | None) -> set[str]:
    """'dump|fusion_off' → {'dump', 'fusion_off'}; unknown words are an error naming the known ones."""
    if not action:
        return set()
    words = {word.strip() for word in action.split("|") if word.strip()}
    unknown = sorted(words - set(ACTIONS))
    if unknown:
        raise UsageError(f"tf_config: unknown action {', '.join(unknown)}; use {', '.join(ACTIONS)} "
                         "combined with '|', e.g. 'dump|fusion_off'")
    return words


def _ensure(path: str) -> str:
    Workspace.ensure_dir(Path(path))
    return path


def sess_dump(sess: Any) -> Any:
    """Wrap a tf.compat.v1 Session so every `run` dumps all tensors into precision_data/tf/tf_debug."""
    from tensorflow.python import debug as tf_debug

    root = Path(TF_DEBUG_DUMP_DIR)
    if root.is_dir() and any(root.iterdir()):
        raise WorkspaceError(f"{root} already holds dumps; run tf_dump on them first, then move or delete "
                             "the folder before dumping again")
    return tf_debug.DumpingDebugWrapperSession(sess, TF_DEBUG_DUMP_DIR)


def estimator_dump() -> Any:
    """A DumpingDebugHook into precision_data/tf/tf_debug, for `hooks=[...]` of an Estimator or a
    `tf.compat.v1.train.MonitoredSession` (tf.estimator is gone from TensorFlow 2.16+)."""
    from tensorflow.python import debug as tf_debug

    return tf_debug.DumpingDebugHook(TF_DEBUG_DUMP_DIR)


def update_custom_op(custom_op: Any, action: str | None = None, dump_layer: str | None = None) -> Any:
    """Fill the NpuOptimizer custom optimizer's parameter map for the chosen actions; returns it."""
    actions = parse_actions(action)
    params = custom_op.parameter_map
    params["use_off_line"].b = True
    if "dump" in actions:
        params["enable_dump"].b = True
        params["dump_path"].s = tf.compat.as_bytes(_ensure(NPU_DUMP_DIR))
        params["dump_step"].s = tf.compat.as_bytes(_settings.TF_DUMP_STEP)
        params["dump_mode"].s = b"all"
        if dump_layer:
            params["dump_layer"].s = tf.compat.as_bytes(dump_layer)
    if "overflow" in actions:
        params["enable_dump_debug"].b = True
        params["dump_path"].s = tf.compat.as_bytes(_ensure(OVERFLOW_DUMP_DIR))
        params["dump_debug_mode"].s = b"all"
        params["op_debug_level"].i = 2
    if "fusion_off" in actions:
        params["fusion_switch_file"].s = tf.compat.as_bytes(FUSION_OFF_FILE)
    if "fusion_switch" in actions:
        params["fusion_switch_file"].s = tf.compat.as_bytes(FUSION_SWITCH_FILE)
    if "prof" in actions:
        params["profiling_mode"].b = True
        params["profiling_options"].s = tf.compat.as_bytes(json.dumps(
            {"output": _ensure(PROFILING_DIR), "training_trace": "on", "task_trace": "on", "aicpu": "on",
             "fp_point": "", "bp_point": ""}))
    if actions & {"dump", "overflow"}:
        _ensure(NPU_GRAPH_DIR)
    return custom_op


def session_dump_config(session_config: Any = None, action: str | None = None,
                        dump_layer: str | None = None) -> Any:
    """A ConfigProto with the NpuOptimizer custom optimizer set up for `action` (the original's API)."""
    from tensorflow.core.protobuf import rewriter_config_pb2

    config = session_config if session_config is not None else tf.compat.v1.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    custom_op = next((op for op in rewrite.custom_optimizers if op.name == "NpuOptimizer"), None)
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
    update_custom_op(custom_op, action, dump_layer)
    rewrite.remapping = rewriter_config_pb2.RewriterConfig.OFF  # as the NPU plugin requires
    return config


def estimator_dump_config(action: str | None = None) -> Any:
    """npu_bridge's DumpConfig for NPUEstimator; needs Huawei's npu_bridge package."""
    actions = parse_actions(action)
    if not NPU_BRIDGE_PRESENT:
        raise ConfigError("estimator_dump_config needs Huawei's npu_bridge package (the CANN TensorFlow "
                          "adapter), which is not installed; use session_dump_config on CPU-only machines")
    from npu_bridge.npu_init import DumpConfig  # type: ignore[import-not-found]

    if "dump" in actions:
        return DumpConfig(enable_dump=True, dump_path=_ensure(NPU_DUMP_DIR), dump_step=_settings.TF_DUMP_STEP,
                          dump_mode="all")
    if "overflow" in actions:
        return DumpConfig(enable_dump_debug=True, dump_path=_ensure(OVERFLOW_DUMP_DIR), dump_debug_mode="all")
    return DumpConfig()


def npu_device_dump_config(npu_device: Any, action: str | None) -> Any:
    """Set dump options on a TF2 `npu_device` (its global_options()); returns the device."""
    actions = parse_actions(action)
    if npu_device is None or not hasattr(npu_device, "global_options"):
        raise UsageError("npu_device_dump_config needs the npu_device module (import npu_device) as its "
                         "first argument")
    options = npu_device.global_options()
    if "dump" in actions:
        options.dump_config.enable_dump = True
        options.dump_config.dump_path = _ensure(NPU_DUMP_DIR)
        options.dump_config.dump_step = _settings.TF_DUMP_STEP
        options.dump_config.dump_mode = "all"
    if "overflow" in actions:
        options.dump_config.enable_dump_debug = True
        options.dump_config.dump_path = _ensure(OVERFLOW_DUMP_DIR)
        options.dump_config.dump_debug_mode = "all"
    if "fusion_off" in actions:
        options.fusion_switch_file = FUSION_OFF_FILE
    if "fusion_switch" in actions:
        options.fusion_switch_file = FUSION_SWITCH_FILE
    if "prof" in actions:
        options.profiling_config.enable_profiling = True
        options.profiling_config.profiling_options = json.dumps(
            {"output": _ensure(PROFILING_DIR), "training_trace": "on", "task_trace": "on"})
    if actions & {"dump", "overflow"}:
        _ensure(NPU_GRAPH_DIR)
    return npu_device


def _loss_scale_of(optimizer: Any) -> Any:
    for name in ("dynamic_scale", "loss_scale", "loss_scale_factor"):
        value = getattr(optimizer, name, None)
        if value is not None:
            return value
    return None


class NpuPrintLossScaleCallBack(tf.keras.callbacks.Callback):
    """Prints the loss scale (and loss) at each batch: a shrinking scale means overflow on the NPU."""

    def __init__(self, optimizer: Any, loss: Any = None) -> None:
        super().__init__()
        self.optimizer = optimizer
        self.loss = loss

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        scale = _loss_scale_of(self.optimizer)
        if scale is not None:
            value = scale.numpy() if hasattr(scale, "numpy") else scale
            print(f"Npu loss scale at batch {batch}: {value}")  # noqa: T201 (a training-script hook)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if logs and "loss" in logs:
            print(f"Npu loss at batch {batch}: {logs['loss']}")  # noqa: T201
