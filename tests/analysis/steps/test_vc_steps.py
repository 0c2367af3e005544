"""`vc --step all`, and what vcs, ac -c and the report say of several steps (docs/steps.md), on the demo
dumped over two steps whose step 1 diverges from conv2/Conv2D on (tests/tools/step_workspace.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from precision_tool.analysis.results.results import read_result_csv
from tests.tools.step_workspace import FIRST_BAD_GRAPH_NAME

FIRST_OP = f"[13] {FIRST_BAD_GRAPH_NAME}"


@pytest.fixture
def ws(multi_step_workspace: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(multi_step_workspace, tmp_path / "ws", symlinks=True))


def _result_dirs(ws: Path) -> list[Path]:
    root = ws / "temp" / "vector_compare"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _csvs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("result_*.csv"))


def test_vc_step_all_writes_one_csv_per_step_as_vc_step_n_writes_it(cli, ws):
    result = cli("vc", "--step", "all", data=ws)
    assert result.status == 0, result.out + result.err
    [folder] = _result_dirs(ws)
    stamp = folder.name
    assert _csvs(folder) == [f"result_{stamp}_step0.csv", f"result_{stamp}_step1.csv"]
    for step in (0, 1):
        single = cli("vc", "--step", str(step), data=ws)
        assert single.status == 0, single.out
        newest = _result_dirs(ws)[-1]
        # the same rows, byte for byte, as the single-step comparison of that iteration against step_<N>/
        assert (folder / f"result_{stamp}_step{step}.csv").read_bytes() == \
            (newest / f"result_{newest.name}.csv").read_bytes()
    step0 = read_result_csv(folder / f"result_{stamp}_step0.csv")
    step1 = read_result_csv(folder / f"result_{stamp}_step1.csv")
    assert len(step0.rows) == len(step1.rows) > 50
    cosines = {(r.npu_op, r.tensor_index): r.cosine for r in step1.rows}
    assert cosines[("conv2/Conv2D", "conv2/Conv2D:output:0")] < 0  # the changed op's output
    assert all(r.cosine > 0.98 for r in step0.rows if r.cosine == r.cosine)
    runs = json.loads((folder / "run.json").read_text())["runs"]
    assert [(r["step"], r["label"].split(":")[0]) for r in runs] == [(0, "step 0"), (1, "step 1")]
    assert "step 1 diverges first, first divergent op " + FIRST_OP in " ".join(result.out.split())


def test_vcs_and_ac_name_the_first_diverging_step_and_its_op(cli, ws):
    compared = cli("ac", "-c", data=ws)
    assert compared.status == 0, compared.out + compared.err
    text = " ".join(compared.out.split())
    verdict = f"steps 0, 1: step 1 diverges first, first divergent op {FIRST_OP}"
    assert verdict in text
    assert re.search(r"step 0 +0 abnormal +min cosine +0\.9\d+ +first divergent op none", compared.out)
    assert re.search(r"▶ step 1 +\d+ abnormal +min cosine +-0\.9\d+ +first divergent op " + re.escape(FIRST_OP),
                     compared.out)
    # the same-step check reads the first iteration against its own golden step folder
    assert "same step: yes" in text
    answer = text.split("answer ─")[-1]
    assert verdict in answer and "first divergent op: " + FIRST_OP in answer
    assert "every compared output meets the threshold" not in answer  # step 0's all-clear does not answer
    summary = cli("vcs", data=ws)
    assert summary.status == 0
    assert verdict in " ".join(summary.out.split())
    # the full panels are the diverging step's; step 0 is its summary line
    assert "step 1: ge_default" in summary.out and "step 0: ge_default" not in summary.out


def test_plain_vc_compares_the_lowest_step_with_its_own_golden(cli, ws):
    result = cli("vc", data=ws)
    assert result.status == 0, result.out
    text = " ".join(result.out.split())
    assert "comparing iteration 0 only" in text and "`vc --step all` compares each" in text
    assert "94 ops (0 abnormal)" in text and "diverges first" not in text
    report = cli("report", data=ws)
    assert report.status == 0
    page = next((ws / "temp" / "report").glob("*/report.html")).read_text()
    assert 'id="steps-data"' not in page and 'id="steps-section"' not in page  # one step: no step panel


def test_a_step_without_golden_is_named_and_skipped(cli, ws):
    shutil.rmtree(ws / "tf" / "dump" / "step_1")
    result = cli("vc", "--step", "all", data=ws)
    assert result.status == 0, result.out
    lines = [line for line in result.out.splitlines() if "step 1: no golden tensors" in line]
    assert len(lines) == 1 and "step_1 is missing): skipped" in lines[0]
    [folder] = _result_dirs(ws)
    assert _csvs(folder) == [f"result_{folder.name}_step0.csv"]


def test_step_all_with_nothing_to_compare_is_one_clear_error(cli, ws):
    golden = ws / "tf" / "dump"
    for npy in (golden / "step_0").iterdir():
        npy.rename(golden / npy.name)  # one flat step, as before golden per step
    shutil.rmtree(golden / "step_0")
    shutil.rmtree(golden / "step_1")
    result = cli("vc", "--step", "all", data=ws)
    assert result.status == 1
    text = " ".join((result.out + result.err).split())
    assert "nothing to compare step by step" in text and "iterations 0, 1" in text and "tf_dump --step all" in text
    assert "Traceback" not in text and _result_dirs(ws) == []
    (golden / "step_7").mkdir()
    (golden / "step_7" / "x.0.1.npy").write_bytes((golden / next(golden.glob("*.npy")).name).read_bytes())
    unpaired = cli("vc", "--step", "all", data=ws)
    assert unpaired.status == 1
    text = " ".join((unpaired.out + unpaired.err).split())
    assert "none of the dump's iterations (0, 1) has a golden folder" in text and "step_7" in text


def test_step_all_on_one_iteration_is_plain_vc(cli, ws):
    iteration = next((ws / "npu" / "debug_0" / "dump").glob("*/0/*/1/1"))
    shutil.rmtree(iteration)
    result = cli("vc", "--step", "all", data=ws)
    assert result.status == 0, result.out
    [folder] = _result_dirs(ws)
    assert _csvs(folder) == [f"result_{folder.name}.csv"]  # as plain vc names it
    assert "diverges first" not in result.out and "94 ops (0 abnormal)" in " ".join(result.out.split())


def test_report_holds_the_step_heat_map(cli, ws):
    assert cli("vc", "--step", "all", data=ws).status == 0
    report = cli("report", data=ws)
    assert report.status == 0, report.out
    page = next((ws / "temp" / "report").glob("*/report.html")).read_text()
    data = json.loads(re.search(r'<script type="application/json" id="steps-data">(.*?)</script>', page, re.S).group(1))
    assert data["rows"] == ["step 0", "step 1"] and data["first_step"] == 1 and data["first_op"] == FIRST_OP
    assert len(data["cosines"]) == 2 and len(data["cosines"][0]) == len(data["ops"]) > 50
    column = data["ops"].index(FIRST_OP)
    assert data["cosines"][0][column] > 0.98 and data["cosines"][1][column] < 0
    assert all(c is None or c > 0.98 for c in data["cosines"][0])
    assert "Step 1 diverges first" in page and "steps-heatmap" in page



def test_resume_finishes_a_missing_step(cli, ws):
    """What Ctrl-C leaves (a step not written yet): `vc --resume` writes it as the full run did, and the
    step verdict is the same."""
    assert cli("vc", "--step", "all", data=ws).status == 0
    [folder] = _result_dirs(ws)
    lost = folder / f"result_{folder.name}_step1.csv"
    before = lost.read_bytes()
    lost.unlink()
    resumed = cli("vc", "--resume", data=ws)
    assert resumed.status == 0, resumed.out + resumed.err
    assert lost.read_bytes() == before
    assert f"step 1 diverges first, first divergent op {FIRST_OP}" in " ".join(resumed.out.split())


def test_step_all_refuses_across_ranks_in_one_line(cli, ws):
    result = cli("vc", "--step", "all", "--across-ranks", data=ws)
    text = result.out + result.err
    assert result.status == 1 and "--across-ranks compares one step (vc --across-ranks --step N)" in " ".join(text.split())
    assert "Traceback" not in text and _result_dirs(ws) == []
    bad = cli("vc", "--step", "some", data=ws)
    assert bad.status != 0 and "Traceback" not in bad.out + bad.err
    assert "'some' is neither a dump iteration number (0, 1, ...) nor 'all'" in bad.out + bad.err


def test_heat_map_columns_share_ops_on_big_networks(cli, ws, monkeypatch):
    """Past MAX_COLUMNS ops, a column is the lowest cosine of its ops and names the first and last."""
    from precision_tool.analysis.compare.compare_runs import read_run_file
    from precision_tool.analysis.report import step_panel
    from precision_tool.analysis.report.report_runs import RunReport
    from precision_tool.analysis.results.results import summarize

    assert cli("vc", "--step", "all", data=ws).status == 0
    [folder] = _result_dirs(ws)
    runs = [RunReport(spec.label, folder / spec.csv_name, False,
                      summarize(read_result_csv(folder / spec.csv_name), 0.98), spec=spec)
            for spec in read_run_file(folder)]
    whole = step_panel.step_panel(runs)
    assert whole is not None and len(whole.ops) == 94 and whole.ops[whole.first_column] == FIRST_OP
    monkeypatch.setattr(step_panel, "MAX_COLUMNS", 10)
    shared = step_panel.step_panel(runs)
    assert shared is not None and len(shared.ops) == 10 and shared.ops[0].startswith("[0] ") and " … [9] " in shared.ops[0]
    assert shared.first_column == 1 and shared.ops[1].startswith("[10] ")  # column 1 holds ops 10-19, [13] among them
    for step in (0, 1):
        row = [v for v in whole.cosines[step][10:20] if v is not None]
        assert shared.cosines[step][1] == min(row)


def test_a_second_npu_run_is_compared_step_by_step_too(cli, ws):
    """As plain vc: debug_0 against debug_1 at every iteration both hold (here the same dumps: no difference)."""
    shutil.copytree(ws / "npu" / "debug_0", ws / "npu" / "debug_1")
    result = cli("vc", "--step", "all", data=ws)
    assert result.status == 0, result.out + result.err
    [folder] = _result_dirs(ws)
    stamp = folder.name
    assert _csvs(folder) == [f"result_{stamp}_step0.csv", f"result_{stamp}_step0_npu_vs_npu.csv",
                             f"result_{stamp}_step1.csv", f"result_{stamp}_step1_npu_vs_npu.csv"]
    text = " ".join(result.out.split())
    assert "step 1: debug_0 vs debug_1: first divergent op none" in text
    assert f"step 1 diverges first, first divergent op {FIRST_OP}" in text  # the golden runs decide the step


def test_ac_replays_the_first_diverging_step_not_the_newest_dump(cli, ws):
    """A third, clean iteration (2) is the op's newest dump: the replay still reads iteration 1, where the
    step diverges, and against its golden step folder."""
    first = next((ws / "npu" / "debug_0" / "dump").glob("*/0/*/1/0"))
    shutil.copytree(first, first.parent / "2")
    shutil.copytree(ws / "tf" / "dump" / "step_0", ws / "tf" / "dump" / "step_2")
    result = cli("ac", "-c", data=ws)
    assert result.status == 0, result.out + result.err
    text = " ".join(result.out.split())
    assert f"steps 0, 1, 2: step 1 diverges first, first divergent op {FIRST_OP}" in text
    answer = text.split("answer ─")[-1]
    assert "KERNEL: on the NPU's own inputs, output 0 disagrees" in answer  # iteration 2's clean conv2 would agree
    cases = list((_result_dirs(ws)[-1] / "replay").glob("*/case.json"))
    assert cases and all(f"{os.sep}1{os.sep}" in json.loads(c.read_text())["dump_file"] for c in cases)
