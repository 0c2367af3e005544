"""Overflow records in both layouts, their English, and finding the overflowing op (the `ac` check)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.checks.overflow import find_overflows
from precision_tool.errors import FormatError
from precision_tool.formats.npu.dump_types import DataType
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.formats.npu.opdebug import (
    describe_status, new_layout_payload, old_layout_payload, parse_opdebug_payload,
)

OVERFLOW_SUBDIR = Path("overflow/dump/20240613150000/0/ge_default_1/1/0")


def write_opdebug(folder: Path, payload: bytes, *, task_id: int, stream_id: int, timestamp_us: int) -> Path:
    path = folder / f"Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp_us}"
    write_dump(path, op_name="Node_OpDebug", inputs=[],
               outputs=[TensorSpec(np.frombuffer(payload, np.uint8).copy(), data_type=DataType.UINT8)])
    return path


def test_old_layout_reports_each_unit() -> None:
    payload = old_layout_payload(ai_core=(2, 31, 0x20 | 0x100), dha=(2, 31, 0x0A << 8), l2=(2, 31, 0b011 << 16))
    records = parse_opdebug_payload(payload)
    assert [(r.unit, r.task_id, r.stream_id) for r in records] == [
        ("DHA atomic add", 31, 2), ("L2 atomic add", 31, 2), ("AI Core", 31, 2)]
    assert records[0].describe() == ["DHA atomic add underflow"]
    assert records[1].describe() == ["L2 atomic add source is NaN"]
    assert records[2].describe() == ["floating-point overflow", "overflow converting fp32 or int32 to fp16"]
    assert parse_opdebug_payload(old_layout_payload()) == []


def test_new_layout_all_units() -> None:
    aic = parse_opdebug_payload(new_layout_payload(unit="AIC", stream_id=4, task_id=9, status=0x400,
                                                   context_id=3, thread_id=1))
    assert len(aic) == 1 and (aic[0].unit, aic[0].task_id, aic[0].stream_id, aic[0].context_id) == ("AIC", 9, 4, 3)
    assert aic[0].describe() == ["cube accumulation overflow"]
    wide = parse_opdebug_payload(new_layout_payload(unit="AIV", stream_id=1, task_id=2, status=(0, 0, 5, 0),
                                                    version=1))
    assert wide[0].status_words == (0, 0, 5, 0) and wide[0].overflowed
    assert wide[0].describe() == ["status word 2 = 0x5"]
    sdma = parse_opdebug_payload(new_layout_payload(unit="SDMA", stream_id=1, task_id=2, status=0x7))
    assert sdma[0].describe() == ["SDMA status 0x7"]
    aicpu = parse_opdebug_payload(new_layout_payload(unit="AICPU", stream_id=1, task_id=2, status=1))
    assert aicpu[0].unit == "AICPU"
    assert parse_opdebug_payload(new_layout_payload(unit="AIC", stream_id=1, task_id=2, status=0)) == []


def test_status_words() -> None:
    assert describe_status("AI Core", (0x8 | 0x10 | 0x80,)) == [
        "sign overflow or minimum-integer overflow", "integer add/sub/mul overflow",
        "negative input to a float-to-unsigned conversion"]
    assert describe_status("DHA atomic add", (0x0D << 8,)) == ["DHA atomic add source and destination are NaN"]
    assert describe_status("L2 atomic add", (0b001 << 16,)) == ["L2 atomic add overflow"]


def test_bad_payloads_are_named() -> None:
    with pytest.raises(FormatError, match="op.bin: the overflow record is 100 bytes"):
        parse_opdebug_payload(bytes(100), "op.bin")
    with pytest.raises(FormatError, match="truncated"):
        parse_opdebug_payload(new_layout_payload(unit="AIC", stream_id=1, task_id=2, status=1)[:40], "op.bin")


@pytest.fixture
def overflow_workspace(tmp_path: Path, conv_dump) -> Path:
    """Two overflows: the first (by time) in a Conv2D found by the record's ids, not the file name's."""
    root = tmp_path / "precision_data"
    folder = root / OVERFLOW_SUBDIR
    folder.mkdir(parents=True)
    conv_dump(folder, "net/conv1", task_id=31, stream_id=2, timestamp_us=1_718_260_600_000_100)
    conv_dump(folder, "net/conv1_again", task_id=31, stream_id=2, timestamp_us=1_718_260_600_000_900)
    conv_dump(folder, "net/conv2", task_id=40, stream_id=2, timestamp_us=1_718_260_600_000_200, seed=3)
    # file names carry other ids than the records: the records decide
    write_opdebug(folder, old_layout_payload(ai_core=(2, 31, 0x20)), task_id=5, stream_id=9,
                  timestamp_us=1_718_260_600_000_150)
    write_opdebug(folder, new_layout_payload(unit="AIV", stream_id=2, task_id=40, status=0x100), task_id=6,
                  stream_id=9, timestamp_us=1_718_260_600_000_250)
    write_opdebug(folder, new_layout_payload(unit="AIC", stream_id=2, task_id=77, status=0x20), task_id=7,
                  stream_id=9, timestamp_us=1_718_260_600_000_350)
    return root


def test_find_overflows_orders_by_time_and_matches_record_ids(overflow_workspace: Path) -> None:
    from precision_tool.workspace import Workspace

    report = find_overflows(Workspace(overflow_workspace).newest_overflow_dir(), limit=3)
    assert report.total == 3
    first, second, third = report.findings
    assert (first.op_type, first.op_name) == ("Conv2D", "net_conv1")  # earliest of the two task-31 dumps
    assert first.records[0].unit == "AI Core"
    assert [t.label for t in first.tensors] == ["input:0", "input:1", "output:0"]
    assert first.tensors[0].layout == "NCHW" and first.tensors[0].stats.shape == (2, 20, 5, 7)
    assert second.op_name == "net_conv2" and second.records[0].describe() == ["overflow converting fp32 or int32 to fp16"]
    assert third.op_dump is None and "no dump with task id 77" in third.problem
    assert len(find_overflows(Workspace(overflow_workspace).newest_overflow_dir(), limit=1).findings) == 1


def test_ac_shows_overflows_with_limit(cli, overflow_workspace: Path) -> None:
    result = cli("ac", "-l", "2", data=overflow_workspace)
    assert "3 overflow record file(s)" in result.out
    assert "showing the first 2" in result.out
    assert "net_conv1" in result.out and "floating-point overflow" in result.out
    assert "net_conv2" in result.out and "task 77" not in result.out
    default = cli("ac", data=overflow_workspace)
    assert "showing the first 3" in default.out and "no dump with task id 77" in default.out


def test_ac_without_overflow_data(cli, tmp_path: Path) -> None:
    result = cli("ac", data=tmp_path)
    assert "no overflow (Opdebug) files" in result.out
