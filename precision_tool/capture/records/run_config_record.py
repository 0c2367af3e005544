"""Collect the run-config record of the running process and write it beside that side's dumps.

Called by the capture hooks (tf_config's sess_dump and session_dump_config / update_custom_op /
npu_device_dump_config, PrecisionTfSession, PrecisionKerasCapture), by `train -d sim` and by the demo.
What cannot be known here is recorded as null, never guessed: the CANN version without a toolkit's
version file, the adapter's version without npu_bridge / npu_device, dropout without a graph.
A record must never break a training: `write_quietly` turns any failure into a warning.
No TensorFlow import here (it is read from sys.modules when the script has imported it).
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any, Mapping

from precision_tool.formats.run_config import new_record, write_run_config
from precision_tool.workspace import Workspace

# Environment variables that change which kernels run or how they compute (prefixes and exact names).
ENV_PREFIXES = ("TF_", "ASCEND_", "NPU_", "GE_", "HCCL_", "OMP_", "MKL_", "KMP_", "ONEDNN_", "DNNL_",
                "PRECISION_TOOL_", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL")
ENV_NAMES = ("PYTHONHASHSEED", "CUDA_VISIBLE_DEVICES", "OP_NO_REUSE_MEM")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# Terraform's variables share the TF_ prefix and say nothing about TensorFlow.
TERRAFORM_PREFIXES = ("TF_VAR_", "TF_CLI_", "TF_TOKEN_", "TF_LOG", "TF_PLUGIN_", "TF_REGISTRY_", "TF_IN_AUTOMATION",
                      "TF_INPUT", "TF_WORKSPACE", "TF_DATA_DIR", "TF_IGNORE", "TF_APPEND_USER_AGENT")
# Options whose value is a file: the record keeps a digest of its content (the path alone says little).
FILE_OPTIONS = ("modify_mixlist", "fusion_switch_file")
# Where a CANN toolkit says its version: <toolkit>/<file>, "version=..." or "Version=..." lines.
CANN_ROOT_ENVS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
CANN_DEFAULT_ROOT = "/usr/local/Ascend/ascend-toolkit/latest"
CANN_VERSION_FILES = ("ascend_toolkit_install.info", "version.info", "compiler/version.info")


def recorded_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that matter, values as strings; never one whose name suggests a secret."""
    env = os.environ if env is None else env
    return {name: str(value) for name, value in sorted(env.items())
            if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES) and not name.startswith(TERRAFORM_PREFIXES)
            and not any(word in name.upper() for word in SECRET_WORDS)}


def _distribution_version(*names: str) -> str | None:
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7 (TF 1.15's): no importlib.metadata
        return None
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _module_version(module: str, *distributions: str) -> str | None:
    """The imported module's __version__ (what really runs), else the installed distribution's."""
    loaded = sys.modules.get(module)
    version = getattr(loaded, "__version__", None) if loaded is not None else None
    return str(version) if version else _distribution_version(*distributions)


def cann_version(env: Mapping[str, str] | None = None) -> str | None:
    """The toolkit's own version file under $ASCEND_TOOLKIT_HOME / $ASCEND_HOME_PATH / the default
    install, else None (no toolkit here: unknown, not guessed)."""
    env = os.environ if env is None else env
    roots = [env[name] for name in CANN_ROOT_ENVS if env.get(name)] + [CANN_DEFAULT_ROOT]
    for root in roots:
        for name in CANN_VERSION_FILES:
            try:
                text = (Path(root) / name).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition("=")
                if key.strip().lower() == "version" and value.strip():
                    return value.strip()
    return None


def software_versions(env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    from precision_tool import __version__ as tool_version

    return {"python": platform.python_version(),
            "tensorflow": _module_version("tensorflow", "tensorflow", "tensorflow-cpu", "tensorflow-gpu"),
            "numpy": _module_version("numpy", "numpy"),
            "tf_adapter": _module_version("npu_bridge", "npu_bridge", "npu-bridge", "npu_device", "npu-device"),
            "cann": cann_version(env),
            "precision_tool": str(tool_version)}


def seeds(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What tf_setup applied in this process (it records it), else what the environment asks for."""
    env = os.environ if env is None else env
    setup = sys.modules.get("precision_tool.capture.tf_setup")
    applied = dict(getattr(setup, "SEEDS_APPLIED", {}) or {})
    from precision_tool.capture.options import DEFAULT_SEED, SEED_ENV

    seed_from = SEED_ENV if env.get(SEED_ENV, "").strip() else "default"
    if "seed" not in applied:
        raw = env.get(SEED_ENV, "").strip()
        applied["seed"] = int(raw) if raw.isdigit() else (raw or DEFAULT_SEED)
    return {"seed": applied["seed"], "seed_from": applied.get("seed_from", seed_from),
            "op_determinism": applied.get("op_determinism"), "python_hash_seed": env.get("PYTHONHASHSEED")}


def file_digests(options: Mapping[str, Any]) -> dict[str, str]:
    """sha256 (16 hex) of each file an option names; 'missing' when it cannot be read."""
    digests = {}
    for key in FILE_OPTIONS:
        value = options.get(key)
        if isinstance(value, str) and value:
            try:
                digests[key] = hashlib.sha256(Path(value).read_bytes()).hexdigest()[:16]
            except OSError:
                digests[key] = "missing"
    return digests


def parameter_map_options(parameter_map: Any) -> dict[str, Any]:
    """An NpuOptimizer parameter_map (AttrValue protos) as plain values, strings decoded."""
    options = {}
    for key in sorted(parameter_map):
        value = parameter_map[key]
        which = value.WhichOneof("value")
        found = getattr(value, which) if which else None
        if isinstance(found, bytes):
            found = found.decode("utf-8", "replace")
        options[key] = found if isinstance(found, (str, int, float, bool, type(None))) else str(found)
    return options


def config_npu_options(config: Any) -> dict[str, Any]:
    """The NpuOptimizer options of a ConfigProto, {} when it has none (a golden session)."""
    rewrite = getattr(getattr(config, "graph_options", None), "rewrite_options", None)
    for custom in getattr(rewrite, "custom_optimizers", ()):
        if custom.name == "NpuOptimizer":
            return parameter_map_options(custom.parameter_map)
    return {}


def dropout_rates(graph: Any) -> list[dict[str, Any]]:
    """Each dropout of a TF1 graph (capture/dropout's pattern) with its rate: a number when it is a
    constant, 'computed' when it is fed or computed (keep_prob placeholders)."""
    from tensorflow.python.framework import tensor_util

    from precision_tool.capture.dropout import tf1_dropout_masks

    found = []
    for scope, threshold in tf1_dropout_masks(graph):
        value = tensor_util.constant_value(threshold)
        rate: Any = "computed"
        if value is not None and getattr(value, "size", 0) == 1:
            rate = round(float(value.reshape(-1)[0]), 6)
        found.append({"scope": scope, "rate": rate})
    return found


def keras_dropout_rates(model: Any) -> list[dict[str, Any]]:
    found = []
    stack = list(getattr(model, "layers", []))
    while stack:
        layer = stack.pop(0)
        stack.extend(getattr(layer, "layers", []))
        rate = getattr(layer, "rate", None)
        if "dropout" in type(layer).__name__.lower() and isinstance(rate, (int, float)):
            found.append({"scope": layer.name, "rate": round(float(rate), 6)})
    return found


def loss_scale_values(graph: Any, session: Any) -> dict[str, Any] | None:
    """Values of the graph's variables named loss_scale (the NPU loss scale managers' and Keras' own);
    None when there is none."""
    try:
        # a variable's own read tensor (`_graph_element`): reading adds no op to a graph that may be finalized
        found = [(v.op.name, getattr(v, "_graph_element", None)) for v in graph.get_collection("variables")
                 if "loss_scale" in v.op.name.lower()]
        found = [(name, tensor) for name, tensor in found if tensor is not None]
        if not found:
            return None
        values = session.run([tensor for _, tensor in found])
    except Exception:  # noqa: BLE001 - uninitialized, or not readable in this session: unknown
        return None
    return {name: round(float(x), 6) if getattr(x, "size", 1) == 1 else str(x)
            for (name, _), x in zip(found, values)}


def keras_loss_scale(optimizer: Any) -> dict[str, Any] | None:
    """A Keras mixed-precision optimizer's current loss scale (Keras 2/NPU: `loss_scale`, Keras 3:
    `dynamic_scale`); None when it has none."""
    for name in ("loss_scale", "dynamic_scale"):
        try:
            value = getattr(optimizer, name, None)
            value = value.numpy() if hasattr(value, "numpy") else value
            if value is not None and not callable(value):
                return {f"optimizer.{name}": round(float(value), 6)}
        except (AttributeError, TypeError, ValueError, RuntimeError):  # not a number yet, or not readable
            continue
    return None


def npu_adapter_present() -> bool:
    """The side a capture hook runs on: either half of the CANN adapter means the NPU machine."""
    import importlib.util

    return any(importlib.util.find_spec(name) is not None for name in ("npu_bridge", "npu_device"))


def workspace_of(checkpoint_dir: Path) -> Workspace:
    """The workspace a capture folder belongs to: <root>/tf/checkpoints → <root>; a folder elsewhere
    (checkpoint_dir=...) → the workspace the settings name."""
    folder = Path(checkpoint_dir)
    if folder.name == "checkpoints" and folder.parent.name == "tf":
        return Workspace(folder.parent.parent)
    from precision_tool.config import load_settings

    return Workspace(load_settings().root_dir.resolve())


def build(side: str, written_by: str, *, npu_options: Mapping[str, Any] | None = None, dropout: Any = None,
          loss_scale: Any = None, simulated: bool = False, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    options = dict(npu_options or {})
    return new_record(side, written_by, simulated=simulated, software=software_versions(env), npu_options=options,
                      file_digests=file_digests(options), seeds=seeds(env), dropout=dropout,
                      loss_scale=loss_scale, env=recorded_env(env))


def record_path(workspace: Workspace, side: str, debug_id: int = 0) -> Path:
    return workspace.golden_run_config_file if side == "golden" else workspace.run_config_file(debug_id)


def write(workspace: Workspace, record: dict[str, Any], debug_id: int = 0) -> Path:
    return write_run_config(record_path(workspace, record["side"], debug_id), record)


def write_quietly(workspace: Workspace, record_of: Any, debug_id: int = 0) -> Path | None:
    """`record_of()` built and written; any failure is a warning, the training goes on."""
    try:
        return write(workspace, record_of(), debug_id)
    except Exception as error:  # noqa: BLE001 - the record is an aid, never a reason to stop training
        warnings.warn(f"precision_tool: the run-config record was not written: {error}", stacklevel=3)
        return None
