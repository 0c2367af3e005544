"""The demo's report, opened in headless Chromium: `precision-tool demo` ends by printing its path; the page
loads with no console error and fetches nothing; the chart (a canvas drawn by the page's own chart.js)
draws one point per compared output, where its axes say; hover names the op; a click opens the op's panel
with the numbers of the CSV and of the tensors themselves; box zoom, pan, reset, the legend and the PNG
export work; the tables sort and filter.

Expected numbers are read here independently: the result CSVs with the csv module, the golden tensor
with numpy, the NPU dump's raw data through its reader.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]

OP = "bn2/FusedBatchNormV3"  # the demo's planted kernel fault: its first divergent op


@pytest.fixture(scope="module")
def report(demo_run) -> Path:
    assert demo_run.status == 0, demo_run.out[-3000:] + demo_run.err[-3000:]
    found = re.findall(r"^\s+(/\S+/report\.html)\s*$", demo_run.out, re.M)
    assert found, demo_run.out[-2000:]
    return Path(found[-1])


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        return [dict(zip(header, row)) for row in reader]


def _compared_outputs(path: Path) -> list[dict[str, str]]:
    """Output rows with a cosine, or with data holding NaN/Inf (written lower-case, not 'NaN')."""
    return [r for r in _csv_rows(path) if ":output:" in r["TensorIndex"] and r["CosineSimilarity"] != "NaN"]


def _result_csvs(report: Path) -> list[Path]:
    workspace = report.parents[3]
    newest = sorted((workspace / "temp" / "vector_compare").iterdir())[-1]
    return sorted(newest.glob("result_*.csv"))


def test_demo_ends_with_the_report_path(demo_run, report):
    assert report.is_file()
    tail = [line.strip() for line in demo_run.out.rstrip().splitlines()[-2:]]
    assert tail == ["report (one HTML file, opens offline):", str(report)], tail  # the answer block's last line
    assert demo_run.out.count(str(report)) == 1  # said once


def test_the_page_is_one_file_that_needs_nothing_else(report):
    text = report.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", text) and not re.search(r"<link[^>]+stylesheet", text)
    assert "window.PrecisionChart" in text  # the charts' script itself is inside
    assert 50_000 < len(text) < 1_000_000  # no chart library: data, scripts and the subgraph's SVG


def _canvas_rgb(page, x: float, y: float) -> list[int]:
    """The colour the chart's canvas holds under a client point (read from the canvas, not the chart's state)."""
    return page.evaluate(f"""() => {{
        const canvas = document.querySelector('#chart canvas.chart-points'), box = canvas.getBoundingClientRect();
        const ratio = canvas.width / box.width;
        return Array.from(canvas.getContext('2d').getImageData(Math.round(({x} - box.left) * ratio),
                                                               Math.round(({y} - box.top) * ratio), 1, 1).data).slice(0, 3);
    }}""")


def test_no_console_error_and_one_point_per_compared_output(open_report, report):
    opened = open_report(report)
    assert opened.errors == []
    page = opened.page
    assert page.evaluate("window.precisionReport.traceType") == "canvas"
    runs = _result_csvs(report)
    expected = [len(_compared_outputs(p)) for p in runs]
    assert len(expected) == 2 and all(expected)
    assert page.evaluate("window.precisionReport.chart.drawn") == expected  # every point inside the plot
    names = page.evaluate("window.precisionReport.chart.traces.map(t => t.name)")
    assert len(names) == 2 and names[1] == "debug_0 vs debug_1"
    legend = page.locator("#chart .chart-legend-item").all_inner_texts()
    assert [t.strip() for t in legend] == names
    # the first divergent op's point is painted red where the chart places it
    index = page.evaluate(f"window.precisionReport.data.runs[0].tensor.indexOf('{OP}:output:0')")
    page.locator("#chart").scroll_into_view_if_needed()
    red, green, blue = _canvas_rgb(page, *page.evaluate(f"window.precisionReport.chart.pixel(0, {index})"))
    assert red > 150 and green < 100 and blue < 100


def _point_position(page, run: int, tensor: str) -> tuple[float, float]:
    index = page.evaluate(f"window.precisionReport.data.runs[{run}].tensor.indexOf({tensor!r})")
    assert index >= 0
    page.locator("#chart").scroll_into_view_if_needed()  # below the answer block: scrolled to, as a person would
    x, y = page.evaluate(f"window.precisionReport.chart.pixel({run}, {index})")
    return x, y


def test_hover_names_the_op_and_click_opens_its_panel(open_report, report):
    page = open_report(report).page
    x, y = _point_position(page, 0, f"{OP}:output:0")
    page.mouse.move(x, y)
    page.wait_for_selector("#chart .chart-hover:not([hidden])")
    assert OP in page.locator("#chart .chart-hover").text_content()
    page.mouse.click(x, y)
    page.wait_for_selector("#op-panel:not([hidden])")
    assert OP in page.locator("#panel-title").inner_text()
    run = int(page.locator("#op-panel").get_attribute("data-run"))  # overlapping points: either run's
    # NPU-vs-NPU rows spell the op as its dump file does
    spellings = (f"{OP}:output:0", f"{OP.replace('/', '_')}:output:0")
    row = next(r for r in _compared_outputs(_result_csvs(report)[run]) if r["TensorIndex"] in spellings)
    cells = dict(page.evaluate("""() => Array.from(document.querySelectorAll('#panel-metrics tbody tr'))
                                    .map(r => [r.cells[0].textContent, r.cells[1].textContent])"""))
    for name in ("CosineSimilarity", "MaxAbsoluteError", "KullbackLeiblerDivergence", "StandardDeviation",
                 "MeanRelativeError"):
        assert cells[name] == row[name]
    assert len(cells) == 10


def _golden_and_npu(workspace: Path) -> tuple[np.ndarray, np.ndarray]:
    from precision_tool.formats.tf.golden import golden_key, scan_golden_dir
    from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor

    golden = np.load(scan_golden_dir(workspace / "tf" / "dump")[golden_key(OP, 0)], allow_pickle=False)
    dumps = [p for p in (workspace / "npu" / "debug_0" / "dump").rglob("*") if p.is_file()
             and ".bn2_FusedBatchNormV3." in p.name]
    assert len(dumps) == 1, dumps
    dump = read_dump_header(dumps[0])
    return golden, read_tensor(dump, dump.outputs[0])


def test_the_panel_shows_both_sides_statistics_and_the_verdict(open_report, report):
    page = open_report(report).page
    page.click("#first-divergent a.op-link")
    page.wait_for_selector("#panel-stats")
    stats = {r[0]: r[1:] for r in page.evaluate("""() => Array.from(document.querySelectorAll('#panel-stats tbody tr'))
                                                 .map(r => Array.from(r.cells).map(c => c.textContent))""")}
    golden, npu = _golden_and_npu(report.parents[3])
    npu = npu.astype(np.float64)  # NC1HWC0 with zero padding: max > 0 and min < 0 are the real values'
    assert stats["max"] == [f"{npu.max():.6g}", f"{float(golden.max()):.6g}"]
    assert stats["min"] == [f"{npu.min():.6g}", f"{float(golden.min()):.6g}"]
    assert stats["count"] == [f"{golden.size:,}", f"{golden.size:,}"]  # padding cut, as compared
    assert stats["mean"][1] == f"{float(golden.astype(np.float64).mean()):.6g}"
    histogram = page.evaluate("window.precisionReport.histogram().counts")
    assert sum(histogram) + int(page.locator("#histogram-note").inner_text().split(": ")[1].split(" ")[0]) \
        == golden.size
    body = page.locator("#panel-body").inner_text()
    assert "BatchNorm" in body and "NC1HWC0" in body and "bn2/FusedBatchNormV3" in body
    verdict = page.locator("#verdict").inner_text()
    assert "kernel" in verdict and "disagrees with TensorFlow" in verdict
    # hovering a bar names its bin and count
    canvas = page.locator("#histogram canvas").bounding_box()
    assert canvas["width"] > 200 and canvas["height"] > 200  # drawn at the size of its (shown) panel
    tallest = histogram.index(max(histogram))
    plot = page.evaluate("window.precisionReport.histogram().plot")
    page.mouse.move(canvas["x"] + plot["l"] + (tallest + 0.5) * plot["w"] / len(histogram),
                    canvas["y"] + plot["t"] + plot["h"] - 2)
    assert page.locator("#histogram .chart-hover").inner_text().endswith(f": {max(histogram)} elements")


def test_the_error_view_has_a_log_axis(open_report, report):
    page = open_report(report).page
    page.click("#show-error")
    chart = "window.precisionReport.chart"
    assert page.evaluate(f"{chart}.axes.yLog") is True and page.evaluate(f"{chart}.axes.threshold") is None
    assert page.evaluate(f"{chart}.axes.yTitle") == "max absolute error"
    # the y range is in decades: every point's max abs error (or its NaN/Inf placeholder) lies inside it
    low, high = page.evaluate(f"{chart}.yRange")
    errors = page.evaluate("window.precisionReport.data.runs.map(r => r.error).flat()")
    assert all(10 ** low < e < 10 ** high for e in errors)
    assert page.evaluate(f"{chart}.drawn") == page.evaluate("window.precisionReport.data.runs.map(r => r.x.length)")
    page.click("#show-cosine")
    assert page.evaluate(f"{chart}.axes.yLog") is False
    assert page.evaluate(f"{chart}.axes.threshold.y") == 0.98


def test_zoom_pan_reset_legend_and_png(open_report, report):
    page = open_report(report).page
    chart = "window.precisionReport.chart"
    page.locator("#chart").scroll_into_view_if_needed()
    box = page.locator("#chart canvas.chart-overlay").bounding_box()
    everything = page.evaluate(f"{chart}.drawn")
    full = page.evaluate(f"{chart}.xRange")
    # a box dragged over the left third of the plot: x and y zoom to it, fewer points drawn
    plot = page.evaluate(f"{chart}.plot()")
    left, top = box["x"] + plot["l"] + 5, box["y"] + plot["t"] + 5
    page.mouse.move(left, top)
    page.mouse.down()
    page.mouse.move(left + plot["w"] / 3, top + plot["h"] - 10, steps=5)
    page.mouse.up()
    zoomed = page.evaluate(f"{chart}.xRange")
    assert full[0] < zoomed[0] < zoomed[1] < full[1]
    assert sum(page.evaluate(f"{chart}.drawn")) < sum(everything)
    # pan: the same span, moved
    page.click("#chart .chart-tool:text('pan')")
    page.mouse.move(left + 100, top + 50)
    page.mouse.down()
    page.mouse.move(left + 200, top + 50, steps=5)
    page.mouse.up()
    panned = page.evaluate(f"{chart}.xRange")
    assert panned[0] < zoomed[0] and abs((panned[1] - panned[0]) - (zoomed[1] - zoomed[0])) < 1e-6
    page.mouse.dblclick(left + 50, top + 50)  # back to everything
    assert page.evaluate(f"{chart}.xRange") == full and page.evaluate(f"{chart}.drawn") == everything
    # a run's name in the legend hides its points, and shows them again
    page.locator("#chart .chart-legend-item").nth(1).click()
    assert page.evaluate(f"{chart}.drawn") == [everything[0], 0]
    page.locator("#chart .chart-legend-item").nth(1).click()
    assert page.evaluate(f"{chart}.drawn") == everything and page.evaluate(f"{chart}.xRange") == full
    with page.expect_download() as download:
        page.click("#chart .chart-tool:text('save PNG')")
    with open(download.value.path(), "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def _column(page, table: str, column: int) -> list[str]:
    return page.evaluate(f"""() => Array.from(document.querySelectorAll('#{table} tbody tr'))
                             .filter(r => !r.hidden).map(r => r.cells[{column}].getAttribute('data-sort')
                             ?? r.cells[{column}].textContent)""")


def test_tables_sort_and_filter(open_report, report):
    page = open_report(report).page
    before = _column(page, "abnormal-table", 5)
    page.click("#abnormal-table th:nth-child(6)")  # cosine
    ascending = [float(v) for v in _column(page, "abnormal-table", 5)]
    assert ascending == sorted(float(v) for v in before)
    page.click("#abnormal-table th:nth-child(6)")
    assert [float(v) for v in _column(page, "abnormal-table", 5)] == sorted(ascending, reverse=True)
    assert page.get_attribute("#abnormal-table th:nth-child(6)", "aria-sort") == "descending"
    page.fill("input[data-table=abnormal-table]", "MatMul")
    shown = _column(page, "abnormal-table", 3)
    assert shown and all("MatMul" in t for t in shown)
    names = page.locator("#fusion-table tbody tr").all_inner_texts()
    assert names  # the demo's fusion_result.json has passes that fired
    assert page.locator("#overflow-table tbody tr").count() >= 1
    assert page.locator("#cast-table tbody tr").count() >= 1


def test_the_subgraph_is_inline_svg_and_links_reach_the_csvs(open_report, report):
    page = open_report(report).page
    svg = page.locator("#subgraph svg")
    assert svg.count() == 1 and OP in svg.text_content()
    for href in page.evaluate("Array.from(document.querySelectorAll('#runs a')).map(a => a.getAttribute('href'))"):
        assert (report.parent / href).resolve().is_file(), href


def test_the_panel_shows_the_code_that_made_the_op(open_report, report):
    """The golden run recorded where each op was made (docs/source-lines.md): the panel shows the demo
    network's code around the line, that line marked."""
    network = Path(__file__).resolve().parents[3] / "precision_tool" / "demo" / "network.py"
    lines = network.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "v1.nn.fused_batch_norm(" in text)
    page = open_report(report).page
    page.click("#first-divergent a.op-link")
    page.wait_for_selector("#panel-body .source")
    assert page.locator("#panel-body .source-place").first.inner_text() == f"network.py:{line} in build_model()"
    marked = page.locator("#panel-body .source-line.here").first.inner_text()
    assert [part.strip() for part in marked.split(None, 1)] == [str(line), lines[line - 1].strip()]
    shown = page.locator("#panel-body .source-code").first.inner_text().splitlines()
    assert len(shown) == 9 and shown[0].split(None, 1)[0] == str(line - 4)  # 4 lines either side
