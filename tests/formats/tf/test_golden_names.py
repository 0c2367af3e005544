"""Golden file names: the contract shared with compare (and msaccucmp's Numpy dump pattern)."""

from __future__ import annotations

import re

import numpy as np

from precision_tool.formats.tf.golden import golden_file_name, golden_key, parse_golden_name, scan_golden_dir

MSACCUCMP_NUMPY = re.compile(r"^([\.A-Za-z0-9_-]+\.[0-9]+)\.[0-9]{1,255}\.npy$")


def test_names_follow_the_slash_and_dot_rule():
    assert golden_file_name("conv1/Relu", 0, 1796026429735657) == "conv1_Relu.0.1796026429735657.npy"
    assert golden_key("block.1/conv:x", 2) == "block_1_conv_x.2"
    assert golden_file_name("a", 1, 42) == "a.1.0000000000000042.npy"  # 16 digits, or msaccucmp sorts it as 0
    name = golden_file_name("gradients/conv1/Conv2D_grad/ShapeN", 1, 1796026429735657)
    assert MSACCUCMP_NUMPY.match(name).group(1) == golden_key("gradients/conv1/Conv2D_grad/ShapeN", 1)
    assert parse_golden_name(name) == ("gradients_conv1_Conv2D_grad_ShapeN", 1, 1796026429735657)
    assert parse_golden_name("a.b.0.1796026429735657.npy") is None


def test_scan_keeps_the_latest_timestamp(tmp_path):
    for stamp in (1796026429735657, 1796026429735999, 17):
        np.save(tmp_path / golden_file_name("conv1/Relu", 0, stamp), np.zeros(1))
    np.save(tmp_path / "notes.npy", np.zeros(1))
    (tmp_path / "x.0.1796026429735657.txt").write_text("")
    found = scan_golden_dir(tmp_path)
    assert found == {"conv1_Relu.0": tmp_path / "conv1_Relu.0.1796026429735999.npy"}
    assert scan_golden_dir(tmp_path / "missing") == {}
