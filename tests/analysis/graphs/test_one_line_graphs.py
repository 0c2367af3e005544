"""Text graphs that are not one field per line (a whole graph on one line): read as fast and as exactly as
GE's own layout, and `ni` reads one op's block of them, not the whole file (issue 28, item 4).

The big figures (a 50 MB line, 45,814 ops on one line) are benchmarks/bench_hostile_big.py's; these tests
hold the rewrite to the general path on real graphs and on the damaged corpus made one-line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.analysis.graphs.graph_summary import op_blocks, read_cached
from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.formats.ge.ge_text import parse_general, parse_text, reflow
from precision_tool.formats.ge.ge_text_fast import parse_text_fast
from precision_tool.workspace import Workspace
from tests.analysis.graphs.hostile_graphs import TEXT_SEEDS, generate, one_line, workspace_with


@pytest.mark.parametrize("seed", TEXT_SEEDS, ids=lambda p: p.name[:40])
def test_a_real_graph_on_one_line_reads_as_its_lines_do(tmp_path: Path, seed: Path) -> None:
    expected = load_graph(seed)
    path = tmp_path / seed.name
    path.write_bytes(one_line(seed.read_bytes()))
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    assert "\n" not in text and reflow(text) is not None  # rewritten at C speed, not the general path
    for light in (False, True):
        got = load_graph(path, light=light)
        got.path = expected.path
        assert got == (expected if not light else load_graph(seed, light=True))
    # every top-level op block is found in the one line, and parses to that very op
    ops = [op for graph in expected.graphs for op in graph.ops]
    data = path.read_bytes()
    spans = op_blocks(data, len(ops))
    assert spans is not None and len(spans) == len(ops)
    for (offset, length), op in zip(spans, ops):
        block = data[offset:offset + length].decode("utf-8", "surrogateescape")
        parsed = parse_text("graph {\n" + block + "}\n", path).graphs[0].ops
        assert parsed == [op]


def test_the_rewrite_never_reads_what_the_general_path_refuses(tmp_path: Path) -> None:
    """The damaged corpus made one-line: wherever the rewrite and the fast path give a model, the general
    path gives the same one; everything else goes to the general path, which names the problem."""
    path = tmp_path / "g.txt"
    compared = refused = 0
    for _, data in generate("text", 120, seed=3):
        text = one_line(data).decode("utf-8", "surrogateescape")
        lines = reflow(text)
        fast = parse_text_fast(lines, path, False, 1 << 62) if lines is not None else None
        if fast is None:
            try:
                parse_general(text, path)
            except FormatError:
                refused += 1
            continue
        assert parse_general(text, path) == fast, text[:200]
        compared += 1
    assert compared >= 10 and refused >= 10  # the sample has both


def test_other_layouts_are_rewritten_or_left_to_the_general_path() -> None:
    text = 'graph{name:"g" op:{name:"a{b" type: "Add"  input:"x:0"} op {name: "c" attr { key: "k" value { i: -3 } } }}'
    lines = reflow(text)
    assert lines == ('graph {\nname: "g"\n  op {\nname: "a{b"\ntype: "Add"\ninput: "x:0"\n  }\n  op {\nname: "c"\n'
                     'attr {\nkey: "k"\nvalue {\ni: -3\n}\n}\n  }\n}\n')  # top-level ops indented as GE does
    for odd in ('graph { # a comment\n op { name: "a" } }', "graph { op < name: 'a' > }",
                'graph { op { name: "a" "b" } }', 'graph { op { dim: [1, 2] } }', 'graph { op { name: "a } }',
                '"graph" { }', 'graph { op { name: "a"; } }', 'graph { op { tÿpe: "a" } }'):
        assert reflow(odd) is None, odd


def test_a_damaged_one_line_graph_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "g.txt"
    path.write_text('graph { name: "g" op { name: "a" type: "Add" } } }' + " " * 200)
    with pytest.raises(FormatError) as caught:
        load_graph(path)
    assert str(caught.value) == f"{path}: line 1, column 50: '}}' closes nothing"
    path.write_text('graph { name: "g" op { name: "a" id: 12x } }' + " " * 200)
    with pytest.raises(FormatError) as caught:
        load_graph(path)
    assert "line 1, column 34: expected an integer, found '12x'" in str(caught.value)


def test_ni_reads_one_block_of_a_one_line_graph(cli, tmp_path: Path) -> None:
    seed = next(p for p in TEXT_SEEDS if "resnet50" in p.name)
    name = "ge_proto_00000062_graph_1_Build.txt"
    lines_root = workspace_with(tmp_path / "lines", name, seed.read_bytes())
    line_root = workspace_with(tmp_path / "line", name, one_line(seed.read_bytes()))
    op = load_graph(seed).graphs[0].ops[100].name
    for root in (lines_root, line_root):
        assert cli("ls", data=root).status == 0
    cached = read_cached(Workspace(line_root), line_root / "npu" / "debug_0" / "graph" / name, 0, True)
    assert cached is not None and all(entry.offset >= 0 for entry in cached.ops)  # ni parses one block
    shown = [cli("ni", op, data=root) for root in (lines_root, line_root)]
    assert shown[0].status == shown[1].status == 0
    assert shown[0].out.replace(str(lines_root), "WS") == shown[1].out.replace(str(line_root), "WS")
