"""The answer, first and always: `ac -c` ends with one block (the first divergent op and the first op to produce
Inf/NaN, each with its verdict and what to do, a line per run, the result folder and the report), the report
carries the same block, terminal and report count alike, and the NPU-vs-NPU run says what it compares.

Driven through the one-shot CLI on a copy of the demo workspace; expected numbers are read independently
from the result CSVs with the csv module, and the report's page in headless Chromium."""

from __future__ import annotations

import csv
import math
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

RULE = re.compile(r"^answer ─+$")


@pytest.fixture(scope="module")
def checked(demo_workspace: Path, tmp_path_factory) -> tuple[Path, str]:
    """A copy of the demo with `ac -c --report` run on it; (workspace, what it printed)."""
    ws = tmp_path_factory.mktemp("answer") / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    shutil.rmtree(ws / "temp")
    shutil.rmtree(ws / "fix", ignore_errors=True)
    ran = run_cli("ac", "-c", "--report", data=ws, env={"COLUMNS": "100"})
    assert ran.status == 0, ran.out[-3000:] + ran.err[-3000:]
    return ws, ran.out


def _answer(out: str) -> list[str]:
    lines = out.rstrip("\n").splitlines()
    starts = [n for n, line in enumerate(lines) if RULE.match(line)]
    assert len(starts) == 1, out[-3000:]
    return lines[starts[0] + 1:]


def _newest_results(ws: Path) -> Path:
    return sorted((ws / "temp" / "vector_compare").iterdir())[-1]


def test_ac_ends_with_the_answer_the_verdicts_and_what_to_do(checked) -> None:
    ws, out = checked
    block = _answer(out)
    text = "\n".join(block)
    assert block[0] == ("first divergent op: [16] bn2/FusedBatchNormV3 (BatchNorm), out0 cosine 0.706158 ≤ 0.98 "
                        "while its inputs pass")
    # the line of the training script that made it (docs/source-lines.md), then the verdict
    assert block[1].startswith("  made at network.py:") and "v1.nn.fused_batch_norm(" in block[1]
    assert block[2].startswith("  KERNEL: on the NPU's own inputs, output 0 disagrees with TensorFlow")
    repro = ws / "fix" / "repro_debug_0_16_bn2_FusedBatchNormV3"
    assert block[3].startswith("  do: send the reproducer to the op's vendor")
    assert block[4] == f"      {repro}" and (repro / "run.py").is_file()
    nan = block.index("first op with Inf/NaN: [48] gradients/fc2/MatMul_grad/MatMul_1 (MatMulV2), out0 holds "
                      "Inf/NaN while its inputs do not")
    assert block[nan + 1].startswith("  made at network.py:") and "compute_gradients(" in block[nan + 1]
    assert block[nan + 2].startswith("  PRECISION: ") and "float16 overflows" in block[nan + 2]
    ops_info = ws / "fix" / "ops_info.json"
    assert f"      {ops_info}" in block and ops_info.is_file()
    assert (f'      custom_op = precision_tool.tf_config.keep_in_float32(custom_op, "{ops_info}")') in block
    # the result folder and the report, once each, whole, last
    results = _newest_results(ws)
    report = sorted((ws / "temp" / "report").iterdir())[-1] / "report.html"
    assert block[-4:] == ["results (`vcs -l N` lists more abnormal ops):", f"  {results}",
                          "report (one HTML file, opens offline):", f"  {report}"]
    assert out.count(str(report)) == 1 and report.is_file()
    assert "NOT REPLAYED" not in text.upper()


def test_the_answer_counts_as_the_csv_does(checked) -> None:
    """One way of counting: the answer's run line, vcs and the CSV read here with the csv module agree."""
    ws, out = checked
    csv_path = next(_newest_results(ws).glob("result_*[0-9].csv"))
    expected = _csv_counts(csv_path)
    line = next(line for line in _answer(out) if line.startswith("ge_default_") and " vs golden: " in line)
    assert _counts_text(expected) in line
    vcs = run_cli("vcs", data=ws)
    assert _counts_text(expected) + " (abnormal: an output with cosine ≤ 0.98 or NaN/Inf data)" in vcs.out


def _csv_counts(path: Path) -> dict[str, int]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    outputs = [r for r in rows if ":output:" in r["TensorIndex"]]
    nan_data = [r for r in outputs if r["CosineSimilarity"].strip().lower() in ("nan", "inf", "-inf")
                and r["CosineSimilarity"].strip() != "NaN"]
    cosine = [float(r["CosineSimilarity"]) for r in outputs if r not in nan_data and r["CosineSimilarity"] != "NaN"]
    # an op is every (Index, op) of the CSV: with tensor rows, or one row saying why it has none (no dump)
    ops = {(r["Index"], r["TensorIndex"].rsplit(":", 2)[0] if r["TensorIndex"].count(":") >= 2 else r["NPUDump"])
           for r in rows}
    bad_ops = {r["TensorIndex"].rsplit(":", 2)[0] for r in nan_data}
    bad_ops |= {r["TensorIndex"].rsplit(":", 2)[0] for r in outputs if r not in nan_data
                and r["CosineSimilarity"] != "NaN" and float(r["CosineSimilarity"]) <= 0.98}
    assert not any(math.isnan(c) for c in cosine)
    return {"ops": len(ops), "abnormal_ops": len(bad_ops), "outputs": len(outputs),
            "compared": len(cosine) + len(nan_data), "abnormal": sum(c <= 0.98 for c in cosine) + len(nan_data),
            "nan": len(nan_data), "not_compared": len(outputs) - len(cosine) - len(nan_data)}


def _counts_text(c: dict[str, int]) -> str:
    return (f"{c['ops']} ops ({c['abnormal_ops']} abnormal) · {c['outputs']} outputs: {c['compared']} compared, "
            f"{c['abnormal']} abnormal ({c['nan']} NaN/Inf), {c['not_compared']} not compared")


def test_terminal_and_report_agree_on_every_count(checked, open_report) -> None:
    ws, out = checked
    report = sorted((ws / "temp" / "report").iterdir())[-1] / "report.html"
    page = open_report(report).page
    header = page.locator("#runs thead th").all_inner_texts()
    assert header[:10] == ["run", "kind", "ops", "abnormal ops", "outputs", "compared", "abnormal", "NaN/Inf",
                           "not compared", "lowest cosine"]
    rows = page.locator("#runs tbody tr:not(.note-row)")
    assert rows.count() == 2
    results = _newest_results(ws)
    for n, csv_path in enumerate(sorted(results.glob("result_*.csv"))):
        cells = rows.nth(n).locator("td").all_inner_texts()
        c = _csv_counts(csv_path)
        assert cells[2:9] == [f"{c[k]:,}" for k in ("ops", "abnormal_ops", "outputs", "compared", "abnormal", "nan",
                                                    "not_compared")], (csv_path.name, cells)
        assert _counts_text(c) in out  # the same numbers in the terminal's answer
    # the report carries the answer block under its headline, in the terminal's words
    answer = page.locator("#answer").inner_text()
    for line in _answer(out):
        if line.strip() and not line.startswith(("results", "report", "  /")):
            assert line.strip().replace("`", "") in answer.replace("`", ""), line


def test_the_npu_pair_says_what_the_second_run_is_without_repeating_the_panels(checked) -> None:
    _ws, out = checked
    assert ("debug_1: a second NPU run of the same graph (94 ops); 1 op(s) with another kernel: bn2/FusedBatchNormV3 "
            "(te_batchnorm_v1_9c1e → te_batchnorm_v2_4a7d)") in out
    assert out.count("╭─ [16] bn2/FusedBatchNormV3") == 1  # the NPU-vs-golden panel only
    assert "first divergent op [16] bn2/FusedBatchNormV3 (`vcs -f` on the CSV shows its ops)" in out
    assert ("debug_0 vs debug_1 · ge_proto_00000001_graph_1_Build.txt · graph structure: the same in all 55 ops "
            "compared (types, inputs, dtypes, layouts, shapes; Cast, TransData, Variable, Constant and other "
            "plumbing left out)") in out
    assert "identical" not in out and "comparison recap" not in out


def test_ac_without_c_repeats_the_answer_of_the_last_ac_c(checked) -> None:
    ws, out = checked
    again = run_cli("ac", data=ws, env={"COLUMNS": "100"})
    assert again.status == 0, again.out + again.err
    # the same block, from the same files (replay.json beside the CSVs); no report was written this time
    assert _answer(again.out) == _answer(out)[:-2]


def test_a_copied_workspace_answers_with_its_own_fix_files_and_ni_agrees(checked, tmp_path: Path) -> None:
    """The answer, the report and `ni` read one verdict per op the same way: the copy's own fix/ files, and a
    later replay that failed does not hide the verdict an earlier one reached."""
    ws, _out = checked
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, symlinks=True)
    failed = run_cli("replay", "bn2/FusedBatchNormV3", "--python", str(tmp_path / "no-python"), data=copy)
    assert failed.status == 1, failed.out + failed.err
    again = run_cli("ac", data=copy, env={"COLUMNS": "100"})
    block = _answer(again.out)
    assert block[1].startswith("  made at network.py:")
    kernel = next(i for i, line in enumerate(block) if line.startswith("  KERNEL: "))
    todo = next(i for i, line in enumerate(block) if line.startswith("  do: send the reproducer"))
    assert kernel < todo and block[todo + 1] == f"      {copy / 'fix' / 'repro_debug_0_16_bn2_FusedBatchNormV3'}"
    assert f'keep_in_float32(custom_op, "{copy / "fix" / "ops_info.json"}")' in "\n".join(block)
    assert str(ws) + "/" not in again.out.replace(str(copy), "")
    ni = run_cli("ni", "bn2/FusedBatchNormV3", data=copy, env={"COLUMNS": "100"})
    assert "  Replay       KERNEL (debug_0)" in ni.out, ni.out
    assert f"reproducer for the op's vendor: {copy / 'fix' / 'repro_debug_0_16_bn2_FusedBatchNormV3'}" in ni.out


def test_demo_shows_the_answer_of_the_checks_that_ran_when_one_fails(checked, tmp_path: Path) -> None:
    """`ac -c --report` in the demo fails when the report cannot be written: the answer still ends the output."""
    import io

    from precision_tool.config import load_settings
    from precision_tool.errors import CommandFailed
    from precision_tool.render.console import make_console
    from precision_tool.shell.command import Context
    from precision_tool.shell.commands.demo.demo_steps import run_checks
    from precision_tool.shell.table import build_table
    from precision_tool.workspace import Workspace

    ws, _out = checked
    copy = tmp_path / "ws"
    shutil.copytree(ws, copy, symlinks=True)
    shutil.rmtree(copy / "temp" / "report")
    (copy / "temp" / "report").write_text("not a folder")  # the report has nowhere to go
    out = io.StringIO()
    ctx = Context(settings=load_settings(data_dir=str(copy)), workspace=Workspace(copy),
                  console=make_console(file=out, width=100), table=build_table())
    with pytest.raises(CommandFailed, match="demo: `ac -c --report` failed"):
        run_checks(ctx, copy)
    block = _answer(out.getvalue())
    assert block[0].startswith("first divergent op: [16] bn2/FusedBatchNormV3") and block[2].startswith("  KERNEL")
