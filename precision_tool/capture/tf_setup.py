"""TensorFlow set up for a step worth comparing, and the session configs of capture/options.py's plans.

Imported before TensorFlow (tf_config imports it for training scripts; replay_step and op_replay for
train's and replay's children), it
- sets `TF_ENABLE_ONEDNN_OPTS=0` (oneDNN would fuse Conv2D+BiasAdd+Relu on CPU) and, when Huawei's
  npu_bridge is absent (a CPU/GPU golden run), turns grappler off for the sessions created afterwards, so
  the golden dump keeps every original tensor (formats.md §6.1);
- sets the graph-dump variables (DUMP_GE_GRAPH=2, DUMP_GRAPH_LEVEL=3, DUMP_GRAPH_PATH, NPU_DUMP_GRAPH=true)
  where the user has not set them, so GE's Build graph lands in the workspace;
- seeds python, numpy and TensorFlow with 2022 ($PRECISION_TOOL_SEED overrides) and, where a GPU is
  visible, turns on TensorFlow's op determinism, so the golden run repeats itself (`want_op_determinism`).
Below tf_config so that capture/ never imports the training-script API above it.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import warnings
from pathlib import Path
from typing import Any

from precision_tool.capture import options as capture_options
from precision_tool.capture.records import run_config_record
from precision_tool.capture.fusion_switch import fusion_switch_note, write_fusion_off, write_fusion_switch
from precision_tool.config import load_settings
from precision_tool.errors import ConfigError, UsageError
from precision_tool.workspace import Workspace

_TF_ALREADY_IMPORTED = "tensorflow" in sys.modules
if not _TF_ALREADY_IMPORTED:
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
else:
    warnings.warn("precision_tool.tf_config was imported after tensorflow: oneDNN still fuses "
                  "Conv2D+BiasAdd on CPU, so the golden dump may lack tensors such as conv/Conv2D:0; "
                  "import precision_tool.tf_config before tensorflow", stacklevel=3)  # 3: the script's import line

ACTIONS = capture_options.ACTIONS
DEFAULT_SEED = capture_options.DEFAULT_SEED
DUMP_FLAG = capture_options.DUMP_ENV
OVERFLOW_FLAG = capture_options.OVERFLOW_ENV

_settings = load_settings()
_workspace = Workspace(_settings.root_dir.resolve())
TF_DEBUG_DUMP_DIR = str(_workspace.tf_debug_dir)
OP_SOURCES_FILE = str(_workspace.op_sources_file)  # where each golden op was created (formats/tf/op_sources.py)
NPU_DEBUG_DIR = str(_workspace.debug_dir(0))
NPU_DUMP_DIR = str(_workspace.dump_root(0))
NPU_GRAPH_DIR = str(_workspace.graph_dir(0))
OVERFLOW_DUMP_DIR = str(_workspace.overflow_root)
PROFILING_DIR = str(_workspace.profiling_dir(0))
FUSION_OFF_FILE = str(_workspace.fusion_off_file)  # written by the fusion_off action, never shipped
FUSION_SWITCH_FILE = str(_workspace.fusion_switch_file)  # a template of the run's passes; the user edits it
NPU_BRIDGE_PRESENT = importlib.util.find_spec("npu_bridge") is not None
# Either half of the CANN adapter means an NPU machine (a TF2-only install may ship npu_device alone)
NPU_ADAPTER_PRESENT = NPU_BRIDGE_PRESENT or importlib.util.find_spec("npu_device") is not None


def say(text: str) -> None:
    print(f"[PrecisionTool] {text}", file=sys.stderr, flush=True)  # noqa: T201 (a training-script hook)


# Graph dumps: read by GE when the NPU session starts and by npu_device when it is imported (so now).
_graph_env, _graph_warnings = capture_options.graph_dump_env(_workspace)
os.environ.update(_graph_env)
for _warning in _graph_warnings:
    say(_warning)
_SEED = capture_options.seed_from_env()
os.environ["PYTHONHASHSEED"] = str(_SEED)  # for child processes; this one's hashing is fixed at start-up

import tensorflow as tf  # noqa: E402  (TensorFlow is the point of this module; env must be set first)


def disable_graph_rewriter() -> None:
    """Keep every original op in sessions created from now on (no grappler fusion, no constant folding)."""
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


if not NPU_ADAPTER_PRESENT:  # a CPU/GPU golden run; on the NPU the NpuOptimizer is itself a grappler pass
    disable_graph_rewriter()


SEEDS_APPLIED: dict = {}  # the last seed_everything's seed, where it came from, op determinism on or off


def seed_everything(seed: int | None = None, op_determinism: bool | None = None) -> int:
    """Same seed for python, numpy and TensorFlow (default $PRECISION_TOOL_SEED, else 2022) — eager and the
    TF1 global graph alike; returns the seed. Op determinism (TF 2.9+): see `want_op_determinism`."""
    import numpy as np

    seed_arg = seed
    seed = capture_options.seed_from_env() if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise UsageError(f"seed_everything: seed must be an integer in 0..4294967295, not {seed!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    if hasattr(tf.random, "set_seed"):
        tf.random.set_seed(seed)
    else:  # TensorFlow 1.15 (the NPU adapter's TF1)
        tf.compat.v1.set_random_seed(seed)
    tf.compat.v1.get_default_graph().seed = seed  # the graph TF1-style code builds in (no eager seed there)
    enable = getattr(getattr(tf.config, "experimental", None), "enable_op_determinism", None)
    determinism = enable is not None and (want_op_determinism() if op_determinism is None else op_determinism)
    if determinism:
        enable()
    # What the run-config record reports (capture/records/run_config_record.py reads it from here).
    seed_from = "argument" if seed_arg is not None else (
        capture_options.SEED_ENV if os.environ.get(capture_options.SEED_ENV, "").strip() else "default")
    SEEDS_APPLIED.update(seed=seed, seed_from=seed_from, op_determinism=bool(determinism))
    return seed


def want_op_determinism() -> bool:
    """$PRECISION_TOOL_OP_DETERMINISM True/False decides; unset: on only when a GPU is visible.

    Why not always: TensorFlow's nondeterminism lives in GPU kernels, while op determinism also changes the
    graph (softmax cross-entropy, dense and sparse, is built from LogSoftmax instead of the fused op the
    NPU graph has, so the loss's golden tensors lose their NPU counterparts) and makes every random op in a
    graph without a seed raise. On CPU that is all cost and no gain."""
    flag = capture_options.DETERMINISM_ENV
    if os.environ.get(flag, "").strip():
        return capture_options.env_flag(flag, os.environ)
    listing = getattr(tf.config, "list_physical_devices", None) or tf.config.experimental.list_physical_devices
    try:  # TF 1.15 (the NPU's TF1) has only the experimental listing
        return bool(listing("GPU"))
    except (RuntimeError, ValueError):  # no device listing on this build
        return False


seed_everything()  # $PRECISION_TOOL_SEED or 2022, as _SEED above


def parse_actions(action: str | None) -> set[str]:
    """'dump|fusion_off' → {'dump', 'fusion_off'}; unknown words are an error naming the known ones."""
    return set(capture_options.parse_actions(action))


def plan_for(action: str | None, dump_layer: str | None = None) -> capture_options.CapturePlan:
    """The checked plan for `action`; then its folders and fusion file, in that order (a refused plan
    writes nothing)."""
    plan = capture_options.plan(_workspace, action, _settings.TF_DUMP_STEP, dump_layer)
    if plan.selected_by:
        say(f"{plan.selected_by}=True: {', '.join(sorted(plan.actions))} on")
    return plan


def prepare(plan: capture_options.CapturePlan) -> None:
    for folder in plan.folders:
        Workspace.ensure_dir(folder, "capture folder")
    if os.environ.get("DUMP_GRAPH_PATH") == NPU_GRAPH_DIR:
        Workspace.ensure_dir(Path(NPU_GRAPH_DIR), "graph folder")
    if plan.fusion_file == "fusion_off":
        say(f"fusion switch file {write_fusion_off(_workspace)}: every fusion pass off")
    elif plan.fusion_file == "fusion_switch":
        say(fusion_switch_note(write_fusion_switch(_workspace)))


def refuse_both_dumps(data_dump_on: bool, overflow_on: bool, plan: capture_options.CapturePlan, where: str) -> None:
    """The caller's own config may already switch on the other dump: refuse that pair too."""
    if ("dump" in plan.actions and overflow_on) or ("overflow" in plan.actions and data_dump_on):
        raise UsageError(f"{where} already has {'enable_dump_debug' if overflow_on else 'enable_dump'} on: "
                         + capture_options.BOTH_DUMPS)


def golden_session_config(config: Any = None) -> Any:
    """`config` (a tf.compat.v1.ConfigProto, default a new one) set to run the graph exactly as written, for
    the golden session: grappler off and the classic graph optimizer off. Why both: without grappler,
    TensorFlow's classic optimizer (opt_level L1, the default) folds constants and merges common
    subexpressions into new names (`add/_0__cf__0`), so those golden tensors lose their NPU counterparts;
    the context-wide switch set at import reaches only sessions made without a config, and only grappler.
    Seen on TF 1.15 and 2.x."""
    config = tf.compat.v1.ConfigProto() if config is None else config
    graph = config.graph_options
    graph.rewrite_options.disable_meta_optimizer = True
    graph.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    graph.optimizer_options.do_constant_folding = False
    return config


def runs_as_written(config: Any) -> bool:
    """Whether a session with this ConfigProto runs its graph unrewritten (see golden_session_config)."""
    graph = config.graph_options
    return bool(graph.rewrite_options.disable_meta_optimizer
                and graph.optimizer_options.opt_level == tf.compat.v1.OptimizerOptions.L0
                and not graph.optimizer_options.do_constant_folding)


def update_custom_op(custom_op: Any, action: str | None = None, dump_layer: str | None = None) -> Any:
    """Fill the NpuOptimizer custom optimizer's parameter map for `action` (None: the environment flags
    PRECISION_TOOL_DUMP / PRECISION_TOOL_OVERFLOW decide); returns it."""
    plan = plan_for(action, dump_layer)
    params = custom_op.parameter_map
    refuse_both_dumps("enable_dump" in params and params["enable_dump"].b,
                       "enable_dump_debug" in params and params["enable_dump_debug"].b, plan,
                       "the session config's NpuOptimizer")
    prepare(plan)
    for key, (kind, value) in plan.parameter_map.items():
        if kind == "s":
            params[key].s = tf.compat.as_bytes(value)
        elif kind == "b":
            params[key].b = value
        else:
            params[key].i = value
    record_npu_options(run_config_record.parameter_map_options(params), "update_custom_op")
    return custom_op


def record_npu_options(npu_options: dict, written_by: str) -> None:
    """npu/debug_0/run_config.json: the NPU side's options as the helper left them (PrecisionTfSession
    rewrites it with the session's full config when it captures a step); never stops the training."""
    run_config_record.write_quietly(_workspace, lambda: run_config_record.build(
        "npu", written_by, npu_options=npu_options))


def record_golden(written_by: str, graph: Any = None) -> None:
    """tf/run_config.json: the golden side's versions, seeds, environment (and dropout when a graph is
    given); never stops the training."""
    run_config_record.write_quietly(_workspace, lambda: run_config_record.build(
        "golden", written_by, dropout=None if graph is None else run_config_record.dropout_rates(graph)))


def session_dump_config(session_config: Any = None, action: str | None = None,
                        dump_layer: str | None = None) -> Any:
    """A ConfigProto with the NpuOptimizer custom optimizer set up for `action` (the original's API); a
    given config is updated in place (its NpuOptimizer reused) and returned."""
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

    config = session_config if isinstance(session_config, config_pb2.ConfigProto) else config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    custom_op = next((op for op in rewrite.custom_optimizers if op.name == "NpuOptimizer"), None)
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
    update_custom_op(custom_op, action, dump_layer)
    rewrite.remapping = rewriter_config_pb2.RewriterConfig.OFF  # as the NPU plugin requires
    return config


def npu_device_dump_config(npu_device: Any, action: str | None = None, dump_layer: str | None = None) -> Any:
    """TF2: set `npu_device.global_options()` for `action` (dump, overflow, fusion switch, profiling)
    before `npu_device.open()`; returns the module."""
    if npu_device is None or not hasattr(npu_device, "global_options"):
        raise UsageError("npu_device_dump_config needs the npu_device module (import npu_device) as its "
                         "first argument")
    plan = plan_for(action, dump_layer)
    options = npu_device.global_options()
    dump = getattr(options, "dump_config", None)
    refuse_both_dumps(_option_on(dump, "enable_dump"), _option_on(dump, "enable_dump_debug"), plan,
                       "npu_device.global_options().dump_config")
    prepare(plan)
    for path, value in plan.global_options.items():
        *parents, name = path.split(".")
        target = options
        try:
            for parent in parents:
                target = getattr(target, parent)
            setattr(target, name, value)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ConfigError(f"npu_device.global_options().{path} = {value!r} refused: {exc}; is the CANN "
                              "TensorFlow adapter older than this option?") from None
    # recorded under the TF1 parameter_map names, so a TF1 and a TF2 run's records compare key by key
    record_npu_options({**_global_options_in_force(options), **{o.key: o.value for o in plan.options if o.tf2}},
                       "npu_device_dump_config")
    return npu_device


# The TF2 options that decide the numbers, read back from npu_device.global_options() when it has them.
RECORDED_GLOBAL_OPTIONS = ("precision_mode", "precision_mode_v2", "modify_mixlist", "fusion_switch_file",
                           "op_debug_level", "op_select_implmode", "optypelist_for_implmode")


def _global_options_in_force(options: Any) -> dict:
    found = {}
    for name in RECORDED_GLOBAL_OPTIONS:
        option = getattr(options, name, None)
        value = getattr(option, "value", option)
        if isinstance(value, (str, int, float, bool)) and value != "":
            found[name] = value
    return found


def _option_on(config: Any, name: str) -> bool:
    """Whether an npu_device option is already on (its OptionValue reads '1'), tolerating other shapes."""
    option = getattr(config, name, None)
    value = getattr(option, "value", option)
    return value in (True, "1", "True")


