"""The report of a 20,000-op run (benchmarks/big_workspace.py: a GE text Build graph, NC1HWC0 and ND
float16 dumps, float32 golden tensors, planted abnormal and inf/nan ops), compared with `vc`, opened in
headless Chromium: one point per compared output drawn with WebGL, hover and click on a point, the
abnormal table. Build and load times are measured in benchmarks/bench_report.py, not asserted here.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow


def _big_workspace_module():
    spec = importlib.util.spec_from_file_location("big_workspace", ROOT / "benchmarks" / "big_workspace.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["big_workspace"] = module  # its worker processes find their function by module name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, dict, Path]:
    root = tmp_path_factory.mktemp("big") / "ws"
    facts = _big_workspace_module().make_workspace(root, ops=20_000)
    compared = run_cli("vc", data=root, timeout=900)
    assert compared.status == 0, compared.out[-2000:] + compared.err[-2000:]
    shown = run_cli("report", data=root, timeout=600)
    assert shown.status == 0, shown.out[-2000:] + shown.err[-2000:]
    page = Path(next(line for line in shown.out.splitlines() if line.startswith("report: "))
                .split("report: ", 1)[1].split(" (", 1)[0])
    return root, facts, page


def test_twenty_thousand_ops_draw_in_webgl_with_every_output(big, open_report):
    root, facts, page_path = big
    assert facts["ops"] == 20_000
    rows = list(csv.DictReader(io.StringIO(next((root / "temp" / "vector_compare").glob("*/result_*.csv")).read_text())))
    outputs = [r for r in rows if ":output:" in r["TensorIndex"] and r["CosineSimilarity"] != "NaN"]
    assert len(outputs) == facts["ops"]  # every op but the Data op (no dump) has its output compared
    opened = open_report(page_path)
    assert opened.errors == []
    page = opened.page
    assert page.evaluate("window.precisionReport.traceType") == "scattergl"
    # what the WebGL renderer was handed: an (x, y) pair per marker
    drawn = page.evaluate("""() => document.getElementById('chart')._fullLayout._plots.xy._scene.markerOptions
                               .map(o => o.positions.filter(v => Number.isFinite(v)).length / 2)""")
    assert drawn == [len(outputs)]
    abnormal = page.locator("#abnormal-table tbody tr").count()
    assert abnormal == len(facts["abnormal"]) + len(facts["nan_ops"])


def test_hover_and_click_a_point_among_twenty_thousand(big, open_report):
    root, facts, page_path = big
    page = open_report(page_path).page
    op = facts["first_divergent"]
    assert op in page.locator("#first-divergent").inner_text()
    index = page.evaluate(f"window.precisionReport.data.runs[0].tensor.indexOf({op + ':output:0'!r})")
    assert index >= 0
    x, y = page.evaluate(f"[window.precisionReport.data.runs[0].x[{index}], window.precisionReport.data.runs[0].cosine[{index}]]")
    # 16 ops share a pixel at full width: zoom in around it first, as a person would
    page.evaluate(f"Plotly.relayout('chart', {{'xaxis.range': [{x - 6}, {x + 6}]}})")
    page.locator("#chart").scroll_into_view_if_needed()  # below the answer block: scrolled to, as a person would
    page.wait_for_timeout(300)
    position = page.evaluate(f"""() => {{
        const gd = document.getElementById('chart'), layout = gd._fullLayout, box = gd.getBoundingClientRect();
        return [box.left + layout._size.l + layout.xaxis.l2p({x}), box.top + layout._size.t + layout.yaxis.l2p({y})];
    }}""")
    page.mouse.move(*position)
    page.wait_for_selector("#chart .hoverlayer .hovertext", timeout=10_000)
    assert op in page.locator("#chart .hoverlayer").text_content()
    page.mouse.click(*position)
    page.wait_for_selector("#op-panel:not([hidden])")
    assert op in page.locator("#panel-title").inner_text()
    row = next(r for r in csv.DictReader(io.StringIO(next((root / "temp" / "vector_compare").glob("*/result_*.csv"))
                                                   .read_text())) if r["TensorIndex"] == f"{op}:output:0")
    cosine = page.evaluate("""() => Array.from(document.querySelectorAll('#panel-metrics tbody tr'))
                               .find(r => r.cells[0].textContent === 'CosineSimilarity').cells[1].textContent""")
    assert cosine == row["CosineSimilarity"]
    assert page.locator("#panel-stats").count() == 1  # an abnormal op: its statistics were read
