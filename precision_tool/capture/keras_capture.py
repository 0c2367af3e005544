"""TF2/Keras capture: the first training batch and the model before its step, and tfdbg v2 golden dumps.

This module's whole point is TensorFlow/Keras, so it imports TensorFlow at the top; import
precision_tool.tf_config before it (as before TensorFlow) in a training script.

How the batch is seen (Keras 3, TensorFlow backend): `fit` builds `model.train_function` BEFORE
`on_train_begin`, and that function accepts a tf.data iterator or any Python iterable of batches. So
`on_train_begin` wraps it: on the first call the wrapper takes one batch from the iterator (eager
values), saves the model (model.save → .keras: architecture, compile state — optimizer and loss — and the
weights, all still BEFORE the step) and the batch, then hands the batch to the original function as a
one-element list, which runs exactly one ordinary training step on it; later calls go straight through.
With steps_per_execution > 1 that first call runs one step instead of a group (same results).
Custom layers and losses must be registered (keras.saving.register_keras_serializable) to load again.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import tensorflow as tf

from precision_tool.capture.records import run_config_record as rcr
from precision_tool.capture import step_manifest as sm
from precision_tool.errors import WorkspaceError

_ROLES = ("x", "y", "sample_weight")


def _workspace() -> Any:
    from precision_tool.config import load_settings
    from precision_tool.workspace import Workspace

    return Workspace(load_settings().root_dir.resolve())


def keras_dump(dump_dir: str | Path | None = None) -> Path:
    """Switch this process to tfdbg v2 FULL_TENSOR dumps into tf/tf_debug (every tensor of every step:
    circular_buffer_size=-1) for a TF2 golden run; `tf_dump` reads them. Call it before model.fit."""
    folder = Path(dump_dir) if dump_dir else _workspace().tf_debug_dir
    if folder.is_dir() and any(folder.iterdir()):
        raise WorkspaceError(f"{folder} already holds dumps; run tf_dump on them first, then move or delete "
                             "the folder before dumping again")
    folder.mkdir(parents=True, exist_ok=True)
    tf.debugging.experimental.enable_dump_debug_info(str(folder), tensor_debug_mode="FULL_TENSOR",
                                                     circular_buffer_size=-1)
    return folder


class PrecisionLossRecord(tf.keras.callbacks.Callback):
    """model.fit(..., callbacks=[PrecisionLossRecord()]): each batch's loss (Keras's `logs['loss']`: in Keras 3
    the mean over the epoch so far, the same quantity on both sides) and the optimizer's loss scale into this
    side's loss record (tf/loss.csv; npu/debug_0/loss.csv on the NPU machine). Steps count every batch of
    the fit from 0. PrecisionKerasCapture records it too."""

    def __init__(self, loss_file: str | Path | None = None) -> None:
        super().__init__()
        from precision_tool.capture.records import loss_recorder as lr

        path = Path(loss_file) if loss_file else lr.side_loss_file(_workspace(), rcr.npu_adapter_present())
        self.recorder = lr.recorder_for(path, type(self).__name__)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if logs and "loss" in logs:
            scale = rcr.keras_loss_scale(getattr(self.model, "optimizer", None))
            self.recorder.add(logs["loss"], loss_scale=next(iter(scale.values())) if scale else None)

    def on_train_end(self, logs: dict | None = None) -> None:
        self.recorder.flush()


class PrecisionKerasCapture(tf.keras.callbacks.Callback):
    """model.fit(..., callbacks=[PrecisionKerasCapture()]): saves the first batch and the model before
    its step into tf/checkpoints/ (manifest.json, model.keras, inputs/*.npy) for `train`."""

    def __init__(self, checkpoint_dir: str | Path | None = None) -> None:
        super().__init__()
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else _workspace().checkpoint_dir
        self.captured_manifest: Path | None = None
        self._first_logs_pending = False
        try:
            self._loss: PrecisionLossRecord | None = PrecisionLossRecord(
                _loss_file_beside(self.checkpoint_dir))
        except Exception as error:  # noqa: BLE001 - no loss record; the capture and the training go on
            warnings.warn(f"PrecisionKerasCapture: the loss is not recorded: {error}", stacklevel=2)
            self._loss = None

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        if self._loss is not None:
            self._loss.set_model(model)

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._loss is not None:
            self._loss.on_train_end(logs)

    def on_train_begin(self, logs: dict | None = None) -> None:
        if self.captured_manifest is not None:
            return
        original = getattr(self.model, "train_function", None)
        if original is None:  # an older Keras that builds it later: make it now
            self.model.make_train_function()
            original = self.model.train_function
        callback = self

        def capturing_train_function(iterator: Any) -> Any:
            if callback.captured_manifest is not None:
                return original(iterator)
            batch = next(iter(iterator)) if isinstance(iterator, list) else next(iterator)
            callback.model.train_function = original
            try:
                callback._capture(batch)
            except Exception as error:  # the training goes on uncaptured, never broken by the capture
                warnings.warn(f"PrecisionKerasCapture: the first batch was not captured into "
                              f"{callback.checkpoint_dir}: {error}", stacklevel=2)
            return original([batch])

        self.model.train_function = capturing_train_function

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._loss is not None:
            self._loss.on_train_batch_end(batch, logs)
        if self._first_logs_pending and logs:
            self._first_logs_pending = False
            try:
                _add_logs(self.checkpoint_dir, logs)
            except Exception as error:  # noqa: BLE001 - a full disk must not stop the training
                warnings.warn(f"PrecisionKerasCapture: the first batch's logs (loss...) could not be added to "
                              f"{self.checkpoint_dir / sm.MANIFEST_NAME}: {error}; the replay cannot check them",
                              stacklevel=2)

    def _capture(self, batch: Any) -> None:
        folder = self.checkpoint_dir
        folder.mkdir(parents=True, exist_ok=True)
        sm.clear_capture(folder)
        model_path = folder / sm.KERAS_MODEL_FILE
        self.model.save(str(model_path))
        x, y, sample_weight = tf.keras.utils.unpack_x_y_sample_weight(batch)
        entries: list[dict[str, Any]] = []
        structure: dict[str, str | None] = {}
        for role, value in zip(_ROLES, (x, y, sample_weight)):
            structure[role] = _save_role(folder, role, value, entries)
        self.captured_manifest = sm.write_manifest(folder, sm.KIND_KERAS, {
            "trigger": "first training batch",
            "tensorflow": tf.__version__,
            "keras": getattr(tf.keras, "__version__", ""),
            "model": sm.KERAS_MODEL_FILE,
            "structure": structure,
            "inputs": entries,
            "step": self._loss.recorder.next_step if self._loss is not None else 0,  # its number in the loss record
        })
        self._first_logs_pending = True
        side = "npu" if rcr.npu_adapter_present() else "golden"
        rcr.write_quietly(rcr.workspace_of(folder), lambda: rcr.build(
            side, "PrecisionKerasCapture", dropout=rcr.keras_dropout_rates(self.model),
            loss_scale=rcr.keras_loss_scale(getattr(self.model, "optimizer", None))))


def _loss_file_beside(checkpoint_dir: Path) -> Path:
    """The loss record of this side in the workspace the capture folder belongs to."""
    from precision_tool.capture.records import loss_recorder as lr

    return lr.side_loss_file(rcr.workspace_of(checkpoint_dir), rcr.npu_adapter_present())


def _save_role(folder: Path, role: str, value: Any, entries: list[dict[str, Any]]) -> str | None:
    """Save x, y or sample_weight (a tensor, a list/tuple or a dict of tensors); returns its structure."""
    if value is None:
        return None
    if isinstance(value, dict):
        items, kind = list(value.items()), "dict"
    elif isinstance(value, (list, tuple)):
        items, kind = list(enumerate(value)), "list"
    else:
        items, kind = [(None, value)], "tensor"
    for key, item in items:
        name = role if key is None else f"{role}.{key}"
        relative = f"{sm.INPUT_DIR}/{sm.array_file_name(len(entries), name)}"
        array = item.numpy() if hasattr(item, "numpy") else item
        entries.append({"tensor": name, "role": role, "key": key, "file": relative,
                        **sm.save_array(folder / relative, array)})
    return kind


def _add_logs(folder: Path, logs: dict) -> None:
    """Record the first step's logs (loss...) in the manifest, so a replay can be checked against it."""
    import json

    path = folder / sm.MANIFEST_NAME
    data = json.loads(path.read_text(encoding="utf-8"))
    data["logs"] = {key: float(value) for key, value in logs.items() if _is_number(value)}
    from precision_tool.atomic import write_text_atomic

    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def load_batch(manifest: sm.StepManifest) -> tuple[Any, Any, Any]:
    """The saved batch as (x, y, sample_weight), in the structure it had."""
    structure = manifest.data.get("structure", {})
    roles: dict[str, Any] = {}
    for role in _ROLES:
        entries = [e for e in manifest.input_entries() if e.get("role") == role]
        kind = structure.get(role)
        arrays = [(e.get("key"), sm.load_array(manifest.path(e["file"]))) for e in entries]
        if kind is None or not arrays:
            roles[role] = None
        elif kind == "dict":
            roles[role] = {key: array for key, array in arrays}
        elif kind == "list":
            roles[role] = [array for _key, array in arrays]
        else:
            roles[role] = arrays[0][1]
    return roles["x"], roles["y"], roles["sample_weight"]
