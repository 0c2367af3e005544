"""The report of `ac -c --precheck` in headless Chromium: "Each op on its own inputs" draws every replayed op's
own error along the network, one series per verdict, and a click on the planted fault opens its panel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.analysis.replay.conftest import copy_workspace
from tests.conftest import run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

KERNEL_OP = "bn2/FusedBatchNormV3"


def _compute_ops(workspace: Path) -> dict[str, str]:
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.workspace import Workspace

    index = GraphIndex(Workspace(workspace))
    index.load()
    return {e.name: e.type for e in index.entries()
            if e.debug_id == 0 and e.type not in ("Data", "Variable", "Const")}


def test_the_report_draws_each_op_on_its_own_inputs(demo_workspace: Path, tmp_path: Path, open_report) -> None:
    replay_ws = copy_workspace(demo_workspace, tmp_path / "ws")
    result = run_cli("ac", "-c", "--precheck", "--report", data=replay_ws, timeout=900)
    assert result.status == 0, result.out[-3000:]
    page_path = Path(re.findall(r"^\s+(/\S+/report\.html)\s*$", result.out, re.M)[-1])
    opened = open_report(page_path)
    page = opened.page
    assert opened.errors == []
    traces = page.evaluate("""() => window.precisionReport.rankingChart.traces.map(
                                  t => [t.name, t.x.length, t.x])""")
    names = {name.split(" ")[0]: (count, xs) for name, count, xs in traces}
    assert names["kernel"][1] == [16] and names["precision"][0] == 1
    assert sum(count for count, _ in names.values()) == len(_compute_ops(replay_ws))
    # a click on the kernel point opens the op's panel
    page.locator("#ranking-chart").scroll_into_view_if_needed()
    x, y = page.evaluate("""() => { const c = window.precisionReport.rankingChart;
                                 return c.pixel(c.traces.findIndex(t => t.name.startsWith('kernel')), 0); }""")
    page.mouse.click(x, y)
    page.wait_for_selector("#op-panel:not([hidden])")
    assert KERNEL_OP in page.locator("#panel-title").inner_text()
