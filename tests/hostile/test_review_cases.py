"""Hostile inputs a review found after the corpora ran: each is one clear line naming the file, never a
traceback (digits that are not ASCII, a zero-sized .npy with impossible dimensions, a byte-order mark as a
whole statistics CSV, a tfdbg v2 record whose wall_time is not a number), and `ac -c` fails when every file
a comparison needed was unreadable."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import FormatError

ONNX = Path(__file__).resolve().parents[1] / "analysis" / "graphs" / "data" / "ge_onnx_00000001_graph_1_Build.pbtxt"


def _onnx_workspace(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "precision_data"
    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    (graph_dir / ONNX.name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("old, new", [
    ('name: "output_desc_dtype:0"', 'name: "output_desc_dtype:\u00b2"'),  # a superscript two: isdigit() but not int()
    ('name: "output_desc_dtype:0"', 'name: "output_desc_dtype:' + "9" * 5000 + '"'),
    ('input: "ge_default_20230713074125_sub_0_input_PartitionedCall_0:1"',
     'input: "ge_default_20230713074125_sub_0_input_PartitionedCall_0:\u00b2"'),
])
def test_onnx_dump_with_odd_digits_is_read_or_named(cli, tmp_path: Path, old: str, new: str) -> None:
    text = ONNX.read_text(encoding="utf-8")
    assert old in text
    root = _onnx_workspace(tmp_path, text.replace(old, new, 1))
    for args in (("ls",), ("ni", "ge_default_20230713074125_sub_0_input_PartitionedCall_0"), ("ac",)):
        result = cli(*args, data=root, cwd=tmp_path)
        assert "Traceback" not in result.out + result.err and "unexpected error" not in result.out + result.err, args
        assert result.status == 0 or ONNX.name in result.out + result.err, (args, result.out, result.err)


def test_split_input_takes_ascii_indexes_only() -> None:
    from precision_tool.formats.ge.ge_model import split_input

    assert split_input("a:3") == ("a", 3)
    assert split_input("a:-1") == ("a", -1)
    assert split_input("a:\u00b2") == ("a:\u00b2", 0)
    assert split_input("a:" + "9" * 40) == ("a:" + "9" * 40, 0)


def test_zero_sized_npy_with_impossible_dimensions(tmp_path: Path, cli) -> None:
    from precision_tool.formats.tf.golden import load_npy

    buffer = io.BytesIO()
    np.save(buffer, np.zeros((0, 4), np.float32))
    data = buffer.getvalue().replace(b"(0, 4)", b"(0, 4611686018427387904, 4)")
    path = tmp_path / "zero.npy"
    path.write_bytes(data)
    with pytest.raises(FormatError, match="dimensions no array can have"):
        load_npy(path)
    shown = cli("pt", str(path), data=tmp_path)
    assert shown.status == 1 and str(path) in shown.out + shown.err and "Traceback" not in shown.out + shown.err
    empty = tmp_path / "empty_ok.npy"
    np.save(empty, np.zeros((0, 4), np.float32))
    assert load_npy(empty).shape == (0, 4)  # a real empty array still reads


def test_statistics_csv_of_a_byte_order_mark_only(tmp_path: Path) -> None:
    from precision_tool.formats.npu.stats_dump import read_stats_csv

    path = tmp_path / "Relu.relu.1.0.1700000000000000.csv"
    path.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(FormatError, match="holds no header"):
        read_stats_csv(path)


def test_stats_result_index_in_other_digits(tmp_path: Path) -> None:
    from precision_tool.analysis.results.stats_results import STATS_RESULT_HEADER, read_stats_result

    row = ["\u00b2" if name == "Index" else ("pass" if name == "Result" else "") for name in STATS_RESULT_HEADER]
    path = tmp_path / "result_1.csv"
    path.write_text(",".join(STATS_RESULT_HEADER) + "\n" + ",".join(row) + "\n")
    with pytest.raises(FormatError, match="is not a number"):
        read_stats_result(path)


def test_tfdbg_v2_record_with_a_wall_time_that_is_not_a_number(tmp_path: Path) -> None:
    """A record framed and checksummed by TensorFlow's own writer, whose wall_time is NaN."""
    import tensorflow as tf
    from tensorflow.core.protobuf import debug_event_pb2

    from precision_tool.formats.tf import tfdbg_v2

    event = debug_event_pb2.DebugEvent(wall_time=float("nan"))
    event.graph_execution_trace.op_name = "dense/MatMul"
    event.graph_execution_trace.tfdbg_context_id = "g1"
    path = tmp_path / f"{tfdbg_v2.EVENTS_PREFIX}1.host{tfdbg_v2.TRACES_SUFFIX}"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(event.SerializeToString())
    traces = tfdbg_v2.read_traces(tmp_path)
    assert not traces.traces
    assert traces.problems == ((path, "record at byte 0: its wall_time nan is not a time; the record is damaged"),)


def test_ac_fails_when_every_statistics_csv_is_unreadable(stats_workspace_copy, cli) -> None:
    root = stats_workspace_copy
    for path in (root / "npu" / "debug_0" / "dump").rglob("*.csv"):
        path.write_text("garbage")
    result = cli("ac", "-c", data=root)
    assert result.status == 1
    assert "comparison: nothing could be compared in " in result.out + result.err
    assert "Traceback" not in result.out + result.err


@pytest.fixture
def stats_workspace_copy(tmp_path: Path) -> Path:
    """A demo copy whose debug_0 dumped statistics only (debug_1 removed)."""
    from tests.conftest import run_cli
    from tests.analysis.compare.stats.stats_helpers import dump_files, to_stats

    root = tmp_path / "ws"
    assert run_cli("demo", "--no-check", str(root)).status == 0
    shutil.rmtree(root / "npu" / "debug_1")
    for dump in dump_files(root / "npu" / "debug_0" / "dump"):
        to_stats(dump)
    return root
