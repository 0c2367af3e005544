"""The loss record both capture sides write (formats/loss_record.py): what it writes reads back, and every
damaged file is one FormatError naming it."""

from __future__ import annotations

import math

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.loss_record import LossPoint, read_loss, write_loss
from precision_tool.workspace import Workspace


def test_written_points_read_back_in_step_order_with_inf_and_missing_columns(tmp_path):
    ws = Workspace(tmp_path)
    points = [LossPoint(3, float("inf"), None, 65536.0), LossPoint(1, 0.6931471805599453, 2.5, None)]
    write_loss(ws.loss_file(0), points)
    read = read_loss(ws.loss_file(0))
    assert [p.step for p in read] == [1, 3]
    assert read[0] == LossPoint(1, 0.6931471805599453, 2.5, None)
    assert math.isinf(read[1].loss) and read[1].loss_scale == 65536.0
    assert ws.loss_file(0) == tmp_path / "npu" / "debug_0" / "loss.csv"
    assert ws.golden_loss_file == tmp_path / "tf" / "loss.csv"


def test_a_hand_written_record_with_two_columns_reads(tmp_path):
    path = tmp_path / "loss.csv"
    path.write_text("step,loss\n0,2.30\n1,2.10\n\n2,1.95\n")
    assert [(p.step, p.loss, p.grad_norm) for p in read_loss(path)] == [(0, 2.30, None), (1, 2.10, None), (2, 1.95, None)]


@pytest.mark.parametrize("text, said", [
    ("", "is empty"),
    ("epoch,value\n1,2\n", "is not step,loss"),
    ("step,loss\n1,abc\n", "line 2"),
    ("step,loss\n1,\n", "has no loss"),
    ("step,loss\n1,2\n1,3\n", "appears twice"),
    ("step,loss\n-1,2\n", "negative"),
    ("step,loss\n1,2,3\n", "3 values for 2 columns"),
])
def test_a_damaged_record_is_one_line_naming_the_file(tmp_path, text, said):
    path = tmp_path / "loss.csv"
    path.write_text(text)
    with pytest.raises(FormatError) as caught:
        read_loss(path)
    assert said in caught.value.problem and caught.value.path == str(path)


def test_binary_garbage_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "loss.csv"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(FormatError, match="not UTF-8"):
        read_loss(path)
