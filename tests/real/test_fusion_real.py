"""Every real fusion_result.json (tests/fixtures/real/fusion_result/, SOURCES.md says where each came
from) through `ac`: the graphs, the passes that fired and their counts, in every shape the compiler
writes. The keyed shape used to read as one graph "0" with "(none fired)": a false all-clear."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.ge.fusion_result import GraphFusion, PassCount, parse_fusion_result, write_fusion_result
from tests.real.realfiles import FUSION_FILES, REAL, fired_tables, fusion_workspace, oracle, oracle_fired

FUSION = REAL / "fusion_result"


def test_every_shape_is_among_the_real_files() -> None:
    texts = {p.name: p.read_text() for p in FUSION_FILES}
    assert len(FUSION_FILES) >= 8
    assert any(t.lstrip().startswith('{\n    "session_and_graph_id_') for t in texts.values())  # keyed
    assert any(t.lstrip().startswith("[") for t in texts.values())                            # list
    assert any("}{" in t for t in texts.values())                                             # back to back
    assert any('"session_and_graph_id": "0_0"' in t and t.lstrip().startswith("{") for t in texts.values())


@pytest.mark.parametrize("path", FUSION_FILES, ids=lambda p: p.stem)
def test_real_file_through_ac(cli, tmp_path: Path, path: Path) -> None:
    """`ac` shows, per graph, exactly the passes that fired with their counts (oracle: plain json)."""
    root = fusion_workspace(tmp_path, path)
    result = cli("ac", data=root, cwd=tmp_path)
    assert result.status == 0, result.out + result.err
    assert "Traceback" not in result.out + result.err
    assert fired_tables(result.out) == oracle_fired(path)


@pytest.mark.parametrize("path", FUSION_FILES, ids=lambda p: p.stem)
def test_real_file_every_pass_read(path: Path) -> None:
    """In-process: every pass of every graph, fired or not, with match/effect counts as written."""
    graphs = parse_fusion_result(path)
    expected = oracle(path)
    assert [g.graph_id for g in graphs] == [e[0] for e in expected]
    for graph, (_, graph_fusion, ub_fusion) in zip(graphs, expected):
        for got, want in ((graph.graph_fusion, graph_fusion), (graph.ub_fusion, ub_fusion)):
            assert {p.name: (p.match_times, p.effect_times, p.repository_hit_times) for p in got} == {
                name: (int(c["match_times"]), int(c["effect_times"]),
                       int(c["repository_hit_times"]) if "repository_hit_times" in c else None)
                for name, c in want.items()}


def test_keyed_file_is_not_a_false_all_clear(cli, tmp_path: Path) -> None:
    """volcengine/verl: one graph 0_0, four passes matched once each, none fired (effect_times 0)."""
    path = FUSION / "fusion_result_keyed_by_session__volcengine_verl.json"
    [graph] = parse_fusion_result(path)
    assert graph.graph_id == "0_0"
    assert [(p.name, p.match_times, p.effect_times) for p in graph.graph_fusion] == [
        ("RefreshInt64ToInt32FusionPass", 1, 0), ("TransdataCastFusionPass", 1, 0),
        ("TransdataFz2FzgFusionPass", 1, 0), ("TransdataFzg2FzFusionPass", 1, 0)]
    out = cli("ac", data=fusion_workspace(tmp_path, path), cwd=tmp_path).out
    assert "graph 0_0: graph fusion passes that fired" in out
    assert "graph 0: " not in out
    # "none fired" is never bare when passes were tried: it says how many matched without firing
    flat = " ".join(line.strip(" │") for line in out.splitlines())
    assert "(none fired; 4 matched without firing: RefreshInt64ToInt32FusionPass, TransdataCastFusionPass," in flat


def test_keyed_file_with_32_graphs(cli, tmp_path: Path) -> None:
    """moguizhizi/MindSpeed-LLM: 32 graphs keyed session_and_graph_id_<s>_<g>; RandomDsaFusionPass fired
    in 0_0 and 19_19, AReduceMinFusionPass in 26_26, every graph ran RefreshInt64ToInt32FusionPass."""
    path = FUSION / "fusion_result_keyed_32graphs__moguizhizi_MindSpeed-LLM.json"
    tables = fired_tables(cli("ac", data=fusion_workspace(tmp_path, path), cwd=tmp_path).out)
    assert len({g for g, _ in tables}) == 32
    assert tables[("0_0", "graph")] == [("RandomDsaFusionPass", 1, 1), ("RefreshInt64ToInt32FusionPass", 1, 1)]
    assert ("AReduceMinFusionPass", 1, 1) in tables[("26_26", "graph")]
    assert all(("RefreshInt64ToInt32FusionPass", 1, 1) in rows for (g, k), rows in tables.items() if k == "graph")
    # MulSquareFusionPass matched in 1_1 but never fired: not listed as fired
    assert all(name != "MulSquareFusionPass" for rows in tables.values() for name, _, _ in rows)


def test_back_to_back_objects(cli, tmp_path: Path) -> None:
    """windstamp/PaddleGAN: 23 objects written one after another with no list around them."""
    path = FUSION / "fusion_result_concatenated__windstamp_PaddleGAN.json"
    tables = fired_tables(cli("ac", data=fusion_workspace(tmp_path, path), cwd=tmp_path).out)
    assert len({g for g, _ in tables}) == 23
    assert tables[("0_0", "graph")] == [("ConstToAttrPass", 1, 1)]
    assert tables[("10_10", "graph")] == []  # TransdataCastFusionPass matched 3 times, never fired


def test_list_with_ub_repository_hits(cli, tmp_path: Path) -> None:
    """qin-yuhao/ascend310_yolov8_pyb: a list of one graph; ub_fusion entries carry repository_hit_times."""
    path = FUSION / "fusion_result_list_ub_repohits__qin-yuhao_ascend310_yolov8_pyb.json"
    [graph] = parse_fusion_result(path)
    assert PassCount("TbeConvSigmoidMulQuantFusionPass", 62, 62, 0) in graph.ub_fusion
    tables = fired_tables(cli("ac", data=fusion_workspace(tmp_path, path), cwd=tmp_path).out)
    assert tables[("0_0", "UB")][0] == ("TbeConvSigmoidMulQuantFusionPass", 62, 62)
    assert ("ZSplitVDFusionPass", 11, 11) in tables[("0_0", "graph")]


def test_object_with_large_counts(cli, tmp_path: Path) -> None:
    """bmzhong/ATC-CTPN (atc of a CTPN model): one object; TbeCommonRules0FusionPass fired 150 times."""
    path = FUSION / "fusion_result_object_counts__bmzhong_ATC-CTPN.json"
    tables = fired_tables(cli("ac", data=fusion_workspace(tmp_path, path), cwd=tmp_path).out)
    assert tables[("0_0", "UB")] == [("TbeCommonRules0FusionPass", 150, 150)]
    assert tables[("0_0", "graph")][0] == ("TransposedUpdateFusionPass", 110, 110)


def test_file_next_to_the_script_is_copied_and_read(cli, tmp_path: Path) -> None:
    """The compiler writes ./fusion_result.json; `ac` run there copies it into the workspace."""
    root = tmp_path / "precision_data"
    root.mkdir()
    shutil.copyfile(FUSION / "fusion_result_keyed_32graphs__moguizhizi_MindSpeed-LLM.json",
                    tmp_path / "fusion_result.json")
    result = cli("ac", data=root, cwd=tmp_path)
    assert result.status == 0
    assert (root / "fusion" / "fusion_result.json").read_bytes() == (tmp_path / "fusion_result.json").read_bytes()
    assert ("RandomDsaFusionPass", 1, 1) in fired_tables(result.out)[("19_19", "graph")]


def test_file_under_ascend_work_path_is_found(cli, tmp_path: Path) -> None:
    """Newer CANN writes $ASCEND_WORK_PATH/FE/<pid>/fusion_result.json when ASCEND_WORK_PATH is set."""
    root = tmp_path / "precision_data"
    root.mkdir()
    written = tmp_path / "work" / "FE" / "4242" / "fusion_result.json"
    written.parent.mkdir(parents=True)
    shutil.copyfile(FUSION / "fusion_result_object_counts__bmzhong_ATC-CTPN.json", written)
    result = cli("ac", data=root, cwd=root, env={"ASCEND_WORK_PATH": str(tmp_path / "work")})
    assert result.status == 0, result.out + result.err
    assert f"copied {written}" in result.out.replace("\n", "")
    assert fired_tables(result.out)[("0_0", "UB")] == [("TbeCommonRules0FusionPass", 150, 150)]


# --- shapes not (yet) seen in the wild, and shapes that are not this file at all -------------------
def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "fusion_result.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize("text, ids", [
    ('{"graphId": "7", "graph_fusion": {"A": {"effect_times": 2, "match_times": 3}}}', ["7"]),
    ('{"session_and_graph_id_0_0": {"ub_fusion": {"U": {"effect_times": "1", "match_times": "1",'
     ' "repository_hit_times": "4"}}}, "session_and_graph_id_0_1": {"graph_fusion": {}}}', ["0_0", "0_1"]),
    # the newer writer appends by rewriting the closing brace: a graph id can repeat; keep both
    ('{"session_and_graph_id_0_0": {"graph_fusion": {"A": {"effect_times": "1", "match_times": "1"}}},'
     ' "session_and_graph_id_0_0": {"graph_fusion": {"B": {"effect_times": "2", "match_times": "2"}}}}',
     ["0_0", "0_0"]),
    ('[{"session_and_graph_id_0_0": {"graph_fusion": {"A": {"effect_times": "1", "match_times": "1"}}}}]', ["0_0"]),
    ('\ufeff{"graph_fusion": {"A": {"effect_times": 1.0, "match_times": "1"}}, "session_and_graph_id": 5}', ["5"]),
])
def test_other_shapes(tmp_path: Path, text: str, ids: list[str]) -> None:
    assert [g.graph_id for g in parse_fusion_result(_write(tmp_path, text))] == ids


@pytest.mark.parametrize("text, message", [
    ("", "the file is empty"),
    ("{}", "no graph_fusion or ub_fusion record"),
    ('{"graphs": [1, 2]}', "no graph_fusion or ub_fusion record"),
    ('{"graph_fusion": {"A": {"match_times": "1"}}}', "graph_fusion.A has no effect_times"),
    ('{"graph_fusion": {"A": {"effect_times": "-1", "match_times": "1"}}}', "graph_fusion.A.effect_times is '-1'"),
    ('{"graph_fusion": {"A": {"effect_times": true, "match_times": "1"}}}', "not a count"),
    ('{"graph_fusion": ["A"]}', "graph_fusion is a list, not an object of passes"),
    ('{"graph_fusion": {"A": {"effect_times": "1", "match_times": "1"}}', "not valid JSON"),
    ("[" * 10000 + "]" * 10000, "nested too deep"),
    ('{"graph_fusion": {"A": {"effect_times": ' + "9" * 5000 + ', "match_times": "1"}}}', "not valid JSON"),
    (b'{"graph_fusion": {"\xff": {}}}', "not UTF-8"),
    ('{"session_and_graph_id": "0_0"}', "no graph_fusion or ub_fusion record"),
    ('[{"graph_fusion": {}}, 3]', "entry 1 of the list is a int (3), not a graph record"),
    ('"graph_fusion"', "the file holds a str"),
    ('{"session_and_graph_id_0_0": {"graph_fusion": {}}, "session_and_graph_id_0_1": {"graph_fusionX": {}}}',
     "'session_and_graph_id_0_1' is an object, not a graph record"),
    ('{"graph_fusion": {"A": {"effect_times": "1", "match_times": "1"}}, "ub_fusion": null}',
     "ub_fusion is null, not an object of passes"),
    ('{"graph_fusion": {"' + "P" * 2000 + '": {"effect_times": "1", "match_times": "1"}}}', "a pass name of 2000"),
    # what the tool prints must not carry markup or terminal escapes from the file
    ('{"session_and_graph_id_[/x]": {"graph_fusion": {}}}', "graph id '[/x]' is not a session_graph id"),
    ('{"graph_fusion": {"A\\u001b[31m": {"effect_times": "1", "match_times": "1"}}}', "control characters"),
])
def test_unreadable_shapes_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        parse_fusion_result(_write(tmp_path, text))
    assert message in str(caught.value) and str(tmp_path / "fusion_result.json") in str(caught.value)


def test_too_many_graph_records_is_refused_before_parsing(tmp_path: Path) -> None:
    record = '"session_and_graph_id_0_%d": {"graph_fusion": {"P": {"effect_times": "1", "match_times": "1"}}}'
    many = _write(tmp_path, "{" + ", ".join(record % i for i in range(4097)) + "}")
    with pytest.raises(FormatError, match="more than 4096 graph records"):
        parse_fusion_result(many)
    enough = _write(tmp_path, "{" + ", ".join(record % i for i in range(4096)) + "}")
    assert len(parse_fusion_result(enough)) == 4096


def test_markup_in_a_graph_id_is_refused_not_a_crash(cli, tmp_path: Path) -> None:
    """A title built from a graph id like '[/x]' made rich raise MarkupError ('unexpected error')."""
    root = tmp_path / "precision_data"
    (root / "fusion").mkdir(parents=True)
    (root / "fusion" / "fusion_result.json").write_text(
        '{"session_and_graph_id_[/x]": {"graph_fusion": {"P": {"effect_times": "1", "match_times": "1"}}}}')
    result = cli("ac", data=root, cwd=tmp_path)
    assert result.status == 1
    assert "unexpected error" not in result.out + result.err
    assert "fusion_result.json: graph id '[/x]' is not a session_graph id" in result.out + result.err


def test_unknown_shape_through_ac_is_one_line_and_exit_1(cli, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    (root / "fusion").mkdir(parents=True)
    (root / "fusion" / "fusion_result.json").write_text('{"fusion_stats": {"A": 1}}')
    result = cli("ac", data=root, cwd=tmp_path)
    assert result.status == 1
    lines = [line for line in (result.out + result.err).splitlines() if "fusion_result.json" in line]
    assert len(lines) == 1 and "no graph_fusion or ub_fusion record" in lines[0]
    assert "none fired" not in result.out and "Traceback" not in result.out + result.err


@pytest.mark.parametrize("shape", ["object", "list", "concatenated", "keyed"])
def test_written_shapes_read_back(tmp_path: Path, shape: str) -> None:
    graphs = [GraphFusion("0_1", (PassCount("A", 3, 2),), (PassCount("U", 1, 1, 0),))]
    if shape != "object":
        graphs.append(GraphFusion("0_2", (PassCount("B", 1, 0),), ()))
    write_fusion_result(graphs, tmp_path / "f.json", shape)
    assert parse_fusion_result(tmp_path / "f.json") == graphs


def test_a_graph_with_no_pass_recorded_is_not_an_all_clear(cli, tmp_path: Path) -> None:
    """`"graph_fusion": {}` lists no pass at all: the table says nothing was recorded, not "none fired"."""
    source = tmp_path / "fusion_result.json"
    source.write_text('{"session_and_graph_id": "0_0", "graph_fusion": {}}')
    result = cli("ac", data=fusion_workspace(tmp_path, source), cwd=tmp_path)
    assert "Traceback" not in result.out + result.err
    assert "(none recorded)" in result.out
    assert "(none fired)" not in result.out
