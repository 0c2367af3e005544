"""The demo's report, opened in headless Chromium: `precision-tool demo` ends by printing its path; the page
loads with no console error and fetches nothing; the chart draws one point per compared output; hover
names the op; a click opens the op's panel with the numbers of the CSV and of the tensors themselves;
the tables sort and filter.

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
    assert "plotly.js v" in text  # the library itself is inside
    assert 3_000_000 < len(text) < 20_000_000


def test_no_console_error_and_one_point_per_compared_output(open_report, report):
    opened = open_report(report)
    assert opened.errors == []
    page = opened.page
    assert page.evaluate("window.precisionReport.traceType") == "scatter"  # few points: SVG, countable
    runs = _result_csvs(report)
    expected = [len(_compared_outputs(p)) for p in runs]
    assert len(expected) == 2 and all(expected)
    drawn = page.evaluate("""() => Array.from(document.querySelectorAll('#chart .scatterlayer .trace'))
                               .map(t => t.querySelectorAll('path.point').length)""")
    assert drawn == expected
    names = page.evaluate("document.getElementById('chart').data.map(t => t.name)")
    assert len(names) == 2 and names[1] == "debug_0 vs debug_1"


def _point_box(page, run: int, tensor: str):
    index = page.evaluate(f"window.precisionReport.data.runs[{run}].tensor.indexOf({tensor!r})")
    assert index >= 0
    page.locator("#chart").scroll_into_view_if_needed()  # below the answer block: scrolled to, as a person would
    point = page.locator("#chart .scatterlayer .trace").nth(run).locator("path.point").nth(index)
    return point.bounding_box()


def test_hover_names_the_op_and_click_opens_its_panel(open_report, report):
    page = open_report(report).page
    box = _point_box(page, 0, f"{OP}:output:0")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#chart .hoverlayer .hovertext")
    assert OP in page.locator("#chart .hoverlayer").text_content()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
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
    histogram = page.evaluate("document.getElementById('histogram').data[0].y")
    assert sum(histogram) + int(page.locator("#histogram-note").inner_text().split(": ")[1].split(" ")[0]) \
        == golden.size
    body = page.locator("#panel-body").inner_text()
    assert "BatchNorm" in body and "NC1HWC0" in body and "bn2/FusedBatchNormV3" in body
    verdict = page.locator("#verdict").inner_text()
    assert "kernel" in verdict and "disagrees with TensorFlow" in verdict


def test_the_error_view_has_a_log_axis(open_report, report):
    page = open_report(report).page
    page.click("#show-error")
    page.wait_for_function("document.getElementById('chart').layout.yaxis.type === 'log'")
    assert page.evaluate("document.getElementById('chart').layout.shapes.length") == 0
    page.click("#show-cosine")
    page.wait_for_function("document.getElementById('chart').layout.shapes.length === 1")
    assert page.evaluate("document.getElementById('chart').layout.shapes[0].y0") == 0.98


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
