"""Hostile GE text graphs and atc JSON: each ends in a result or one line naming the file.

A representative sample of the seeded corpus (tests/analysis/graphs/hostile_graphs.py; the full corpus of 1,000
files per kind runs with `python3 -m tests.analysis.graphs.hostile_graphs --all`), in-process for speed, plus the
named worst cases through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import load_graph
from tests.analysis.graphs.hostile_graphs import KINDS, check_in_process, generate, huge_line_graph, workspace_with


@pytest.mark.parametrize("kind", KINDS)
def test_sample_of_the_corpus_reads_or_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    outcomes: dict[str, int] = {}
    for name, data in generate(kind, 50, seed=7):
        path = tmp_path / name
        path.write_bytes(data)
        outcome, detail = check_in_process(path, limit=120)
        assert outcome in ("result", "refused"), f"{name}: {outcome}: {detail}"
        if outcome == "refused":
            assert detail.startswith(f"{path}: ") and "\n" not in detail.strip(), detail
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        path.unlink()
    assert outcomes.get("refused", 0) >= 10 and outcomes.get("result", 0) >= 1  # the sample has both


def _refused(path: Path, data: bytes, *words: str) -> str:
    path.write_bytes(data)
    with pytest.raises(FormatError) as caught:
        load_graph(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    _refused(tmp_path / "deep.txt", b"graph {\n" * 10_000 + b"}\n" * 10_000, "nested deeper")
    _refused(tmp_path / "deep_attr.txt", b"attr {\n" * 10_000, "nested deeper")
    _refused(tmp_path / "deep.json", b"[" * 10_000 + b"]" * 10_000, "nested deeper")
    nest = b'{"graph": [{"op": [{"attr": [{"key": "a", "value": {"g": '
    _refused(tmp_path / "deep_g.json", nest * 2_500 + b"{}" + b"}}]}]}]}" * 2_500)
    onnx = b'ir_version: 6\ngraph {\n' + b"node {\n" * 10_000
    _refused(tmp_path / "deep.pbtxt", onnx, "nested deeper")


def test_numbers_of_5000_digits(tmp_path: Path) -> None:
    digits = b"7" * 5000
    _refused(tmp_path / "n.json", b'{"graph": [{"name": "g", "op": [{"name": "a", "id": ' + digits + b"}]}]}",
             "5000 digits")
    _refused(tmp_path / "n.txt", b'graph {\n  op {\n    name: "a"\n    id: ' + digits + b"\n  }\n}\n", "integer")
    # in an attribute GE's ONNX dump keeps going: the attribute is skipped with a warning
    path = tmp_path / "n.pbtxt"
    path.write_bytes(b'ir_version: 6\ngraph {\n  node {\n    name: "a"\n    op_type: "ge:Add"\n'
                     b'    attribute {\n      name: "x"\n      i: ' + digits + b'\n      type: INT\n    }\n  }\n}\n')
    model = load_graph(path)
    assert [op.name for op in model.graphs[0].ops] == ["a"] and "x" in model.warnings[0]


def test_empty_blank_and_non_utf8(tmp_path: Path) -> None:
    for data in (b"", b"  \n", b"{}", b"[]", b"graph {\n}\n"):
        _refused(tmp_path / "blank.txt", data, "not a GE graph")
    _refused(tmp_path / "utf16.txt", b"\xff\xfe\x00", "byte 0xff", "not UTF-8")
    _refused(tmp_path / "bytes.txt", b'graph {\n  op {\n    name: "a"\n  }\n  \xff\xfe\n}\n', "line 5", "0xff")


def test_json_of_wrong_types_and_missing_keys(tmp_path: Path) -> None:
    cases = [b'{"graph": 5}', b'{"graph": [{"op": 5}]}', b'{"graph": [{"op": [{"name": ["x"]}]}]}',
             b'{"graph": [{"op": [{"name": "a", "attr": [{"key": "k", "value": {"i": "x"}}]}]}]}',
             b'{"graph": [{"op": [{"name": "a", "input_desc": [{"shape": {"dim": ["a"]}}]}]}]}',
             b'{"graph": [{"op": [{"name": "a", "attr": 7}]}]}']
    for number, data in enumerate(cases):
        _refused(tmp_path / f"wrong_{number}.json", data, "not a GE graph")
    # wrong kinds that still say something: a pass given as a number, a name list of numbers
    path = tmp_path / "odd.json"
    path.write_bytes(b'{"graph": [{"name": "g", "op": [{"name": "a", "type": "Add", "attr": ['
                     b'{"key": "pass_name", "value": {"i": 3}}, {"key": "_datadump_original_op_names",'
                     b' "value": {"list": {"i": [1, 2]}}}]}]}]}')
    op = load_graph(path).graphs[0].op("a")
    assert op.fusion_passes == () and op.original_op_names is None and op.kernel_name is None


def test_a_one_line_graph_reads(tmp_path: Path) -> None:
    path = tmp_path / "one_line.txt"
    data, ops = huge_line_graph(3_000_000)  # the benchmark reads 50 MB; the test keeps it small
    path.write_bytes(data)
    outcome, detail = check_in_process(path, limit=120)
    assert outcome == "result" and detail == f"{ops} ops" and ops > 465 * 4  # every copy read, none skipped


def test_worst_cases_through_the_cli(cli, tmp_path: Path) -> None:
    cases = {"ge_proto_00000001_deep_Build.json": b"[" * 10_000 + b"]" * 10_000,
             "ge_proto_00000002_cut_Build.txt": b'graph {\n  name: "g"\n  op {\n    name: "a"\n    type: "Add',
             "ge_proto_00000003_empty_Build.txt": b"",
             "ge_proto_00000004_digits_Build.json": b'{"graph": [{"op": [{"name": "a", "id": ' + b"9" * 5000 + b"}]}]}"}
    for name, data in cases.items():
        root = workspace_with(tmp_path / "ws", name, data)
        for args in (["ls"], ["ni", "a"], ["ac"]):
            result = cli(*args, data=root)
            text = result.out + result.err
            assert result.status == 1, (name, args, text)
            assert "Traceback" not in text and name in text, (name, args, text)


def test_ac_fails_when_the_only_build_graph_is_unreadable(cli, tmp_path: Path) -> None:
    root = workspace_with(tmp_path / "ws", "ge_proto_00000001_graph_1_Build.txt", b"graph {\n  op {\n")
    result = cli("ac", data=root)
    text = result.out + result.err
    assert result.status == 1 and "cast: not checked" in text and "ge_proto_00000001_graph_1_Build.txt" in text
