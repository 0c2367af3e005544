"""A small dump or golden file wanted whole is read in one call without a stat (formats/small_files.py reads
FIRST_READ bytes first, for npu_dump and golden alike): at every size around that first read, and when the
file is bigger than what the caller wants whole, the answer is the one the stat-first way gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.npu.dump_types import Format
from precision_tool.formats.npu.npu_dump import read_dump_start
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.formats.small_files import FIRST_READ
from precision_tool.formats.tf.golden import read_npy_start


def _dump_of_size(path: Path, size: int) -> Path:
    """A dump of exactly `size` bytes: one uint8 output sized to fill the file after the header."""
    write_dump(path, op_name="op", inputs=[], outputs=[TensorSpec(np.zeros(1, np.uint8), Format.ND, (1,))])
    overhead = path.stat().st_size - 1
    for _ in range(3):  # (the header's varint for the size may grow by a byte)
        count = size - overhead
        write_dump(path, op_name="op", inputs=[],
                   outputs=[TensorSpec(np.arange(count, dtype=np.uint8), Format.ND, (count,))])
        overhead = path.stat().st_size - count
    assert path.stat().st_size == size
    return path


@pytest.mark.parametrize("size", [FIRST_READ - 1, FIRST_READ, FIRST_READ + 1, 3 * FIRST_READ])
@pytest.mark.parametrize("whole_below", [0, FIRST_READ - 100, 1 << 20])
def test_a_dump_read_whole_or_not_at_any_size(tmp_path: Path, size: int, whole_below: int) -> None:
    path = _dump_of_size(tmp_path / "Add.op.1.0.1700000000000000", size)
    dump, whole = read_dump_start(path, whole_below=whole_below)
    plain, _ = read_dump_start(path)
    assert dump == plain and dump.file_size == size
    assert whole == (path.read_bytes() if size <= whole_below else None)


@pytest.mark.parametrize("count", [FIRST_READ // 4 - 40, FIRST_READ // 4 - 32, FIRST_READ // 4, FIRST_READ])
@pytest.mark.parametrize("whole_below", [0, 1000, 1 << 20])
def test_a_golden_read_whole_or_not_at_any_size(tmp_path: Path, count: int, whole_below: int) -> None:
    path = tmp_path / "op.0.1700000000000000.npy"
    np.save(path, np.arange(count, dtype=np.float32))
    size = path.stat().st_size
    answer = read_npy_start(path, whole_below)
    assert answer[:5] == read_npy_start(path)[:5]
    assert answer[5] == (path.read_bytes() if size <= whole_below else None)


def test_an_empty_dump_is_still_named_empty(tmp_path: Path) -> None:
    path = tmp_path / "Add.op.1.0.1700000000000000"
    path.write_bytes(b"")
    for whole_below in (0, 1 << 20):
        with pytest.raises(FormatError, match="the file is empty"):
            read_dump_start(path, whole_below=whole_below)
