"""Stand-ins of the checks the adapter and GE make in C++ when an NPU session starts, and of the Python
loader that turns an Estimator's DumpConfig into NpuOptimizer parameters. Tests run our maps through them
to show the real stack would accept them (and that it really refuses data dump plus overflow dump).

Each function names what it mirrors (hicann/tensorflow @82957b92, hicann/ge @ffdcbc9f)."""

import os

MAX_STEP_GROUPS = 100


class AdapterError(Exception):
    """What the adapter returns as errors::InvalidArgument / Internal, or aborts on with LOG(FATAL)."""


def load_dump_config(run_config):
    """npu_estimator.py NPUEstimator.__load_dump_config (l.552-580): parameter_map entries from
    NPURunConfig._dump_config. Both flags are always written; dump_debug_mode rides on dump_mode's test."""
    dump = run_config._dump_config
    if dump is None:
        return {"enable_dump": False, "enable_dump_debug": False}
    params = {"enable_dump": dump._enable_dump, "enable_dump_debug": dump._enable_dump_debug}
    for key, value in (("dump_path", dump._dump_path), ("dump_step", dump._dump_step),
                       ("dump_mode", dump._dump_mode)):
        if value is not None:
            params[key] = value
    if dump._dump_mode is not None:
        params["dump_debug_mode"] = dump._dump_debug_mode
    for key in ("dump_data", "dump_layer"):
        if getattr(dump, key) is not None:
            params[key] = getattr(dump, key)
    return params


def check_dump_step(step):
    """npu_attrs.cc checkDumpStep (l.266-294). Like the C++, an empty group passes (find_first_not_of on
    "" finds nothing), which our own check refuses."""
    groups = step.split("|")
    if len(groups) > MAX_STEP_GROUPS:
        raise AdapterError("dump_step only support dump <= 100 sets of data")
    for group in groups:
        ends = group.split("-")
        if len(ends) > 2 or not all(set(end) <= set("0123456789") for end in ends):
            raise AdapterError("dump_step string style is error, correct example:'0|5|10|50-100'")
        if len(ends) == 2 and int(ends[0] or 0) >= int(ends[1] or 0):
            raise AdapterError("in range steps, the first step is >= second step, correct example:'0|5|10-20'")


def check_npu_optimizer(params):
    """npu_attrs.cc SetNpuOptimizerAttr dump part (l.2049-2110, CheckPath l.314-327, dump_data l.2559-2566):
    `params` maps parameter_map keys to plain values."""
    enable_dump = bool(params.get("enable_dump", False))
    enable_debug = bool(params.get("enable_dump_debug", False))
    if enable_dump or enable_debug:
        if "dump_path" not in params:
            raise AdapterError("if use dump function, dump_path must be set.")
        path = params["dump_path"]
        if not os.path.isdir(path):
            raise AdapterError(f"the path {path} is not directory.")
        if not os.access(os.path.realpath(path), os.R_OK | os.W_OK):
            raise AdapterError(f"the path {path} does't have read, write permissions.")
    if enable_dump:
        if "dump_step" in params:
            check_dump_step(params["dump_step"])
        if "dump_mode" in params and params["dump_mode"] not in ("input", "output", "all"):
            raise AdapterError("dump mode should be one of the list:[input, output, all]")
    if enable_debug and "dump_debug_mode" in params and \
            params["dump_debug_mode"] not in ("aicore_overflow", "atomic_overflow", "all"):
        raise AdapterError("dump debug mode should be one of the list:[aicore_overflow, atomic_overflow, all]")
    if params.get("dump_data", "tensor") not in ("tensor", "stats"):
        raise AdapterError("dump_data should be one of the list:[tensor, stats]")
    if "op_debug_level" in params and params["op_debug_level"] not in (0, 1, 2, 3, 4):
        raise AdapterError("op_debug_level should be in [0, 4]")  # TF2's list; TF1 passes .i unchecked


def check_ge_dump_options(params):
    """GE base/common/dump/dump_properties.cc InitByOptions (l.227-253): ge.exec.enableDump and
    ge.exec.enableDumpDebug both "1" is error E10001. Values as the adapter hands them ("1"/"0" or bools)."""
    def on(key):
        return str(params.get(key, "0")) in ("1", "True")
    if on("enable_dump") and on("enable_dump_debug"):
        raise AdapterError("E10001: ge.exec.enableDump and ge.exec.enableDumpDebug cannot be enabled at the same time")
