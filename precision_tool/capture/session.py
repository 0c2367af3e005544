"""PrecisionTfSession: a TF1 session that captures ONE training step so `train` can replay it.

This module's whole point is TensorFlow, so it imports it at the top; import precision_tool.tf_config
before it (as before TensorFlow) in a training script.

Which step: the first `run` that fetches an op of the TRAIN_OP collection (optimizer.minimize puts its
update op there); when the graph has no such op, the first run that starts with every variable
initialized. What is saved into tf/checkpoints/ (docs/train.md):
- the variables BEFORE that step (tf.compat.v1.train.Saver, with the meta graph), saved in the same
  `run` call just before the step executes, so checkpoint and inputs belong to the same step (the
  original saved the checkpoint after every run and the feeds of the last one);
- every fed tensor, and the outputs of the IteratorGetNext ops the step executes (fetched in the same
  run, so they are the values the step consumed; the replay feeds them back);
- the fetched tensors' values, the fetch names and the session's ConfigProto (serialized).
Only one capture per process. Saving adds Saver ops to the graph and runs them separately: the step's
own computation, and so the training, is unchanged.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import tensorflow as tf

from precision_tool.capture.records import run_config_record as rcr
from precision_tool.capture import step_manifest as sm

_log = logging.getLogger(__name__)
_ITERATOR_OPS = ("IteratorGetNext", "IteratorGetNextSync")
_captured_in_process = False


def default_op_sources_file() -> Path:
    """tf/source/op_sources.json of the workspace the settings name (docs/source-lines.md)."""
    from precision_tool.config import load_settings
    from precision_tool.workspace import Workspace

    return Workspace(load_settings().root_dir.resolve()).op_sources_file


def default_checkpoint_dir() -> Path:
    """tf/checkpoints of the workspace the settings name (PRECISION_DATA or the config file)."""
    from precision_tool.config import load_settings
    from precision_tool.workspace import Workspace

    return Workspace(load_settings().root_dir.resolve()).checkpoint_dir


class PrecisionTfSession(tf.compat.v1.Session):
    """tf.compat.v1.Session that saves the first training step's checkpoint, inputs and fetches."""

    def __init__(self, target: str = "", graph: Any = None, config: Any = None,
                 checkpoint_dir: str | Path | None = None) -> None:
        super().__init__(target, graph, config)
        self._capture_config = config
        self._capture_dir = Path(checkpoint_dir) if checkpoint_dir else default_checkpoint_dir()
        self._inside_capture = False
        self._done = False
        self._uninitialized_check: Any = None
        self._watcher: Any = None  # None: not made yet; False: cannot record
        self.captured_manifest: Path | None = None

    records_loss = True  # sess_dump's wrapper leaves the loss to this session (each step recorded once)

    # --- the wrapped run ------------------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        if self._inside_capture:
            return super().run(fetches, feed_dict, options, run_metadata)
        watcher = self._loss_watcher()
        extra = watcher.extra_fetches(self.graph, fetches) if watcher is not None else None
        if extra is None:
            return self._run_step(fetches, feed_dict, options, run_metadata)
        # the loss is fetched with the step (the step computes it anyway): the training is unchanged
        results, values = self._run_step((fetches, extra), feed_dict, options, run_metadata)
        watcher.record(values)
        return results

    def _loss_watcher(self) -> Any:
        """The watcher that records each training step's loss into this side's loss record, made at the first
        run; None when the workspace cannot be known (a warning said why)."""
        if self._watcher is None:
            from precision_tool.capture.records import loss_recorder as lr

            try:
                path = lr.side_loss_file(rcr.workspace_of(self._capture_dir), rcr.npu_adapter_present())
                self._watcher = lr.Tf1LossWatcher(lr.recorder_for(path, "PrecisionTfSession"))
            except Exception as error:  # noqa: BLE001 - no record, the training goes on
                warnings.warn(f"PrecisionTfSession: the loss is not recorded: {error}", stacklevel=3)
                self._watcher = False
        return self._watcher or None

    def _run_step(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        if self._done or _captured_in_process or not self._is_capture_step(fetches):
            return super().run(fetches, feed_dict, options, run_metadata)
        self._inside_capture = True
        try:
            return self._capture_run(fetches, feed_dict, options, run_metadata)
        finally:
            self._inside_capture = False

    def _is_capture_step(self, fetches: Any) -> bool:
        train_ops = self.graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP)
        if train_ops:
            wanted = {op.name for op in (_as_op(t) for t in train_ops) if op is not None}
            return any(op.name in wanted for op in _fetched_ops(self.graph, fetches))
        return self._variables_initialized()

    def _variables_initialized(self) -> bool:
        with self.graph.as_default():
            if not tf.compat.v1.global_variables():
                return True
            if self._uninitialized_check is None:
                if self.graph.finalized:
                    return False
                self._uninitialized_check = tf.compat.v1.report_uninitialized_variables(name="precision_tool_check")
        self._inside_capture = True
        try:
            return len(super().run(self._uninitialized_check)) == 0
        finally:
            self._inside_capture = False

    def _capture_run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        folder = self._capture_dir
        self._done = True
        try:
            folder.mkdir(parents=True, exist_ok=True)
            sm.clear_capture(folder)
            checkpoint = self._save_variables(folder)
        except Exception as error:  # the training goes on uncaptured, never broken by the capture
            warnings.warn(f"PrecisionTfSession: the step was not captured into {folder}: {error}", stacklevel=3)
            return super().run(fetches, feed_dict, options, run_metadata)
        iterator_tensors = _iterator_outputs(self.graph, fetches, feed_dict)
        extra = {t.name: t for t in iterator_tensors}
        results, extra_values = super().run((fetches, extra), feed_dict, options, run_metadata)
        try:
            self._write_capture(folder, checkpoint, fetches, results, feed_dict, extra_values)
        except Exception as error:  # noqa: BLE001 - the step ran; its results go back to the training
            warnings.warn(f"PrecisionTfSession: the step ran but its capture in {folder} failed: {error}",
                          stacklevel=3)
        return results

    def _write_capture(self, folder: Path, checkpoint: str | None, fetches: Any, results: Any, feed_dict: Any,
                       extra_values: dict[str, Any]) -> None:
        global _captured_in_process
        inputs, skipped = _save_inputs(folder, self.graph, feed_dict, extra_values)
        fetch_entries = _save_fetches(folder, self.graph, fetches, results)
        config_file = None
        if self._capture_config is not None:
            config_file = sm.SESSION_CONFIG_FILE
            sm.write_bytes(folder / config_file, self._capture_config.SerializeToString())
        trigger = "train_op" if self.graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP) else "variables_initialized"
        self.captured_manifest = sm.write_manifest(folder, sm.KIND_TF1, {
            "trigger": trigger,
            "tensorflow": tf.__version__,
            "meta_graph": sm.CHECKPOINT_PREFIX + ".meta",
            "checkpoint": checkpoint,
            "session_config": config_file,
            "inputs": inputs,
            "skipped_inputs": skipped,
            "fetches": fetch_entries,
            "step": self._watcher.recorder.next_step if self._watcher else 0,  # its number in the loss record
        })
        _captured_in_process = True
        _log.info("precision_tool: captured the step into %s", folder)
        # `train` replays the step from the meta graph, which keeps no Python stacks: record them now
        from precision_tool.capture.op_sources_capture import SourceRecorder

        SourceRecorder(default_op_sources_file(), lambda text: warnings.warn(f"PrecisionTfSession: {text}",
                                                                             stacklevel=4)).record(self.graph)
        self._record_run_config(folder)

    def _record_run_config(self, folder: Path) -> None:
        """The side's run-config record (tf/run_config.json, or npu/debug_0/ on the NPU machine) with the
        session's own NpuOptimizer options, the graph's dropout rates and loss scale after the step."""
        side = "npu" if rcr.npu_adapter_present() else "golden"
        rcr.write_quietly(rcr.workspace_of(folder), lambda: rcr.build(
            side, "PrecisionTfSession", npu_options=rcr.config_npu_options(self._capture_config),
            dropout=rcr.dropout_rates(self.graph), loss_scale=rcr.loss_scale_values(self.graph, self)))

    def _save_variables(self, folder: Path) -> str | None:
        """Checkpoint (and meta graph) of the variables as they are before the step."""
        prefix = str(folder / sm.CHECKPOINT_PREFIX)
        with self.graph.as_default():
            has_variables = bool(tf.compat.v1.global_variables() or
                                 tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS))
            if not has_variables:
                tf.compat.v1.train.export_meta_graph(prefix + ".meta", graph=self.graph)
                return None
            if self.graph.finalized:
                raise RuntimeError("the graph is finalized, so no Saver can be added for the checkpoint; "
                                   "finalize the graph after the first training step")
            saver = tf.compat.v1.train.Saver(name="precision_tool_save")
            saver.save(self, prefix, write_state=False)
        return sm.CHECKPOINT_PREFIX


def _as_op(element: Any) -> Any:
    if isinstance(element, tf.Operation):
        return element
    return getattr(element, "op", None)


def _fetched_ops(graph: Any, fetches: Any) -> list[Any]:
    found = []
    for element in tf.nest.flatten(fetches):
        try:
            item = graph.as_graph_element(element)
        except (TypeError, ValueError, KeyError):
            continue
        op = _as_op(item)
        if op is not None:
            found.append(op)
    return found


def _feed_tensors(graph: Any, feed_dict: Any) -> dict[str, Any]:
    tensors = {}
    for key in (feed_dict or {}):
        try:
            item = graph.as_graph_element(key)
        except (TypeError, ValueError, KeyError):
            continue
        if isinstance(item, tf.Tensor):
            tensors[item.name] = item
    return tensors


def _iterator_outputs(graph: Any, fetches: Any, feed_dict: Any) -> list[Any]:
    """Outputs of the IteratorGetNext ops this run executes (walking back from the fetches, stopping at
    fed tensors): fetching them adds no work and takes no extra element from the iterator."""
    fed = set(_feed_tensors(graph, feed_dict))
    seen: set[str] = set()
    stack = _fetched_ops(graph, fetches)
    found = []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _ITERATOR_OPS:
            found.extend(op.outputs)
            continue
        stack.extend(t.op for t in op.inputs if t.name not in fed)
        stack.extend(op.control_inputs)
    return sorted(found, key=lambda t: t.name)


def _save_inputs(folder: Path, graph: Any, feed_dict: Any,
                 iterator_values: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    values = [(name, value, "feed") for key, value in (feed_dict or {}).items()
              for name in [_key_name(graph, key)] if name]
    skipped.extend({"key": str(key), "why": "not a single tensor (sparse or nested feeds are not saved)"}
                   for key in (feed_dict or {}) if not _key_name(graph, key))
    values += [(name, value, "iterator") for name, value in iterator_values.items()]
    for index, (name, value, source) in enumerate(values):
        relative = f"{sm.INPUT_DIR}/{sm.array_file_name(index, name)}"
        try:
            described = sm.save_array(folder / relative, value)
        except Exception as error:  # an unsaveable value is listed, the capture goes on
            skipped.append({"key": name, "why": str(error)})
            continue
        entries.append({"tensor": name, "file": relative, "source": source, **described})
    return entries, skipped


def _key_name(graph: Any, key: Any) -> str | None:
    try:
        item = graph.as_graph_element(key)
    except (TypeError, ValueError, KeyError):
        return None
    return item.name if isinstance(item, tf.Tensor) else None


def _save_fetches(folder: Path, graph: Any, fetches: Any, results: Any) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    saved: set[str] = set()
    flat_fetches = tf.nest.flatten(fetches)
    flat_results = tf.nest.flatten(results)
    if len(flat_fetches) != len(flat_results):  # a fetch structure nest cannot pair (rare): names only
        flat_results = [None] * len(flat_fetches)
    for index, (fetch, value) in enumerate(zip(flat_fetches, flat_results)):
        try:
            item = graph.as_graph_element(fetch)
        except (TypeError, ValueError, KeyError):
            continue
        if item.name in saved:  # the loss fetched by the user and again for the loss record: once
            continue
        saved.add(item.name)
        if isinstance(item, tf.Operation):
            entries.append({"name": item.name, "kind": "op"})
            continue
        entry: dict[str, Any] = {"name": item.name, "kind": "tensor"}
        if value is not None:
            relative = f"{sm.FETCH_DIR}/{sm.array_file_name(index, item.name)}"
            try:
                entry.update(sm.save_array(folder / relative, value), file=relative)
            except Exception as error:  # noqa: BLE001 - the name stays, with why its value is not there
                entry["not_saved"] = f"{type(error).__name__}: {error}"
        entries.append(entry)
    return entries
