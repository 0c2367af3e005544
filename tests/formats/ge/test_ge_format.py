"""The GE graph model, text and JSON formats: round trips, hand-checked graphs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import (
    AttrList, DataTypeValue, ListListInt, Model, NamedAttrs, TensorValue, load_graph, write_graph_json,
    write_graph_text,
)

DOC_EXAMPLE = '''graph {
  name: "ge_default_20240613143502_1"
  op {
    name: "conv1/Conv2D"
    type: "Conv2D"
    input: "input:0"
    input: "conv1/kernel:0"
    input: "init:-1"
    attr { key: "_datadump_original_op_names" value { list { s: "conv1/Conv2D" s: "conv1/BiasAdd" val_type: VT_LIST_STRING } } }
    attr { key: "pass_name" value { s: "TbeConvBiasaddFusionPass" } }
    attr { key: "conv1/Conv2D_kernelname" value { s: "te_conv2d_1" } }
    attr { key: "_ge_attr_op_kernel_lib_name" value { s: "AIcoreEngine" } }
    attr { key: "_L1_fusion_sub_graph_no" value { s: "3" } }
    input_desc { dtype: DT_FLOAT16 shape { dim: 1 dim: 1 dim: 8 dim: 8 dim: 16 } layout: "NC1HWC0" attr { key: "origin_format" value { s: "NHWC" } } }
    output_desc { dtype: DT_FLOAT16 layout: "NC1HWC0" attr { key: "_datadump_origin_name" value { s: "conv1/BiasAdd" } } attr { key: "origin_shape" value { list { i: 1 i: 8 i: 8 i: 3 val_type: VT_LIST_INT } } } attr { key: "_datadump_origin_output_index" value { i: 0 } } }
    dst_name: "conv1/Relu"
    dst_index: 0
    id: 12
    stream_id: 2
  }
}
'''


def test_hand_checked_doc_example(tmp_path: Path) -> None:
    path = tmp_path / "g.txt"
    path.write_text(DOC_EXAMPLE)
    model = load_graph(path)
    op = model.graphs[0].ops[0]
    assert (op.name, op.type, op.id, op.stream_id) == ("conv1/Conv2D", "Conv2D", 12, 2)
    assert op.data_inputs == [("input", 0), ("conv1/kernel", 0)]
    assert op.control_inputs == ["init"]
    assert op.original_op_names == ["conv1/Conv2D", "conv1/BiasAdd"]
    assert op.fusion_pass == "TbeConvBiasaddFusionPass"
    assert op.kernel_name == "te_conv2d_1" and op.kernel_lib == "AIcoreEngine" and op.fusion_group == "3"
    assert op.input_descs[0].shape == (1, 1, 8, 8, 16) and op.input_descs[0].origin_format == "NHWC"
    out = op.output_descs[0]
    assert (out.dtype, out.layout, out.shape) == ("DT_FLOAT16", "NC1HWC0", ())
    assert (out.origin_name, out.origin_output_index, out.origin_shape) == ("conv1/BiasAdd", 0, (1, 8, 8, 3))
    assert op.dst_names == ["conv1/Relu"] and op.dst_indexes == [0]
    # the single-line layout goes through the general parser; the multi-line rewrite through the fast one
    write_graph_text(model, tmp_path / "again.txt")
    assert load_graph(tmp_path / "again.txt").graphs == model.graphs
    # producers input/kernel/init and the consumer conv1/Relu are not in this graph
    assert sum("no op 'input'" in w for w in model.warnings) == 1
    assert any("consumer 'conv1/Relu'" in w for w in model.warnings)


def test_round_trip_text_json_of_tf_graph(tf_ge_model: Model, tmp_path: Path) -> None:
    write_graph_text(tf_ge_model, tmp_path / "a.txt")
    from_text = load_graph(tmp_path / "a.txt")
    assert from_text.graphs == tf_ge_model.graphs
    write_graph_json(from_text, tmp_path / "a.json")
    from_json = load_graph(tmp_path / "a.json")
    assert from_json.graphs == tf_ge_model.graphs
    write_graph_text(from_json, tmp_path / "b.txt")
    assert (tmp_path / "b.txt").read_text() == (tmp_path / "a.txt").read_text()
    fused = from_json.graphs[0].op("conv1/Conv2D")
    assert fused is not None and fused.original_op_names == ["conv1/Conv2D", "conv1/BiasAdd"]
    assert [c[0].name for c in from_json.graphs[0].consumers("conv1/Conv2D")] == ["conv1/Relu"]
    cast = from_json.graphs[0].op("to_half")
    assert cast is not None and cast.type == "Cast" and cast.output_descs[0].dtype == "DT_FLOAT16"
    assert cast.input_descs[0].shape == (1, 8, 8, 4)
    assert from_text.warnings == []


def test_every_attribute_kind_round_trips(tmp_path: Path) -> None:
    from precision_tool.formats.ge.ge_synthetic import synthetic_build_model

    model = synthetic_build_model(200, all_kinds=True)
    attrs = model.graphs[0].ops[0].attrs
    assert isinstance(attrs["dts"], AttrList) and isinstance(attrs["dt_attr"], DataTypeValue)
    assert isinstance(attrs["func"], NamedAttrs) and isinstance(attrs["t"], TensorValue)
    assert isinstance(attrs["shape_range"], ListListInt)
    for writer, name in ((write_graph_text, "m.txt"), (write_graph_json, "m.json")):
        writer(model, tmp_path / name)
        again = load_graph(tmp_path / name)
        assert again.graphs == model.graphs, name
        assert again.graphs[0].ops[0].attrs["unicode"] == 'τ-层 "quoted"\n'
        assert again.graphs[0].ops[0].attrs["bytes_attr"] == bytes([0, 1, 200, 34, 92])


def test_json_is_what_msaccucmp_reads(tf_ge_model: Model, tmp_path: Path) -> None:
    write_graph_json(tf_ge_model, tmp_path / "g.json")
    tree = json.loads((tmp_path / "g.json").read_text())
    op = next(o for o in tree["graph"][0]["op"] if o["name"] == "conv1/Conv2D")
    assert isinstance(op["id"], int)
    attrs = {a["key"]: a["value"] for a in op["attr"]}
    assert attrs["_datadump_original_op_names"]["list"]["s"] == ["conv1/Conv2D", "conv1/BiasAdd"]
    assert attrs["pass_name"] == {"s": "TbeConvBiasaddFusionPass"}
    out_attrs = {a["key"]: a["value"] for a in op["output_desc"][0]["attr"]}
    assert out_attrs["_datadump_origin_output_index"] == {"i": 0}
    assert out_attrs["origin_shape"]["list"]["i"] == [1, 8, 8, 4]
    assert op["output_desc"][0]["dtype"] == "DT_FLOAT"


@pytest.mark.parametrize("text, line, column, problem", [
    ('graph {\n  name: "g"\n  op {\n    name: "a\n  }\n}\n', 4, 5, "unexpected"),
    ('graph {\n  op {\n    id: abc\n  }\n}\n', 3, 5, "integer"),
    ('graph {\n  op {\n    name: "a"\n  }\n', 4, 4, "ends inside"),
    ('graph {\n  op {\n  }\n}\n}\n', 5, 1, "closes nothing"),
    ('graph {\n  name { }\n}\n', 2, 3, "not a message"),
])
def test_malformed_text_names_file_line_column(tmp_path: Path, text: str, line: int, column: int,
                                               problem: str) -> None:
    path = tmp_path / "bad_Build.txt"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        load_graph(path)
    message = str(info.value)
    assert message.startswith(str(path)) and f"line {line}, column {column}" in message and problem in message


def test_bad_json_names_file_line_column(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"graph": [\n  {"op": [}\n]}')
    with pytest.raises(FormatError, match=r"g\.json: line 2, column 11"):
        load_graph(path)


def test_unknown_kinds_and_edges_are_warnings(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_text('graph {\n  name: "g"\n  op {\n    name: "a"\n    type: "Data"\n    dst_name: "ghost"\n'
                    '    attr {\n      key: "e"\n      value {\n        expression {\n          x: 1\n        }\n'
                    '      }\n    }\n    future_field: 7\n  }\n  op {\n    name: "b"\n    input: "missing:0"\n'
                    '    input: "a:0"\n    input_desc {\n      dtype: DT_NEW_KIND\n    }\n  }\n}\n')
    model = load_graph(path)
    ops = model.graphs[0].ops
    assert [op.name for op in ops] == ["a", "b"]
    assert ops[0].attrs == {"e": None}
    assert ops[1].input_descs[0].dtype == "DT_NEW_KIND"
    text = "\n".join(model.warnings)
    assert "unknown AttrDef field 'expression'" in text or "unknown value kind" in text
    assert "future_field" in text and "no op 'missing'" in text and "consumer 'ghost'" in text


def test_subgraph_data_op_resolves_through_parent_index(tmp_path: Path) -> None:
    from precision_tool.formats.ge.ge_graph import Graph, Op

    parent = Graph("main", [Op("x", "Data"), Op("y", "Const"),
                            Op("call", "PartitionedCall", inputs=["x:0", "y:0"], subgraph_names=["sub"])])
    sub = Graph("sub", [Op("arg1", "Data", attrs={"_parent_node_index": 1})])
    model = Model(tmp_path / "m.txt", graphs=[parent, sub])
    write_graph_text(model, tmp_path / "m.txt")
    again = load_graph(tmp_path / "m.txt")
    data = again.graphs[1].ops[0]
    resolved = again.resolve_data_input(again.graphs[1], data)
    assert resolved is not None and (resolved[0].name, resolved[1], resolved[2]) == ("main", "y", 0)


def test_attribute_values_of_every_kind_print_as_text() -> None:
    """`ni -a` prints attribute values; a TensorDesc-valued one (kind `td`) included."""
    from precision_tool.formats.ge.ge_graph import TensorDesc
    from precision_tool.render.graphs import attr_text

    desc = TensorDesc(dtype="DT_FLOAT16", layout="NC1HWC0", shape=(8, 2, 8, 8, 16))
    assert attr_text(desc) == "TensorDesc(DT_FLOAT16, NC1HWC0, [8,2,8,8,16])"
    assert attr_text([1, 2]) == "[1, 2]"
