"""Every real file in tests/fixtures/real (SOURCES.md says where each came from) through every command
that reads its kind, in a workspace built in tmp: `ls`, `ls -t/-f`, `ni`, `ac`, and on dumps written for
the real graphs with Ascend's own dump proto (tests/tools/real_dumps.py) `ls dump`, `pt`, `dc` and `ni`.
Assertions name real content: op counts, a known op's type and shapes, fusion passes, tensor statistics.
Fusion results: tests/real/test_fusion_real.py. Tests waiting for other fixes: pending_test_real_files.py.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.real.realfiles import REAL, fired_tables, fusion_workspace, graph_workspace, oracle_fired


@dataclass(frozen=True)
class GraphFacts:
    """What a real graph file holds, read off the file by hand."""

    path: Path
    ops: int                          # `ls` total
    graphs: tuple[str, ...]           # graph names in the file
    op: str                           # a known op ...
    op_type: str                      # ... its type
    op_lines: tuple[str, ...]         # lines `ni` shows for it (inputs/outputs with layouts and shapes)
    type_count: tuple[str, int]       # `ls -t TYPE`: how many ops
    fusion: tuple[str, int] | None = None  # `ls -f PASS`: how many ops
    build: bool = True                # a *_Build graph (what `ls` and `ac` read without -g)
    extra: dict = field(default_factory=dict)


GE = REAL / "ge_graph"
ATC = REAL / "atc_json"
MORE = REAL / "more"

GRAPHS = [
    GraphFacts(GE / "oam_train_ge_proto_00056_Build.txt", 5, ("ge_default_20200909152235_1",),
               "GatherV2", "GatherV2D",
               ("0  DT_FLOAT  NHWC  [32,32]  ← _arg_Placeholder_0_0_0_arg:0", "0  DT_FLOAT  NHWC  [16,32]  → Node_Output:0"),
               ("GatherV2D", 1)),
    GraphFacts(GE / "oam_asys370_ge_proto_00000000_Build.txt", 6, ("ge_default_20230713074122_1",),
               "Variable/Assign", "Assign", ("← Variable:0", "← Variable/initial_value:0"), ("Variable", 2)),
    GraphFacts(GE / "oam_asys370_ge_proto_00000001_Build.txt", 18,
               ("ge_default_20230713074125_11", "ge_default_20230713074125_sub_0_input",
                "ge_default_20230713074125_sub_1_unknow", "ge_default_20230713074125_sub_2_unknow",
                "ge_default_20230713074125_sub_3_unknow"),
               "Unique", "Unique", (), ("PartitionedCall", 4)),
    GraphFacts(GE / "oam_resnet50_ge_proto_00000062_Build.txt", 170, ("ResNet-50_0",),
               "res2a_branch1res2ares2a_relu", "Conv2D",
               # dst_name "a:b" (two consumers joined in one entry) read as two consumers
               ("0  DT_FLOAT16  NC1HWC0  [1,16,56,56,16]  → res2b_branch2ares2b_branch2a_relu:0, "
                "res2b_branch2cres2bres2b_relu:3  (origin res2a_relu:0)",
                "1  DT_FLOAT16  FRACTAL_Z  [4,16,16,16]     ← dynamic_const_16660_694:0"),
               ("Conv2D", 50), fusion=("TbeCommonRules0FusionPass", 43)),
    GraphFacts(GE / "hicannge_ge_proto_00026_afterUBMatch.txt", 399, (), "res5c_branch2c", "Conv2D", (),
               ("Conv2D", 53), build=False),
    GraphFacts(GE / "hicannge_ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt", 465, (),
               "QuantBiasOptimization_5", "QuantBiasOptimization", (), ("QuantBiasOptimization", 53), build=False),
    GraphFacts(ATC / "msit_msquickcmp_om_model.json", 19, ("sub_model_NPU_0",), "Slice_1218", "StridedSliceD", (),
               ("Cast", 5), fusion=("ConstToAttrStridedSliceV2Fusion", 1), build=False),
    GraphFacts(MORE / "atc_json" / "msit_analyze_test_om.json", 132, ("tdnn_NPU_0",), "LeakyRelu_234", "LeakyRelu",
               ("0  DT_FLOAT16  ND  [1,1800,512]  ← trans_Cast_46PartitionedCall_Transpose_233_Transpose_92:0",),
               ("LeakyRelu", 5), fusion=("BatchNormBnInferFusionPass", 7), build=False),
]


def _total(out: str) -> int:
    found = re.findall(r"^(\d+) op\(s\)$", out, re.M)
    assert found, out[-2000:]
    return int(found[-1])


def test_every_real_file_has_facts() -> None:
    """A real file added to tests/fixtures/real without a test here fails this test."""
    known = {g.path.name for g in GRAPHS}
    graph_files = [p for p in REAL.rglob("*") if p.is_file() and p.suffix in (".txt", ".json")
                   and "fusion_result" not in p.parts and p.name != "SOURCES.md"]
    assert {p.name for p in graph_files} == known
    assert sorted(p.name for p in (MORE / "ge_onnx").glob("*.pbtxt")) == [
        "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt", "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt"]


@pytest.mark.parametrize("facts", GRAPHS, ids=lambda g: g.path.stem[:40])
def test_ls_of_the_real_graph(cli, tmp_path: Path, facts: GraphFacts) -> None:
    root = graph_workspace(tmp_path, facts.path)
    pick = () if facts.build else ("-g", facts.path.name)
    listing = cli("ls", *pick, data=root)
    assert listing.status == 0, listing.out + listing.err
    assert _total(listing.out) == facts.ops
    for graph in facts.graphs:
        assert f"debug_0 · {facts.path.name} · {graph}\n" in listing.out
    assert re.search(rf"^ +\d+ +{re.escape(facts.op_type)} +{re.escape(facts.op)}( |$)", listing.out, re.M)
    by_type = cli("ls", *pick, "-t", facts.type_count[0], data=root)
    assert _total(by_type.out) == facts.type_count[1]
    rows = [line.split() for line in by_type.out.splitlines() if re.match(r"^ +\d+ ", line)]
    assert all(facts.type_count[0] in row[1] for row in rows) and len(rows) == facts.type_count[1]


@pytest.mark.parametrize("facts", [g for g in GRAPHS if g.fusion], ids=lambda g: g.path.stem[:40])
def test_ls_by_fusion_pass(cli, tmp_path: Path, facts: GraphFacts) -> None:
    """pass_name (a string in text graphs, a list of strings in atc JSON): `ls -f` matches each name and
    shows the names, never a repr of the list."""
    root = graph_workspace(tmp_path, facts.path)
    result = cli("ls", "-g", facts.path.name, "-f", facts.fusion[0], data=root)
    assert result.status == 0, result.out + result.err
    assert _total(result.out) == facts.fusion[1]
    assert "AttrList" not in result.out and "item_kind" not in result.out
    rows = [line for line in result.out.splitlines() if re.match(r"^ +\d+ ", line)]
    assert len(rows) == facts.fusion[1] and all(f"{facts.fusion[0]}" in row for row in rows)
    # the list's repr must not match: a quote or bracket of the repr is no pass name
    odd = cli("ls", "-g", facts.path.name, "-f", "['", data=root)
    assert not [line for line in odd.out.splitlines() if re.match(r"^ +\d+ ", line)]


@pytest.mark.parametrize("facts", GRAPHS, ids=lambda g: g.path.stem[:40])
def test_ni_on_a_known_op(cli, tmp_path: Path, facts: GraphFacts) -> None:
    root = graph_workspace(tmp_path, facts.path)
    result = cli("ni", "-g", facts.path.name, facts.op, data=root)
    assert result.status == 0, result.out + result.err
    assert re.search(rf"^  Type +{re.escape(facts.op_type)}$", result.out, re.M), result.out
    for line in facts.op_lines:
        assert line in result.out
    assert "Traceback" not in result.out + result.err and "warning" not in result.err.lower()


def test_ni_finds_an_op_fused_away(cli, tmp_path: Path) -> None:
    """ResNet-50: res2a_branch1 was fused into a Conv2D; ni names the op that holds it and its passes."""
    root = graph_workspace(tmp_path, GE / "oam_resnet50_ge_proto_00000062_Build.txt")
    result = cli("ni", "res2a_branch1", data=root)
    assert result.status == 0, result.out + result.err
    assert "res2a_branch1 was fused into res2a_branch1res2ares2a_relu" in result.out
    assert re.search(r"^  OriginalOps +res2a_branch1, bn2a_branch1, scale2a_branch1, res2a, res2a_relu$", result.out, re.M)
    assert re.search(r"^  FusionPass +TbeCommonRules0FusionPass$", result.out, re.M)


def test_bn_pass_names_in_ni(cli, tmp_path: Path) -> None:
    """msit's test.om.json: BNInferenceD ops carry three fusion passes; ni lists them as names."""
    root = graph_workspace(tmp_path, MORE / "atc_json" / "msit_analyze_test_om.json")
    result = cli("ni", "-g", "test_om", "BatchNormalization_60_BNInferenceD", data=root)
    assert re.search(r"^  FusionPass +BatchNormPreprocessFusionPass.+BatchNormBnInferFusionPass.+HostBNFusionPass",
                     result.out, re.M), result.out


def test_ac_on_the_real_build_graphs(cli, tmp_path: Path) -> None:
    """ac's graph checks read all the real Build graphs (none has a lossy Cast), and its fusion check
    reads the real fusion file next to them; nothing is reported unreadable."""
    root = graph_workspace(tmp_path, *(g.path for g in GRAPHS if g.build))
    fusion = REAL / "fusion_result" / "fusion_result_object_counts__bmzhong_ATC-CTPN.json"
    shutil.copytree(fusion_workspace(tmp_path / "f", fusion) / "fusion", root / "fusion")
    result = cli("ac", data=root, cwd=tmp_path)
    assert result.status == 0, result.out + result.err
    assert "cast: no Cast op can lose information" in result.out
    assert "cannot read" not in result.out + result.err
    assert fired_tables(result.out) == oracle_fired(fusion)


def test_ls_reads_all_real_build_graphs_together(cli, tmp_path: Path) -> None:
    root = graph_workspace(tmp_path, *(g.path for g in GRAPHS if g.build))
    result = cli("ls", data=root)
    assert _total(result.out) == sum(g.ops for g in GRAPHS if g.build)
    gathers = cli("ls", "-n", "GatherV2", "-g", "oam_", data=root)
    assert re.search(r"^ +2 +GatherV2D +GatherV2$", gathers.out, re.M)   # oam_train
    assert re.search(r"^ +4 +GatherV2 +GatherV2$", gathers.out, re.M)    # asys370 graph 11, subgraph 2


# --- dumps written for the real graphs with Ascend's own dump proto (the `pb2` fixture) ---------------
def test_gather_dump_ls_pt_dc_ni(cli, tmp_path: Path, pb2) -> None:  # type: ignore[no-untyped-def]
    """oam-tools' training graph (GatherV2D of a [32,32] fp32 table by 16 indices), its dump."""
    from tests.tools import real_dumps

    case = real_dumps.gather_case(pb2, tmp_path / "precision_data")
    rng = np.random.default_rng(12)  # as gather_case draws them
    table = rng.standard_normal((32, 32)).astype(np.float32)
    indices = rng.integers(0, 32, 16).astype(np.int32)
    npu = table.astype(np.float16).astype(np.float32)[indices]
    [dump] = list(case.dump_dir.iterdir())

    listing = cli("ls", "dump", data=case.root)
    assert listing.status == 0 and "debug_0: 1 dump file(s)" in listing.out
    assert re.search(rf"^ +2 +1 +{re.escape(dump.name)}$", listing.out, re.M)

    shown = cli("pt", str(dump), data=case.root)
    assert shown.status == 0, shown.out + shown.err
    assert "shape  [16, 32]" in shown.out and "dtype  float32" in shown.out
    assert f"max    {float(npu.max()):g}" in shown.out and f"min    {float(npu.min()):g}" in shown.out
    assert "layout NHWC [16,32], as dumped" in shown.out

    decoded = cli("dc", str(dump), data=case.root)
    assert decoded.status == 0, decoded.out + decoded.err
    out_dir = case.root / "temp" / "decode" / "dump_convert"
    assert np.array_equal(np.load(out_dir / f"{dump.name}.output.0.npy"), npu)
    assert np.array_equal(np.load(out_dir / f"{dump.name}.input.1.npy"), indices)

    info = cli("ni", "GatherV2", data=case.root)
    assert "output 0  FLOAT NHWC  · golden GatherV2.0" in info.out
    assert re.search(r"debug_0  \[16,32\] .*\n +golden +\[16,32\]", info.out)


def test_om_model_dumps_ls_and_ni(cli, tmp_path: Path, pb2) -> None:  # type: ignore[no-untyped-def]
    """msit's compiled NMS model (atc JSON) with 12 op dumps: ls dump lists them all, ni finds the dump of
    the fused Slice_1218 (StridedSliceD, pass ConstToAttrStridedSliceV2Fusion) and its golden."""
    from tests.tools import real_dumps

    case = real_dumps.om_model_case(pb2, tmp_path / "precision_data")
    graph_dir = case.root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(case.graph, graph_dir / case.graph.name)
    listing = cli("ls", "dump", data=case.root)
    assert listing.status == 0, listing.out + listing.err
    assert f"debug_0: {len(case.dumped)} dump file(s)" in listing.out
    assert re.search(r"^ +1 +1 +StridedSliceD\.Slice_1218\.\d+\.0\.\d+$", listing.out, re.M)
    info = cli("ni", "-g", "model.json", "Slice_1218", data=case.root)
    assert info.status == 0, info.out + info.err
    assert re.search(r"^  Type +StridedSliceD$", info.out, re.M)
    assert "ConstToAttrStridedSliceV2Fusion" in info.out
    assert re.search(r"debug_0  \[100,4\]", info.out) and "golden Slice_1218.0" in info.out


def test_assign_dump_pt_by_op_name(cli, tmp_path: Path, pb2) -> None:  # type: ignore[no-untyped-def]
    """oam-tools' asys graph: `pt Variable/Assign:output:0` finds the op's dump by its graph name."""
    from tests.tools import real_dumps

    case = real_dumps.assign_case(pb2, tmp_path / "precision_data")
    initial = np.random.default_rng(13).standard_normal(64).astype(np.float32)
    shown = cli("pt", "Variable/Assign:output:0", data=case.root)
    assert shown.status == 0, shown.out + shown.err
    assert "shape  [64]" in shown.out and f"max    {float(initial.max()):g}" in shown.out


# --- GE's ONNX-style Build dumps, twins of the text dumps of the same graphs (oam-tools asys run 370) ---
ONNX = MORE / "ge_onnx"
TWINS = [
    (ONNX / "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt", GE / "oam_asys370_ge_proto_00000000_Build.txt", 6),
    (ONNX / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt", GE / "oam_asys370_ge_proto_00000001_Build.txt", 18),
]


def _rows(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if re.match(r"^ +\d+ ", line)]


@pytest.mark.parametrize("onnx, proto, ops", TWINS, ids=lambda v: getattr(v, "stem", str(v))[:30])
def test_onnx_dump_lists_the_ops_of_its_text_twin(cli, tmp_path: Path, onnx: Path, proto: Path, ops: int) -> None:
    root = graph_workspace(tmp_path, onnx, proto)
    from_onnx = cli("ls", "-g", onnx.name, data=root)
    from_text = cli("ls", "-g", proto.name, data=root)
    assert from_onnx.status == 0, from_onnx.out + from_onnx.err
    assert re.search(rf"^{ops} op\(s\)$", from_onnx.out, re.M), from_onnx.out
    assert _rows(from_onnx.out) == _rows(from_text.out)
    graphs = re.findall(r"^debug_0 · \S+ · (\S+)$", from_onnx.out, re.M)
    assert graphs == re.findall(r"^debug_0 · \S+ · (\S+)$", from_text.out, re.M)


@pytest.mark.parametrize("op", ["GatherV2", "Unique", "Variable"])
def test_ni_on_onnx_dump_agrees_with_text_twin(cli, tmp_path: Path, op: str) -> None:
    onnx, proto, _ = TWINS[1]
    root = graph_workspace(tmp_path, onnx, proto)
    from_onnx = cli("ni", "-g", onnx.name, op, data=root)
    from_text = cli("ni", "-g", proto.name, op, data=root)
    assert from_onnx.status == 0, from_onnx.out + from_onnx.err

    def facts(out: str) -> list[str]:  # type, id, inputs and outputs (kernel names are not in the ONNX dump)
        keep = [line for line in out.splitlines() if re.match(r"^  (Type|Id|Stream|FusionPass|OriginalOps) ", line)
                or re.match(r"^    \d+  DT_", line)]
        return keep

    assert facts(from_onnx.out) and facts(from_onnx.out) == facts(from_text.out)
