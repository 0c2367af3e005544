"""Settings: defaults live here, a user's `config.py` overrides them, nothing is a mutable global.

A settings object is built once at start-up (`load_settings`) and passed to whatever needs it.
"""

from __future__ import annotations

import dataclasses
import os
import runpy
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from precision_tool.errors import ConfigError

CONFIG_ENV = "PRECISION_TOOL_CONFIG"
DATA_ENV = "PRECISION_DATA"
# Per-user folder for history and the log when there is no writable workspace.
HOME_ENV = "PRECISION_TOOL_HOME"
# The original's capture flags (its lib/config/config.py): with action=None, tf_config's configs dump
# (PRECISION_TOOL_DUMP=True) or detect overflow (PRECISION_TOOL_OVERFLOW=True); npu_dump/npu_overflow set them.
DUMP_FLAG_ENV = "PRECISION_TOOL_DUMP"
OVERFLOW_FLAG_ENV = "PRECISION_TOOL_OVERFLOW"
# `bisect`'s rounds: the modify_mixlist file and the fusion switch file of the round, which tf_config's
# NPU configs and the simulated NPU (`train -d sim`) use instead of the session's own.
MIXLIST_ENV = "PRECISION_TOOL_MODIFY_MIXLIST"
FUSION_SWITCH_ENV = "PRECISION_TOOL_FUSION_SWITCH"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True)
class Settings:
    """Every setting a user may change, with its default. `config.example.py` documents each one."""

    ROOT_DIR: str = "./precision_data"
    """The workspace (precision_data) folder. `--data DIR` and $PRECISION_DATA override it."""
    TF_DUMP_STEP: str = "0"
    """Training steps the NPU dumps, as the NpuOptimizer's dump_step: '0' or '0|5|10'."""
    CMD_ROOT_PATH: str = "/usr/local/Ascend"
    """CANN toolkit root; when it holds msaccucmp.py, `vc --backend auto` uses it."""
    LOG_LEVEL: str = "INFO"
    """Level of the log file under temp/ (DEBUG, INFO, WARNING, ERROR)."""
    NET_TYPE: str = "TF"
    """Framework of the golden run. Only 'TF' is supported."""
    COSINE_THRESHOLD: float = 0.98
    """An output whose cosine similarity is at or below this is abnormal (vcs, ac)."""
    WORKERS: int = 0
    """Worker processes for whole-network comparison; 0 means one per core."""
    DASK_SCHEDULER: str = ""
    """A Dask scheduler (tcp://HOST:PORT) that `vc` runs its comparisons on (`vc --scheduler` overrides it);
    empty: the local process pool. Needs `pip install precision-tool[dask]` and a filesystem the workers share."""
    # Replay (`ni -c`, `replay`, `ac -c`): how close the NPU output must be to TensorFlow's on the same
    # inputs to "agree", by the NPU tensor's dtype: cosine at least ..._COSINE, and the relative error
    # ||npu - tf|| / ||tf|| at most ..._ERROR (Inf/NaN must sit at the same places).
    REPLAY_FLOAT16_COSINE: float = 0.999
    """float16 keeps ~3 decimal digits; fused and reordered float16 arithmetic stays within this."""
    REPLAY_FLOAT16_ERROR: float = 0.01
    REPLAY_BFLOAT16_COSINE: float = 0.99
    """bfloat16 keeps ~2 decimal digits."""
    REPLAY_BFLOAT16_ERROR: float = 0.05
    REPLAY_FLOAT32_COSINE: float = 0.99999
    """float32 (and every other dtype): summation order alone stays well within this."""
    REPLAY_FLOAT32_ERROR: float = 0.0001
    LOSS_TOLERANCE: float = 0.01
    """The NPU run's loss curve parts from the golden one at the first step where |npu - golden| / |golden|
    exceeds this (`loss`, `ac`, the report; docs/steps.md#loss-curves)."""
    REPORT_TENSOR_LIMIT: int = 2000
    """The HTML report's op panels show both sides' statistics and an error histogram for at most this many
    outputs per comparison (each is read again): every abnormal one first, then the rest in execution order."""

    @property
    def root_dir(self) -> Path:
        return Path(self.ROOT_DIR).expanduser()

    @property
    def workers(self) -> int:
        return self.WORKERS if self.WORKERS > 0 else (os.cpu_count() or 1)


def user_state_dir() -> Path:
    """Where history and the log go when there is no (writable) workspace.

    $PRECISION_TOOL_HOME, else $XDG_STATE_HOME/precision_tool, else ~/.local/state/precision_tool;
    when neither $HOME nor the user database names a home folder, a per-user folder in the temp folder
    (gettempdir() raises OSError when there is no usable one). A folder here that cannot be written is
    the callers' concern: history then stays in memory, the log moves to the temp folder.
    """
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "precision_tool"
    try:
        return Path.home() / ".local" / "state" / "precision_tool"
    except (RuntimeError, KeyError):  # no $HOME and no passwd entry
        return Path(tempfile.gettempdir()) / f"precision_tool-{_uid()}"


def temp_log_file() -> Path:
    """The last place the log may go: <temp folder>/precision_tool-<uid>.log."""
    return Path(tempfile.gettempdir()) / f"precision_tool-{_uid()}.log"


def _uid() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def _check_value(name: str, value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, expected) or isinstance(value, bool) and expected is not bool:
        raise ConfigError(
            f"setting {name} must be {expected.__name__}, got {type(value).__name__} {value!r}"
        )
    return value


def settings_from_mapping(values: Mapping[str, Any], source: str = "config") -> Settings:
    """Validate user values by name; unknown keys and wrong types are errors that name the key."""
    known = {f.name: f for f in fields(Settings)}
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            close = [k for k in known if k.lower().startswith(name.lower()[:3])]
            hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known)}"
            raise ConfigError(f"{source}: unknown setting {name} ({hint})")
        expected = {"str": str, "float": float, "int": int}[str(known[name].type)]
        checked[name] = _check_value(f"{name} in {source}", value, expected)
    if checked.get("LOG_LEVEL", "INFO").upper() not in LOG_LEVELS:
        raise ConfigError(f"{source}: LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
    if "COSINE_THRESHOLD" in checked and not -1.0 <= checked["COSINE_THRESHOLD"] <= 1.0:
        raise ConfigError(f"{source}: COSINE_THRESHOLD must lie in [-1, 1]")
    for name, value in checked.items():
        if name.startswith("REPLAY_") and name.endswith("_COSINE") and not -1.0 <= value <= 1.0:
            raise ConfigError(f"{source}: {name} must lie in [-1, 1]")
        if name.startswith("REPLAY_") and name.endswith("_ERROR") and value < 0:
            raise ConfigError(f"{source}: {name} must not be negative")
    if checked.get("LOSS_TOLERANCE", 1.0) <= 0:
        raise ConfigError(f"{source}: LOSS_TOLERANCE must be above 0 (a relative difference, e.g. 0.01)")
    if checked.get("REPORT_TENSOR_LIMIT", 0) < 0:
        raise ConfigError(f"{source}: REPORT_TENSOR_LIMIT must not be negative")
    return Settings(**checked)


def read_config_file(path: Path) -> dict[str, Any]:
    """Run a Python config file and keep its UPPER_CASE names (the original's config.py style)."""
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist or is not a file")
    try:
        namespace = runpy.run_path(str(path))
    except SyntaxError as exc:
        raise ConfigError(
            f"config file {path} has a syntax error at line {exc.lineno}: {exc.msg}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from None
    except Exception as exc:  # the user's file raised while running
        raise ConfigError(
            f"config file {path} failed while running: {type(exc).__name__}: {exc}"
        ) from None
    return {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}


def find_config_file(env: Mapping[str, str], cwd: Path) -> Path | None:
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    local = cwd / "config.py"
    return local if local.is_file() else None


def load_settings(
    data_dir: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Defaults ← config file ← $PRECISION_DATA ← `--data`."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    values: dict[str, Any] = {}
    config_path = find_config_file(env, cwd)
    if config_path is not None:
        values = read_config_file(config_path)
    settings = settings_from_mapping(values, source=str(config_path or "config"))
    if data_dir is None and env.get(DATA_ENV):
        data_dir = env[DATA_ENV]
    if data_dir is not None:
        settings = dataclasses.replace(settings, ROOT_DIR=data_dir)
    return settings
