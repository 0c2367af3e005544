"""Our fast parser against protobuf's own text parser (runtime ModelDef descriptor), 20,000 ops."""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.ge_graph import load_graph, write_graph_text
from precision_tool.formats.ge_proto import model_def_class
from precision_tool.formats.ge_synthetic import synthetic_build_model


def test_fast_parser_agrees_with_protobuf_on_20000_ops(tmp_path: Path, plain) -> None:
    from google.protobuf import text_format

    path = tmp_path / "ge_proto_00000001_graph_1_Build.txt"
    write_graph_text(synthetic_build_model(20_000, light=True), path)
    text = path.read_text()
    message = text_format.Parse(text, model_def_class()())
    ours = load_graph(path)
    assert len(message.graph) == len(ours.graphs) == 1
    assert message.graph[0].name == ours.graphs[0].name
    assert len(ours.graphs[0].ops) == len(message.graph[0].op) == 20_000
    mismatched = [op.name for op, pb in zip(ours.graphs[0].ops, message.graph[0].op) if plain.op(op) != plain.pb_op(pb)]
    assert mismatched == []
    # and what protobuf prints (its own layout and field order) reads back the same
    reprinted = tmp_path / "reprinted.txt"
    reprinted.write_text(text_format.MessageToString(message))
    again = load_graph(reprinted).graphs[0].ops
    assert [plain.op(op) for op in again[:500]] == [plain.pb_op(pb) for pb in message.graph[0].op[:500]]
