"""Hooks for training scripts: `import precision_tool.tf_config as npu_tf_config` (the original's API).

This module's whole point is TensorFlow, so it imports it. Import it at the top of the training script,
BEFORE tensorflow (and before npu_device): importing it imports capture/tf_setup.py, which sets
TensorFlow up for a step worth comparing (oneDNN off, GE's graph dumps into the workspace, seeds, and
grappler off on a CPU/GPU golden run; its docstring says each and why).
The helpers apply capture/options.py's maps for the actions dump, overflow, fusion_off, fusion_switch,
prof (combined with '|'; dump and overflow never together) — docs/capture.md lists every option and why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# First: it sets the environment TensorFlow reads when it is imported, then imports it.
from precision_tool.capture.tf_setup import (  # noqa: F401  (the original's API, re-exported)
    ACTIONS, DEFAULT_SEED, DUMP_FLAG, FUSION_OFF_FILE, FUSION_SWITCH_FILE, NPU_ADAPTER_PRESENT, NPU_BRIDGE_PRESENT,
    NPU_DEBUG_DIR, NPU_DUMP_DIR, NPU_GRAPH_DIR, OP_SOURCES_FILE, OVERFLOW_DUMP_DIR, OVERFLOW_FLAG, PROFILING_DIR,
    TF_DEBUG_DUMP_DIR, disable_graph_rewriter, golden_session_config, npu_device_dump_config, parse_actions, plan_for, prepare,
    record_golden, runs_as_written, say, seed_everything, session_dump_config, update_custom_op, want_op_determinism,
)
from precision_tool.capture.op_sources_capture import SourceRecorder
from precision_tool.errors import ConfigError, UsageError, WorkspaceError

import tensorflow as tf  # noqa: E402,I001  (already imported by tf_setup, after the environment was set)


def sess_dump(sess: Any) -> Any:
    """Wrap a tf.compat.v1 Session so every `run` dumps all tensors into precision_data/tf/tf_debug."""
    from tensorflow.python import debug as tf_debug

    root = Path(TF_DEBUG_DUMP_DIR)
    if root.is_dir() and any(root.iterdir()):
        raise WorkspaceError(f"{root} already holds dumps; run tf_dump on them first, then move or delete "
                             "the folder before dumping again")
    config = getattr(sess, "_config", None)
    if not NPU_ADAPTER_PRESENT and (config is None or not runs_as_written(config)):
        say("sess_dump: TensorFlow's graph optimizers still rewrite this session's graph (folded constants "
             "and merged ops get new names, so their golden tensors lose their NPU counterparts); create it "
             "with config=npu_tf_config.golden_session_config(config)")
    record_golden("sess_dump", getattr(sess, "graph", None))  # tf/run_config.json, for `ac` and config-diff
    recorder = SourceRecorder(OP_SOURCES_FILE, say)
    # each training step's loss into tf/loss.csv (a PrecisionTfSession inside records its own)
    watcher = None if getattr(sess, "records_loss", False) else _loss_watcher("sess_dump")

    class SourceRecordingSession(tf_debug.DumpingDebugWrapperSession):
        """tfdbg's dumping wrapper that also records where each op was created (the graph is alive here)."""

        def run(self, fetches: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.record(self.graph)
            extra = watcher.extra_fetches(self.graph, fetches) if watcher is not None else None
            if extra is None:
                return super().run(fetches, *args, **kwargs)
            results, values = super().run((fetches, extra), *args, **kwargs)
            watcher.record(values)
            return results

    return SourceRecordingSession(sess, TF_DEBUG_DUMP_DIR)


def estimator_dump() -> Any:
    """A DumpingDebugHook into precision_data/tf/tf_debug, for `hooks=[...]` of an Estimator or a
    `tf.compat.v1.train.MonitoredSession` (tf.estimator is gone from TensorFlow 2.16+)."""
    from tensorflow.python import debug as tf_debug

    recorder = SourceRecorder(OP_SOURCES_FILE, say)
    loss = _LossHookPart("estimator_dump")

    class SourceRecordingHook(tf_debug.DumpingDebugHook):
        """tfdbg's dumping hook that also records where each op was created, once the session exists, and
        each training step's loss into tf/loss.csv."""

        def after_create_session(self, session: Any, coord: Any) -> None:
            recorder.record(session.graph)
            record_golden("estimator_dump", session.graph)  # tf/run_config.json, for `ac` and config-diff
            super().after_create_session(session, coord)

        def before_run(self, run_context: Any) -> Any:
            dumping = super().before_run(run_context)
            extra = loss.extra_fetches(run_context)
            if extra is None:
                return dumping
            return tf.compat.v1.train.SessionRunArgs(fetches=extra, feed_dict=dumping.feed_dict,
                                                     options=dumping.options)

        def after_run(self, run_context: Any, run_values: Any) -> None:
            loss.record(run_values)
            super().after_run(run_context, run_values)

    return SourceRecordingHook(TF_DEBUG_DUMP_DIR)


def _loss_watcher(written_by: str) -> Any:
    """A watcher recording each training step's loss into this side's loss record (tf/loss.csv, or
    npu/debug_0/loss.csv on the NPU machine); None when the workspace cannot be known (said once)."""
    from precision_tool.capture.records import loss_recorder as lr
    from precision_tool.config import load_settings
    from precision_tool.workspace import Workspace

    try:
        path = lr.side_loss_file(Workspace(load_settings().root_dir.resolve()), NPU_ADAPTER_PRESENT)
        return lr.Tf1LossWatcher(lr.recorder_for(path, written_by))
    except Exception as error:  # noqa: BLE001 - no loss record; the training goes on
        say(f"{written_by}: the loss is not recorded: {error}")
        return None


class _LossHookPart:
    """The loss-recording half of a SessionRunHook: what to fetch with a training step, and its value."""

    def __init__(self, written_by: str) -> None:
        self.watcher = _loss_watcher(written_by)

    def extra_fetches(self, run_context: Any) -> Any:
        if self.watcher is None:
            return None
        return self.watcher.extra_fetches(run_context.session.graph, run_context.original_args.fetches)

    def record(self, run_values: Any) -> None:
        if self.watcher is not None:
            self.watcher.record(run_values.results)


def loss_hook() -> Any:
    """A SessionRunHook (Estimator `hooks=[...]`, MonitoredTrainingSession) that records each training step's
    loss — and the gradient norm $PRECISION_TOOL_GRAD_NORM names — into this side's loss record (tf/loss.csv;
    npu/debug_0/loss.csv on the NPU machine), for `loss`, `ac` and the report. $PRECISION_TOOL_LOSS names the
    loss tensor when it is not in the LOSSES collection or named loss (docs/steps.md#loss-curves)."""
    part = _LossHookPart("loss_hook")

    class LossHook(tf.compat.v1.train.SessionRunHook):
        def before_run(self, run_context: Any) -> Any:
            extra = part.extra_fetches(run_context)
            return None if extra is None else tf.compat.v1.train.SessionRunArgs(fetches=extra)

        def after_run(self, run_context: Any, run_values: Any) -> None:
            part.record(run_values)

    return LossHook()


def _npu_bridge_class(name: str) -> Any:
    if not NPU_BRIDGE_PRESENT:
        raise ConfigError(f"{name} comes from Huawei's npu_bridge package (the CANN TensorFlow adapter), which "
                          "is not installed; use session_dump_config on CPU-only machines")
    import npu_bridge.npu_init as npu_init  # type: ignore[import-not-found]

    return getattr(npu_init, name)


def _construct(cls: Any, name: str, kwargs: dict[str, Any]) -> Any:
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # an older adapter lacking an argument (dump_layer: TFA21)
        raise ConfigError(f"npu_bridge {name}({', '.join(kwargs)}) refused: {exc}; is the CANN TensorFlow "
                          "adapter older than these options?") from None


def estimator_dump_config(action: str | None = None, dump_layer: str | None = None) -> Any:
    """npu_bridge's DumpConfig for `NPURunConfig(dump_config=...)`; needs Huawei's npu_bridge package.
    For op_debug_level, debug_dir, the fusion switch file and profiling use estimator_run_config_kwargs."""
    cls = _npu_bridge_class("DumpConfig")
    plan = plan_for(action, dump_layer)
    prepare(plan)
    return _construct(cls, "DumpConfig", plan.estimator_kwargs("DumpConfig"))


def estimator_run_config_kwargs(action: str | None = None, dump_layer: str | None = None) -> dict[str, Any]:
    """Every NPURunConfig keyword argument for `action`: `NPURunConfig(**kwargs, session_config=...)` —
    dump_config, debug_dir, op_debug_level, fusion_switch_file and profiling_config."""
    dump_cls = _npu_bridge_class("DumpConfig")
    plan = plan_for(action, dump_layer)
    prepare(plan)
    kwargs: dict[str, Any] = dict(plan.estimator_kwargs("NPURunConfig"))
    kwargs["dump_config"] = _construct(dump_cls, "DumpConfig", plan.estimator_kwargs("DumpConfig"))
    profiling = plan.estimator_kwargs("ProfilingConfig")
    if profiling:
        kwargs["profiling_config"] = _construct(_npu_bridge_class("ProfilingConfig"), "ProfilingConfig", profiling)
    return kwargs


def _numpy_of(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def _loss_scale_of(optimizer: Any) -> Any:
    """NPU/Keras 2: `loss_scale`; Keras 3: `dynamic_scale` (a variable; `loss_scale_factor` reads it)."""
    for name in ("loss_scale", "dynamic_scale", "loss_scale_factor"):
        try:
            value = getattr(optimizer, name, None)
        except (AttributeError, ValueError, RuntimeError):  # a property failing before the first step
            value = None
        if value is not None and not callable(value):
            return value
    return None


class NpuPrintLossScaleCallBack(tf.keras.callbacks.Callback):
    """Every `every` batches, prints the loss scale and whether the step just done was finite
    (`last_step_finite`, the original's not_overflow_status); 'n/a' for what the optimizer lacks."""

    def __init__(self, optimizer: Any, loss: Any = None, every: int = 1) -> None:
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise UsageError(f"NpuPrintLossScaleCallBack: every must be a positive number of batches, not {every!r}")
        self.optimizer = optimizer
        self.loss = loss
        self.every = every

    def line(self, batch: int, logs: dict | None = None) -> str:
        scale = _loss_scale_of(self.optimizer)
        finite = getattr(self.optimizer, "last_step_finite", None)
        scale_text = "n/a" if scale is None else f"{float(_numpy_of(scale)):.3f}"
        finite_text = "n/a" if finite is None else str(bool(_numpy_of(finite)))
        text = f"PrecisionTool: step {batch}, loss_scale={scale_text}, last_step_finite={finite_text}"
        if logs and "loss" in logs:
            text += f", loss={float(logs['loss']):.6g}"
        return text

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if batch % self.every == 0:
            print(self.line(batch, logs), flush=True)  # noqa: T201 (a training-script hook)


# Capturing one step for `train` (docs/train.md), here so a training script needs this one import.
from precision_tool.capture.keras_capture import PrecisionKerasCapture, PrecisionLossRecord, keras_dump  # noqa: E402,F401
from precision_tool.capture.session import PrecisionTfSession  # noqa: E402,F401


MIX_PRECISION_MODES = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16")


def keep_in_float32(target: Any, ops_info: str | os.PathLike[str]) -> Any:
    """Apply a mixed-precision list (the fix/ops_info.json a replay writes: op types on the block list
    stay in float32) through the adapter's `modify_mixlist` option. `target`: the NpuOptimizer custom_op
    of a TF1 session config, or the npu_device module (TF2, before npu_device.open()); returns it.

    The adapter accepts modify_mixlist only under a mixed precision mode, so precision_mode becomes
    allow_mix_precision when none is set (a precision_mode_v2 already set is kept)."""
    path = Path(ops_info).expanduser().resolve()
    if not path.is_file():
        raise ConfigError(f"keep_in_float32: {path} does not exist; `ni -c OP` (or `ac -c`) writes fix/ops_info.json "
                          "when a replay finds a float16 precision problem")
    if hasattr(target, "parameter_map"):
        params = target.parameter_map
        params["modify_mixlist"].s = tf.compat.as_bytes(str(path))
        mode = params["precision_mode"].s.decode() if "precision_mode" in params else ""
        has_v2 = "precision_mode_v2" in params and params["precision_mode_v2"].s
        if not has_v2 and mode not in MIX_PRECISION_MODES:
            params["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
        return target
    if hasattr(target, "global_options"):
        options = target.global_options()

        def value(name: str) -> Any:  # the adapter's options are OptionValue objects holding .value
            option = getattr(options, name, None)
            return getattr(option, "value", option)

        try:
            options.modify_mixlist = str(path)
            if not value("precision_mode_v2") and value("precision_mode") not in MIX_PRECISION_MODES:
                options.precision_mode = "allow_mix_precision"
        except (AttributeError, TypeError, ValueError) as exc:
            raise ConfigError(f"npu_device.global_options().modify_mixlist refused: {exc}; is the CANN TensorFlow "
                              "adapter older than this option?") from None
        return target
    raise UsageError("keep_in_float32 needs the NpuOptimizer custom_op (TF1 session config) or the npu_device "
                     "module (TF2) as its first argument")
