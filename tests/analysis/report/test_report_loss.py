"""The report's loss-curves panel: its data (analysis/report/loss_data.py) from two loss records that part at a
known step, and the page in headless Chromium (report_assets/loss.js draws both curves and their difference on a
canvas, the parting step marked; hover names a step)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from precision_tool.analysis.report.loss_data import loss_panel
from precision_tool.formats.loss_record import LossPoint, write_loss
from precision_tool.workspace import Workspace
from tests.analysis.compare.conftest import make_network

PART_AT = 40


def _curves(ws: Workspace) -> None:
    golden = [LossPoint(s, 2.3 * 0.97 ** s) for s in range(100)]
    npu = [LossPoint(p.step, p.loss * (1 + 0.01 * (p.step - PART_AT + 2)) if p.step >= PART_AT else p.loss)
           for p in golden]
    npu[70] = LossPoint(70, math.inf)  # an overflowed step: no line through it, listed instead
    write_loss(ws.golden_loss_file, golden)
    write_loss(ws.loss_file(0), npu)


def test_the_panel_data_names_the_parting_step_and_holds_no_nan(tmp_path):
    ws = Workspace(tmp_path / "pd")
    notes: list[str] = []
    assert loss_panel(ws, 0.01, notes) is None  # no record: no panel
    _curves(ws)
    panel = loss_panel(ws, 0.01, notes)
    assert panel.data["first_parting"] == PART_AT and notes == []
    assert f"part first at step {PART_AT}" in panel.summary
    assert f"TF_DUMP_STEP='{PART_AT - 1}|{PART_AT}'" in panel.advice
    assert len(panel.data["golden"]) == len(panel.data["npu"]) == len(panel.data["difference"]) == 100
    assert panel.data["npu"][70] == [70, None] and panel.data["nonfinite"] == [["NPU", 70, "inf"]]
    assert panel.data["difference"][10] == [10, 0.0]
    ws.loss_file(0).unlink()
    alone = loss_panel(ws, 0.01, notes)
    assert alone.data["first_parting"] is None and "Only the golden run's loss is recorded" in alone.summary
    ws.golden_loss_file.write_text("not,a,record\n")
    assert loss_panel(ws, 0.01, notes) is None and str(ws.golden_loss_file) in notes[0]


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    from tests.conftest import run_cli

    net = make_network(tmp_path_factory.mktemp("report_loss") / "precision_data")
    done = run_cli("vc", "-j", "1", data=net.root)
    assert done.status == 0, done.out + done.err
    return net.root


def test_the_page_draws_both_curves_and_marks_the_parting(compared, cli, open_report, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(compared, root, symlinks=True)
    plain = cli("report", data=root)
    page_path = Path([line for line in plain.out.splitlines() if line.startswith("report: ")][0]
                     .split("report: ", 1)[1].split(" (", 1)[0])
    assert 'id="loss-section"' not in page_path.read_text()  # no loss record: no panel
    _curves(Workspace(root))
    shown = cli("report", data=root)
    assert shown.status == 0, shown.out + shown.err
    page_path = Path([line for line in shown.out.splitlines() if line.startswith("report: ")][0]
                     .split("report: ", 1)[1].split(" (", 1)[0])
    opened = open_report(page_path)
    assert opened.errors == []
    page = opened.page
    assert f"part first at step {PART_AT}" in page.locator("#loss-summary").inner_text()
    assert f"TF_DUMP_STEP='{PART_AT - 1}|{PART_AT}'" in page.locator("#loss-advice").inner_text()
    assert f"first parting: step {PART_AT}" in page.locator("#loss-section .chart-legend").inner_text()
    canvas = page.locator("#loss-chart canvas")
    box = canvas.bounding_box()
    assert box["width"] > 500 and box["height"] > 300
    # something is drawn: the canvas holds more than its white background, in both curves' colours
    colours = page.evaluate("""() => {
        const c = document.querySelector('#loss-chart canvas'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4) { seen.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]); }
        return [seen.has('36,99,176'), seen.has('217,98,43'), seen.has('192,57,43')];
    }""")
    assert colours == [True, True, True]  # golden, NPU, the parting marker
    # hover over the middle of the plot names a step and both losses
    canvas.hover(position={"x": 86 + (box["width"] - 102) * 0.5, "y": 100})  # scrolls it into view
    hover = page.locator("#loss-chart .chart-hover").inner_text()
    assert hover.startswith("step ") and "golden: " in hover and "NPU: " in hover and "NPU − golden: " in hover
