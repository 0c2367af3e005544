"""A Keras step captured by `PrecisionKerasCapture`, as a TF1-style graph the simulation can derive.

`train -d cpu` replays a Keras capture with `train_on_batch`, which runs the graph Keras traces for one
step (`one_step_on_data`, a tf.function around `train_step`); the golden tensors are named by that
graph's ops (`sequential_1/dense_1/MatMul`). The same graph is traced here, in a fresh process after the
same `load_model` and dropout switch, so its op names are the golden run's. Its variables arrive as
captured resource placeholders: each becomes a `VarHandleOp` holding the model's value, so the graph
imports into a tf.Graph and runs in a Session like a captured TF1 step (a captured eager tensor becomes a
constant).
"""

from __future__ import annotations

from typing import Any


class KerasStepUnsupported(Exception):
    """What in this Keras step cannot be simulated (one line)."""


def _inner_step_function(model: Any) -> Any:
    """The tf.function Keras runs for one step on one batch (`one_step_on_data`)."""
    import tensorflow as tf

    model.make_train_function()
    stack, seen = [model.train_function], set()
    while stack:
        function = stack.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        for cell in getattr(function, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, tf.types.experimental.GenericFunction) and \
                    getattr(value, "__name__", "") == "one_step_on_data":
                return value
            if callable(value) and getattr(value, "__closure__", None):
                stack.append(value)
    raise KerasStepUnsupported("this Keras version's train function has no one_step_on_data tf.function "
                               "(run_eagerly=True, or a Keras other than 3.x)")


def load_keras_step(manifest: Any) -> tuple[Any, Any, dict[str, Any], list[str]]:
    """(graph, session with the variables set, feeds by tensor name, fetch names) of the captured step."""
    import numpy as np
    import tensorflow as tf

    from precision_tool.capture.dropout import keras_dropout_off
    from precision_tool.capture.keras_capture import load_batch

    model = tf.keras.models.load_model(str(manifest.path(manifest.data["model"])), compile=True)
    keras_dropout_off(model)  # as train -d cpu runs the step
    x, y, sample_weight = load_batch(manifest)
    concrete = _inner_step_function(model).get_concrete_function((x, y, sample_weight))
    func_graph = concrete.graph
    captured = {internal.op.name: external for external, internal in func_graph.captures}
    values: dict[str, Any] = {}
    graph_def = func_graph.as_graph_def(add_shapes=True)
    specs = _variable_specs(func_graph)
    for node in graph_def.node:
        if node.name not in captured or node.op != "Placeholder":
            continue
        external = captured[node.name]
        if external.dtype != tf.resource:  # a captured eager tensor: a constant of the graph
            value = np.asarray(external)
            _retype(node, "Const")
            node.attr["dtype"].type = external.dtype.as_datatype_enum
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
            continue
        if node.name not in specs:
            raise KerasStepUnsupported(f"{node.name}: a captured resource no op reads or assigns (not a variable)")
        dtype, shape = specs[node.name]
        values[node.name] = np.asarray(tf.raw_ops.ReadVariableOp(resource=external, dtype=dtype))
        _retype(node, "VarHandleOp")
        node.attr["dtype"].type = dtype.as_datatype_enum
        node.attr["shape"].shape.CopyFrom(tf.TensorShape(values[node.name].shape).as_proto())
        node.attr["shared_name"].s = node.name.encode()
        if shape is not None and tuple(shape) != values[node.name].shape:
            raise KerasStepUnsupported(f"{node.name}: the variable holds {values[node.name].shape}, the graph "
                                       f"reads {tuple(shape)}")
    arguments = [t for t in func_graph.inputs if t.op.name not in captured]
    batch = [np.asarray(a) for a in tf.nest.flatten((x, y, sample_weight)) if a is not None]
    if len(arguments) != len(batch):
        raise KerasStepUnsupported(f"the step takes {len(arguments)} inputs, the captured batch has {len(batch)}")
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        holders = {name: tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape)
                   for name, value in values.items()}
        assigns = [tf.raw_ops.AssignVariableOp(resource=graph.get_tensor_by_name(f"{name}:0"), value=holder)
                   for name, holder in holders.items()]
    session = tf.compat.v1.Session(graph=graph)
    session.run(assigns, feed_dict={holders[name]: value for name, value in values.items()})
    feeds = {t.name: value for t, value in zip(arguments, batch)}
    fetches = [t.name for t in func_graph.outputs] + [op.name for op in func_graph.control_outputs]
    return graph, session, feeds, fetches


def _variable_specs(func_graph: Any) -> dict[str, tuple[Any, Any]]:
    """Placeholder name → (dtype, shape or None) of each captured variable, from the ops that read or
    write it (indexed in one pass over the graph)."""
    specs: dict[str, tuple[Any, Any]] = {}
    for op in func_graph.get_operations():
        if op.type in ("ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp") and \
                op.inputs:
            placeholder = op.inputs[0].op.name
            shape = op.outputs[0].shape.as_list() if op.type == "ReadVariableOp" and \
                op.outputs[0].shape.rank is not None else None
            if placeholder not in specs or specs[placeholder][1] is None:
                specs[placeholder] = (op.get_attr("dtype"), shape)
    return specs


def _retype(node: Any, op_type: str) -> None:
    """A placeholder NodeDef made another op: its attributes cleared but its `_output_shapes`."""
    kept = None
    if "_output_shapes" in node.attr:
        kept = type(node.attr["_output_shapes"])()
        kept.CopyFrom(node.attr["_output_shapes"])
    node.op = op_type
    node.attr.clear()
    if kept is not None:
        node.attr["_output_shapes"].CopyFrom(kept)
