"""`ls dump` and `ni` on a run that dumped statistics CSVs (dump_data="stats"), through the real CLI."""

from __future__ import annotations

import csv
import re
from tests.analysis.compare.stats.stats_helpers import stats_dir


def test_ls_dump_lists_a_stats_only_run(shared_stats_workspace, cli):
    root = shared_stats_workspace
    result = cli("ls", "dump", data=root)
    assert result.status == 0, result.err
    assert "no NPU dump files" not in result.out
    assert re.search(r"debug_0: 79 dump file\(s\) \(79 of them statistics CSVs\) in ", result.out)
    assert re.search(r"^ *3 +1 +stats +Conv2D\.conv1_Conv2D\.\d+\.0\.\d+\.csv$", result.out, re.M)
    assert 'stats: a statistics CSV (dump_data="stats")' in result.out
    assert "`pt NAME:output:0`" not in result.out  # nothing to print as a tensor
    filtered = cli("ls", "dump", "-n", "conv1", data=root)
    assert filtered.status == 0 and "Conv2D.conv1_Conv2D" in filtered.out and "MaxPool" not in filtered.out


def test_ls_dump_lists_both_kinds_in_a_mixed_folder(stats_workspace, cli):
    root = stats_workspace(mixed=True)
    result = cli("ls", "dump", data=root)
    assert result.status == 0, result.err
    kinds = re.findall(r"^ *\d+ +\d+ +(stats|tensors) +\S+$", result.out, re.M)
    assert kinds.count("stats") == 40 and kinds.count("tensors") == 39
    assert "`pt NAME:output:0`" in result.out and "stats: a statistics CSV" in result.out


def test_ls_dump_names_an_unreadable_stats_csv(stats_workspace, cli):
    root = stats_workspace()
    bad = next(stats_dir(root).glob("Relu.fc1_Relu.*.csv"))
    bad.write_bytes(b"Input/Output,Index,Max Value\nInput,0,\xff\n")
    result = cli("ls", "dump", data=root)
    assert result.status == 1
    assert "Traceback" not in result.out + result.err
    assert f"{bad}: line 2: not UTF-8 text" in result.out
    assert "ls dump: 1 dump file(s) could not be read" in result.out + result.err


def test_ni_shows_npu_statistics_next_to_the_golden(shared_stats_workspace, cli):
    root = shared_stats_workspace
    result = cli("ni", "pool1/MaxPool", data=root)
    assert result.status == 0, result.err
    path = next(stats_dir(root).glob("MaxPool.pool1_MaxPool.*.csv"))
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    output = next(r for r in rows if r["Input/Output"] == "Output")
    assert "`stats` rows: the NPU's statistics CSV" in result.out
    assert "output 0  DT_FLOAT16 NC1HWC0  (statistics CSV: device layout, padding included)" in result.out
    stats_lines = [line.split() for line in result.out.splitlines() if line.strip().startswith("debug_0 stats")]
    shape = "[" + output["Shape"].replace("x", ",") + "]"
    numbers = [shape, output["Max Value"], output["Min Value"], output["Avg Value"], output["Nan Count"], "0", "-"]
    assert ["debug_0", "stats", *numbers] in stats_lines
    lines = result.out.splitlines()
    after = next(i for i, line in enumerate(lines) if line.strip().startswith("output 0 "))  # inputs have goldens too
    golden_line = next(line for line in lines[after:] if line.strip().startswith("golden"))
    assert "[8,8,8,16]" in golden_line
    assert f"debug_0 stats: {path}" in result.out


def test_ni_names_an_unreadable_stats_csv(stats_workspace, cli):
    root = stats_workspace()
    bad = next(stats_dir(root).glob("MaxPool.pool1_MaxPool.*.csv"))
    bad.write_text("")
    result = cli("ni", "pool1/MaxPool", data=root)
    assert "Traceback" not in result.out + result.err
    assert "is empty; a statistics CSV starts with the header" in result.out
    assert f"debug_0 stats: {bad}" in result.out
    assert result.status == 0  # the op's graph facts are the result; the bad file is named in it


def test_stats_rows_have_no_zero_count(shared_stats_workspace, cli):
    root = shared_stats_workspace
    result = cli("ni", "conv1/Conv2D", data=root)
    assert result.status == 0, result.err
    rows = [line for line in result.out.splitlines() if line.strip().startswith("debug_0 stats  [")]
    assert len(rows) == 4  # three inputs, one output
    assert all(line.rstrip().endswith(" -") for line in rows)
