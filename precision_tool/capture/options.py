"""The exact adapter options for each capture action, as plain data (no TensorFlow here).

Why one place: tf_config applies these maps to a TF1 session (NpuOptimizer `parameter_map`), to an
Estimator (`DumpConfig` / `NPURunConfig` / `ProfilingConfig` keyword arguments) and to TF2
(`npu_device.global_options()`), docs/capture.md's option table is generated from them, and the tests
assert them against a stand-in of the adapter. Each option carries why it is set and where the fact comes
from (source keys as in ../shared/docs/capture.md: TFA = hicann/tensorflow, PT = Ascend/tools
precision_tool, GE = hicann/ge).

What the stack would refuse or silently mishandle is refused here, before training starts, in one line:
data dump together with overflow detection, fusion_off together with fusion_switch, a malformed
TF_DUMP_STEP, a dump_layer that is not text.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Union

from precision_tool.config import DUMP_FLAG_ENV, OVERFLOW_FLAG_ENV
from precision_tool.errors import ConfigError, UsageError
from precision_tool.workspace import Workspace

ACTIONS = ("dump", "overflow", "fusion_off", "fusion_switch", "prof")
DUMP_ENV = DUMP_FLAG_ENV  # the original's flags: with action=None, 'True' selects the action
OVERFLOW_ENV = OVERFLOW_FLAG_ENV
SEED_ENV = "PRECISION_TOOL_SEED"
DETERMINISM_ENV = "PRECISION_TOOL_OP_DETERMINISM"  # True/False; unset: on only where a GPU is visible
DEFAULT_SEED = 2022  # PT lib/config/config.py DUMP_SEED
OP_DEBUG_LEVEL = 4  # PT lib/config/config.py OP_DEBUG_LEVEL ("for previous version, set 0")
MAX_STEP_GROUPS = 100  # TFA npu_attrs.cc checkDumpStep

Value = Union[bool, int, str]


@dataclass(frozen=True)
class Option:
    """One adapter option: the NpuOptimizer key and AttrValue field (b/i/s), its value, where else it goes.

    `estimator` is 'DumpConfig.<kwarg>', 'NPURunConfig.<kwarg>' or 'ProfilingConfig.<kwarg>' (None: the
    Estimator path has no such option); `tf2` is the attribute path under npu_device.global_options()
    (None: TF2 has none)."""

    key: str
    kind: str
    value: Value
    why: str
    source: str
    estimator: str | None = None
    tf2: str | None = None


@dataclass(frozen=True)
class CapturePlan:
    """Everything one call of a tf_config helper sets, before anything is applied or written."""

    actions: frozenset[str]
    selected_by: str | None  # the environment flag that chose the action (action=None), else None
    options: tuple[Option, ...]
    folders: tuple[Path, ...]  # to create (and check writable) before the run
    fusion_file: str | None  # 'fusion_off' or 'fusion_switch': the workspace file to write first

    @property
    def parameter_map(self) -> dict[str, tuple[str, Value]]:
        """TF1 session: NpuOptimizer parameter_map key → (AttrValue field, value)."""
        return {o.key: (o.kind, o.value) for o in self.options}

    def estimator_kwargs(self, cls: str) -> dict[str, Value]:
        """Keyword arguments for the Estimator class `cls` (DumpConfig, NPURunConfig, ProfilingConfig)."""
        prefix = cls + "."
        return {o.estimator[len(prefix):]: o.value for o in self.options
                if o.estimator and o.estimator.startswith(prefix)}

    @property
    def global_options(self) -> dict[str, Value]:
        """TF2: attribute path under npu_device.global_options() → value."""
        return {o.tf2: o.value for o in self.options if o.tf2}


# --- sources (line numbers refer to the snapshots named in ../shared/docs/capture.md) ------------------
SRC_UPDATE = "PT lib/adapter/tf_adapter.py update_custom_op l.107-139"
SRC_TF2 = "PT tf_adapter.py npu_device_dump_config; TFA tf_adapter_2.x npu_device/configs/dump_config.py"
SRC_DUMP_CHECK = "TFA tf_adapter/util/npu_attrs.cc l.2049-2110, CheckPath l.314-327"
SRC_DEBUG_LEVEL = ("PT lib/config/config.py OP_DEBUG_LEVEL=4; TFA docs/en/tfadapter_1/apiref/npu_config/"
                   "npurunconfig_constructor/deprecated_options.md")
SRC_PROF = "PT tf_adapter.py update_custom_op (prof); TFA npu_estimator.py profiling loader, npu_config.py ProfilingConfig"
SRC_FUSION = "TFA docs session_config/accuracy_comparison.md; PT lib/config/fusion_off.cfg, fusion_switch.cfg"
SRC_GE_BOTH = "GE base/common/dump/dump_properties.cc InitByOptions l.227-253 (E10001)"
SRC_GRAPH_ENV = "PT tf_adapter.py _set_dump_graph_flags, lib/config/config.py DUMP_GE_GRAPH_VALUE/DUMP_GRAPH_LEVEL_VALUE"


def parse_actions(action: str | None) -> frozenset[str]:
    """'dump|fusion_off' → {'dump', 'fusion_off'}; an unknown word is a UsageError naming the known ones."""
    if action is None:
        return frozenset()
    if not isinstance(action, str):
        raise UsageError(f"tf_config: action must be a string such as 'dump|fusion_off', not "
                         f"{type(action).__name__}")
    words = {word.strip() for word in action.split("|") if word.strip()}
    unknown = sorted(words - set(ACTIONS))
    if unknown:
        raise UsageError(f"tf_config: unknown action {', '.join(unknown)}; use {', '.join(ACTIONS)} "
                         "combined with '|', e.g. 'dump|fusion_off'")
    return frozenset(words)


def env_flag(name: str, env: Mapping[str, str]) -> bool:
    """The original's flags are 'True' to switch on; true/1 are taken too, unset/''/False/false/0 are off."""
    raw = env.get(name, "").strip()
    if raw in ("", "False", "false", "0"):
        return False
    if raw in ("True", "true", "1"):
        return True
    raise ConfigError(f"environment variable {name}={raw!r} is neither True nor False; set {name}=True to "
                      f"switch it on, or unset it")


def resolve_actions(action: str | None, env: Mapping[str, str] | None = None) -> tuple[frozenset[str], str | None]:
    """The actions of a helper call: `action` when given (it wins), else what the environment flags
    PRECISION_TOOL_DUMP / PRECISION_TOOL_OVERFLOW select (npu_dump / npu_overflow set them)."""
    if action is not None:
        return parse_actions(action), None
    env = os.environ if env is None else env
    chosen = [(word, flag) for word, flag in (("dump", DUMP_ENV), ("overflow", OVERFLOW_ENV))
              if env_flag(flag, env)]
    if len(chosen) == 2:
        raise UsageError(f"both {DUMP_ENV} and {OVERFLOW_ENV} are True: " + BOTH_DUMPS)
    return frozenset(word for word, _ in chosen), (chosen[0][1] if chosen else None)


BOTH_DUMPS = ("data dump and overflow detection cannot run at once (the graph engine refuses with E10001); "
               "run twice: 'overflow' first to find the op that overflows, then 'dump' for its tensors")


def check_dump_step(step: str) -> str:
    """The adapter's dump_step grammar ('0', '0|5|10-20': at most 100 groups of digits or a<b ranges); the
    adapter only rejects a bad one when the NPU session starts (TFA npu_attrs.cc checkDumpStep)."""
    what = f"TF_DUMP_STEP {step!r} (config.py)"
    if not isinstance(step, str) or not step:
        raise ConfigError(f"{what}: give training steps such as '0' or '0|5|10-20'")
    groups = step.split("|")
    if len(groups) > MAX_STEP_GROUPS:
        raise ConfigError(f"{what}: {len(groups)} groups; the adapter takes at most {MAX_STEP_GROUPS}")
    for group in groups:
        ends = group.split("-")
        if len(ends) > 2 or not all(end.isascii() and end.isdigit() for end in ends):
            raise ConfigError(f"{what}: {group!r} is neither a step nor a range a-b; example '0|5|10-20'")
        if len(ends) == 2 and int(ends[0]) >= int(ends[1]):
            raise ConfigError(f"{what}: range {group!r} must go from a smaller to a larger step")
    return step


def _check_dump_layer(dump_layer: str | None) -> None:
    if dump_layer is not None and (not isinstance(dump_layer, str) or not dump_layer.strip()):
        raise UsageError("tf_config: dump_layer must be op names separated by spaces, e.g. 'conv1/Conv2D fc/MatMul'")


def profiling_options(workspace: Workspace) -> str:
    """The original's profiling_options JSON, output into the workspace (npu/debug_0/prof)."""
    return json.dumps({
        "output": str(workspace.profiling_dir(0)), "storage_limit": "1000MB", "training_trace": "on",
        "l2": "on", "hccl": "on", "task_trace": "on", "aicpu": "on", "fp_point": "", "bp_point": "",
        "aic_metrics": "PipeUtilization", "msproftx": "on"})


def plan(workspace: Workspace, action: str | None = None, dump_step: str = "0", dump_layer: str | None = None,
         env: Mapping[str, str] | None = None) -> CapturePlan:
    """The options for `action` (or the environment flags when it is None), checked; nothing is written."""
    actions, selected_by = resolve_actions(action, env)
    if {"dump", "overflow"} <= actions:
        raise UsageError("tf_config action 'dump|overflow': " + BOTH_DUMPS)
    if {"fusion_off", "fusion_switch"} <= actions:
        raise UsageError("tf_config action 'fusion_off|fusion_switch': one switch file per run; use fusion_off "
                         "(every pass off) to see whether fusion is to blame, then fusion_switch to bisect")
    if "dump" in actions:
        check_dump_step(dump_step)
    _check_dump_layer(dump_layer)
    ws = workspace
    debug_dir = str(ws.debug_dir(0))
    options = [
        Option("use_off_line", "b", True, "run the graph on the Ascend device (the NpuOptimizer's off-line mode)",
               "PT tf_adapter.py session_dump_config", None, None),
        Option("debug_dir", "s", debug_dir, "kernel build files (.o/.json/.cce) land in the workspace, not the "
               "working folder", SRC_UPDATE + "; TFA npurunconfig docs (debug_dir)", "NPURunConfig.debug_dir",
               "debug_dir"),
    ]
    folders = [ws.debug_dir(0)]
    level_why = ("level 4 keeps each kernel's .o/.json plus .cce and _compute.json for inspecting an op, "
                 "without level 2's -O0 -g kernels (slower, other code)")
    if "overflow" in actions:
        options += [
            Option("enable_dump_debug", "b", True, "overflow detection: dump the inputs/outputs of ops that overflow",
                   SRC_UPDATE, "DumpConfig.enable_dump_debug", "dump_config.enable_dump_debug"),
            Option("dump_debug_mode", "s", "all", "AI Core and atomic overflows; the only mode newer devices accept",
                   SRC_UPDATE + "; TFA npu_config.py DumpConfig", "DumpConfig.dump_debug_mode",
                   "dump_config.dump_debug_mode"),
            Option("dump_path", "s", str(ws.overflow_root), "where `ac` and `ni` read overflow dumps",
                   SRC_UPDATE + "; " + SRC_DUMP_CHECK, "DumpConfig.dump_path", "dump_config.dump_path"),
            Option("op_debug_level", "i", OP_DEBUG_LEVEL, level_why, SRC_DEBUG_LEVEL, "NPURunConfig.op_debug_level",
                   "op_debug_level"),
        ]
        folders.append(ws.overflow_root)
    if "dump" in actions:
        options += [
            Option("enable_dump", "b", True, "data dump of every op's tensors", SRC_UPDATE, "DumpConfig.enable_dump",
                   "dump_config.enable_dump"),
            Option("dump_mode", "s", "all", "inputs and outputs, so an op's inputs can be compared too",
                   SRC_UPDATE + "; TFA npu_attrs.cc checkDumpMode", "DumpConfig.dump_mode", "dump_config.dump_mode"),
            Option("dump_path", "s", str(ws.dump_root(0)), "where `vc` and `ni` read NPU dumps",
                   SRC_UPDATE + "; " + SRC_DUMP_CHECK, "DumpConfig.dump_path", "dump_config.dump_path"),
            Option("op_debug_level", "i", OP_DEBUG_LEVEL, level_why, SRC_DEBUG_LEVEL, "NPURunConfig.op_debug_level",
                   "op_debug_level"),
            Option("dump_step", "s", dump_step, "which steps to dump (config.py TF_DUMP_STEP, default the first)",
                   SRC_UPDATE + "; TFA npu_attrs.cc checkDumpStep l.266-294", "DumpConfig.dump_step",
                   "dump_config.dump_step"),
        ]
        if dump_layer is not None:
            options.append(Option("dump_layer", "s", dump_layer, "dump only these ops (names separated by spaces)",
                                  "TFA npu_config.py DumpConfig; npu_estimator.py __load_dump_config",
                                  "DumpConfig.dump_layer", "dump_config.dump_layer"))
        folders.append(ws.dump_root(0))
    for word, path in (("fusion_off", ws.fusion_off_file), ("fusion_switch", ws.fusion_switch_file)):
        if word in actions:
            why = ("every graph and UB fusion pass off: does fusion cause the difference?" if word == "fusion_off"
                   else "the workspace's template of the passes the run used; switch one off at a time")
            options.append(Option("fusion_switch_file", "s", str(path), why, SRC_FUSION,
                                  "NPURunConfig.fusion_switch_file", "fusion_switch_file"))
            folders.append(path.parent)
    if "prof" in actions:
        options += [
            Option("profiling_mode", "b", True, "profile the NPU run", SRC_PROF, "ProfilingConfig.enable_profiling",
                   "profiling_config.enable_profiling"),
            Option("profiling_options", "s", profiling_options(ws),
                   "the original's set: training/task trace, AI CPU, L2, HCCL, msproftx, 1000MB cap, into npu/debug_0/prof",
                   SRC_PROF, "ProfilingConfig.profiling_options", "profiling_config.profiling_options"),
        ]
        folders.append(ws.profiling_dir(0))
    options += _bisect_round_options(os.environ if env is None else env, fusion_set=any(
        o.key == "fusion_switch_file" for o in options))
    fusion = next((w for w in ("fusion_off", "fusion_switch") if w in actions), None)
    return CapturePlan(actions, selected_by, tuple(options), tuple(dict.fromkeys(folders)), fusion)


def _bisect_round_options(env: Mapping[str, str], *, fusion_set: bool) -> list[Option]:
    """A `bisect` round's files (its environment names them): the round's mixed-precision list and fusion
    switch file, so the user's training command runs the round without being edited."""
    from precision_tool.config import FUSION_SWITCH_ENV, MIXLIST_ENV

    found = []
    if env.get(MIXLIST_ENV):
        found.append(Option("modify_mixlist", "s", env[MIXLIST_ENV], "the bisect round's op types kept in float32 "
                            "(needs a mixed precision mode)", "PT bisect precision (docs/bisect.md)",
                            "NPURunConfig.modify_mixlist", "modify_mixlist"))
    if env.get(FUSION_SWITCH_ENV) and not fusion_set:
        found.append(Option("fusion_switch_file", "s", env[FUSION_SWITCH_ENV], "the bisect round's fusion passes "
                            "switched off", "PT bisect fusion (docs/bisect.md); " + SRC_FUSION,
                            "NPURunConfig.fusion_switch_file",
                            "fusion_switch_file"))
    return found


# --- graph dumps (GE and the TF2 adapter) -----------------------------------------------------------
def graph_dump_env(workspace: Workspace, env: Mapping[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """(variables to set, warnings): the graph-dump variables the workspace needs, the user's own values
    winning; a user value that hides the Build graph from the tool is named in a warning."""
    env = os.environ if env is None else env
    wanted = {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3", "DUMP_GRAPH_PATH": str(workspace.graph_dir(0)),
              "NPU_DUMP_GRAPH": "true"}
    to_set = {name: value for name, value in wanted.items() if name not in env}
    warnings = []
    if env.get("DUMP_GE_GRAPH", "2") not in ("1", "2"):
        warnings.append(f"DUMP_GE_GRAPH={env['DUMP_GE_GRAPH']} leaves op attributes out of the graph dump; "
                        "ni and vc need 1 or 2 (tf_config's default 2)")
    if env.get("DUMP_GRAPH_LEVEL", "3") == "4":
        warnings.append("DUMP_GRAPH_LEVEL=4 dumps only the earliest graph, not the Build graph the dumps belong "
                        "to; use 3 (tf_config's default) or 1")
    if "DUMP_GRAPH_PATH" in env and Path(env["DUMP_GRAPH_PATH"]) != workspace.graph_dir(0):
        warnings.append(f"DUMP_GRAPH_PATH={env['DUMP_GRAPH_PATH']}: the graphs go there, not to "
                        f"{workspace.graph_dir(0)}; copy the ge_proto_*_Build.txt files there before `vc`/`ni`")
    return to_set, warnings


GRAPH_ENV_ROWS = (
    ("DUMP_GE_GRAPH", "2", "GE dumps its graphs without weights (1 adds weights, 3 drops op attributes)"),
    ("DUMP_GRAPH_LEVEL", "3", "only the final built graph (ge_proto_*_Build.txt), the one dumps refer to"),
    ("DUMP_GRAPH_PATH", "precision_data/npu/debug_0/graph", "where `ni`, `vc` and `ac` look for graphs"),
    ("NPU_DUMP_GRAPH", "true", "TF2 adapter's own graph dump; read when npu_device is imported"),
)


def seed_from_env(env: Mapping[str, str] | None = None) -> int:
    """PRECISION_TOOL_SEED when set (an integer), else the original's 2022."""
    env = os.environ if env is None else env
    raw = env.get(SEED_ENV, "").strip()
    if not raw:
        return DEFAULT_SEED
    try:
        seed = int(raw)
    except ValueError:
        raise ConfigError(f"environment variable {SEED_ENV}={raw!r} is not an integer; give a seed such as "
                          f"{DEFAULT_SEED}, or unset it") from None
    if not 0 <= seed < 2**32:
        raise ConfigError(f"environment variable {SEED_ENV}={seed} is outside 0..4294967295 (numpy's range)")
    return seed


# --- the docs table (docs/capture.md embeds this text; tests/capture keeps the two equal) ----------------
TABLE_BEGIN = "<!-- option table: generated by precision_tool.capture.options.option_table_markdown() -->"
TABLE_END = "<!-- end of option table -->"


def _shown(value: Value) -> str:
    if isinstance(value, str) and value.startswith("{"):
        return "JSON below"
    return f"`{value}`" if value != "" else '`""`'


def option_table_markdown() -> str:
    """Action → option → value → TF2 / Estimator spelling → why → source, for a workspace ./precision_data
    (a workspace's root is absolute: the table shows its paths as they read from the training folder)."""
    ws = Workspace(Path("precision_data"))
    shown_root = str(ws.root)
    base = plan(ws, "")
    lines = [TABLE_BEGIN, "",
             "| action | `parameter_map` key (type) | value | TF2 `global_options().` | Estimator | why | source |",
             "|---|---|---|---|---|---|---|"]

    def row(action: str, option: Option) -> str:
        return (f"| {action} | `{option.key}` ({option.kind}) | {_shown(option.value)} | "
                f"{'`' + option.tf2 + '`' if option.tf2 else 'n/a'} | "
                f"{'`' + option.estimator + '`' if option.estimator else 'n/a'} | {option.why} | {option.source} |")

    lines += [row("any", option) for option in base.options]
    for action in ACTIONS:
        for option in plan(ws, action).options[len(base.options):]:
            lines.append(row(action, option))
    lines += ["", "`profiling_options` (prof):", "", "```json", profiling_options(ws), "```", "",
              "| variable | value | why |", "|---|---|---|"]
    lines += [f"| `{name}` | `{value}` | {why} |" for name, value, why in GRAPH_ENV_ROWS]
    lines += ["", f"Sources of the graph variables: {SRC_GRAPH_ENV}; TFA docs/en/tfa_env/NPU_DUMP_GRAPH.md. "
              f"Refused together: dump with overflow ({SRC_GE_BOTH}).", "", TABLE_END]
    return "\n".join(lines).replace(shown_root, "precision_data")
