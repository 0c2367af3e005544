"""Subgraph relations in `ni` (PartitionedCall → subgraph, subgraph op → parent op, Data op → real input
through _parent_node_index), and the two-process and light parses against the one-process full parse."""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.ge.ge_graph import Graph, Model, Op, TensorDesc, attr_int, attr_list_str


def _desc() -> TensorDesc:
    return TensorDesc("DT_FLOAT", "ND", (2, 3))


def partitioned_model() -> Model:
    """main: x, w → pc (PartitionedCall owning pc_body) → out; pc_body: two Data ops standing for pc's
    inputs 0 and 1, an Add, a NetOutput; and a Data op whose _parent_node_index points past pc's inputs."""
    main = Graph(name="ge_default_1", ops=[
        Op("x", "Data", 0, output_descs=[_desc()]),
        Op("w", "Const", 1, output_descs=[_desc()]),
        Op("pc", "PartitionedCall", 2, inputs=["x:0", "w:0", "x:-1"], input_descs=[_desc(), _desc()],
           output_descs=[_desc()], subgraph_names=["pc_body"],
           attrs={"_datadump_original_op_names": attr_list_str(["tf/pc"])}),
        Op("out", "NetOutput", 3, inputs=["pc:0"], input_descs=[_desc()]),
    ])
    body = Graph(name="pc_body", ops=[
        Op("arg0", "Data", 0, output_descs=[_desc()], attrs={"_parent_node_index": attr_int(0)}),
        Op("arg1", "Data", 1, output_descs=[_desc()], attrs={"_parent_node_index": attr_int(1)}),
        Op("stray", "Data", 2, output_descs=[_desc()], attrs={"_parent_node_index": attr_int(5)}),
        Op("add", "Add", 3, inputs=["arg0:0", "arg1:0"], input_descs=[_desc(), _desc()], output_descs=[_desc()]),
        Op("ret", "NetOutput", 4, inputs=["add:0"], input_descs=[_desc()]),
    ])
    return Model(path=Path("pc.txt"), name="pc_model", graphs=[main, body])


def test_ni_shows_subgraph_relations(cli, make_workspace) -> None:
    model = partitioned_model()
    root = make_workspace({0: model})
    owner = cli("ni", "pc", data=root)
    assert owner.status == 0, owner.err
    assert "  Subgraphs    pc_body (5 ops)" in owner.out
    inner = cli("ni", "add", data=root)
    assert "  ParentOp     [PartitionedCall] pc (graph ge_default_1)" in inner.out
    data = cli("ni", "arg1", data=root)
    assert "  ParentOp     [PartitionedCall] pc (graph ge_default_1)" in data.out
    assert "  RealInput    w:0 (graph ge_default_1, input 1 of the parent op)" in data.out
    assert "  RealInput    x:0 (graph ge_default_1, input 0" in cli("ni", "arg0", data=root).out
    stray = cli("ni", "stray", data=root)
    assert stray.status == 0 and "  RealInput    ? (_parent_node_index 5 but pc has 2 data input(s))" in stray.out
    plain = cli("ni", "x", data=root).out
    assert "Subgraphs" not in plain and "ParentOp" not in plain and "RealInput" not in plain
    # the model's own resolution agrees with what ni shows
    graph = model.graph("pc_body")
    assert model.resolve_data_input(graph, graph.op("arg1"))[1:] == ("w", 0)


def test_two_process_and_light_parses_match_the_full_parse(tmp_path: Path) -> None:
    from precision_tool.analysis.graphs.graph_summary import summarize
    from precision_tool.formats.ge import ge_text_fast as ge_text
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_text
    from precision_tool.formats.ge.ge_synthetic import synthetic_build_model

    path = tmp_path / "ge_proto_00000001_graph_1_Build.txt"
    model = synthetic_build_model(1500)
    model.graphs[0].attrs = {"_graph_attr": attr_int(3)}  # a field after the ops the helper takes
    model.graphs.append(partitioned_model().graphs[1])
    write_graph_text(model, path)
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    # odd but readable content in both halves: unknown fields and a missing producer give warnings
    blocks = text.split("\n  op {\n")
    for i in (3, 700, 1100, 1400):
        blocks[i] = f"    mystery_{i % 3}: 7\n" + blocks[i]
    blocks[1300] = blocks[1300].replace("\n    input: \"", "\n    input: \"ghost:0\"\n    input: \"", 1)
    text = "\n  op {\n".join(blocks)
    serial = ge_text.FlatReader().flat_model(ge_text.flat_lists(text), path)
    split = ge_text._split_region(text)
    assert split is not None and split[0] > len(text) // 2
    parallel = ge_text._parse_split(text, path, *split)
    assert parallel.graphs == serial.graphs and parallel.attrs == serial.attrs and len(serial.graphs) == 2
    assert serial.graphs[0].attrs == {"_graph_attr": 3} and len(serial.graphs[0].ops) == 1500
    assert parallel.warnings == serial.warnings and len(serial.warnings) == 5
    assert any("ghost" in w for w in serial.warnings) and any("mystery_2" in w for w in serial.warnings)
    # the light parse (what the op index uses) gives the same summary
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    data = path.read_bytes()
    light = summarize(load_graph(path, light=True), data, 0, True, light=True)
    assert light.ops == summarize(load_graph(path), data, 0, True).ops
    assert light.ops[1299].inputs[0] == "ghost:0"  # block 0 is the file header
