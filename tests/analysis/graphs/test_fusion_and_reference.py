"""fusion_result.json in its three shapes (through `ac`), and msaccucmp reading our graph JSON."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from precision_tool.formats.ge.fusion_result import GraphFusion, PassCount, parse_fusion_result, write_fusion_result

GRAPHS = [
    GraphFusion("0_1", (PassCount("ConvBiasaddFusionPass", 70, 70), PassCount("NeverFires", 3, 0)),
                (PassCount("TbeEltwiseFusionPass", 12, 9, 4),)),
    GraphFusion("0_2", (PassCount("MatMulBiasAddFusionPass", 2, 1),), ()),
]


@pytest.mark.parametrize("shape, graphs", [("object", GRAPHS[:1]), ("list", GRAPHS), ("concatenated", GRAPHS)])
def test_fusion_shapes_round_trip(tmp_path: Path, shape: str, graphs: list[GraphFusion]) -> None:
    path = tmp_path / "fusion_result.json"
    write_fusion_result(graphs, path, shape)
    assert parse_fusion_result(path) == graphs


def test_old_graph_id_key(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"graphId": "7", "graph_fusion": {"A": {"effect_times": "2", "match_times": "3"}}}')
    assert parse_fusion_result(path) == [GraphFusion("7", (PassCount("A", 3, 2),), ())]


def test_ac_copies_and_shows_fired_passes(cli, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    root.mkdir()
    write_fusion_result(GRAPHS, tmp_path / "fusion_result.json", "concatenated")
    result = cli("ac", data=root, cwd=tmp_path)
    out = result.out
    assert (root / "fusion" / "fusion_result.json").is_file()
    assert "graph 0_1: graph fusion passes that fired" in out and "ConvBiasaddFusionPass" in out
    assert "TbeEltwiseFusionPass" in out and "NeverFires" not in out
    assert "graph 0_2: UB fusion passes that fired" in out and "(none recorded)" in out  # its file lists no UB pass


def test_damaged_fusion_file_is_one_line(cli, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    (root / "fusion").mkdir(parents=True)
    (root / "fusion" / "fusion_result.json").write_text('{"graph_fusion": {"A": {"effect_times": "x"}}}')
    result = cli("ac", data=root, cwd=root)
    assert result.status == 1
    assert "fusion_result.json: graph_fusion.A.effect_times is 'x', not a count" in result.out + result.err


@pytest.mark.reference
def test_msaccucmp_reads_our_json(reference_tool: Path, tf_ge_model, tmp_path: Path) -> None:
    """msaccucmp's own fusion-rule reader accepts the JSON and sees the fused op's original names."""
    from precision_tool.formats.ge.ge_graph import write_graph_json

    path = tmp_path / "graph.json"
    write_graph_json(tf_ge_model, path)
    wrapper = reference_tool.read_text()
    python = wrapper.split('exec "')[1].split('"')[0]
    script = wrapper.split('exec "')[1].split('"')[2]
    package = str(Path(script).parent)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]);"
             "from vector_cmp.fusion_manager.fusion_rule_parser import FusionRuleParser;"
             "p = FusionRuleParser(sys.argv[2]); p.analysis_fusion_rule();"
             "op = [o for o in p.op_list if o.op_name == 'conv1/Conv2D'][0];"
             "print(len(p.op_list), ','.join(op.attr.original_op_names), op.output_desc[0].origin_name)")
    proc = subprocess.run([python, "-c", probe, package, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, originals, origin = proc.stdout.split()[-3:]
    assert int(count) == len(tf_ge_model.graphs[0].ops)
    assert originals == "conv1/Conv2D,conv1/BiasAdd" and origin == "conv1/BiasAdd"
