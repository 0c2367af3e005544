"""Real GE graphs and atc JSON (tests/fixtures/real, SOURCES.md) through ls, ls -t, ls -f, ni and ac.

Why: everything else was tested on graphs this project wrote. These files were written by Ascend
software; each test asserts what is in them (op counts, types, a pass name, an edge, a layout), read
through the real CLI the way a user reads them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from precision_tool.formats.ge.ge_graph import load_graph

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "fixtures" / "real"
GE = REAL / "ge_graph"
ATC = REAL / "atc_json" / "msit_msquickcmp_om_model.json"
ATC_MULTI = REAL / "more" / "atc_json" / "msit_analyze_test_om.json"
ONNX_REAL = REAL / "more" / "ge_onnx"
ONNX_MADE = Path(__file__).parent / "data"  # made by make_ge_onnx at DUMP_GE_GRAPH=1 (string attributes too)

# file → (graphs, ops, a type and how many ops have it, an op and a consumer its dst_name lists)
FACTS = {
    "hicannge_ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt": (1, 465, ("Conv2D", 53), None),
    "hicannge_ge_proto_00026_afterUBMatch.txt": (1, 399, ("TransData", 56), None),
    "oam_asys370_ge_proto_00000000_Build.txt": (1, 6, ("Variable", 2), ("Variable", "Variable/Assign")),
    "oam_asys370_ge_proto_00000001_Build.txt": (5, 18, ("PartitionedCall", 4), None),
    "oam_train_ge_proto_00056_Build.txt": (1, 5, ("GatherV2D", 1), ("_arg_Placeholder_0_0_0_arg", "GatherV2")),
    "oam_resnet50_ge_proto_00000062_Build.txt": (1, 170, ("Conv2D", 50), ("pool1", "res2a_branch1res2ares2a_relu")),
}


def _workspace(tmp_path: Path, source: Path, name: str = "ge_proto_00000001_graph_1_Build.txt") -> Path:
    graph = tmp_path / "ws" / "npu" / "debug_0" / "graph"
    graph.mkdir(parents=True)
    shutil.copyfile(source, graph / name)
    return tmp_path / "ws"


def test_every_real_file_is_a_known_file() -> None:
    assert sorted(p.name for p in GE.glob("*.txt")) == sorted(FACTS)  # a new file needs its facts here
    assert ATC.is_file()


@pytest.mark.parametrize("name", sorted(FACTS))
def test_real_text_graph_reads_in_process(name: str) -> None:
    graphs, ops, (op_type, typed), edge = FACTS[name]
    model = load_graph(GE / name)
    assert len(model.graphs) == graphs and sum(len(g.ops) for g in model.graphs) == ops
    assert sum(1 for _, op in model.iter_ops() if op.type == op_type) == typed
    assert model.warnings == []  # real files read without a single complaint
    light = load_graph(GE / name, light=True)
    assert [op.name for _, op in light.iter_ops()] == [op.name for _, op in model.iter_ops()]
    if edge:
        producer, consumer = edge
        op = next(op for _, op in model.iter_ops() if op.name == producer)
        assert consumer in op.consumer_names  # dst_name may join several: "a:b"


@pytest.mark.parametrize("name", sorted(FACTS))
def test_real_text_graph_through_ls(cli, tmp_path: Path, name: str) -> None:
    graphs, ops, (op_type, typed), _ = FACTS[name]
    data = _workspace(tmp_path, GE / name)
    result = cli("ls", data=data)
    assert result.status == 0, result.err
    assert f"{ops} op(s)" in result.out and "warning" not in result.out + result.err
    typed_result = cli("ls", "-t", op_type, data=data)
    assert typed_result.status == 0 and f"{typed} op(s)" in typed_result.out


def test_intermediate_stage_c04_layouts_through_ni(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "hicannge_ge_proto_00026_afterUBMatch.txt",
                      "ge_proto_00026_afterUBMatch_Build.txt")
    conv = cli("ni", "conv1", data=data)
    assert conv.status == 0, conv.err
    assert "NC1HWC0_C04" in conv.out and "FRACTAL_Z_C04" in conv.out
    assert "scale_conv1" in conv.out and "bn_conv1" in conv.out  # three TF ops fused into conv1
    trans = cli("ni", "trans_TransData_1", data=data)
    assert trans.status == 0 and "FRACTAL_Z_C04" in trans.out and "[13,4,16,16]" in trans.out


def test_quantized_graph_fused_conv_through_ni(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "hicannge_ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt",
                      "ge_proto_00015_FeGraphFusionAfter_Build.txt")
    result = cli("ni", "conv1", data=data)
    assert result.status == 0, result.err
    assert "conv1_quant_layer" in result.out and "conv1_dequant_layer" in result.out
    assert "QuantWeightRollBack_0" in result.out


def test_subgraph_op_through_ni(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "oam_asys370_ge_proto_00000001_Build.txt")
    result = cli("ni", "ge_default_20230713074125_sub_2_unknow_PartitionedCall_2", data=data)
    assert result.status == 0, result.err
    assert "PartitionedCall" in result.out and "ge_default_20230713074125_sub_2_unknow" in result.out
    inner = cli("ni", "Unique", data=data)  # an op inside a subgraph
    assert inner.status == 0 and "ge_default_20230713074125_sub_2_unknow" in inner.out


def test_real_graph_ac_reads_the_build_graph(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "hicannge_ge_proto_00026_afterUBMatch.txt")
    result = cli("ac", data=data)
    text = result.out + result.err
    assert "Traceback" not in text and "cannot read" not in text
    assert "cast" in text.lower()  # the cast check ran on the 109 real Cast ops



def test_the_cast_check_reads_the_dtypes_the_index_keeps(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`ac`'s cast check takes each Cast op's dtypes from the graph index's summary (kept at its first parse,
    light or whole) instead of parsing the op's block on every `ac`: the same lossy casts as the whole parse
    says, for the 109 real Cast ops of a graph, and no block parsed."""
    from precision_tool.analysis.checks import graph_checks
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.workspace import Workspace

    source = GE / "hicannge_ge_proto_00026_afterUBMatch.txt"
    workspace = Workspace(_workspace(tmp_path, source))
    expected: dict[tuple[str, str], list[str]] = {}
    for op in (o for g in load_graph(source).graphs for o in g.ops if o.type == "Cast"):
        pair = (op.input_descs[0].dtype, op.output_descs[0].dtype)
        if graph_checks.cast_loses_information(*pair):
            expected.setdefault(pair, []).append(op.name)
    assert sum(map(len, expected.values())) > 50
    for fresh in (True, False):  # the summary just written from a light parse, then read back from the cache
        index = GraphIndex(workspace)
        index.load()
        monkeypatch.setattr(index, "op", lambda entry: pytest.fail(f"parsed {entry.name}'s block"))
        found = {(g.src, g.dst): list(g.op_names) for g in graph_checks.lossy_casts(index)}
        assert found == expected, fresh


# --- atc JSON of a real .om model ----------------------------------------------------------------------
def test_atc_json_pass_name_list_through_ls_and_ni(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, ATC, "ge_proto_00000001_graph_1_Build.json")
    listed = cli("ls", data=data)
    assert listed.status == 0 and "19 op(s)" in listed.out and "AttrList" not in listed.out
    by_pass = cli("ls", "-f", "ConstToAttrStridedSliceV2Fusion", data=data)
    assert by_pass.status == 0 and "Slice_1218" in by_pass.out and "1 op(s)" in by_pass.out
    repr_search = cli("ls", "-f", "item_kind", data=data)  # the list's repr is never what -f searches
    assert "Slice_1218" not in repr_search.out and "no op has a fusion pass containing" in repr_search.out
    node = cli("ni", "Slice_1218", data=data)
    assert node.status == 0 and "ConstToAttrStridedSliceV2Fusion" in node.out and "AttrList" not in node.out
    casts = cli("ls", "-t", "Cast", data=data).out
    assert "5 op(s)" in casts and casts.count("trans_Cast_") == 4 and "Cast_1206" in casts


def test_atc_json_several_passes_per_op(cli, tmp_path: Path) -> None:
    """Real atc JSON writes pass_name as list.s with several passes per op: each is a name, -f finds each."""
    tree = json.loads(ATC.read_text(encoding="utf-8"))
    op = next(o for g in tree["graph"] for o in g["op"] if o["name"] == "Slice_1218")
    for attr in op["attr"]:
        if attr["key"] == "pass_name":
            attr["value"]["list"]["s"] = ["ConstToAttrStridedSliceV2Fusion", "StridedSliceRemovePass"]
    op["attr"].append({"key": "pass_name_ub", "value": {"list": {"s": ["TbeCommonRules0FusionPass"],
                                                                 "val_type": "VT_LIST_STRING"}}})
    op["attr"].append({"key": "Slice_1218_kernelname", "value": {"list": {"s": ["te_a", "te_b"]}}})
    source = tmp_path / "multi.json"
    source.write_text(json.dumps(tree), encoding="utf-8")
    model = load_graph(source)
    fused = model.graphs[0].op("Slice_1218")
    assert fused.fusion_passes == ("ConstToAttrStridedSliceV2Fusion", "StridedSliceRemovePass",
                                   "TbeCommonRules0FusionPass")
    assert fused.kernel_name == "te_a, te_b"
    data = _workspace(tmp_path, source, "ge_proto_00000001_graph_1_Build.json")
    for one in fused.fusion_passes:
        found = cli("ls", "-f", one, data=data)
        assert found.status == 0 and "Slice_1218" in found.out and "1 op(s)" in found.out
    node = cli("ni", "Slice_1218", data=data)
    assert "ConstToAttrStridedSliceV2Fusion + StridedSliceRemovePass + TbeCommonRules0FusionPass" in node.out
    assert "AttrList" not in node.out and "te_a, te_b" in node.out


def test_atc_json_ac(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, ATC, "ge_proto_00000001_graph_1_Build.json")
    result = cli("ac", data=data)
    text = result.out + result.err
    assert "Traceback" not in text and "cannot read" not in text and "cast" in text.lower()


# --- dst_name "a:b" --------------------------------------------------------------------------------------
def test_joined_dst_names_read_without_warnings(tmp_path: Path) -> None:
    text = (GE / "oam_train_ge_proto_00056_Build.txt").read_text(encoding="utf-8")
    first = text.index('dst_name: "GatherV2"')
    assert text.rindex('name: "_arg_Placeholder_0_0_0_arg"', 0, first) > text.rfind("  op {", 0, first)
    joined = text.replace('dst_name: "GatherV2"', 'dst_name: "GatherV2:Node_Output"', 1)
    path = tmp_path / "ge_proto_00056_Build.txt"
    path.write_text(joined, encoding="utf-8")
    model = load_graph(path)
    assert model.warnings == []
    op = model.graphs[0].op("_arg_Placeholder_0_0_0_arg")
    assert op.dst_names == ["GatherV2:Node_Output"]  # kept as written (writers round-trip it)
    assert op.consumer_names == ["GatherV2", "Node_Output"]
    ghost = joined.replace('"GatherV2:Node_Output"', '"GatherV2:NoSuchOp"')
    path.write_text(ghost, encoding="utf-8")
    assert any("NoSuchOp" in w for w in load_graph(path).warnings)  # a real dangling name still warns


# --- GE's ONNX-style dump ----------------------------------------------------------------------------------
ONNX_PAIRS = [
    (ONNX_REAL / "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt", "oam_asys370_ge_proto_00000000_Build.txt"),
    (ONNX_REAL / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt", "oam_asys370_ge_proto_00000001_Build.txt"),
    (ONNX_MADE / "ge_onnx_00000001_graph_1_Build.pbtxt", "oam_asys370_ge_proto_00000001_Build.txt"),
]


@pytest.mark.parametrize(("onnx_path", "proto_name"), ONNX_PAIRS, ids=["real0", "real1", "made1"])
def test_ge_onnx_dump_reads_as_the_same_graph(onnx_path: Path, proto_name: str) -> None:
    """GE dumps each graph twice (ge_proto and ge_onnx, same run): both read to the same ops and edges."""
    onnx = load_graph(onnx_path)
    proto = load_graph(GE / proto_name)
    assert onnx.warnings == [] and onnx.name == "GE"
    assert [(g.name, len(g.ops)) for g in onnx.graphs] == [(g.name, len(g.ops)) for g in proto.graphs]
    for (_, a), (_, b) in zip(onnx.iter_ops(), proto.iter_ops()):
        assert (a.name, a.type, a.id, a.stream_id, a.inputs, a.dst_names) == \
            (b.name, b.type, b.id, b.stream_id, b.inputs, b.dst_names)
        assert a.kernel_lib in (None, b.kernel_lib)  # string attributes: only in dumps at level 1
        for mine, theirs in ((a.input_descs, b.input_descs), (a.output_descs, b.output_descs)):
            assert [(d.dtype, d.layout, d.shape, d.origin_format, d.origin_shape or None) for d in mine] == \
                [(d.dtype, d.layout, d.shape, d.origin_format, d.origin_shape or None) for d in theirs]


def test_ge_onnx_real_dump_has_no_string_attributes_but_the_made_one_does() -> None:
    real = load_graph(ONNX_REAL / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt")
    made = load_graph(ONNX_MADE / "ge_onnx_00000001_graph_1_Build.pbtxt")
    proto = load_graph(GE / "oam_asys370_ge_proto_00000001_Build.txt")
    real_op, made_op, proto_op = (next(op for _, op in model.iter_ops() if op.name == "GatherV2")
                                  for model in (real, made, proto))
    assert real_op.kernel_lib is None  # DUMP_GE_GRAPH=2 leaves strings out (ge_ir_utils.cc)
    assert made_op.kernel_lib == proto_op.kernel_lib is not None
    assert real_op.input_descs[0].dtype == proto_op.input_descs[0].dtype


def test_ge_onnx_dump_through_ls_and_ni_never_shadows_the_build_graph(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "oam_asys370_ge_proto_00000000_Build.txt", "ge_proto_00000000_Build.txt")
    shutil.copyfile(ONNX_REAL / "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt",
                    data / "npu" / "debug_0" / "graph" / "ge_onnx_00000000_graph_1_Build.pbtxt")
    plain = cli("ls", data=data)
    assert plain.status == 0 and "ge_proto_00000000_Build.txt" in plain.out and "ge_onnx" not in plain.out
    onnx = cli("ls", "-g", "ge_onnx", data=data)
    assert onnx.status == 0 and "ge_onnx_00000000_graph_1_Build.pbtxt" in onnx.out and "6 op(s)" in onnx.out
    node = cli("ni", "init", "-g", "ge_onnx", data=data)
    assert node.status == 0 and "NoOp" in node.out and "control ← Variable/Assign" in node.out


def test_a_folder_of_only_ge_onnx_build_dumps_is_a_folder_of_build_graphs(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, ONNX_REAL / "oam_asys370_ge_onnx_00000000_graph_1_Build.pbtxt",
                      "ge_onnx_00000000_graph_1_Build.pbtxt")
    shutil.copyfile(ONNX_REAL / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt",
                    data / "npu" / "debug_0" / "graph" / "ge_onnx_00000001_graph_11_Build.pbtxt")
    listed = cli("ls", data=data)
    assert listed.status == 0 and "\n24 op(s)" in listed.out, listed.out + listed.err
    checked = cli("ac", data=data, cwd=tmp_path)
    assert "cast: no Cast op can lose information" in checked.out, checked.out + checked.err


def test_ge_onnx_dump_under_a_ge_proto_name_is_read_by_content(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, ONNX_REAL / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt")
    listed = cli("ls", data=data)
    assert listed.status == 0 and "18 op(s)" in listed.out
    inner = cli("ni", "Unique", data=data)
    assert inner.status == 0 and "ge_default_20230713074125_sub_2_unknow" in inner.out


def test_onnx_text_with_no_node_is_refused_in_one_line(cli, tmp_path: Path) -> None:
    path = tmp_path / "ge_onnx_00000002_graph_1_Build.pbtxt"
    path.write_text('ir_version: 6\nproducer_name: "GE"\ngraph {\n  name: "g"\n}\n', encoding="utf-8")
    from precision_tool.errors import FormatError

    with pytest.raises(FormatError, match="no node"):
        load_graph(path)
    data = _workspace(tmp_path, path, "ge_proto_00000002_Build.txt")  # even under a ge_proto name
    result = cli("ls", data=data)
    text = result.out + result.err
    assert result.status == 1 and "ge_proto_00000002_Build.txt: " in text and "no node" in text
    assert "Traceback" not in text


# --- the real ResNet-50 Build graph (pass_name on 49 ops, joined dst_name) and msit's atc JSON ---------------
def test_resnet50_fused_ops_through_ls_f_and_ni(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, GE / "oam_resnet50_ge_proto_00000062_Build.txt")
    double = cli("ls", "-f", "TbeConvDoubleInFusionPass", data=data)
    assert double.status == 0 and "6 op(s)" in double.out
    common = cli("ls", "-f", "TbeCommonRules0", data=data)
    assert common.status == 0 and "43 op(s)" in common.out
    node = cli("ni", "conv1conv1_relu", data=data)
    assert node.status == 0 and "TbeCommonRules0FusionPass" in node.out
    for original in ("conv1", "bn_conv1", "scale_conv1", "conv1_relu"):
        assert original in node.out
    assert "te_fused_op_conv2d_leaky_relu_e005ae1944991a2c" in node.out and "warning" not in node.out


def test_resnet50_joined_dst_names_give_no_warning(cli, tmp_path: Path) -> None:
    model = load_graph(GE / "oam_resnet50_ge_proto_00000062_Build.txt")
    joined = [op for _, op in model.iter_ops() if any(":" in d for d in op.dst_names)]
    assert len(joined) == 16 and model.warnings == []
    pool = model.graphs[0].op("pool1")
    assert pool.consumer_names == ["res2a_branch1res2ares2a_relu", "res2a_branch2ares2a_branch2a_relu"]
    assert all(model.graphs[0].op(name) for op in joined for name in op.consumer_names)
    data = _workspace(tmp_path, GE / "oam_resnet50_ge_proto_00000062_Build.txt")
    listed = cli("ls", data=data)
    assert listed.status == 0 and "170 op(s)" in listed.out and "dangling" not in listed.out + listed.err


def test_msit_atc_json_three_passes_on_one_op(cli, tmp_path: Path) -> None:
    data = _workspace(tmp_path, ATC_MULTI, "ge_proto_00000001_graph_1_Build.json")
    for one in ("BatchNormPreprocessFusionPass", "BatchNormBnInferFusionPass", "HostBNFusionPass"):
        found = cli("ls", "-f", one, data=data)
        assert found.status == 0 and "BatchNormalization_60_BNInferenceD" in found.out, one
    node = cli("ni", "BatchNormalization_60_BNInferenceD", data=data)
    assert node.status == 0 and "AttrList" not in node.out
    assert "BatchNormPreprocessFusionPass + BatchNormBnInferFusionPass + HostBNFusionPass" in node.out
    assert "132 op(s)" in cli("ls", data=data).out


@pytest.mark.parametrize("name", sorted(FACTS))
def test_the_index_from_a_kept_whole_parse_is_the_light_parses(name: str, tmp_path: Path) -> None:
    # a cold `vc` writes the graph index's summary from the whole parse its plan made (no second, light
    # parse for the same-step check after it): `ls` and `ni` must read exactly what the light parse gives
    from precision_tool.analysis.graphs.graph_summary import _to_json, summarize
    from precision_tool.formats.ge.ge_graph import forget_graphs, kept_graph, shared_graph

    path = GE / name
    text = path.read_bytes()
    light = _to_json(summarize(load_graph(path, light=True), text, 0, True, light=True), 1, 1)
    forget_graphs()
    assert kept_graph(path) is None
    whole = shared_graph(path)
    assert kept_graph(path) is whole
    assert _to_json(summarize(whole, text, 0, True), 1, 1) == light
    forget_graphs()
    assert kept_graph(path) is None


def test_a_cold_plan_parses_its_graph_once_for_the_index_too(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # vc's first run in a workspace: finding its runs parses the Build graph for the plan; the graph index
    # (the same-step check after the comparison, ls, ni) then reads its summary without parsing again
    from precision_tool.analysis.compare import workspace_runs
    from precision_tool.analysis.graphs import graph_summary
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.formats.ge import ge_graph
    from precision_tool.workspace import Workspace

    parses: list[bool] = []

    def counted(path, light=False):  # type: ignore[no-untyped-def]
        parses.append(light)
        return load_graph(path, light)

    monkeypatch.setattr(ge_graph, "load_graph", counted)
    monkeypatch.setattr(graph_summary, "load_graph", counted)
    ge_graph.forget_graphs()
    workspace = Workspace(_workspace(tmp_path, GE / "oam_resnet50_ge_proto_00000062_Build.txt"))
    dumps = workspace.root / "npu" / "debug_0" / "dump"
    dumps.mkdir(parents=True)
    workspace_runs.graph_specs(workspace, 0, dumps, workspace.root / "tf" / "dump", "x", [])
    assert parses == [False]  # one whole parse
    files = GraphIndex(workspace).load()
    assert parses == [False] and len(files) == 1 and len(files[0].ops) == 170 and files[0].from_cache
    ge_graph.forget_graphs()


@pytest.mark.parametrize("name", sorted(FACTS))
def test_one_ops_consumers_are_the_indexed_ones(name: str, tmp_path: Path) -> None:
    # `ni` of one op reads only the inputs naming it; `ni -s` indexes every op's consumers once: the same
    # answer, in the same order, for every op of every real graph (subgraphs, names that begin another's)
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.workspace import Workspace

    index = GraphIndex(Workspace(_workspace(tmp_path, GE / name)))
    (summary,) = index.load()
    one_by_one = [index.consumers(entry) for entry in summary.ops]
    assert index._consumers is None
    indexed = [index.consumers(entry, many=True) for entry in summary.ops]
    assert one_by_one == indexed
    assert sum(map(len, indexed)) > 0
