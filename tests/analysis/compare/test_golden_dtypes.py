"""Golden files that hold no numbers (records, text): one line naming the golden file, never a traceback,
and the row's reason blames the golden file rather than the NPU dump it was compared with."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def test_record_and_text_goldens_are_named_not_the_npu_dump(tmp_path: Path, make_net, cli) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    record = sorted(net.golden_dir.glob("relu1_Relu.0.*.npy"))[-1]
    np.save(record, np.zeros(256, dtype=[("a", "<f4"), ("b", "<i4")]))  # as many items as the NPU tensor
    text = sorted(net.golden_dir.glob("conv1_BiasAdd.0.*.npy"))[-1]
    np.save(text, np.array(["x", "y"] * 128))
    result = cli("vc", "--backend", "native", "-j", "1", data=net.root)
    assert result.status == 1, result.out + result.err  # files could not be read (the other rows are written)
    assert "Traceback" not in result.out + result.err
    assert f"could not read {record}: holds record data" in result.out
    assert f"could not read {text}: holds text data (<U1), not numbers" in result.out
    written = next((net.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    with open(written, newline="") as handle:
        rows = {row[7]: row for row in csv.reader(handle)}
    for key, golden in (("relu1/Relu:output:0", record), ("conv1/Conv2D:output:0", text)):
        reason = rows[key][-1]
        assert str(golden) in reason and str(net.dump_dir) not in reason, reason
        assert rows[key][9] == "NaN"
