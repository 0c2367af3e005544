"""tf_dump on a real tfdbg v2 FULL_TENSOR dump of a Keras model, checked with TensorFlow's own reader."""

from __future__ import annotations

import re

import numpy as np

from precision_tool.formats.tf.golden import golden_file_name, scan_golden_dir
from precision_tool.formats.tf.tfdbg_v2 import read_traces


def test_v2_keras_dump_matches_debug_data_reader(cli, copy_workspace, v2_workspace):
    from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader

    ws = copy_workspace(v2_workspace)
    result = cli("tf_dump", "--run", "all", data=ws)
    assert result.status == 0, result.out + result.err
    assert "tfdbg v2" in result.out and "step 0, step 1" in result.out
    golden = ws / "tf" / "dump"
    last_value = {}  # two graphs may run an op of the same name in the same µs: tf_dump keeps the last one
    with DebugDataReader(str(ws / "tf" / "tf_debug")) as reader:
        reader.update()
        for trace in reader.graph_execution_traces():
            stamp = int(round(trace.wall_time * 1_000_000))
            name = golden_file_name(trace.op_name, trace.output_slot, stamp)
            last_value[name] = reader.graph_execution_trace_to_tensor_value(trace)
    for name, value in last_value.items():
        ours = np.load(golden / name)
        assert ours.dtype == value.dtype and ours.shape == value.shape
        np.testing.assert_array_equal(ours, value)
    assert len(last_value) == len(list(golden.glob("*.npy"))) > 50
    keys = scan_golden_dir(golden)
    for op in ("MatMul", "BiasAdd", "Relu"):  # Keras 3 names them sequential[_N]/dense[_N]/<op>
        assert any(re.search(rf"^sequential(_\d+)?_dense(_\d+)?_{op}\.0$", k) for k in keys), op


def test_v2_default_is_the_last_step(cli, copy_workspace, v2_workspace):
    ws = copy_workspace(v2_workspace)
    last = cli("tf_dump", data=ws)
    assert last.status == 0 and "step 1" in last.out and "step 0" not in last.out
    first = cli("tf_dump", "--run", "0", "--out", str(ws / "first"), data=ws)
    assert first.status == 0
    last_names = {p.name for p in (ws / "tf" / "dump").iterdir()}
    first_names = {p.name for p in (ws / "first").iterdir()}
    assert last_names and first_names
    # Steps are told apart by timestamp. Only an op that ran for both steps in one µs keeps one name: tf.data
    # maps two batches in parallel, so on a busy machine the input pipeline's ops may.
    traces = read_traces(ws / "tf" / "tf_debug").traces
    stamps = [{golden_file_name(t.op_name, t.output_slot, t.timestamp_us) for t in traces if t.step == step}
              for step in (0, 1)]
    assert last_names & first_names == stamps[0] & stamps[1]
    assert not any(name.startswith("sequential") for name in last_names & first_names)
    assert {n.split(".")[0] for n in last_names} & {n.split(".")[0] for n in first_names}
