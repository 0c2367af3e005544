"""Record the loss of every training step a process runs into its side's loss record (formats/loss_record.py):
tf/loss.csv on the golden side, npu/debug_0/loss.csv on the NPU machine.

Called by the capture hooks: PrecisionTfSession and sess_dump's wrapper (each training `run`), the
estimator_dump and loss_hook SessionRunHooks, PrecisionKerasCapture (each batch's logs), and `train` (the
step it replays). Which tensor is the loss, in this order:
  1. $PRECISION_TOOL_LOSS, a tensor name (`loss:0`, or `loss`: its first output), when the graph has it;
  2. a fetched tensor of the LOSSES collection (`tf.compat.v1.losses.*` put theirs there), else its only one;
  3. a fetched floating scalar whose name says loss (`loss:0`, `total_loss:0`, `train/loss/Mean:0`).
$PRECISION_TOOL_GRAD_NORM names the global gradient norm's tensor when the script computes one.
A training step is a run that fetches an op of the TRAIN_OP collection (or, without one, the loss); steps are
counted from 0 per process, as the NPU's dump_step counts iterations. A new process starts a new record.
Writing never stops a training: a failure is one warning, the training goes on unrecorded. In a multi-device
job only rank 0 records; $PRECISION_TOOL_LOSS_RECORD=0 switches recording off.
"""

from __future__ import annotations

import atexit
import os
import time
import warnings
from pathlib import Path
from typing import Any

from precision_tool.formats.loss_record import LossPoint, read_loss, write_loss

LOSS_ENV = "PRECISION_TOOL_LOSS"
GRAD_NORM_ENV = "PRECISION_TOOL_GRAD_NORM"
RECORD_ENV = "PRECISION_TOOL_LOSS_RECORD"
"""0 (or false, no, off): the hooks record no loss in this process (the demos: their NPU runs are no trainings)."""
RANK_ENVS = ("RANK_ID", "RANK")
"""A multi-device job's rank (Ascend's RANK_ID, else RANK): only rank 0 records, so ranks never overwrite it."""
WRITE_EVERY_SECONDS = 2.0
"""The record is rewritten whole: at most this often during training (and once more at exit)."""
LOSS_KEY, GRAD_NORM_KEY = "precision_tool_loss", "precision_tool_grad_norm"


class LossRecorder:
    """One side's loss record, kept up to date as steps come in."""

    def __init__(self, path: Path, written_by: str) -> None:
        self.path = Path(path)
        self.written_by = written_by
        self.points: dict[int, LossPoint] = {}
        self.next_step = 0
        self._written_at = 0.0
        self._dirty = False
        self._failed = False
        self.enabled = recording_wanted()
        atexit.register(self.flush)

    def add(self, loss: Any, grad_norm: Any = None, loss_scale: Any = None, step: int | None = None) -> None:
        """The loss of one step (the next one unless `step` says which); never raises."""
        if self._failed or not self.enabled:
            return
        try:
            step = self.next_step if step is None else int(step)
            self.next_step = step + 1
            self.points[step] = LossPoint(step, _number(loss), _number_or_none(grad_norm), _number_or_none(loss_scale))
            self._dirty = True
            if time.monotonic() - self._written_at >= WRITE_EVERY_SECONDS:
                self.flush()
        except Exception as error:  # noqa: BLE001 - a value that is no number, a full disk: warn, train on
            self._fail(error)

    def flush(self) -> None:
        if not self._dirty or self._failed:
            return
        try:
            write_loss(self.path, self.points.values())
            self._dirty = False
            self._written_at = time.monotonic()
        except Exception as error:  # noqa: BLE001 - the record is an aid, never a reason to stop training
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        self._failed = True
        warnings.warn(f"precision_tool: {self.written_by} stopped recording the loss into {self.path}: {error}; "
                      "the training goes on", stacklevel=4)


def recording_wanted(env: Any = None) -> bool:
    """False when $PRECISION_TOOL_LOSS_RECORD switches recording off, or this process is not rank 0."""
    env = os.environ if env is None else env
    if env.get(RECORD_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    rank = next((env[name].strip() for name in RANK_ENVS if env.get(name, "").strip()), "0")
    return rank == "0"


_recorders: dict[Path, LossRecorder] = {}


def recorder_for(path: Path, written_by: str) -> LossRecorder:
    """The process's recorder of `path` (one per file, whoever records: a new process starts a new record)."""
    key = Path(path).resolve()
    if key not in _recorders:
        _recorders[key] = LossRecorder(key, written_by)
    return _recorders[key]


def side_loss_file(workspace: Any, npu: bool) -> Path:
    """The loss record of this process's side: npu/debug_0/loss.csv on the NPU machine, else tf/loss.csv."""
    return workspace.loss_file(0) if npu else workspace.golden_loss_file


def add_replayed_step(path: Path, step: int, loss: float, grad_norm: float | None = None) -> Path:
    """`train`: the loss of the step it replayed into `path`, beside what the record holds (the same step
    replaced). A damaged record is replaced by this one point (the damaged file was no record)."""
    points = []
    if path.is_file():
        try:
            points = read_loss(path)
        except Exception:  # noqa: BLE001 - a record that does not read is not kept
            points = []
    return write_loss(path, [*points, LossPoint(int(step), float(loss), grad_norm)])


# --- TF1: which tensor is the loss, and whether a run is a training step -------------------------------------
class Tf1LossWatcher:
    """Decides, run by run, what to fetch besides the user's fetches to record the loss of a training step."""

    def __init__(self, recorder: LossRecorder) -> None:
        self.recorder = recorder
        self._warned_name = False

    def extra_fetches(self, graph: Any, fetches: Any) -> dict[str, Any] | None:
        """{key: tensor} to fetch with this run, or None when it is no training step or has no loss."""
        if not self.recorder.enabled:
            return None
        try:
            fetched = _fetched_elements(graph, fetches)
            train_ops = {getattr(op, "name", None) for op in (_op_of(t) for t in graph.get_collection("train_op"))}
            fetched_ops = {getattr(_op_of(e), "name", None) for e in fetched}
            loss = self._loss_tensor(graph, fetched)
            # `is`, never `in`: a TF2 tensor's == may build an equality op instead of answering
            loss_fetched = any(element is loss for element in fetched)
            if loss is None or not (fetched_ops & train_ops if train_ops else loss_fetched):
                return None
            extra = {LOSS_KEY: loss}
            grad = _named_tensor(graph, os.environ.get(GRAD_NORM_ENV, ""))
            if grad is not None:
                extra[GRAD_NORM_KEY] = grad
            return extra
        except Exception:  # noqa: BLE001 - an unusual fetch structure: this run is not recorded
            return None

    def record(self, values: Any) -> None:
        if isinstance(values, dict) and LOSS_KEY in values:
            self.recorder.add(values[LOSS_KEY], values.get(GRAD_NORM_KEY))

    def _loss_tensor(self, graph: Any, fetched: list[Any]) -> Any:
        named = os.environ.get(LOSS_ENV, "").strip()
        if named:
            tensor = _named_tensor(graph, named)
            if tensor is None and not self._warned_name:
                self._warned_name = True
                warnings.warn(f"precision_tool: ${LOSS_ENV}={named} names no tensor of this graph; the loss is "
                              "not recorded (give a tensor name such as loss:0)", stacklevel=5)
            return tensor
        return loss_tensor_of(graph, fetched)


def loss_tensor_of(graph: Any, fetched: list[Any]) -> Any:
    """Rules 2 and 3 of the module's docstring: the loss among `fetched` tensors, or None."""
    losses = [t for t in graph.get_collection("losses") if _is_scalar_float(t)]
    for tensor in fetched:
        if any(tensor is loss for loss in losses):
            return tensor
    if len(losses) == 1:
        return losses[0]
    named = [t for t in fetched if _is_scalar_float(t) and "loss" in t.name.lower()]
    return named[0] if named else None


def loss_tensor_name(graph: Any, fetch_names: list[str]) -> str | None:
    """The loss among a replayed step's fetches (by name), by the same rules; None when none is."""
    named = os.environ.get(LOSS_ENV, "").strip()
    if named:
        tensor = _named_tensor(graph, named)
        return tensor.name if tensor is not None else None
    fetched = [e for e in (_element(graph, name) for name in fetch_names) if e is not None and hasattr(e, "dtype")]
    tensor = loss_tensor_of(graph, fetched)
    return tensor.name if tensor is not None else None


def _named_tensor(graph: Any, name: str) -> Any:
    if not name:
        return None
    element = _element(graph, name if ":" in name else f"{name}:0")
    return element if element is not None and hasattr(element, "dtype") else None


def _element(graph: Any, name: Any) -> Any:
    try:
        return graph.as_graph_element(name)
    except (TypeError, ValueError, KeyError):
        return None


def _fetched_elements(graph: Any, fetches: Any) -> list[Any]:
    import tensorflow as tf

    found = []
    for item in tf.nest.flatten(fetches):
        element = _element(graph, item)
        if element is not None:
            found.append(element)
    return found


def _op_of(element: Any) -> Any:
    return element if hasattr(element, "node_def") else getattr(element, "op", None)


def _is_scalar_float(tensor: Any) -> bool:
    dtype = getattr(tensor, "dtype", None)
    shape = getattr(tensor, "shape", None)
    try:
        return bool(dtype is not None and dtype.base_dtype.is_floating and shape is not None
                    and shape.rank is not None and shape.num_elements() == 1)
    except (AttributeError, TypeError, ValueError):
        return False


def _number(value: Any) -> float:
    value = value.numpy() if hasattr(value, "numpy") else value
    if hasattr(value, "reshape") and getattr(value, "size", 1) == 1:
        value = value.reshape(-1)[0]
    return float(value)


def _number_or_none(value: Any) -> float | None:
    if value is None:
        return None
    return _number(value)
