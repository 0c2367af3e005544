"""Switch dropout off in a replayed step, so the CPU and the NPU replay compute the same thing.

TF1 graphs: tf.nn.dropout (and compat.v1 dropout with keep_prob, a number or a placeholder) builds
    mask = RandomUniform(shape) >= rate;  out = Select(mask, x * scale, 0)   (scale = 1/(1-rate))
(older TF: x * scale * Cast(mask)). The rate and the scale may be constants or computed from a
`keep_prob` placeholder. Rather than editing constants, the replay FEEDS the comparison's threshold
with 0 (a uniform number in [0, 1) is always >= 0, so every element is kept) and the scale with 1:
the output is then x exactly. Keras models: every Dropout-like layer gets rate 0 (its call skips the
random mask then). A dropout whose threshold or scale cannot be found is reported, not guessed.
This module imports TensorFlow lazily (only the replay's child process calls it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class DropoutReport:
    """What the replay did about dropout: feeds to apply, scopes switched off, scopes left as they were."""

    feeds: dict[str, Any] = field(default_factory=dict)  # tensor name → value to feed
    switched_off: list[str] = field(default_factory=list)
    not_switched: list[str] = field(default_factory=list)  # "scope: why"


def _from_random(tensor: Any, depth: int = 4) -> bool:
    """True if `tensor` is computed from a RandomUniform within a few ops (random_uniform's add/mul)."""
    op = tensor.op
    if op.type in ("RandomUniform", "StatelessRandomUniformV2", "StatelessRandomUniform"):
        return True
    return depth > 0 and any(_from_random(t, depth - 1) for t in op.inputs)


def _is_scalar(tensor: Any) -> bool:
    shape = tensor.shape
    return shape.rank == 0 or (shape.rank is not None and shape.num_elements() == 1)


def tf1_dropout_masks(graph: Any) -> Iterator[tuple[str, Any]]:
    """(scope, threshold tensor) of each dropout of a TF1 graph: its `RandomUniform >= rate` mask."""
    for op in graph.get_operations():
        if op.type != "GreaterEqual" or len(op.inputs) != 2 or not _from_random(op.inputs[0]):
            continue
        scope = op.name.rsplit("/", 1)[0] if "/" in op.name else ""
        if "dropout" in scope.lower():
            yield scope, op.inputs[1]


def tf1_dropout_feeds(graph: Any) -> DropoutReport:
    """Find dropout in an imported TF1 graph and the feeds that switch it off."""
    import numpy as np

    report = DropoutReport()
    for scope, threshold in tf1_dropout_masks(graph):
        scale = _scale_tensor(graph, scope)
        if scale is None:
            report.not_switched.append(f"{scope}: no scale (x * 1/(1-rate)) found beside the mask")
            continue
        dtype = threshold.dtype.as_numpy_dtype
        report.feeds[threshold.name] = np.zeros(threshold.shape.as_list() if threshold.shape.is_fully_defined()
                                                else [], dtype=dtype)
        report.feeds[scale.name] = np.ones(scale.shape.as_list() if scale.shape.is_fully_defined() else [],
                                           dtype=scale.dtype.as_numpy_dtype)
        report.switched_off.append(scope)
    return report


def _scale_tensor(graph: Any, scope: str) -> Any:
    """The scalar the dropout input is multiplied by (Mul) or divided by (RealDiv) in `scope`."""
    prefix = scope + "/"
    for op in graph.get_operations():
        if not op.name.startswith(prefix) or "/" in op.name[len(prefix):]:
            continue
        if op.type == "RealDiv" and len(op.inputs) == 2 and _is_scalar(op.inputs[1]):
            return op.inputs[1]
        if op.type == "Mul" and len(op.inputs) == 2:
            outside = [t for t in op.inputs if not t.op.name.startswith(prefix)]
            inside = [t for t in op.inputs if t.op.name.startswith(prefix) and _is_scalar(t)
                      and t.op.type != "Cast"]
            if len(outside) == 1 and len(inside) == 1:
                return inside[0]
    return None


def keras_dropout_off(model: Any) -> DropoutReport:
    """Set rate 0 on every Keras layer with a dropout rate (Dropout, SpatialDropout*, Gaussian/Alpha
    dropout); GaussianNoise has no rate and is reported."""
    report = DropoutReport()
    for layer in _all_layers(model):
        kind = type(layer).__name__
        if "Dropout" in kind and hasattr(layer, "rate"):
            layer.rate = 0.0
            report.switched_off.append(layer.name)
        elif kind == "GaussianNoise":
            layer.stddev = 0.0
            report.switched_off.append(layer.name)
        elif "Dropout" in kind:
            report.not_switched.append(f"{layer.name}: {kind} has no rate attribute")
        elif getattr(layer, "dropout", 0) or getattr(layer, "recurrent_dropout", 0):
            for attribute in ("dropout", "recurrent_dropout"):
                if getattr(layer, attribute, 0):
                    try:
                        setattr(layer, attribute, 0.0)
                    except AttributeError:
                        report.not_switched.append(f"{layer.name}: {attribute} cannot be set")
            report.switched_off.append(layer.name)
    return report


def _all_layers(model: Any) -> list[Any]:
    found = []
    stack = list(getattr(model, "layers", []))
    while stack:
        layer = stack.pop(0)
        found.append(layer)
        stack.extend(getattr(layer, "layers", []) or [])
    return found
