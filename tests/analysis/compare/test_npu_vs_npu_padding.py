"""NPU vs NPU on device layouts: padding is cut alike on both sides, so the statistics are the real ones."""

from __future__ import annotations

import csv

import numpy as np

from precision_tool.formats.npu.layouts import to_device
from precision_tool.formats.npu.dump_types import Format
from precision_tool.formats.npu.npu_dump import dump_file_name
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump


def _run(folder, array):
    device = to_device(array, "NCHW", "NC1HWC0")
    spec = TensorSpec(device.astype(np.float16), Format.NC1HWC0, original_shape=array.shape)
    write_dump(folder / dump_file_name("Relu", "a/relu", 1, 0, 1_700_000_000_000_000), op_name="a/relu",
               inputs=[], outputs=[spec])


def test_statistics_describe_real_values_not_padding(cli, tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 20, 3, 3)) + 1.5).astype(np.float32)  # C=20: 12 padding lanes of 32
    y = x + rng.standard_normal(x.shape).astype(np.float32) * 0.01
    left, right = tmp_path / "left", tmp_path / "right"
    _run(left, x)
    _run(right, y)
    result = cli("vc", "-lt", str(left), "-rt", str(right), data=tmp_path / "ws")
    assert result.status == 0, result.out
    (csv_path,) = (tmp_path / "ws" / "temp" / "vector_compare").glob("*/result_*.csv")
    with open(csv_path, newline="") as handle:
        (row,) = [r for r in csv.DictReader(handle) if r["TensorIndex"] == "a_relu:output:0"]
    mean_x = float(x.astype(np.float16).astype(np.float32).mean())
    assert row["StandardDeviation"].startswith(f"({mean_x:.3f};")  # not diluted by the zero lanes
    assert row["Shape"] == "[2,2,3,3,16]"  # the device shape, as msaccucmp shows it
