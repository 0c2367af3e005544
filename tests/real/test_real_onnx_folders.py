"""A run whose graph folder holds only GE's ONNX-style Build dumps (ge_onnx_*_Build.pbtxt): ls and ac read
them as its Build graphs (the listing and ni of the same files with -g are in test_real_files.py).

The ONNX-style dumps are the twins of the text dumps of the same graphs (oam-tools asys run 370):
ge_onnx_00000000_graph_1_Build.pbtxt ↔ ge_proto_00000000_Build.txt (6 ops, one graph),
ge_onnx_00000001_graph_11_Build.pbtxt ↔ ge_proto_00000001_Build.txt (18 ops, a root graph and 4 subgraphs).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.real.realfiles import REAL, graph_workspace

ONNX = REAL / "more" / "ge_onnx"
TWINS = [
    (ONNX / "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt", REAL / "ge_graph" / "oam_asys370_ge_proto_00000000_Build.txt", 6),
    (ONNX / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt", REAL / "ge_graph" / "oam_asys370_ge_proto_00000001_Build.txt", 18),
]


def test_ls_finds_onnx_build_dumps_without_g(cli, tmp_path: Path) -> None:
    """A run's graph folder holding only ge_onnx_*_Build.pbtxt is a folder of Build graphs."""
    root = graph_workspace(tmp_path, *(onnx for onnx, _, _ in TWINS))
    result = cli("ls", data=root)
    assert result.status == 0, result.out + result.err
    assert re.search(r"^24 op\(s\)$", result.out, re.M), result.out


def test_ac_checks_onnx_build_graphs(cli, tmp_path: Path) -> None:
    root = graph_workspace(tmp_path, *(onnx for onnx, _, _ in TWINS))
    result = cli("ac", data=root, cwd=tmp_path)
    assert "cast: no Cast op can lose information" in result.out, result.out
