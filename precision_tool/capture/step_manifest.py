"""The captured step's manifest (tf/checkpoints/manifest.json): what `train` needs to replay one step.

Written by the capture side (PrecisionTfSession, PrecisionKerasCapture), read by `train` and its child
process. No TensorFlow here: the shell validates a manifest (and that its files exist) before starting a
child, so a missing capture is one line, not a TensorFlow traceback. Arrays are .npy files written
without pickle; the manifest itself is written atomically and last, so a half-done capture leaves none.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.atomic import atomic_path, write_atomic, write_text_atomic
from precision_tool.errors import FormatError, WorkspaceError
from precision_tool.workspace import STEP_MANIFEST

MANIFEST_NAME = STEP_MANIFEST  # the workspace knows it too: "run `train`" hints
FORMAT_NAME = "precision_tool.step_capture"
FORMAT_VERSION = 1
KIND_TF1 = "tf1"
KIND_KERAS = "keras"
CHECKPOINT_PREFIX = "model"  # model.index, model.data-*, model.meta (tf.compat.v1.train.Saver)
KERAS_MODEL_FILE = "model.keras"
SESSION_CONFIG_FILE = "session_config.pb"
INPUT_DIR = "inputs"
FETCH_DIR = "fetches"
HOW_TO_CAPTURE = ("capture one step first: in a TF1 script use `from precision_tool.tf_session import "
                  "PrecisionTfSession` in place of tf.compat.v1.Session; in Keras pass "
                  "`callbacks=[PrecisionKerasCapture()]` (precision_tool.capture.keras_capture) to model.fit")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class StepManifest:
    """A manifest read back: the parsed JSON and the folder it lives in."""

    folder: Path
    data: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.data["kind"])

    def path(self, relative: str) -> Path:
        return self.folder / relative

    def input_entries(self) -> list[dict[str, Any]]:
        return list(self.data.get("inputs", []))

    def fetch_entries(self) -> list[dict[str, Any]]:
        return list(self.data.get("fetches", []))


def array_file_name(index: int, tensor_name: str) -> str:
    """'000_conv1_input_0.npy': the position keeps names unique, the tensor name keeps them readable."""
    safe = _UNSAFE.sub("_", tensor_name).strip("_")[:80] or "tensor"
    return f"{index:03d}_{safe}.npy"


def save_array(path: Path, value: Any) -> dict[str, Any]:
    """Write one array as .npy (never pickled; object arrays are refused) and describe it."""
    import numpy as np

    array = np.asarray(value)
    if array.dtype == object:
        raise FormatError(path, "an array of Python objects cannot be saved without pickle")
    with atomic_path(path) as temp, open(temp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)
    return {"dtype": str(array.dtype), "shape": list(array.shape)}


def write_bytes(path: Path, data: bytes) -> None:
    write_atomic(path, [data])


def load_array(path: Path) -> Any:
    import numpy as np

    return np.load(path, allow_pickle=False)


def clear_capture(folder: Path) -> None:
    """Remove a previous capture's manifest and arrays (only what a capture writes) before a new one."""
    olds = [folder / MANIFEST_NAME]
    for sub in (INPUT_DIR, FETCH_DIR):
        olds.extend(sorted((folder / sub).glob("*.npy")) if (folder / sub).is_dir() else ())
    for old in olds:
        try:
            old.unlink()  # not unlink(missing_ok=True): training scripts may run Python 3.7 (TF 1.15)
        except FileNotFoundError:
            pass


def write_manifest(folder: Path, kind: str, fields: dict[str, Any]) -> Path:
    """Write manifest.json last and atomically; returns its path."""
    data = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": kind,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields}
    path = folder / MANIFEST_NAME
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def read_manifest(folder: Path) -> StepManifest:
    """Read and check tf/checkpoints/manifest.json and that every file it names exists (one-line errors)."""
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise WorkspaceError(f"train: no captured step in {folder} ({MANIFEST_NAME} missing); {HOW_TO_CAPTURE}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(path, f"not readable JSON ({error}); capture the step again") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise FormatError(path, "not a step capture of precision_tool; capture the step again")
    version = data.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise FormatError(path, f"format version {version!r}, newer than this precision_tool reads "
                                f"({FORMAT_VERSION}); upgrade precision_tool or capture with this one")
    if data.get("kind") not in (KIND_TF1, KIND_KERAS):
        raise FormatError(path, f"unknown capture kind {data.get('kind')!r}; capture the step again")
    _check_structure(path, data)
    manifest = StepManifest(folder, data)
    missing = [name for name in _named_files(manifest) if not (folder / name).is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise WorkspaceError(f"train: {path} names files that are missing in {folder}: {shown}; "
                             "capture the step again")
    return manifest


# What each kind must (or may) hold, and of which type: checked before anything reads a field, so a
# hand-edited or damaged manifest is one line naming the field, never a KeyError from deep in the replay.
_REQUIRED = {KIND_TF1: {"meta_graph": str}, KIND_KERAS: {"model": str}}
_OPTIONAL_FILES = {KIND_TF1: ("checkpoint", "session_config"), KIND_KERAS: ()}
_ENTRY_KEYS = {"inputs": ("tensor", "file"), "fetches": ("name",)}


def _check_structure(path: Path, data: dict[str, Any]) -> None:
    """Required keys and their types per kind, the entry lists, and that every file name stays inside
    the capture folder (a relative name without '..'): FormatError(path, one line) otherwise."""
    kind = data["kind"]

    def refuse(problem: str) -> FormatError:
        return FormatError(path, f"{problem} in a '{kind}' step capture; capture the step again")

    for key, kind_type in _REQUIRED[kind].items():
        if key not in data:
            raise refuse(f"'{key}' is missing")
        if not isinstance(data[key], kind_type) or not data[key]:
            raise refuse(f"'{key}' must be a non-empty {kind_type.__name__}, not {data[key]!r}")
        _check_file_name(path, key, data[key])
    for key in _OPTIONAL_FILES[kind]:
        value = data.get(key)
        if value is not None:
            if not isinstance(value, str) or not value:
                raise refuse(f"'{key}' must be a file name or null, not {value!r}")
            _check_file_name(path, key, value)
    for list_key, needed in _ENTRY_KEYS.items():
        entries = data.get(list_key, [])
        if not isinstance(entries, list):
            raise refuse(f"'{list_key}' must be a list, not {type(entries).__name__}")
        for index, entry in enumerate(entries):
            where = f"{list_key}[{index}]"
            if not isinstance(entry, dict):
                raise refuse(f"{where} must be an object, not {type(entry).__name__}")
            for key in needed:
                if key == "tensor" and kind == KIND_KERAS:
                    continue  # a Keras batch entry is found by its role
                if not isinstance(entry.get(key), str) or not entry[key]:
                    raise refuse(f"{where} needs a '{key}' string")
            if kind == KIND_KERAS and list_key == "inputs" and not isinstance(entry.get("role"), str):
                raise refuse(f"{where} needs a 'role' string (x, y or sample_weight)")
            if entry.get("file") is not None:
                if not isinstance(entry["file"], str) or not entry["file"]:
                    raise refuse(f"{where}: 'file' must be a file name or null, not {entry['file']!r}")
                _check_file_name(path, f"{where}.file", entry["file"])
    for key in ("structure", "logs"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise refuse(f"'{key}' must be an object, not {type(data[key]).__name__}")


def _check_file_name(path: Path, key: str, name: str) -> None:
    """A file a manifest names lives inside its folder: absolute names and '..' are refused."""
    parts = name.replace("\\", "/").split("/")
    drive = len(name) > 1 and name[1] == ":"  # C:\x, refused on every system
    if name.startswith(("/", "\\")) or Path(name).is_absolute() or ".." in parts or drive:
        raise FormatError(path, f"'{key}' names {name!r}, outside the capture folder (a manifest names its "
                                "files relative to its own folder, without '..'); capture the step again")


def _named_files(manifest: StepManifest) -> list[str]:
    data = manifest.data
    names = [entry["file"] for entry in (*manifest.input_entries(), *manifest.fetch_entries()) if entry.get("file")]
    if manifest.kind == KIND_TF1:
        names.append(data["meta_graph"])
        if data.get("checkpoint"):
            names.append(data["checkpoint"] + ".index")
        if data.get("session_config"):
            names.append(data["session_config"])
    else:
        names.append(data["model"])
    return names
