"""The child process of `train`: rebuild the captured step and run it once, on CPU (tfdbg dump) or NPU.

    python -m precision_tool.capture.replay_step --device cpu|npu --action ACTION [--dump-dir DIR] WORKSPACE

Imports precision_tool.capture.tf_setup first (before TensorFlow: oneDNN off, seeds, grappler off for a
golden run), then: TF1 captures → import_meta_graph + restore, the saved inputs fed back, dropout fed off, fixed
seeds on random ops that had none, op determinism as tf_setup.seed_everything decides (on only where a
GPU is visible, or as $PRECISION_TOOL_OP_DETERMINISM says: under determinism TensorFlow builds softmax
cross-entropy from LogSoftmax instead of the fused op the NPU graph has), the saved ConfigProto; Keras captures → load the
saved model (with its compile state), dropout layers at rate 0, train_on_batch on the saved batch.
On CPU the step runs under tfdbg into --dump-dir (`train` passes a fresh folder inside tf/ and renames it
to tf/tf_debug only when the child succeeds, so a failed replay never leaves a half-filled tf_debug); on NPU through the adapter
(npu_bridge / npu_device, with tf_config's options for ACTION). What it did goes into
tf/checkpoints/replay_<device>.json (and replay_npu_options.json: the adapter options used), which the
shell reads. A user mistake is one line on stderr (its last line) starting with 'train' and exit status 2;
a missing adapter is exit status 3; anything else is a bug or a TensorFlow error, shown by the shell as one
line with the full text in a file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_NO_ADAPTER = 3
RESULT_NAME = "replay_{device}.json"
NPU_OPTIONS_NAME = "replay_npu_options.json"


def _adapter_missing(module: str, error: BaseException) -> str:
    return (f"train -d npu: {module} does not import in {sys.executable} ({type(error).__name__}: {error}); "
            "source the CANN set_env.sh (e.g. `source /usr/local/Ascend/ascend-toolkit/set_env.sh`) and install "
            "the TF adapter for this python, then run train -d npu again")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m precision_tool.capture.replay_step")
    parser.add_argument("--device", choices=["cpu", "npu"], required=True)
    parser.add_argument("--action", default="dump")
    parser.add_argument("--dump-dir", help="where the CPU replay's tfdbg dump goes (default: tf/tf_debug)")
    parser.add_argument("workspace")
    args = parser.parse_args(argv)
    os.environ["PRECISION_DATA"] = str(Path(args.workspace).resolve())
    from precision_tool.errors import PrecisionToolError

    try:
        dump_dir = Path(args.dump_dir).resolve() if args.dump_dir else None
        result = replay(Path(args.workspace).resolve(), args.device, args.action, dump_dir)
    except _AdapterMissing as missing:
        print(str(missing), file=sys.stderr)
        return EXIT_NO_ADAPTER
    except PrecisionToolError as error:
        print(str(error) if str(error).startswith("train") else f"train: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(result))
    return 0


class _AdapterMissing(Exception):
    pass


def replay(root: Path, device: str, action: str, dump_dir: Path | None = None) -> dict[str, Any]:
    """Run the captured step once (a CPU run dumps into `dump_dir`, default tf/tf_debug); returns (and
    writes) what was done."""
    from precision_tool.capture import step_manifest as sm
    from precision_tool.workspace import Workspace

    workspace = Workspace(root)
    dump_dir = dump_dir or workspace.tf_debug_dir
    manifest = sm.read_manifest(workspace.checkpoint_dir)  # before TensorFlow: a bad capture is quick
    from precision_tool.capture import tf_setup  # before TensorFlow and the adapter (which imports it): oneDNN off,
    # seeds, and the graph-dump variables npu_device reads when it is imported
    if device == "npu":
        _import_adapter(manifest.kind)

    if device == "cpu":
        tf_setup.disable_graph_rewriter()  # a golden run keeps every op, even with a stand-in adapter around
    from precision_tool.capture.options import seed_from_env

    seed = seed_from_env()  # $PRECISION_TOOL_SEED, else 2022: as the capture side
    # The capture-side policy, not always-on: op determinism only where a GPU is visible (or as
    # $PRECISION_TOOL_OP_DETERMINISM says), so a rebuilt Keras loss keeps the fused softmax cross-entropy
    # op the NPU graph has and its golden tensors keep their NPU counterparts.
    determinism = tf_setup.want_op_determinism()
    tf_setup.seed_everything(seed, op_determinism=determinism)
    if manifest.kind == sm.KIND_TF1:
        result = _replay_tf1(manifest, workspace, device, action, seed, dump_dir)
    else:
        result = _replay_keras(manifest, workspace, device, action, dump_dir)
    result.update(device=device, action=action, kind=manifest.kind, seed=seed, op_determinism=determinism)
    _record_loss(workspace, device, manifest, result)
    from precision_tool.atomic import write_text_atomic

    write_text_atomic(workspace.checkpoint_dir / RESULT_NAME.format(device=device), json.dumps(result, indent=2))
    if device == "cpu":  # the golden tensors are this process's now: so is the golden run-config record
        _record_golden_replay(workspace, result)
    return result


def _record_loss(workspace: Any, device: str, manifest: Any, result: dict[str, Any]) -> None:
    """The replayed step's loss into its side's loss record (tf/loss.csv, npu/debug_0/loss.csv), at the step
    number the capture recorded; a failure is a note in the result, never a failed replay."""
    loss = result.get("loss")
    if not loss or loss.get("value") is None:
        return
    from precision_tool.capture.records.loss_recorder import add_replayed_step, side_loss_file

    step = manifest.data.get("step", 0)
    path = side_loss_file(workspace, device == "npu")
    try:
        add_replayed_step(path, step if isinstance(step, int) and step >= 0 else 0, float(loss["value"]))
        loss.update(step=step, file=str(path))
    except Exception as error:  # noqa: BLE001 - the dump is what train is for; the loss record is an aid
        loss["not_recorded"] = f"{type(error).__name__}: {error}"


def _record_golden_replay(workspace: Any, result: dict[str, Any]) -> None:
    """tf/run_config.json of the golden replay: its seeds, versions and environment; dropout as the replay
    ran it (rate 0 where it was switched off, 'not switched off' where it could not be)."""
    from precision_tool.capture.records import run_config_record

    dropout = [{"scope": scope, "rate": 0.0} for scope in result.get("dropout_off", [])]
    dropout += [{"scope": entry.split(":", 1)[0], "rate": "not switched off"}
                for entry in result.get("dropout_not_switched", [])]
    run_config_record.write_quietly(workspace, lambda: run_config_record.build(
        "golden", "train -d cpu", dropout=dropout))


def _import_adapter(kind: str) -> None:
    module = "npu_bridge.npu_init" if kind == "tf1" else "npu_device"
    try:
        __import__(module)
    except Exception as error:  # ImportError, or a CANN library that fails to load (OSError)
        raise _AdapterMissing(_adapter_missing(module.split(".")[0], error)) from None


# --- TF1 --------------------------------------------------------------------------------------------------
@dataclass
class Tf1Step:
    """A captured TF1 step rebuilt: its graph, a session with the variables restored, what to feed."""

    graph: Any
    session: Any
    feeds: dict[str, Any]  # the saved inputs and dropout's off-switches, by tensor name
    fetches: list[str]  # what the captured run fetched (the manifest's names)
    dropout: Any  # capture.dropout.DropoutReport
    seeded: list[str]  # random ops given fixed seeds


def saved_config(manifest: Any) -> Any:
    """The session's ConfigProto as the capture saved it (an empty one when it saved none)."""
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    name = manifest.data.get("session_config")
    if name:
        config.ParseFromString(manifest.path(name).read_bytes())
    return config


def restore_tf1_step(manifest: Any, config: Any, seed: int | None = None) -> Tf1Step:
    """Import the meta graph (with `seed`, random ops built without one get fixed seeds), restore the
    variables from before the step into a session with `config`, load the saved inputs and switch dropout
    off: what `train` and `train -d sim` both start from."""
    import tensorflow as tf

    from precision_tool.capture import step_manifest as sm
    from precision_tool.capture.dropout import tf1_dropout_feeds

    v1 = tf.compat.v1
    data = manifest.data
    graph = tf.Graph()
    with graph.as_default():
        saver = v1.train.import_meta_graph(str(manifest.path(data["meta_graph"])))
        seeded = _fix_random_seeds(graph, seed) if seed is not None else []
    dropout = tf1_dropout_feeds(graph)
    session = v1.Session(graph=graph, config=config)
    if data.get("checkpoint"):
        with graph.as_default():  # Saver works in graph mode only inside its graph
            saver = saver or v1.train.Saver()
            saver.restore(session, str(manifest.path(data["checkpoint"])))
    feeds = {entry["tensor"]: sm.load_array(manifest.path(entry["file"])) for entry in manifest.input_entries()}
    feeds.update(dropout.feeds)
    fetches = [entry["name"] for entry in manifest.fetch_entries()]
    return Tf1Step(graph, session, feeds, fetches, dropout, seeded)


def _replay_tf1(manifest: Any, workspace: Any, device: str, action: str, seed: int,
                dump_dir: Path) -> dict[str, Any]:
    import tensorflow as tf

    config = _session_config(manifest, device, action)
    options: dict[str, Any] = {}
    if device == "npu":
        options = npu_options_of(config)
        from precision_tool.atomic import write_text_atomic

        write_text_atomic(workspace.checkpoint_dir / NPU_OPTIONS_NAME, json.dumps(options, indent=2))
    step = restore_tf1_step(manifest, config, seed)
    fetches = step.fetches or [op.name for op in step.graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP)]
    runner = _dumping_session(step.session, dump_dir) if device == "cpu" else step.session
    values = runner.run(fetches, feed_dict=step.feeds)
    from precision_tool.capture.records.loss_recorder import loss_tensor_name

    loss_name = loss_tensor_name(step.graph, fetches)
    loss = {"tensor": loss_name, "value": _scalar(values[fetches.index(loss_name)])} if loss_name in fetches else None
    return {"fetches": _fetch_report(manifest, fetches, values), "loss": loss, "dropout_off": step.dropout.switched_off,
            "dropout_not_switched": step.dropout.not_switched, "seeded_random_ops": step.seeded,
            "inputs_fed": len(manifest.input_entries()), "npu_options": options}


def _scalar(value: Any) -> float | None:
    import numpy as np

    array = np.asarray(value)
    return float(array.reshape(-1)[0]) if array.size == 1 and array.dtype.kind in "fiu" else None


def _dumping_session(session: Any, dump_dir: Path) -> Any:
    """tf_config.sess_dump's tfdbg wrapper, dumping into `dump_dir` (train's fresh folder) instead of tf/tf_debug."""
    from tensorflow.python import debug as tf_debug

    if dump_dir.is_dir() and any(dump_dir.iterdir()):
        raise RuntimeError(f"{dump_dir} already holds dumps")  # train always passes a fresh folder
    return tf_debug.DumpingDebugWrapperSession(session, str(dump_dir))


def _session_config(manifest: Any, device: str, action: str) -> Any:
    from precision_tool.capture import tf_setup

    config = saved_config(manifest)
    rewrite = config.graph_options.rewrite_options
    if device == "cpu":  # a config captured on the NPU names the NpuOptimizer, unknown to CPU TensorFlow
        kept = [op for op in rewrite.custom_optimizers if op.name != "NpuOptimizer"]
        del rewrite.custom_optimizers[:]
        rewrite.custom_optimizers.extend(kept)
        # every op as written, in the session's own config (tf_setup's context-wide switch does not reach
        # a session given a config, and the classic optimizer would still fold constants into new names)
        return tf_setup.golden_session_config(config)
    return tf_setup.session_dump_config(config, action=action)


def npu_options_of(config: Any) -> dict[str, Any]:
    """The NpuOptimizer's parameters in a ConfigProto (strings decoded), {} when it names none."""
    for custom in config.graph_options.rewrite_options.custom_optimizers:
        if custom.name == "NpuOptimizer":
            return {key: _attr_value(value) for key, value in sorted(custom.parameter_map.items())}
    return {}


def _attr_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    found = getattr(value, which) if which else None
    return found.decode("utf-8", "replace") if isinstance(found, bytes) else found


def _fix_random_seeds(graph: Any, seed: int) -> list[str]:
    """Random ops built without a seed (seed = seed2 = 0) draw differently each run: give them fixed ones."""
    from tensorflow.core.framework import attr_value_pb2

    seeded = []
    for index, op in enumerate(graph.get_operations()):
        attrs = op.node_def.attr
        if "seed" in attrs and "seed2" in attrs and attrs["seed"].i == 0 and attrs["seed2"].i == 0:
            op._set_attr("seed", attr_value_pb2.AttrValue(i=seed))  # noqa: SLF001 (no public setter)
            op._set_attr("seed2", attr_value_pb2.AttrValue(i=index + 1))  # noqa: SLF001
            seeded.append(op.name)
    return seeded


def _fetch_report(manifest: Any, names: list[str], values: list[Any]) -> list[dict[str, Any]]:
    """Each fetched tensor's value in the replay beside the captured one (scalars shown, arrays compared)."""
    import numpy as np

    from precision_tool.capture import step_manifest as sm

    captured = {entry["name"]: entry for entry in manifest.fetch_entries()}
    report = []
    for name, value in zip(names, values):
        if value is None:
            continue
        array = np.asarray(value)
        entry: dict[str, Any] = {"name": name, "shape": list(array.shape)}
        if array.size == 1 and array.dtype.kind in "fiub":
            entry["value"] = array.reshape(()).item()
        old = captured.get(name, {})
        if old.get("file"):
            before = sm.load_array(manifest.path(old["file"]))
            entry["same_as_captured"] = bool(before.shape == array.shape and before.tobytes() == array.tobytes())
            if before.size == 1 and before.dtype.kind in "fiub":
                entry["captured"] = before.reshape(()).item()
        elif old.get("not_saved"):
            entry["captured_not_saved"] = old["not_saved"]  # the capture could not keep it: nothing to check
        report.append(entry)
    return report


# --- Keras ------------------------------------------------------------------------------------------------
def _replay_keras(manifest: Any, workspace: Any, device: str, action: str, dump_dir: Path) -> dict[str, Any]:
    import tensorflow as tf

    from precision_tool.capture import tf_setup
    from precision_tool.capture.dropout import keras_dropout_off
    from precision_tool.capture.keras_capture import keras_dump, load_batch

    options: dict[str, Any] = {}
    if device == "npu":
        import npu_device  # type: ignore[import-not-found]

        tf_setup.npu_device_dump_config(npu_device, action)
        options = dict(npu_device.global_options().as_dict()) if hasattr(npu_device.global_options(), "as_dict") else {}
        from precision_tool.atomic import write_text_atomic

        write_text_atomic(workspace.checkpoint_dir / NPU_OPTIONS_NAME, json.dumps(options, indent=2, default=str))
        handle = npu_device.open()  # the adapter's device; `.as_default()` places what follows on the NPU
        if hasattr(handle, "as_default"):
            handle.as_default()
    model = tf.keras.models.load_model(str(manifest.path(manifest.data["model"])), compile=True)
    dropout = keras_dropout_off(model)
    x, y, sample_weight = load_batch(manifest)
    if device == "cpu":
        keras_dump(dump_dir)
    try:
        logs = model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)
    finally:
        if device == "cpu":
            tf.debugging.experimental.disable_dump_debug_info()
    fetches = [{"name": key, "value": float(value)} for key, value in sorted(logs.items())]
    captured = manifest.data.get("logs") or {}
    for entry in fetches:
        if entry["name"] in captured:
            entry["captured"] = captured[entry["name"]]
    loss = {"tensor": "loss", "value": float(logs["loss"])} if "loss" in logs else None
    return {"fetches": fetches, "loss": loss, "dropout_off": dropout.switched_off, "dropout_not_switched": dropout.not_switched,
            "seeded_random_ops": [], "inputs_fed": len(manifest.input_entries()), "npu_options": options}


if __name__ == "__main__":
    sys.exit(main())
