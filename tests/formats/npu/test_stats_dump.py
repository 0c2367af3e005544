"""Reading statistics CSVs (dump_data="stats"): the layouts the writers produce, and one clear error otherwise."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.npu.stats_dump import (
    COL_COUNT, COL_DTYPE, COL_FORMAT, COL_INDEX, COL_IO, COL_L2NORM, COL_MAX, COL_MIN, COL_SHAPE, COL_SIZE,
    DEVICE_HEADER, StatsTensor, array_stats, read_stats_csv, stats_name_of, write_stats_csv,
)

NAME = "Conv2D.conv1_Conv2D.5.12.1700000000000000"


def _rng_array(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_written_statistics_read_back_as_the_arrays_numbers(tmp_path: Path):
    x = _rng_array((2, 3, 4, 4))
    w = _rng_array((8, 3, 3, 3), np.float16, seed=1)
    y = np.maximum(_rng_array((2, 8, 4, 4), seed=2), 0)
    path = write_stats_csv(tmp_path / f"{NAME}.csv", [StatsTensor(x, layout="NCHW"), StatsTensor(w, layout="NCHW")],
                           [StatsTensor(y, layout="NCHW")])
    stats = read_stats_csv(path)
    assert stats.name is not None and (stats.name.op_type, stats.name.op_name) == ("Conv2D", "conv1_Conv2D")
    assert (stats.name.task_id, stats.name.stream_id, stats.name.timestamp_us) == (5, 12, 1700000000000000)
    assert [r.label for r in stats.rows] == ["input 0", "input 1", "output 0"]
    assert stats.columns == DEVICE_HEADER
    for row, array in zip(stats.rows, (x, w, y)):
        assert row.shape == array.shape and row.count == array.size and row.data_size == array.nbytes
        # the writer prints 6 significant digits, as a C++ stream does
        assert row.max == pytest.approx(float(array.max()), rel=1e-5)
        assert row.min == pytest.approx(float(array.min()), rel=1e-5)
        assert row.mean == pytest.approx(float(array.astype(np.float64).mean()), rel=1e-5, abs=1e-7)
        assert (row.nan_count, row.neg_inf_count, row.pos_inf_count) == (0, 0, 0)
    assert stats.rows[1].data_type == "DT_FLOAT16" and stats.rows[0].layout == "NCHW"


def test_device_rules_for_nan_inf_and_integers(tmp_path: Path):
    x = _rng_array((100,))
    x[3], x[7], x[9] = np.nan, np.inf, -np.inf
    ints = np.arange(-3, 5, dtype=np.int32)
    path = write_stats_csv(tmp_path / f"{NAME}.csv", [StatsTensor(x)], [StatsTensor(ints)])
    lines = path.read_text().splitlines()
    # max/min over every non-NaN value (Inf included); mean NaN when a NaN occurs; integers printed whole
    assert lines[1].split(",")[6:] == ["inf", "-inf", "nan", "100", "1", "1", "1"]
    assert lines[2].split(",")[6:] == ["4", "-3", "0.5", "8", "0", "0", "0"]
    rows = read_stats_csv(path).rows
    assert math.isinf(rows[0].max) and math.isnan(rows[0].mean) and rows[0].inf_count == 2
    only_pos = array_stats(np.array([1.0, np.inf, 3.0], dtype=np.float32))
    assert only_pos.mean == math.inf and only_pos.max == math.inf and only_pos.min == 1.0


def test_padding_zeros_count_as_the_device_counts_them():
    golden = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    padded = array_stats(golden, padding=13)  # C = 3 stored as C0 = 16
    assert (padded.count, padded.max, padded.min) == (16, 3.0, 0.0)
    assert padded.mean == pytest.approx(6.0 / 16)


def test_lines_from_the_runtime_writers_read(tmp_path: Path):
    """Lines as RT's own tests expect them (hicann/runtime: dump_task / data_dump_writer / adx_dump_record UTs)."""
    path = tmp_path / f"{NAME}.csv"
    path.write_text(",".join(DEVICE_HEADER) + "\n"
                    "Input,0,48,DT_FLOAT,NCHW,3,3,-2,0.666667,3,0,0,0\n"
                    "Output,0,640000,DT_FLOAT,NHWC,4x50x50x16,1.99999,1,1.50004,160000,0,0,0\n"
                    # a tensor without data address: the statistics are left empty (EMPTY_STATISTICS ",,,,,,")
                    "Output,1,0,DT_FLOAT16,ND,2x3,,,,,,,\n")
    rows = read_stats_csv(path).rows
    assert rows[1].shape == (4, 50, 50, 16) and rows[1].mean == 1.50004 and rows[1].count == 160000
    assert not rows[2].computed and rows[2].max is None and rows[2].shape == (2, 3)


def test_adump_headers_with_count_after_shape_and_l2norm(tmp_path: Path):
    """adump's non-default selections: Count follows Shape, some statistics absent, l2norm added."""
    x = _rng_array((4, 5))
    header = (COL_IO, COL_INDEX, COL_SIZE, COL_DTYPE, COL_FORMAT, COL_SHAPE, COL_COUNT, COL_MAX, COL_MIN, COL_L2NORM)
    path = write_stats_csv(tmp_path / f"{NAME}.csv", [], [StatsTensor(x)], header=header)
    row = read_stats_csv(path).rows[0]
    assert row.count == 20 and row.max == pytest.approx(float(x.max()), rel=1e-5)
    assert row.mean is None and row.nan_count is None
    assert row.l2norm == pytest.approx(float(np.linalg.norm(x)), rel=1e-5)


def test_adump_placeholders_read_as_not_computed(tmp_path: Path):
    path = tmp_path / f"{NAME}.csv"
    path.write_text("Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value\n"
                    "Input,0,268435456,UNKNOW,ND,NA,1,NA,NA\nOutput,0,4,DT_FLOAT,ND,-,1,2.5,2.5\n")
    rows = read_stats_csv(path).rows
    assert rows[0].shape is None and not rows[0].computed
    assert rows[1].shape is None and rows[1].max == 2.5


def test_numbered_names_resolve_through_mapping_csv(tmp_path: Path):
    write_stats_csv(tmp_path / "12345678901234567890123456789012.csv", [], [StatsTensor(_rng_array((3,)))])
    (tmp_path / "mapping.csv").write_text(f"12345678901234567890123456789012.csv,{NAME}.csv\n")
    name, real = stats_name_of(tmp_path / "12345678901234567890123456789012.csv")
    assert name is not None and name.op_name == "conv1_Conv2D" and real == f"{NAME}.csv"


HEADER = ",".join(DEVICE_HEADER)
BAD = {
    "empty": (b"", "is empty"),
    "header only": (HEADER.encode() + b"\n", "no tensor rows"),
    "wrong header": (b"a,b,c\n1,2,3\n", "line 1: no 'Input/Output'"),
    "no statistics column": (b"Input/Output,Index,Shape\nInput,0,3\n", "no statistics column"),
    "duplicate column": (b"Input/Output,Index,Max Value,Max Value\nInput,0,1,2\n", "appears twice"),
    "cut line": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,3\n", "line 2: 7 fields"),
    "text in number": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,abc,-2,0.5,3,0,0,0\n",
                       "line 2, column 'Max Value': 'abc' is not a number"),
    "5000 digits": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3," + b"9" * 5000 + b",-2,0.5,3,0,0,0\n",
                    "(5000 characters)' is not a number"),
    "huge count": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,1,-2,0.5," + b"9" * 30 + b",0,0,0\n",
                   "column 'Count'"),
    "negative count": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,1,-2,0.5,3,-1,0,0\n", "column 'Nan Count'"),
    "bad kind": (HEADER.encode() + b"\nWeight,0,48,DT_FLOAT,NCHW,3,1,-2,0.5,3,0,0,0\n", "is not Input or Output"),
    "bad shape": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3x-1,1,-2,0.5,3,0,0,0\n", "is not a shape"),
    "underscore number": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,1_0,-2,0.5,3,0,0,0\n", "not a number"),
    "not utf-8": (HEADER.encode() + b"\nInput,0,48,DT_FLOAT,NCHW,3,\xff\xfe,-2,0.5,3,0,0,0\n", "line 2: not UTF-8"),
    "nul bytes": (b"\x00" * 64, "NUL bytes"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_are_one_error_naming_file_and_place(tmp_path: Path, case: str):
    data, expected = BAD[case]
    path = tmp_path / f"{NAME}.csv"
    path.write_bytes(data)
    with pytest.raises(FormatError) as caught:
        read_stats_csv(path)
    assert caught.value.path == str(path)
    assert expected in caught.value.problem
    assert "\n" not in str(caught.value)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path):
    path = tmp_path / f"{NAME}.csv"
    with open(path, "wb") as handle:
        handle.write(HEADER.encode() + b"\nInput,0,")
        handle.truncate(50 << 20)  # a 50 MB single line (sparse: no disk used)
    with pytest.raises(FormatError, match=r"is 50\.0 MiB"):
        read_stats_csv(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path):
    import os

    path = tmp_path / f"{NAME}.csv"
    os.mkfifo(path)
    with pytest.raises(FormatError, match="is not a regular file"):
        read_stats_csv(path)
