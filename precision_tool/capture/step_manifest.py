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

MANIFEST_NAME = "manifest.json"
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
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    for sub in (INPUT_DIR, FETCH_DIR):
        for old in (folder / sub).glob("*.npy") if (folder / sub).is_dir() else ():
            old.unlink(missing_ok=True)


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
    manifest = StepManifest(folder, data)
    missing = [name for name in _named_files(manifest) if not (folder / name).is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise WorkspaceError(f"train: {path} names files that are missing in {folder}: {shown}; "
                             "capture the step again")
    return manifest


def _named_files(manifest: StepManifest) -> list[str]:
    data = manifest.data
    names = [entry["file"] for entry in manifest.input_entries() if entry.get("file")]
    if manifest.kind == KIND_TF1:
        names.append(data["meta_graph"])
        if data.get("checkpoint"):
            names.append(data["checkpoint"] + ".index")
        if data.get("session_config"):
            names.append(data["session_config"])
    else:
        names.append(data["model"])
    return names
