"""The run-config record (run_config.json): what decided one side's numbers, as plain JSON.

Each capture side writes one beside its dumps (the workspace names where: Workspace.golden_run_config_file,
Workspace.run_config_file); `config-diff` and `ac` read two and compare them (analysis/checks/run_config_diff).
Written atomically, versioned; read back with every section checked, so a damaged or newer record is one
line naming the file, never a KeyError later. Plain JSON only: nothing is ever unpickled.

Sections (docs/run_config.md says what each holds and where it comes from):
  software    {name: version or null}      python, tensorflow, numpy, tf_adapter, cann, precision_tool
  npu_options {NpuOptimizer key: value}    the adapter options in force ({} on the golden side)
  file_digests {option: sha256 prefix}     content of the files modify_mixlist / fusion_switch_file name
  seeds       {seed, seed_from, op_determinism, python_hash_seed}
  dropout     [{scope, rate}] or null      null: no graph was seen, so dropout is unknown (not "none")
  loss_scale  {variable: value} or null
  env         {NAME: value}                the variables that change kernels (never secrets)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError

FORMAT_NAME = "precision_tool.run_config"
FORMAT_VERSION = 1
SIDES = ("golden", "npu")
SECTIONS: dict[str, tuple[type, ...]] = {  # section → the JSON types it may hold (None: unknown)
    "software": (dict,), "npu_options": (dict,), "file_digests": (dict,), "seeds": (dict,),
    "dropout": (list, type(None)), "loss_scale": (dict, type(None)), "env": (dict,),
}
_SCALAR = (str, int, float, bool, type(None))
HOW_TO_RECORD = ("the capture hooks write it (PrecisionTfSession, sess_dump, session_dump_config, "
                 "`train -d sim`, the demo); capture again with this precision_tool")


@dataclass(frozen=True)
class RunConfig:
    """A record read back: where it lives and its parsed, checked content."""

    path: Path
    data: dict[str, Any]

    @property
    def side(self) -> str:
        return str(self.data["side"])

    @property
    def simulated(self) -> bool:
        return bool(self.data.get("simulated"))

    def section(self, name: str) -> Any:
        return self.data.get(name)


def new_record(side: str, written_by: str, *, simulated: bool = False, **sections: Any) -> dict[str, Any]:
    """A record's JSON object: the header, then the sections given (missing ones empty or unknown)."""
    if side not in SIDES:
        raise ValueError(side)
    data: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "side": side,
                            "written_by": written_by, "simulated": simulated,
                            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    for name in SECTIONS:
        data[name] = sections.get(name, None if name in ("dropout", "loss_scale") else {})
    return data


def write_run_config(path: Path, data: dict[str, Any]) -> Path:
    """Write the record atomically (a reader never sees half of one); returns its path."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    return Path(path)


def read_run_config(path: Path) -> RunConfig:
    """Read and check a record; every problem is a FormatError naming the file and what to do."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, f"no run-config record here; {HOW_TO_RECORD}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(path, f"not readable JSON ({error}); {HOW_TO_RECORD}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise FormatError(path, f"not a run-config record of precision_tool; {HOW_TO_RECORD}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise FormatError(path, f"format version {version!r} is not a version number; {HOW_TO_RECORD}")
    if version > FORMAT_VERSION:
        raise FormatError(path, f"format version {version}, newer than this precision_tool reads "
                                f"({FORMAT_VERSION}); upgrade precision_tool to compare it")
    if data.get("side") not in SIDES:
        raise FormatError(path, f"side {data.get('side')!r} is neither golden nor npu; {HOW_TO_RECORD}")
    for name, types in SECTIONS.items():
        value = data.get(name, None if type(None) in types else {})
        if not isinstance(value, types):
            raise FormatError(path, f"section '{name}' holds {type(value).__name__}, not "
                                    f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}; "
                                    f"{HOW_TO_RECORD}")
        _check_values(path, name, value)
        data[name] = value
    return RunConfig(path, data)


def _check_values(path: Path, name: str, value: Any) -> None:
    """Flat sections hold scalars; dropout holds {scope, rate} objects: a diff never meets a surprise."""
    if isinstance(value, dict):
        bad = [key for key, item in value.items() if not isinstance(item, _SCALAR)]
        if bad:
            raise FormatError(path, f"section '{name}': '{bad[0]}' is not a plain value; {HOW_TO_RECORD}")
    elif isinstance(value, list):
        for index, entry in enumerate(value):
            if not (isinstance(entry, dict) and isinstance(entry.get("scope"), str)
                    and isinstance(entry.get("rate"), _SCALAR)):
                raise FormatError(path, f"section '{name}'[{index}] is not a {{scope, rate}} object; "
                                        f"{HOW_TO_RECORD}")
