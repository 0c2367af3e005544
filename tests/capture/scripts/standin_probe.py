"""Run tf_config against the adapter stand-in (tests/tools/npu_standin on PYTHONPATH) and print, as one
JSON line, every map it produced: refusals first (so the workspace must still be empty), then per action
the session parameter_map, the Estimator objects, and npu_device.global_options().as_dict()."""

import contextlib
import io
import json
import os
import sys

import precision_tool.tf_config as c  # noqa: I001  (before tensorflow and npu_device, as scripts do)
import adapter_checks
import npu_device
import tensorflow as tf
from npu_bridge.npu_init import NPURunConfig

from precision_tool.errors import PrecisionToolError

WS = os.environ["PRECISION_DATA"]
out = {"env": {k: os.environ.get(k) for k in ("DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH",
                                               "NPU_DUMP_GRAPH", "PYTHONHASHSEED")},
       "refused": {}, "actions": {}}


def session_map(config):
    op = config.graph_options.rewrite_options.custom_optimizers[0]
    found = {}
    for key, value in op.parameter_map.items():
        kind = value.WhichOneof("value")
        found[key] = [kind, getattr(value, kind).decode() if kind == "s" else getattr(value, kind)]
    return found


def fresh_tf2():
    npu_device._global_options = None
    return npu_device


def tf2_dict():
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        found = npu_device.global_options().as_dict()
    return found, printed.getvalue()


def refused(call):
    try:
        call()
    except PrecisionToolError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


already_overflow = tf.compat.v1.ConfigProto()
custom = already_overflow.graph_options.rewrite_options.custom_optimizers.add()
custom.name = "NpuOptimizer"
custom.parameter_map["enable_dump_debug"].b = True
out["refused"] = {
    "session": refused(lambda: c.session_dump_config(None, action="dump|overflow")),
    "estimator": refused(lambda: c.estimator_dump_config("overflow|dump")),
    "run_config": refused(lambda: c.estimator_run_config_kwargs("dump|overflow")),
    "tf2": refused(lambda: c.npu_device_dump_config(fresh_tf2(), "dump|overflow")),
    "fusion_both": refused(lambda: c.session_dump_config(None, action="fusion_off|fusion_switch")),
    "users_overflow_then_dump": refused(lambda: c.session_dump_config(already_overflow, action="dump")),
    "workspace_exists_after": os.path.exists(WS),
}
try:  # what GE would say to the pair, had we let it through
    adapter_checks.check_ge_dump_options({"enable_dump": "1", "enable_dump_debug": "1"})
except adapter_checks.AdapterError as exc:
    out["refused"]["ge"] = str(exc)

for action in ("", "dump", "overflow", "fusion_off", "fusion_switch", "prof", "dump|fusion_off|prof"):
    params = session_map(c.session_dump_config(None, action=action))
    run_config = NPURunConfig(**c.estimator_run_config_kwargs(action))
    loaded = adapter_checks.load_dump_config(run_config)
    adapter_checks.check_npu_optimizer(loaded)  # the adapter's C++ checks pass (dump path exists, modes, steps)
    adapter_checks.check_npu_optimizer({k: v for k, (_, v) in params.items()})
    adapter_checks.check_ge_dump_options(loaded)
    dump = c.estimator_dump_config(action)
    c.npu_device_dump_config(fresh_tf2(), action)
    tf2, printed = tf2_dict()
    profiling = run_config._profiling_config
    out["actions"][action] = {
        "session": params, "dump_config": vars(dump), "loaded": loaded,
        "run_config": {k: getattr(run_config, k) for k in ("op_debug_level", "_debug_dir", "_fusion_switch_file")},
        "profiling": None if profiling is None else vars(profiling),
        "tf2": tf2, "tf2_printed": printed,
    }

os.environ["PRECISION_TOOL_DUMP"] = "True"
out["env_dump"] = session_map(c.session_dump_config())
c.npu_device_dump_config(fresh_tf2())
out["env_dump_tf2"] = tf2_dict()[0]
del os.environ["PRECISION_TOOL_DUMP"]
if tf.__version__.startswith("2"):  # NpuLossScaleOptimizer is npu_device's, and npu_device needs TF2
    from npu_device.train.optimizer import NpuLossScaleOptimizer

    optimizer = NpuLossScaleOptimizer(None, initial_scale=1024)
    callback = c.NpuPrintLossScaleCallBack(optimizer, every=1)
    out["loss_scale_lines"] = [callback.line(0, {"loss": 2.5})]
    optimizer.step(finite=False)  # an overflowing step: the scale halves, last_step_finite goes False
    out["loss_scale_lines"].append(callback.line(1))
out["files"] = sorted(os.path.relpath(os.path.join(d, f), WS) for d, _, fs in os.walk(WS) for f in fs)
out["dirs"] = sorted(os.path.relpath(d, WS) for d, _, _ in os.walk(WS))
print(json.dumps(out))
sys.stdout.flush()
