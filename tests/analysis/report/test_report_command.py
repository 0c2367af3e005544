"""`report` as a command: where it writes, its options, and bad input as one line with nothing half-written.

The workspaces are the comparison tests' network (tests/analysis/compare/conftest.py: a Build graph, NPU dumps in
device layouts, golden tensors, NaN/Inf, missing dumps and goldens) and a statistics-only copy of the
demo; the pages are opened in headless Chromium.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import users
from tests.analysis.compare.conftest import make_network
from tests.conftest import ROOT

CLI = str(ROOT / "precision_tool" / "cli.py")


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    """The comparison tests' network, compared once (`vc`)."""
    from tests.conftest import run_cli

    net = make_network(tmp_path_factory.mktemp("report") / "precision_data")
    done = run_cli("vc", "-j", "1", data=net.root)
    assert done.status == 0, done.out + done.err
    return net.root


def _copy(workspace: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(workspace, target, symlinks=True)
    return target


def _report_path(out: str) -> Path:
    lines = [line for line in out.splitlines() if line.startswith("report: ")]
    assert len(lines) == 1, out
    return Path(lines[0].split("report: ", 1)[1].split(" (", 1)[0])


def test_report_writes_one_page_and_says_where(compared, cli, open_report):
    shown = cli("report", data=compared)
    assert shown.status == 0, shown.out + shown.err
    page_path = _report_path(shown.out)
    assert page_path.parent.parent == compared / "temp" / "report" and page_path.is_file()
    assert page_path.resolve().as_uri() in shown.out
    assert sorted(p.name for p in page_path.parent.iterdir()) == ["report.html"]  # no temp file left
    opened = open_report(page_path)
    assert opened.errors == []
    page = opened.page
    runs = page.evaluate("window.precisionReport.data.runs.map(r => r.x.length)")
    csv_path = next((compared / "temp" / "vector_compare").glob("*/result_*.csv"))
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    outputs = [r for r in rows if ":output:" in r["TensorIndex"] and r["CosineSimilarity"] != "NaN"]
    assert runs == [len(outputs)]
    # rows without a golden (or a dump) are counted, not drawn
    not_compared = [r for r in rows if ":output:" in r["TensorIndex"] and r["CosineSimilarity"] == "NaN"]
    header = page.locator("#runs thead th").all_inner_texts()
    cells = page.locator("#runs tbody tr").first.locator("td").all_inner_texts()
    assert cells[header.index("not compared")] == f"{len(not_compared):,}"
    # NaN/Inf outputs are drawn (below the axis) and listed as abnormal
    nan_rows = [r for r in outputs if r["CosineSimilarity"].lower() in ("nan", "inf", "-inf")]
    assert nan_rows
    listed = page.locator("#abnormal-table tbody tr").all_inner_texts()
    assert all(any(r["TensorIndex"].split(":")[0] in line for line in listed) for r in nan_rows)


def test_report_options_file_and_output(compared, cli, tmp_path):
    result_dir = next((compared / "temp" / "vector_compare").iterdir())
    out = tmp_path / "pages"
    shown = cli("report", "-f", str(result_dir), "-o", str(out), "-s", "0", data=compared)
    assert shown.status == 0, shown.out + shown.err
    page_path = _report_path(shown.out)
    assert page_path.parent.parent == out
    text = page_path.read_text()
    assert "<svg" not in text.split('id="subgraph"')[1].split("</section>")[0]  # -s 0: no picture
    csv_file = next(result_dir.glob("result_*.csv"))
    assert cli("report", "-f", str(csv_file), "-o", str(out), data=compared).status == 0


def test_bad_input_is_one_line(compared, cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, data, says in (
        (["report"], empty, "no comparison results in"),
        (["report", "-f", str(tmp_path / "nothing")], compared, "does not exist; give a result CSV or a result folder"),
        (["report", "-s", "-1"], compared, "-s"),
    ):
        shown = cli(*args, data=data)
        text = shown.out + shown.err
        assert shown.status != 0 and "Traceback" not in text, text
        assert says in text
        assert len([line for line in text.splitlines() if line.strip()]) <= 2, text
    assert not (empty / "temp" / "report").exists()
    bad_csv = tmp_path / "result_1.csv"
    bad_csv.write_text("not,a,result\n1,2,3\n")
    shown = cli("report", "-f", str(bad_csv), data=compared)
    assert shown.status == 1 and "Traceback" not in shown.out + shown.err
    assert str(bad_csv) in shown.out + shown.err and "not an msaccucmp/vc result CSV" in shown.out + shown.err
    assert not list((compared / "temp" / "report").glob("*")) or all(
        (folder / "report.html").is_file() for folder in (compared / "temp" / "report").iterdir())  # no empty folder


def test_ac_report_without_results_says_how(cli, tmp_path):
    empty = tmp_path / "ws"
    empty.mkdir()
    shown = cli("ac", "--report", data=empty)
    assert "report: no comparison results yet; `ac -c --report` runs one first" in shown.out


def test_hostile_op_names_are_text_not_markup(compared, cli, tmp_path, open_report):
    """A CSV whose op names hold markup (someone else's file): the page shows them, runs none of them."""
    workspace = _copy(compared, tmp_path)
    csv_path = next((workspace / "temp" / "vector_compare").glob("*/result_*.csv"))
    text = csv_path.read_text()
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    first_op = next(r["TensorIndex"].split(":output:")[0] for r in csv.DictReader(io.StringIO(text))
                    if ":output:" in r["TensorIndex"] and r["CosineSimilarity"] != "NaN")
    csv_path.write_text(text.replace(first_op, hostile + first_op.replace("/", "_")))
    (csv_path.parent / "run.json").unlink()  # an msaccucmp CSV: no run.json, so no statistics either
    shown = cli("report", data=workspace)
    assert shown.status == 0, shown.out + shown.err
    opened = open_report(_report_path(shown.out))
    assert opened.errors == []
    page = opened.page
    assert page.locator("script").count() == 3  # data, the charts, the page's own: nothing injected
    names = page.evaluate("window.precisionReport.data.runs[0].tensor")
    assert any(hostile in name for name in names)
    index = next(i for i, name in enumerate(names) if hostile in name)
    page.evaluate(f"window.precisionReport.openPanel(0, {index})")
    assert hostile in page.locator("#panel-title").inner_text()
    assert "no run.json" in page.locator("#panel-body").inner_text()


def test_a_statistics_compare_is_reported(demo_workspace, cli, tmp_path, open_report):
    from tests.analysis.compare.stats.stats_helpers import dump_files, to_stats

    workspace = _copy(demo_workspace, tmp_path)
    shutil.rmtree(workspace / "temp")
    shutil.rmtree(workspace / "npu" / "debug_1")
    for dump in dump_files(workspace / "npu" / "debug_0" / "dump"):
        to_stats(dump)
    assert cli("vc", data=workspace).status == 0
    shown = cli("report", data=workspace)
    assert shown.status == 0, shown.out + shown.err
    opened = open_report(_report_path(shown.out))
    assert opened.errors == []
    row = opened.page.locator("#runs tbody").inner_text()
    assert "(statistics)" in row and "no cosine to chart" in row


def test_read_only_workspace_says_where_else(compared, tmp_path):
    workspace = _copy(compared, tmp_path)
    out = tmp_path / "elsewhere"
    out.mkdir()
    out.chmod(0o777)
    command = [sys.executable, CLI, "--data", str(workspace), "report"]
    wrapped = users.read_only_user_command(command, workspace)
    if os.geteuid() == 0:
        wrapped = users.as_nobody(command, reach=[workspace, out])
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    try:
        refused = subprocess.run(wrapped, capture_output=True, text=True, env=env, cwd="/", timeout=300)
        text = refused.stdout + refused.stderr
        assert refused.returncode == 1 and "Traceback" not in text, text
        assert f"cannot write the comparison results folder {workspace / 'temp' / 'report'}" not in text
        assert str(workspace / "temp" / "report") in text and "add -o DIR to write the report to another folder" in text
        again = [*command, "-o", str(out)]
        wrapped = users.as_nobody(again, reach=[workspace, out]) if os.geteuid() == 0 else ["env", "HOME=/nonexistent", *again]
        done = subprocess.run(wrapped, capture_output=True, text=True, env=env, cwd="/", timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(list(out.glob("*/report.html"))) == 1
    finally:
        users.make_writable_again(workspace)


def test_the_packed_json_unpacks_to_the_same_text(compared, cli, open_report):
    """page_columns.py packs names and metric cells; the page's script (the one every report carries)
    unpacks them: the same text back, for names outside the BMP, names that repeat or shrink, and every
    kind of cell the packer keeps or turns into millionths."""
    from precision_tool.render.report.page_columns import front_coded, metric_cell

    shown = cli("report", "-s", "0", data=compared)
    assert shown.status == 0, shown.out + shown.err
    page = open_report(_report_path(shown.out)).page
    names = ["net/a/Conv2D", "net/a/Conv2D", "net/a/Conv2D_1", "net/a", "", "net/😀/b", "net/😀/bé", "net/😁/b",
             "网络/层/卷积", "网络/层/加", "</script><b>x</b>"]
    unpacked = page.evaluate("packed => window.precisionReport.codec.unFrontCode(packed)", front_coded(names))
    assert unpacked == names
    cells = ["0.999964", "0.000000", "0.000014", "-0.000001", "-0.000000", "-1.500000", "123456789.123456",
             "7.094114", "(-0.119;1.165),(-0.119;1.164)", "(0.000;12345.000),(-7.005;0.010)",
             "NaN", "nan", "inf", "-inf", "1e-05", "0.5", "00.500000", "(-0.000;1.165),(-0.119;1.164)",
             "(0.1;1.165),(-0.119;1.164)", "(nan;nan),(0.000;0.000)", ""]
    packed = [metric_cell(c) for c in cells]
    # six decimals as millionths, mean/std pairs as thousandths; a sign that would be lost and the rest as text
    kinds = [type(c).__name__ for c in packed]
    assert kinds == ["int"] * 4 + ["str"] + ["int"] * 3 + ["list"] * 2 + ["str"] * 11
    back = page.evaluate("cells => cells.map(window.precisionReport.codec.metricText)", packed)
    assert back == cells
