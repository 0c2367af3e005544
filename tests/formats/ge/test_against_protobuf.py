"""Our fast parser against protobuf's own text parser (runtime ModelDef descriptor), 20,000 ops.

protobuf's pure-Python text parser needs ~14 s for this file, so it parses the two halves (cut at a
top-level op boundary, the second half wrapped in its own `graph { }`) in two processes at once."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any, Callable

from precision_tool.formats.ge.ge_graph import load_graph, write_graph_text
from precision_tool.formats.ge.ge_proto import model_def_class
from precision_tool.formats.ge.ge_synthetic import synthetic_build_model


def _forked(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start `work` in a forked process; the returned function waits for its (pickled) result."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read_fd)
            with os.fdopen(write_fd, "wb") as out:
                out.write(pickle.dumps(work()))
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)

    def result() -> Any:
        with os.fdopen(read_fd, "rb") as handle:
            payload = handle.read()
        _, status = os.waitpid(pid, 0)
        assert status == 0, "the protobuf parse in the helper process failed"
        return pickle.loads(payload)
    return result


def test_fast_parser_agrees_with_protobuf_on_20000_ops(tmp_path: Path, plain) -> None:
    from google.protobuf import text_format

    path = tmp_path / "ge_proto_00000001_graph_1_Build.txt"
    write_graph_text(synthetic_build_model(20_000, light=True), path)
    text = path.read_text()
    cut = text.index("\n  op {\n", len(text) // 2) + 1
    end = text.rindex("\n  }\n") + 5  # after the last op block (the graph has no fields after its ops)
    assert text[end:] == "}\n"

    def second_half() -> list[Any]:
        message = text_format.Parse("graph {\n" + text[cut:end] + "}\n", model_def_class()())
        return [plain.pb_op(op) for op in message.graph[0].op]

    pending = _forked(second_half)
    message = text_format.Parse(text[:cut] + "}\n", model_def_class()())
    reference = [plain.pb_op(op) for op in message.graph[0].op] + pending()
    ours = load_graph(path)
    assert len(message.graph) == len(ours.graphs) == 1
    assert message.graph[0].name == ours.graphs[0].name
    assert len(ours.graphs[0].ops) == len(reference) == 20_000
    mismatched = [op.name for op, pb in zip(ours.graphs[0].ops, reference) if plain.op(op) != pb]
    assert mismatched == []
    # and what protobuf prints (its own layout and field order) reads back the same
    del message.graph[0].op[500:]
    reprinted = tmp_path / "reprinted.txt"
    reprinted.write_text(text_format.MessageToString(message))
    again = load_graph(reprinted).graphs[0].ops
    assert [plain.op(op) for op in again] == reference[:500]
