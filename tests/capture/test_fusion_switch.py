"""capture/fusion_switch.py: the switch files live in the workspace; the template lists the run's passes."""

from __future__ import annotations

import json

import pytest

from precision_tool.capture.fusion_switch import (
    fusion_switch_note,
    fusion_switch_template,
    write_fusion_off,
    write_fusion_switch,
)
from precision_tool.errors import FormatError
from precision_tool.formats.ge.fusion_result import GraphFusion, PassCount, write_fusion_result
from precision_tool.formats.ge.ge_graph import write_graph_text
from precision_tool.formats.ge.ge_model import Graph, Model, Op, attr_list_str
from precision_tool.workspace import Workspace


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return Workspace(tmp_path / "pd")


def _with_fusion_result(ws: Workspace) -> None:
    ws.fusion_file.parent.mkdir(parents=True, exist_ok=True)
    write_fusion_result([
        GraphFusion("0_1", (PassCount("ConvBiasAddFusionPass", 2, 2), PassCount("MatMulBiasAddFusionPass", 1, 0)),
                    (PassCount("TbeConvElemwiseFusionPass", 3, 3),)),
        GraphFusion("0_2", (PassCount("ConvBiasAddFusionPass", 1, 1),), ()),
    ], ws.fusion_file, shape="keyed")


def _with_build_graph(ws: Workspace) -> None:
    ws.graph_dir(0).mkdir(parents=True, exist_ok=True)
    ops = [Op("conv", "Conv2D", attrs={"pass_name": attr_list_str(["ConvBiasAddFusionPass", "ZFromGraphPass"])}),
           Op("add", "Add", inputs=["conv:0"], attrs={"pass_name_ub": "AutomaticUbFusion"}),
           Op("relu", "Relu", inputs=["add:0"])]
    write_graph_text(Model(ws.graph_dir(0) / "ge_proto_00001_Build.txt", "m", [Graph("g", ops)]),
                     ws.graph_dir(0) / "ge_proto_00001_Build.txt")


def test_fusion_off_file_is_all_off_and_always_rewritten(ws):
    path = write_fusion_off(ws)
    assert path == ws.root / "fusion" / "fusion_off.cfg"
    path.write_text("edited")
    assert json.loads(write_fusion_off(ws).read_text()) == {
        "Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}


def test_template_from_fusion_result_and_build_graph(ws):
    _with_fusion_result(ws)
    _with_build_graph(ws)
    path = write_fusion_switch(ws)
    assert path == ws.fusion_switch_file
    assert json.loads(path.read_text()) == {"Switch": {
        "GraphFusion": {"ConvBiasAddFusionPass": "on", "MatMulBiasAddFusionPass": "on", "ZFromGraphPass": "on"},
        "UBFusion": {"AutomaticUbFusion": "on", "TbeConvElemwiseFusionPass": "on"}}}
    assert "3 graph and 2 UB fusion passes" in fusion_switch_note(path)


def test_existing_switch_file_is_the_users(ws):
    _with_fusion_result(ws)
    mine = '{"Switch": {"GraphFusion": {"ConvBiasAddFusionPass": "off"}, "UBFusion": {}}}'
    ws.fusion_switch_file.write_text(mine)
    assert write_fusion_switch(ws).read_text() == mine


def test_no_pass_known_gives_empty_groups_and_says_so(ws):
    path = write_fusion_switch(ws)
    assert json.loads(path.read_text()) == {"Switch": {"GraphFusion": {}, "UBFusion": {}}}
    assert "no fusion pass is known yet" in fusion_switch_note(path)


def test_the_empty_template_is_filled_in_once_passes_are_known(ws):
    """Written before any NPU run, the empty template holds nothing of the user's: the next run that knows
    the passes writes them; an edited file (even one left empty in another spelling) stays."""
    write_fusion_switch(ws)
    _with_fusion_result(ws)
    filled = json.loads(write_fusion_switch(ws).read_text())["Switch"]
    assert filled["GraphFusion"] == {"ConvBiasAddFusionPass": "on", "MatMulBiasAddFusionPass": "on"}
    mine = '{"Switch": {"GraphFusion": {"ALL": "on"}, "UBFusion": {}}}'
    ws.fusion_switch_file.write_text(mine)
    assert write_fusion_switch(ws).read_text() == mine


def test_damaged_fusion_result_is_named_not_read_as_no_pass(ws):
    ws.fusion_file.parent.mkdir(parents=True)
    ws.fusion_file.write_text("{not json")
    with pytest.raises(FormatError, match="fusion_result.json"):
        write_fusion_switch(ws)
    assert not ws.fusion_switch_file.exists()
    assert fusion_switch_template(Workspace(ws.root / "empty")).empty
