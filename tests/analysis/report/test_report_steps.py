"""The step heat map of a `vc --step all` report (report_assets/steps.js), opened in a real browser."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.tools.step_workspace import FIRST_BAD_GRAPH_NAME


def test_the_step_heat_map_draws_and_names_each_cell(cli, multi_step_workspace: Path, tmp_path: Path, open_report):
    ws = Path(shutil.copytree(multi_step_workspace, tmp_path / "ws", symlinks=True))
    assert cli("vc", "--step", "all", data=ws).status == 0
    assert cli("report", data=ws).status == 0
    opened = open_report(next((ws / "temp" / "report").glob("*/report.html")))
    page = opened.page
    assert f"Step 1 diverges first: first divergent op [13] {FIRST_BAD_GRAPH_NAME}" in \
        " ".join(page.locator("#first-step").inner_text().split())
    canvas = page.locator("#steps-heatmap canvas")
    assert "step 1 diverges first" in (canvas.get_attribute("aria-label") or "")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] >= 2 * 22
    ops = page.evaluate("JSON.parse(document.getElementById('steps-data').textContent).ops")
    column = ops.index(f"[13] {FIRST_BAD_GRAPH_NAME}")
    cell = (box["width"] - 96 - 8) / len(ops)
    # hover the changed op in step 1's row (rows are 22 px high under a 6 px margin; labels take 96 px)
    page.mouse.move(box["x"] + 96 + (column + 0.5) * cell, box["y"] + 6 + 22 + 11)
    tip = page.locator(".steps-tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert text.startswith(f"step 1 · [13] {FIRST_BAD_GRAPH_NAME} · cosine -0.99")
    page.mouse.move(box["x"] + 96 + (column + 0.5) * cell, box["y"] + 6 + 11)
    step0 = tip.inner_text()
    assert step0.startswith(f"step 0 · [13] {FIRST_BAD_GRAPH_NAME} · cosine ") and float(step0.split()[-1]) > 0.98
    assert opened.errors == []
