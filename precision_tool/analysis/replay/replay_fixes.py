"""What to do about a verdict, written to the workspace's fix/ folder.

- *precision*: fix/ops_info.json, the mixed-precision list CANN's `modify_mixlist` option reads
  (capture.md §5): the op type added to "black-list" → "to-add", so it stays in float32. Merged with what
  the file already holds; a file that is not such JSON is left alone (the caller says so).
- *kernel*: fix/repro_<op>/, a folder to attach to a report to the op's vendor: the NPU's inputs and
  outputs as .npy, the replayed TF GraphDef, and run.py, which runs it with TensorFlow alone and prints
  how far the NPU output is from it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError, WorkspaceError
from precision_tool.workspace import Workspace

if TYPE_CHECKING:
    from precision_tool.analysis.replay.replay_verdict import Verdict


def write_ops_info(workspace: Workspace, op_types: Iterable[str]) -> Path:
    """Add the op types to the block list of fix/ops_info.json (kept in float32); returns its path.
    WorkspaceError when an existing file is not a mixed-precision list (it is not overwritten)."""
    from precision_tool.formats.npu.mixlist import BLOCK_LIST, read_mixlist

    path = workspace.ops_info_file
    data: dict = {}
    if path.is_file():
        try:
            read_mixlist(path)  # refuses anything but {"black-list": {"to-add": [...]}, ...}
            data = json.loads(path.read_text(encoding="utf-8"))
        except FormatError as exc:
            raise WorkspaceError(f"{exc}; it was not changed: fix or remove it, then replay again") from None
    block = data.setdefault(BLOCK_LIST, {})
    adding = block.setdefault("to-add", [])
    adding += [t for t in dict.fromkeys(op_types) if t not in adding]
    if block.get("to-remove"):  # a type both added and removed is not kept: the removal goes
        block["to-remove"] = [t for t in block["to-remove"] if t not in adding]
    Workspace.ensure_dir(path.parent, "fix folder")
    write_text_atomic(path, json.dumps(data, indent=4) + "\n")
    return path


_RUN_PY = '''"""Reproducer of {op_name} ({op_type}): its NPU inputs, its NPU output, and the TensorFlow ops it was
made from ({tf_nodes}). Needs only numpy and TensorFlow:

    python3 run.py            # float32, as the golden run computes
    python3 run.py float16    # in the NPU's dtypes{half_note}

Prints, per output, how far the NPU output is from TensorFlow's on the same inputs.
Written by PrecisionTool's replay ({verdict}).
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    spec = json.load(open(os.path.join(HERE, "replay.json")))
    variant = sys.argv[1] if len(sys.argv) > 1 else "float32"
    if variant not in spec["graphs"]:
        sys.exit("run.py: no %s graph here; choose one of %s" % (variant, ", ".join(spec["graphs"])))
    replayed = spec["graphs"][variant]
    graph_def = tf.compat.v1.GraphDef()
    with open(os.path.join(HERE, replayed["file"]), "rb") as handle:
        graph_def.ParseFromString(handle.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        feeds = {{}}
        for feed in spec["feeds"]:
            tensor = graph.get_tensor_by_name(feed["placeholder"] + ":0")
            value = np.load(os.path.join(HERE, feed["file"]), allow_pickle=False)
            feeds[tensor] = value.astype(tensor.dtype.as_numpy_dtype)
        with tf.compat.v1.Session(graph=graph) as session:
            if replayed["init"]:  # an optimizer op's variables, set to the NPU's inputs
                session.run(replayed["init"], feed_dict=feeds)
            values = session.run(replayed["fetches"], feed_dict=feeds)
    for output, value in zip(spec["outputs"], values):
        npu = np.load(os.path.join(HERE, output["npu"]), allow_pickle=False).astype(np.float64).ravel()
        ref = np.asarray(value, dtype=np.float64).ravel()
        finite = np.isfinite(npu) & np.isfinite(ref)
        a, b = npu[finite], ref[finite]
        cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) if a.size and a.any() and b.any() else float("nan")
        print("%s (output %d): cosine %.6f, max |npu - tf| %.6g, Inf/NaN npu %d tf %d" % (
            output["tf_tensor"], output["index"], cosine, float(np.abs(a - b).max()) if a.size else 0.0,
            int((~np.isfinite(npu)).sum()), int((~np.isfinite(ref)).sum())))


if __name__ == "__main__":
    main()
'''


def write_reproducer(workspace: Workspace, verdict: "Verdict") -> Path:
    """fix/repro_<case>/ for a *kernel* verdict (replaced when it exists); returns the folder."""
    case = verdict.case
    source = Path(case.folder)
    target = workspace.fix_dir / f"repro_{case.key}"
    Workspace.ensure_dir(target.parent, "fix folder")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _fill_reproducer(staging, source, verdict)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # a failed copy leaves no half-written folder
    return target


def _fill_reproducer(staging: Path, source: Path, verdict: "Verdict") -> None:
    case = verdict.case
    staging.mkdir()
    feeds = []
    for n, feed in enumerate(verdict.feeds):  # what the replay fed, as fed (reshaped, golden where it said)
        name = f"input_{n}.npy"
        origin = Path(feed["file"]) if Path(feed["file"]).is_absolute() else source / feed["file"]
        shutil.copyfile(origin, staging / name)
        feeds.append({"placeholder": feed["placeholder"], "file": name, "tf_tensor": feed["tf_tensor"],
                      "source": feed["source"]})
    outputs = []
    for tensor in case.outputs:
        name = f"npu_output_{tensor.index}.npy"
        shutil.copyfile(source / tensor.file, staging / name)
        outputs.append({"index": tensor.index, "tf_tensor": tensor.tf_tensor, "npu": name, "dtype": tensor.dtype})
    graphs = {}
    for variant in ("float32", "float16"):
        replayed = verdict.graphs.get(variant)
        if replayed and not replayed.get("emulated"):
            shutil.copyfile(source / replayed["file"], staging / replayed["file"])
            graphs[variant] = {k: replayed[k] for k in ("file", "fetches", "init")}
    spec = {"op": case.op_name, "op_type": case.op_type, "op_id": case.op_id, "tf_nodes": list(case.tf_nodes),
            "verdict": verdict.line, "feeds": feeds, "outputs": outputs, "graphs": graphs,
            "evidence": list(verdict.evidence)}
    write_text_atomic(staging / "replay.json", json.dumps(spec, indent=1) + "\n")
    half_note = "" if "float16" in graphs else " (not written: no float16 TensorFlow graph for this op)"
    write_text_atomic(staging / "run.py", _RUN_PY.format(op_name=case.op_name, op_type=case.op_type,
                                                          tf_nodes=", ".join(case.tf_nodes), half_note=half_note,
                                                          verdict=verdict.verdict))


def tf_config_line(path: Path) -> str:
    """The line of a training script that applies the block list (tf_config's helper)."""
    return f'custom_op = precision_tool.tf_config.keep_in_float32(custom_op, "{path}")'
