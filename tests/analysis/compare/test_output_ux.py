"""What the comparison commands print (issue 10): one name and index per op everywhere, `ac`'s answer,
panels of one width, `vcs -f` on a folder of runs, `cp`'s tolerances, and the list of unreadable files.
Driven through the one-shot CLI on the demo workspace and on networks written by the project's writers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
PANEL_TITLE = re.compile(r"╭─ \[(\d+)\] (\S+) ─")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A demo workspace (two NPU runs, Build graphs, golden tensors) of this module's own."""
    root = tmp_path_factory.mktemp("cmp_demo") / "precision_data"
    built = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "demo", str(root), "--no-check"],
                           capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    return root


def _ac(cli, demo: Path, columns: int = 200):  # type: ignore[no-untyped-def]
    return cli("ac", "-c", "-l", "2", data=demo, env={"COLUMNS": str(columns)})


def test_ac_names_each_op_once_and_ends_with_the_answer(demo: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ran = _ac(cli, demo)
    assert ran.status == 0, ran.out + ran.err
    lines = ran.out.rstrip("\n").splitlines()
    # The answer is last: the suspects with their verdicts, a line per result (verdict and counts), then the
    # result folder whole on a line of its own.
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"answer ─+", line))
    answer = lines[start + 1:]
    newest = sorted((demo / "temp" / "vector_compare").iterdir())[-1]  # other tests ran `ac -c` here too
    assert len(list(newest.glob("result_*.csv"))) == 2
    assert answer[-2:] == ["results (`vcs -l N` lists more abnormal ops):", f"  {newest}"]
    verdicts = [line for line in answer if " vs " in line and "first divergent op [" in line]
    assert len(verdicts) == 2
    for line in verdicts:
        assert "first divergent op [16] bn2/FusedBatchNormV3;" in line
        # the fc2 weight gradient's float16 overflow puts inf into both runs
        assert re.search(r"\d+ ops \(\d+ abnormal\) · \d+ outputs: \d+ compared, \d+ abnormal \(\d+ NaN/Inf\), "
                         r"\d+ not compared$", line)
    # NPU vs golden and NPU vs NPU name the planted op alike: its Build-graph id and graph name, never the
    # dump-file spelling with the NPU-vs-NPU run's own counter.
    titles = PANEL_TITLE.findall(ran.out)
    assert titles.count(("16", "bn2/FusedBatchNormV3")) == 1, titles  # ac shows the NPU-vs-NPU run without panels
    assert "first divergent op [16] bn2/FusedBatchNormV3 (`vcs -f` on the CSV shows its ops)" in ran.out
    # (the replay's reproducer folder is a file name: its safe spelling is a path, not an op name)
    assert "bn2_FusedBatchNormV3" not in re.sub(r"\S*/fix/repro_\S*", "", ran.out)
    assert ran.out.count("first divergent op: [16] bn2/FusedBatchNormV3 (BatchNorm;") == 1
    vcs = cli("vcs", data=demo)  # vcs shows both runs' panels
    assert PANEL_TITLE.findall(vcs.out).count(("16", "bn2/FusedBatchNormV3")) == 2
    # Every name a panel shows is taken by `ni`, which shows the same number as the op's Id.
    for index, name in sorted(set(titles)):
        shown = cli("ni", name, data=demo)
        assert shown.status == 0, shown.out + shown.err
        assert re.search(rf"Id\s+{index}\b", shown.out), shown.out


def test_panels_share_one_width_and_tensor_pairs_never_split(demo: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert _ac(cli, demo).status == 0
    for columns in (80, 120):
        shown = cli("vcs", "-l", "3", data=demo, env={"COLUMNS": str(columns)})
        assert shown.status == 0, shown.out + shown.err
        tops = [line for line in shown.out.splitlines() if line.startswith("╭")]
        assert len(tops) == 6 and len({len(line) for line in tops}) == 1, tops  # 3 per result
        for line in shown.out.splitlines():
            # a label (out4) never ends a line without its value
            assert not re.search(r"\b(in|out)\d+\s*│$", line), line
            for label, value in re.findall(r"\b(in|out)\d+ (\S+)", line):
                assert re.fullmatch(r"\d\.\d{6}|NaN|nan", value), line
        # bn2's five outputs: at 80 columns out4 wraps to a line of its own, whole; at 120 they fit one line
        one_line = re.search(r"out0 0\.\d{6}\s+out1 1\.000000\s+out2 1\.000000\s+out3 1\.000000\s+out4 1\.000000",
                             shown.out)
        wrapped = re.search(r"out3 1\.000000\s+│\n│\s+out4 1\.000000", shown.out)
        assert (wrapped and not one_line) if columns == 80 else (one_line and not wrapped), shown.out


def test_vcs_on_the_folder_of_runs_takes_the_newest(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    for _ in range(2):
        assert cli("vc", "-j", "1", data=net.root).status == 0
    runs = sorted((net.root / "temp" / "vector_compare").iterdir())
    assert len(runs) == 2
    shown = cli("vcs", "-f", str(net.root / "temp" / "vector_compare"), data=net.root)
    assert shown.status == 0, shown.out + shown.err
    assert f"showing the newest of 2 result folder(s) (`vcs -f` on another picks it): {runs[-1]}\n" in shown.out
    assert str(runs[-1] / f"result_{runs[-1].name}.csv") in shown.out
    assert str(runs[0] / "result_") not in shown.out
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = cli("vcs", "-f", str(empty), data=net.root)
    assert refused.status == 1 and f"no result CSVs (result_*.csv) in {empty}" in refused.out + refused.err


def test_every_unreadable_file_is_listed_in_the_result_folder(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data", corrupt=True)
    golden = sorted(net.golden_dir.glob("relu1_Relu.0.*.npy"))[-1]
    golden.write_bytes(golden.read_bytes()[:100])
    ran = cli("vc", "-j", "1", data=net.root)
    assert ran.status == 1, ran.out + ran.err
    (folder,) = (net.root / "temp" / "vector_compare").iterdir()
    listed = folder / "unreadable_files.txt"
    lines = (ran.out + ran.err).splitlines()
    assert lines[lines.index("the whole list (file and reason):") + 1] == str(listed)
    rows = dict(line.split("\t") for line in listed.read_text().splitlines())
    assert set(rows) == {str(net.corrupt), str(golden)}
    assert "the file is truncated" in rows[str(golden)] and all(rows.values())


def _npy(folder: Path, name: str, array: np.ndarray) -> str:
    path = folder / name
    np.save(path, array)
    return str(path)


def test_cp_tolerances_follow_the_dtype_and_p_counts_the_worst_rows(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    relu = next(p for p in net.dump_dir.iterdir() if ".relu1_Relu." in p.name)
    golden = next(p for p in net.golden_dir.iterdir() if p.name.startswith("relu1_Relu.0."))
    softmax = next(p for p in net.dump_dir.iterdir() if ".out_Softmax." in p.name)
    golden_softmax = next(p for p in net.golden_dir.iterdir() if p.name.startswith("out_Softmax.0."))
    half = cli("cp", f"{relu.name}:output:0", golden.name, data=net.root)
    assert half.status == 0, half.out + half.err
    assert "tolerances for float16: rtol 0.001, atol 0.001 (-rl/-al override)" in half.out
    bf16 = cli("cp", f"{softmax.name}:output:0", golden_softmax.name, data=net.root)
    assert "tolerances for bfloat16: rtol 0.01, atol 0.01" in bf16.out
    assert re.search(r"^A\s+bfloat16 \[1,32\]\s+" + re.escape(f"{softmax.name}:output:0") + "$", bf16.out, re.M)
    # float32 on both sides: numpy's defaults; -rl/-al override
    y = np.linspace(-1, 1, 100, dtype=np.float32)
    far = y.copy()
    far[50] += 1  # the only error
    a, b = _npy(tmp_path, "a.npy", far), _npy(tmp_path, "b.npy", y)
    single = cli("cp", a, b, "-p", "3", data=net.root)
    assert single.status == 0, single.out + single.err
    assert "tolerances for float32: rtol 1e-05, atol 1e-08 (-rl/-al override)" in single.out
    assert "1 of 100 elements (1.0000%) have |A-B| > atol + rtol·|B|" in single.out
    assert re.search(r"^first error\s+\[50\]\s*$", single.out, re.M), single.out
    # one table, of the worst 3 (-p 3): the error first, then the two elements that differ least but most
    assert single.out.count("worst 3 of 100 elements") == 1 and "first items" not in single.out
    rows = re.findall(r"^ *\[(\d+)\] │.*│ (yes|-) *$", single.out, re.M)
    assert [row[1] for row in rows] == ["yes", "-", "-"] and rows[0][0] == "50", single.out
    given = cli("cp", a, b, "-al", "2", "-rl", "0.5", data=net.root)
    assert "tolerances from -rl/-al: rtol 0.5, atol 2" in given.out and re.search(r"^allclose\s+True", given.out, re.M)
    one_given = cli("cp", a, b, "-rl", "0.5", data=net.root)
    assert "tolerances: rtol 0.5 (-rl), atol 1e-08 (float32's default)" in one_given.out
    # every element an error: -p 4 rows, each marked
    shifted = _npy(tmp_path, "c.npy", y + 1)
    everything = cli("cp", shifted, b, "-p", "4", data=net.root)
    assert everything.out.count("worst 4 of 100 elements") == 1
    assert len(re.findall(r"│ yes\s*$", everything.out, re.M)) == 4
    assert re.search(r"^first error\s+\[0\]\s*$", everything.out, re.M)
    same = cli("cp", b, b, data=net.root)  # no error: no `first error` line, the rows still shown
    assert re.search(r"^allclose\s+True", same.out, re.M) and "first error" not in same.out
    assert "worst 20 of 100 elements" in same.out


def test_cp_shows_the_worst_elements_at_their_index_in_the_shape(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    rng = np.random.default_rng(7)
    y = rng.standard_normal((4, 3, 8, 16)).astype(np.float32)
    x = y + np.float32(1e-3) * rng.standard_normal(y.shape).astype(np.float32)
    x[3, 0, 7, 12] = y[3, 0, 7, 12] + 5  # the largest difference, planted deep in the tensor
    x[1, 2, 0, 9] = y[1, 2, 0, 9] - 2  # the second
    x[0, 1, 1, 1], y[2, 2, 2, 2] = np.nan, np.inf  # NaN/Inf mismatches come before any finite difference
    a, b = _npy(tmp_path, "a.npy", x), _npy(tmp_path, "b.npy", y)
    ran = cli("cp", a, b, "-p", "5", "-al", "0.01", data=net.root, env={"COLUMNS": "80"})  # the noise passes
    assert ran.status == 0, ran.out + ran.err
    assert "worst 5 of 1536 elements, by |A-B| (NaN/Inf first)" in ran.out, ran.out
    rows = re.findall(r"^ *(\[[\d,]+\]) │ +(\S+) │ +(\S+) │ +(\S+) │ +(\S+) │ (yes|-)", ran.out, re.M)
    assert [row[0] for row in rows[:4]] == ["[0,1,1,1]", "[2,2,2,2]", "[3,0,7,12]", "[1,2,0,9]"], ran.out
    assert rows[0][1] == "nan" and rows[1][2] == "inf" and rows[0][3] == rows[1][3] == "inf"
    assert float(rows[2][3]) == pytest.approx(5, rel=1e-5) and float(rows[3][3]) == pytest.approx(2, rel=1e-5)
    assert float(rows[2][4]) == pytest.approx(5 / abs(float(y[3, 0, 7, 12])), rel=1e-4)
    assert [row[5] for row in rows] == ["yes"] * 4 + ["-"]  # the fifth: the largest noise, within -al
    assert re.search(r"^first error\s+\[0,1,1,1\]", ran.out, re.M)


def test_the_worst_elements_are_found_chunk_by_chunk_as_a_full_sort_finds_them() -> None:
    from precision_tool.analysis.compare.pair_compare import worst_elements

    rng = np.random.default_rng(3)
    noisy = rng.standard_normal(10_000)
    # exact eighths: thousands of ties in |A-B|, and in |A-B|/|B| too (then the lower index wins)
    dyadic = rng.integers(1, 8, 10_000) / 4 * rng.choice([-1, 1], 10_000)
    for y, x in ((noisy, noisy + np.round(rng.standard_normal(10_000), 1)),
                 (dyadic, dyadic + rng.integers(-3, 4, 10_000) / 8)):
        x[rng.choice(y.size, 30, replace=False)] = np.nan
        y[rng.choice(y.size, 30, replace=False)] = np.inf
        x[:500] = y[:500]  # a run of equal elements (NaN = NaN and inf = inf are no mismatch)
        with np.errstate(all="ignore"):
            diff = np.abs(x - y)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            primary = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
            secondary = np.where(primary == 0, 0.0, primary / np.abs(y))
            secondary[np.isnan(secondary)] = np.inf
        bad = ~np.isclose(x, y, rtol=1e-3, atol=1e-3)
        order = np.lexsort((np.arange(y.size), -secondary, -primary))  # the whole tensor sorted, in memory
        for count in (1, 7, 60, 20_000):
            for chunk in (13, 1000, 1 << 20):
                errors, first, worst = worst_elements(x, y, count, 1e-3, 1e-3, chunk=chunk)
                assert errors == int(bad.sum()) and first == int(np.flatnonzero(bad)[0])
                assert [i for i, *_ in worst] == order[:count].tolist(), (count, chunk)
                assert [bad_ for *_, bad_ in worst] == bad[order[:count]].tolist()


def test_ops_are_numbered_by_their_graph_id_not_the_csv_counter(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    import csv
    import dataclasses
    import shutil

    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_text

    net = make_net(tmp_path / "precision_data")
    model = load_graph(net.graph_txt)
    for graph in model.graphs:
        graph.ops[:] = [dataclasses.replace(op, id=op.id + 100) for op in graph.ops]
    write_graph_text(model, net.graph_txt)
    shutil.copytree(net.root / "npu" / "debug_0", net.root / "npu" / "debug_1")
    ran = cli("vc", "-j", "1", data=net.root)
    assert ran.status == 0, ran.out + ran.err
    # every panel, NPU vs golden and NPU vs NPU (whose CSV spells nan_Op), shows the graph's id and name
    assert ran.out.count("first divergent op: [103] relu1/Relu (Relu;") == 1
    assert "first divergent op [103] relu1/Relu;" in ran.out
    titles = PANEL_TITLE.findall(ran.out)
    assert ("112", "nan/Op") in titles, titles  # the NPU-vs-NPU panel (the runs differ only there)
    assert all(int(index) >= 100 for index, _ in titles) and "nan_Op" not in ran.out
    (result,) = (net.root / "temp" / "vector_compare").glob("*/result_*[0-9].csv")
    with open(result, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["Index"] for r in rows if r["TensorIndex"].startswith("relu1/Relu:")} == {"3"}  # the CSV is msaccucmp's
    shown = cli("ni", "relu1/Relu", data=net.root)
    assert re.search(r"Id\s+103\b", shown.out), shown.out


def test_cp_takes_op_and_tf_names_and_the_graphs_layout(demo: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """conv1's fused output NC1HWC0 [8,1,16,16,16] reads as NCHW and as NHWC alike ([8,16,16,16]); the
    Build graph says NHWC, and then it equals the golden conv1/Relu up to float16 rounding."""
    ran = cli("cp", "conv1/Conv2D:output:0", "conv1/Relu:0", data=demo)
    assert ran.status == 0, ran.out + ran.err
    assert "converted to NHWC [8,16,16,16] (the Build graph's origin layout" in ran.out
    assert re.search(r"allclose\s+True", ran.out) and re.search(r"cosine\s+1\.000000", ran.out), ran.out
    assert "conv1/Conv2D:output:0 is output:0 of Conv2D.conv1_Conv2D." in ran.out
    assert "conv1/Relu:0 is the golden conv1_Relu.0." in ran.out
    # A whole dump file stands for its output 0 (said), read in the graph's layout too.
    dump = next(p for p in (demo / "npu" / "debug_0" / "dump").rglob("Conv2D.conv1_Conv2D.*"))
    whole = cli("cp", dump.name, "conv1/Relu:0", data=demo)
    assert f"{dump.name} is a dump file: comparing its output:0" in whole.out, whole.out + whole.err
    assert re.search(r"cosine\s+1\.000000", whole.out), whole.out
    # The dump-file spelling of the op, and an op that has no dump, say what they are in one line.
    assert cli("cp", "conv1_Conv2D:output:0", "conv1/Relu:0", data=demo).status == 0
    missing = cli("cp", "nothing/here:output:0", "conv1/Relu:0", data=demo)
    assert missing.status == 1 and missing.out.count("\n") + missing.err.count("\n") == 1, missing.out + missing.err


def test_a_copied_workspace_names_ops_as_the_original(demo: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """run.json holds absolute paths; in a copy of the workspace (a colleague's, another machine) the
    results still name ops by the copy's own Build graph, and an interrupted run resumes in the copy."""
    import shutil

    assert _ac(cli, demo).status == 0
    copy = tmp_path / "elsewhere" / "precision_data"
    shutil.copytree(demo, copy)
    shown = cli("vcs", "-l", "1", data=copy)
    assert shown.status == 0, shown.out + shown.err
    assert PANEL_TITLE.findall(shown.out).count(("16", "bn2/FusedBatchNormV3")) == 2, shown.out
    assert "bn2_FusedBatchNormV3" not in shown.out


def test_relocate_maps_another_copys_paths_into_this_workspace(tmp_path: Path) -> None:
    from precision_tool.workspace import Workspace

    here = tmp_path / "b" / "precision_data"
    (here / "npu" / "debug_0" / "dump" / "20240101").mkdir(parents=True)
    ws = Workspace(here)
    elsewhere = tmp_path / "a" / "precision_data" / "npu" / "debug_0" / "dump" / "20240101"
    assert ws.relocate(elsewhere) == here / "npu" / "debug_0" / "dump" / "20240101"
    assert ws.relocate(here / "npu") == here / "npu"  # already here
    outside = tmp_path / "dumps" / "20240101"
    assert ws.relocate(outside) == outside  # nothing of it here: unchanged
