"""`ni OP` shows what the comparison and the replays found about the op: cosine and max absolute error per
tensor and run of the newest result folder (✗ where vcs marks it), the replay verdict with its fix, the
golden tensors of its inputs, and on a multi-rank workspace the rank rows in 100 columns with the rank that
went wrong first marked. Everything through the one-shot CLI on the demo's real files."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli, run_demo_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

OP = "bn2/FusedBatchNormV3"
ALLREDUCE = "allreduce/fc1_kernel/HcomAllReduce"


def _result_dir(root: Path) -> Path:
    return sorted(p for p in (root / "temp" / "vector_compare").iterdir() if p.is_dir())[-1]


def _csv_cell(path: Path, tensor: str, column: str) -> str:
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    col = rows[0].index(column)
    (row,) = [r for r in rows[1:] if r[rows[0].index("TensorIndex")] == tensor]
    return row[col]


def _section(out: str, title: str) -> list[str]:
    """The lines of one section of an ni block: from its title line to the next section title."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {title}"))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^  [A-Z]", lines[i])), len(lines))
    return lines[start:end]


@pytest.fixture
def bare_copy(demo_workspace: Path, tmp_path: Path) -> Path:
    """The demo workspace without its comparison (and the replay `ac -c` saved in it)."""
    root = tmp_path / "precision_data"
    shutil.copytree(demo_workspace, root, symlinks=True)
    shutil.rmtree(root / "temp" / "vector_compare")
    return root


def test_ni_shows_each_runs_cosine_and_the_kernel_verdict(demo_workspace: Path) -> None:
    result = run_cli("ni", OP, data=demo_workspace)
    assert result.status == 0, result.err
    folder = _result_dir(demo_workspace)
    compared = _section(result.out, "Compared")
    assert compared[0].split() == ["Compared", "newest", "result", "folder", str(folder), "(✗:", "cosine", "≤",
                                   "0.98", "or", "Inf/NaN)"]
    assert compared[1].split() == ["debug_0", "vs", "golden", "debug_0", "vs", "debug_1"]
    # the numbers are the CSVs' own, ✗ where vcs marks them
    golden_csv = next(folder.glob("result_*[0-9].csv"))
    npu_csv = next(folder.glob("result_*_npu_vs_npu.csv"))
    cosine = _csv_cell(golden_csv, f"{OP}:output:0", "CosineSimilarity")
    assert cosine == "0.706158"
    npu_cosine = _csv_cell(npu_csv, "bn2_FusedBatchNormV3:output:0", "CosineSimilarity")
    out0 = next(line for line in compared if line.split()[:1] == ["out0"])
    assert out0.split()[:4] == ["out0", "0.706158", "✗", "1.89318"], out0
    assert out0.split()[4:6] == [npu_cosine, "✗"]
    in0 = next(line for line in compared if line.split()[:1] == ["in0"])
    assert "✗" not in in0 and in0.split()[1] == _csv_cell(golden_csv, f"{OP}:input:0", "CosineSimilarity")
    assert [line.split()[0] for line in compared[3:]] == ["in0", "in1", "in2", "out0", "out1", "out2", "out3", "out4"]
    # the verdict `ac -c` saved in the result folder, and the reproducer it wrote
    replay = _section(result.out, "Replay")
    assert replay[0].split()[:3] == ["Replay", "KERNEL", "(debug_0)"]
    assert "output 0 disagrees with TensorFlow in float32 and in float16" in replay[0]
    repro = demo_workspace / "fix" / "repro_debug_0_16_bn2_FusedBatchNormV3"
    assert repro.is_dir()
    assert replay[1].split() == ["reproducer", "for", "the", "op's", "vendor:", str(repro)]
    assert replay[2].split() == ["from", str(folder / "replay" / "replay.json")]
    # what ni showed before is all still there, after it
    assert result.out.index("  Compared") < result.out.index("  Tensors") < result.out.index("  Files")


def test_an_inputs_golden_tensor_is_shown_as_an_outputs_is(demo_workspace: Path) -> None:
    result = run_cli("ni", OP, data=demo_workspace)
    lines = _section(result.out, "Tensors")
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("input 0 "))
    assert lines[head].endswith("· golden conv2_Conv2D.0 (from conv2/Conv2D:0)"), lines[head]
    (path,) = (demo_workspace / "tf" / "dump").glob("conv2_Conv2D.0.*.npy")
    golden = np.load(path)
    row = lines[head + 2].split()
    assert row[:2] == ["golden", "[8,8,8,24]"]
    assert row[2:5] == [f"{golden.max():.6g}", f"{golden.min():.6g}", f"{golden.mean():.6g}"]
    # a variable's input: the golden of the ReadVariableOp its output stands for
    assert any(line.strip().startswith("input 1 ") and line.endswith("· golden bn2_ReadVariableOp.0 (from bn2/gamma:0)")
               for line in lines)
    files = _section(result.out, "Files")
    assert f"    golden conv2_Conv2D.0 (input 0): {path}" in files


def test_before_any_comparison_ni_says_what_to_run(bare_copy: Path) -> None:
    result = run_cli("ni", OP, data=bare_copy)
    assert result.status == 0, result.err
    compared = _section(result.out, "Compared")
    assert compared == ["  Compared     no comparison yet: `vc` (or `ac -c`) compares the whole network against golden"]
    replay = _section(result.out, "Replay")
    assert replay == [f"  Replay       not replayed yet: `ni -c {OP}` (or `replay {OP}`) replays it on CPU and says "
                      "why it differs"]
    assert "KERNEL" not in result.out and "cosine" not in result.out
    assert "golden conv2_Conv2D.0" in result.out  # the statistics table stays


def test_the_newest_replay_holding_the_op_speaks(demo_workspace: Path, tmp_path: Path) -> None:
    """`replay OP` writes temp/replay/<time>/replay.json: newer than the result folder's, so it is shown."""
    root = tmp_path / "precision_data"
    shutil.copytree(demo_workspace, root, symlinks=True)
    saved = json.loads((_result_dir(root) / "replay" / "replay.json").read_text())
    entry = next(e for e in saved if e["op"] == OP)
    entry.update(verdict="inherited", line="inherited: it computes correctly; its inputs already differ",
                 upstream="[15] conv2/Conv2D (Conv2D)", fixes=[])
    newer = root / "temp" / "replay" / "20991231235959" / "replay.json"
    newer.parent.mkdir(parents=True)
    newer.write_text(json.dumps([entry]))
    later = time.time() + 60
    os.utime(newer, (later, later))
    replay = _section(run_cli("ni", OP, data=root).out, "Replay")
    assert replay[0].split()[:3] == ["Replay", "INHERITED", "(debug_0)"]
    assert replay[0].endswith("it computes correctly; its inputs already differ")
    assert replay[1].split() == ["look", "at", "next:", "[15]", "conv2/Conv2D", "(Conv2D)"]
    assert replay[2].split() == ["from", str(newer)]


def test_unreadable_result_csv_and_replay_json_are_one_line_each(demo_workspace: Path, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    shutil.copytree(demo_workspace, root, symlinks=True)
    folder = _result_dir(root)
    npu_csv = next(folder.glob("result_*_npu_vs_npu.csv"))
    npu_csv.write_text("not,a,result\n1,2,3\n")
    (folder / "replay" / "replay.json").write_text("{cut")
    result = run_cli("ni", OP, data=root)
    assert result.status == 0 and "Traceback" not in result.out + result.err, result.err
    warnings = [line.strip() for line in result.out.splitlines() if "warning:" in line]
    assert len(warnings) == 2, warnings
    assert str(npu_csv) in warnings[0] and "`vc` writes a new comparison" in warnings[0]
    assert str(folder / "replay" / "replay.json") in warnings[1] and f"`ni -c {OP}` replays the op again" in warnings[1]
    compared = _section(result.out, "Compared")
    assert compared[1].strip() == warnings[0]  # said under its section
    assert compared[2].split() == ["debug_0", "vs", "golden"]  # the readable run is still shown
    assert any(line.split()[:3] == ["out0", "0.706158", "✗"] for line in compared)
    assert "not replayed yet" in result.out and "  Tensors" in result.out and "  Files" in result.out


# --- a multi-rank workspace ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rank_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ni_ranks") / "pd"
    proc = run_demo_cli("demo", "--ranks", "4", str(root))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root


def test_rank_rows_fit_100_columns_and_the_first_rank_is_marked(rank_root: Path) -> None:
    from precision_tool.demo.ranks import planted_rank_fault

    faulty, op = planted_rank_fault(4)
    assert (faulty, op) == (3, ALLREDUCE)
    result = run_cli("ni", ALLREDUCE, data=rank_root, env={"COLUMNS": "100"})
    assert result.status == 0, result.err
    compared = _section(result.out, "Compared")
    assert compared[1].split() == ["in0", "out0"]  # many runs, two tensors: a row per run
    number = r"-?\d[\d.e+-]*"
    row = re.compile(rf"^      rank (\d) vs (golden|rank 0) +({number})( ✗)? +{number} +({number})( ✗)? +{number}"
                     r"(  ◀ went wrong first)?$")
    rows = [row.match(line) for line in compared if line.startswith("      rank ")]
    assert len(rows) == 7 and all(rows), compared
    assert all(len(line) <= 100 for line in compared if line.startswith("      "))
    golden = {int(m[1]): m for m in rows if m[2] == "golden"}
    assert sorted(golden) == [0, 1, 2, 3]
    # rank 3's input fails against its golden: the deciding evidence; every rank's output fails
    assert golden[3][3] == "0.629493" and golden[3][4] and golden[3][7]
    assert all(not golden[r][4] and not golden[r][7] for r in (0, 1, 2))
    # every rank holds the one all-reduced output and the one golden sum; its sixth digit follows the CPU's
    # vector width in TensorFlow's MatMul (0.675380 on one machine, 0.675384 on another)
    assert len({golden[r][5] for r in range(4)}) == 1 and all(golden[r][6] for r in range(4))
    assert abs(float(golden[0][5]) - 0.67538) < 5e-5
    assert all(not m[4] and not m[6] and not m[7] for m in rows if m[2] == "rank 0")  # not judged by threshold
    assert f"    rank 3 went wrong first: its first failing tensor is in0 of {ALLREDUCE} (this op)" in compared
    # the statistics rows: one line each at 100 columns, rank 3's input marked
    tensors = _section(result.out, "Tensors")
    stats = re.compile(rf"^      (debug_0 ranks? [\d, -]+|golden rank \d) +\[384,64\]( +{number}){{3}}( +\d+){{3}}"
                       r"(  ◀ first)?$")
    rows = [line for line in tensors[2:] if not re.match(r"^    (input|output) \d", line)]
    assert rows and all(stats.match(line) and len(line) <= 100 for line in rows), rows
    assert [line.split()[:3] for line in rows if line.endswith("◀ first")] == [["debug_0", "rank", "3"]]
    assert any(line.split()[:3] == ["debug_0", "ranks", "0-3"] for line in rows)  # the all-reduced output
    heads = [line for line in tensors if re.match(r"^    input 0 ", line)]
    assert heads[0].endswith("· golden gradients_fc1_MatMul_grad_MatMul_1.0 (from gradients/fc1/MatMul_grad/MatMul_1:0)")
    assert sum(1 for line in rows if line.startswith("      golden rank")) == 8  # each rank's, input and output


def test_first_rank_from_the_leading_rows_is_the_full_summarys(rank_root: Path) -> None:
    """ni reads only up to each rank's first failing op; the rank it names is the one the full summary names."""
    from precision_tool.analysis.compare.compare_runs import result_spec
    from precision_tool.analysis.report.op_results import op_comparison
    from precision_tool.analysis.ranks import overview_of
    from precision_tool.analysis.results.results import read_result_csv, summarize
    from precision_tool.workspace import Workspace

    workspace = Workspace(rank_root)
    folder = _result_dir(rank_root)
    pairs = []
    for path in sorted(folder.glob("result_*_rank?.csv")):
        spec = result_spec(path)
        pairs.append((spec, summarize(read_result_csv(path), 0.98)))
    report = overview_of(pairs, workspace).report
    found = op_comparison(workspace, [ALLREDUCE], 0.98)
    assert found.first_ranks == report.first_ranks == (3,)
    first = next(f for f in report.findings if f.rank == 3).summary.first_failure
    assert found.first_tensor == first.tensor.tensor_index == f"{ALLREDUCE}:input:0"
