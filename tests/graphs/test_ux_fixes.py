"""UX fixes found by a reviewer on the demo workspace, each driven through the one-shot CLI."""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.ge_graph import Model


def test_json_without_graph_is_not_a_graph(cli, make_workspace, tf_ge_model: Model, tmp_path: Path) -> None:
    from precision_tool.formats.ge_graph import write_graph_json

    root = make_workspace({0: tf_ge_model})
    graph_dir = root / "npu" / "debug_0" / "graph"
    (graph_dir / "ge_proto_00000002_Empty.json").write_text("{}\n")
    (graph_dir / "ge_proto_00000003_Empty.txt").write_text("\n")
    result = cli("ls", "-g", "Empty", data=root)
    text = result.out + result.err
    assert "ge_proto_00000002_Empty.json: not a GE graph: no graph or op found" in text
    assert "ge_proto_00000003_Empty.txt: not a GE graph: no graph or op found" in text
    # a real JSON graph is still read
    write_graph_json(tf_ge_model, graph_dir / "ge_proto_00000004_Real.json")
    real = cli("ls", "-g", "Real", "-t", "Softmax", data=root)
    assert real.status == 0 and "[Softmax][] softmax" in real.out
