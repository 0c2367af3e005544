"""Each reason an op cannot be replayed, made real on a copy of the demo and said in one line (never a
guess, never a traceback): no dump, no golden GraphDef, no such node, a custom op, no CPU kernel, rebuilt
ops that do not reproduce golden, statistics only, no original op names, no TensorFlow for the Python that
replays (exit status 1, as for a child that crashed or wrote nothing: the replay failed, it found nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TF_IMPORT_LEFTOVERS, run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

OP = "bn2/FusedBatchNormV3"

# Rewrites the golden GraphDef of a workspace (its tfdbg graph files and the captured model.meta) in a
# child: argv = workspace, node, what ("rename" | "custom" | "no_kernel" | "epsilon").
EDIT_GRAPH = r"""
import sys
from pathlib import Path
import tensorflow as tf
root, node_name, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

def edit(graph_def):
    for node in graph_def.node:
        if node.name != node_name:
            continue
        if what == "rename":
            node.name = node_name + "_elsewhere"
        elif what == "custom":
            node.op = "NpuOnlyBatchNorm"
        elif what == "no_kernel":  # an op TensorFlow has, without a CPU kernel
            node.op = "NcclAllReduce"
            for key in list(node.attr):
                if key != "T":
                    del node.attr[key]
            node.attr["reduction"].s = b"sum"
            node.attr["num_devices"].i = 1
            node.attr["shared_name"].s = b"replay"
        elif what == "epsilon":
            node.attr["epsilon"].f = 0.5

for path in (root / "tf" / "tf_debug").rglob("_tfdbg_graph_*"):
    event = tf.compat.v1.Event.FromString(path.read_bytes())
    graph_def = tf.compat.v1.GraphDef.FromString(event.graph_def)
    edit(graph_def)
    event.graph_def = graph_def.SerializeToString()
    path.write_bytes(event.SerializeToString())
meta_path = root / "tf" / "checkpoints" / "model.meta"
if meta_path.is_file():
    meta = tf.compat.v1.MetaGraphDef.FromString(meta_path.read_bytes())
    edit(meta.graph_def)
    meta_path.write_bytes(meta.SerializeToString())
"""


def _edit_graph(ws: Path, node: str, what: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in TF_IMPORT_LEFTOVERS}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    proc = subprocess.run([sys.executable, "-c", EDIT_GRAPH, str(ws), node, what], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _reason(ws: Path, op: str = OP, *extra: str, status: int = 0) -> str:
    """The reason line under the op's CANNOT REPLAY; `status` 1: the replay itself failed (not a finding)."""
    result = run_cli("replay", op, *extra, data=ws)
    assert result.status == status, result.out[-2000:] + result.err[-2000:]
    assert "Traceback" not in result.out + result.err
    lines = [line for line in result.out.splitlines() if line.startswith("replay [") and op in line]
    assert len(lines) == 1 and lines[0].endswith("CANNOT REPLAY"), result.out[-2000:]
    after = result.out.splitlines()[result.out.splitlines().index(lines[0]) + 1]
    return after.strip()


def test_no_dump(fresh_ws: Path):
    for path in (fresh_ws / "npu" / "debug_0" / "dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*"):
        path.unlink()
    reason = _reason(fresh_ws)
    assert reason.startswith("no dump of bn2/FusedBatchNormV3 in ") and "npu/debug_0/dump" in reason


def test_no_golden_graph_def(fresh_ws: Path):
    for path in (fresh_ws / "tf" / "tf_debug").rglob("_tfdbg_graph_*"):
        path.unlink()
    (fresh_ws / "tf" / "checkpoints" / "model.meta").unlink()
    assert _reason(fresh_ws) == (f"no golden GraphDef in {fresh_ws / 'tf' / 'tf_debug'} (tfdbg's _tfdbg_graph_* or "
                                 f"*.graphs files) nor {fresh_ws / 'tf' / 'checkpoints' / 'model.meta'}")


def test_no_such_node_in_the_graph_def(fresh_ws: Path):
    _edit_graph(fresh_ws, OP, "rename")
    assert _reason(fresh_ws).startswith("the golden GraphDef has no node named bn2/FusedBatchNormV3 (")


def test_custom_op(fresh_ws: Path):
    _edit_graph(fresh_ws, OP, "custom")
    assert _reason(fresh_ws) == "TensorFlow has no op NpuOnlyBatchNorm (a custom op): it cannot run on CPU here"


def test_op_without_a_cpu_kernel(fresh_ws: Path):
    _edit_graph(fresh_ws, "bn2/Relu", "no_kernel")
    reason = _reason(fresh_ws, "bn2/Relu")
    assert reason.startswith("TensorFlow cannot run bn2/Relu on CPU: ") and "NcclAllReduce" in reason


def test_rebuilt_ops_that_do_not_reproduce_golden_are_not_trusted(fresh_ws: Path):
    _edit_graph(fresh_ws, OP, "epsilon")  # the GraphDef no longer says what the golden run computed
    reason = _reason(fresh_ws)
    assert reason.startswith("the rebuilt TF ops do not give the golden output bn2/FusedBatchNormV3:0 on the golden "
                             "inputs (cosine ")
    assert reason.endswith("they are not what the golden run computed")


def test_a_python_without_tensorflow(fresh_ws: Path, tmp_path: Path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # nothing could be replayed: not a finding about the op, so the exit status is 1
    reason = _reason(fresh_ws, OP, "--python", str(python), status=1)
    assert reason == f"TensorFlow is not installed for {python}; `pip install tensorflow-cpu`"
    missing = run_cli("replay", OP, "--python", str(tmp_path / "nothing"), data=fresh_ws)
    assert missing.status == 1 and f"cannot run {tmp_path / 'nothing'}" in missing.out
    assert "replay: 1 of 1 op(s) could not be replayed because the replay failed" in missing.out + missing.err


def _fake_python(tmp_path: Path, body: str) -> Path:
    """A 'Python' for --python that does what `body` (sh) says instead of replaying."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def _log_of(reason: str) -> Path:
    return Path(reason.rsplit("its output: ", 1)[1])


def test_a_child_that_writes_no_result_says_its_error_and_where_its_output_is(fresh_ws: Path, tmp_path: Path):
    python = _fake_python(tmp_path, 'echo "ImportError: cannot load libtensorflow_framework.so.2" >&2; exit 0')
    reason = _reason(fresh_ws, OP, "--python", str(python), status=1)
    assert reason.startswith("the replay process wrote no result for it (its last error line: ImportError: cannot "
                             "load libtensorflow_framework.so.2); its output: ")
    log = _log_of(reason)
    assert log.parent.parent == fresh_ws / "temp" / "replay" and "libtensorflow_framework" in log.read_text()


def test_a_child_that_crashes_is_named_with_its_signal(fresh_ws: Path, tmp_path: Path):
    python = _fake_python(tmp_path, 'echo "Fatal Python error: Segmentation fault" >&2; kill -SEGV $$')
    reason = _reason(fresh_ws, OP, "--python", str(python), status=1)
    assert reason.startswith("the replay process was killed by SIGSEGV: Fatal Python error: Segmentation fault; "
                             "its output: ")
    assert "Segmentation fault" in _log_of(reason).read_text()
    # ni -c is the same replay, with the same exit status
    result = run_cli("ni", "-c", OP, "--python", str(python), data=fresh_ws)
    assert result.status == 1 and "ni -c: 1 of 1 op(s) could not be replayed" in result.out + result.err


def test_bad_requests_are_one_line(fresh_ws: Path):
    result = run_cli("replay", "no/such/op", data=fresh_ws)
    assert result.status != 0 and "replay: no op is named 'no/such/op'" in result.err + result.out
    result = run_cli("ni", "-c", data=fresh_ws)
    assert result.status != 0 and "ni -c: give the op to replay" in result.err + result.out
    result = run_cli("ni", "--python", "python3", OP, data=fresh_ws)
    assert result.status != 0 and "add -c" in result.err + result.out


def test_statistics_only(fresh_ws: Path):
    from tests.analysis.compare.stats.stats_helpers import to_stats

    (dump,) = (fresh_ws / "npu" / "debug_0" / "dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*")
    to_stats(dump)
    assert _reason(fresh_ws) == ('debug_0 dumped statistics only for bn2/FusedBatchNormV3 (dump_data="stats"); '
                                 'replaying needs its tensors (dump_data="tensor")')


def test_no_original_op_names(fresh_ws: Path):
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_text

    (path,) = (fresh_ws / "npu" / "debug_0" / "graph").glob("*_Build.txt")
    model = load_graph(path)
    for _, op in model.iter_ops():
        if op.name == "bn2/Relu":
            del op.attrs["_datadump_original_op_names"]
    write_graph_text(model, path)
    assert _reason(fresh_ws, "bn2/Relu") == ("bn2/Relu has no _datadump_original_op_names: the graph does not say "
                                             "which TensorFlow ops it was made from")
