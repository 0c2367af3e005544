"""tf_config's tfdbg wrappers record where each op was created, with real TensorFlow (train_tf1.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.formats.tf.op_sources import read_op_sources, user_frame
from precision_tool.workspace import Workspace

SCRIPT = Path(__file__).resolve().parent / "scripts" / "train_tf1.py"


def _line_of(needle: str) -> int:
    return next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize("fixture", ["v1_sess_workspace", "v1_hook_workspace"])
def test_each_op_is_traced_to_the_line_of_the_training_script(fixture: str, request) -> None:  # type: ignore[no-untyped-def]
    """sess_dump (Session wrapper) and estimator_dump (MonitoredSession hook) both write the record."""
    workspace = Workspace(request.getfixturevalue(fixture))
    record = read_op_sources(workspace.op_sources_file)
    assert record is not None, f"no record at {workspace.op_sources_file}"
    expected = {
        "conv1/Conv2D": ("tf.nn.conv2d(images", "build"),
        "pool1": ('tf.nn.max_pool2d(conv, 2, 2, "VALID", name="pool1")', "build"),
        "flat": ("tf.reshape(pool", "build"),
    }
    for op, (code, function) in expected.items():
        stack = record.stack(op)
        assert stack is not None, op
        frame = user_frame(stack)
        assert frame is not None and frame.path == str(SCRIPT) and frame.function == function, (op, frame)
        assert frame.line == _line_of(code) and code in (frame.text or ""), (op, frame)
        assert not stack[-1].user and "tensorflow" in stack[-1].path  # the innermost frames are TensorFlow's
    # ops made by the optimizer: the user's frame is the line that asked for them
    grad = next(name for name in record.data["ops"] if name.startswith("gradients/"))
    assert user_frame(record.stack(grad)).line == _line_of("minimize(loss)")  # type: ignore[union-attr]


KERAS_SCRIPT = SCRIPT.parent / "train_keras_v2.py"


def test_tf_dump_of_a_v2_dump_records_where_its_ops_were_made(cli, copy_workspace, v2_workspace) -> None:  # type: ignore[no-untyped-def]
    """tfdbg v2 keeps each graph op's stack frames and the source files' lines in its own files (*.graphs,
    *.stack_frames, *.source_files): tf_dump turns them into the same record. Keras builds the graph inside
    `model.fit`, so that is the user's line of its layers' ops; the lines come from the dump itself."""
    ws = copy_workspace(v2_workspace)
    done = cli("tf_dump", data=ws)
    assert done.status == 0, done.out + done.err
    workspace = Workspace(ws)
    assert str(workspace.op_sources_file) in done.out  # tf_dump says where the record went
    record = read_op_sources(workspace.op_sources_file)
    assert record is not None
    matmul = next(name for name in record.data["ops"] if name.endswith("/MatMul"))  # a Dense layer's
    frame = user_frame(record.stack(matmul))  # type: ignore[arg-type]
    fit = next(n for n, line in enumerate(KERAS_SCRIPT.read_text().splitlines(), 1) if "model.fit(" in line)
    assert frame is not None and frame.path == str(KERAS_SCRIPT) and frame.line == fit
    assert frame.text is not None and "model.fit(" in frame.text
