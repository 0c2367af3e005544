"""Fixes from the UX review of vc/vcs/cp, each driven through the one-shot CLI on data written by the
project's own writers."""

from __future__ import annotations

from pathlib import Path


def test_failed_vc_leaves_no_result_folder_and_vcs_skips_broken_ones(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    data = net.root
    assert cli("vc", "-j", "1", data=data).status == 0
    results = data / "temp" / "vector_compare"
    good = sorted(results.iterdir())
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("garbage\n")
    for args in (("-lt", str(tmp_path / "nonexistent")), ("-g", str(garbage))):
        failed = cli("vc", *args, data=data)
        assert failed.status == 1, failed.out + failed.err
        assert sorted(results.iterdir()) == good, args
    # a folder left by an older version (run.json only) is skipped with a warning, not fatal
    broken = results / "29990101000000"
    broken.mkdir()
    (broken / "run.json").write_text('{"runs": []}')
    for command in (("vcs",), ("ac", "-l", "1")):
        shown = cli(*command, data=data)
        assert shown.status == 0, shown.out + shown.err
        text = shown.out + shown.err
        assert "skipped 1 newer result folder" in text and "29990101000000" in text
        assert "first divergent op" in text


def test_vc_lt_inside_the_workspace_uses_the_runs_build_graph(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    import shutil

    net = make_net(tmp_path / "precision_data")
    data = net.root
    plain = cli("vc", "-j", "1", data=data)
    assert plain.status == 0, plain.out + plain.err
    verdict = next(line for line in plain.out.splitlines() if line.startswith("first divergent op:"))
    dump_time = data / "npu" / "debug_0" / "dump" / "20240101000000"
    explicit = cli("vc", "-j", "1", "-lt", str(dump_time), "-rt", str(net.golden_dir), data=data)
    assert explicit.status == 0, explicit.out + explicit.err
    text = explicit.out + explicit.err
    assert "dump of npu/debug_0: matching through its Build graph" in text and net.graph_txt.name in text
    assert verdict in explicit.out
    # outside the workspace there is no graph: name-only, and no op is called the first divergent one
    outside = tmp_path / "outside"
    shutil.copytree(dump_time, outside)
    by_name = cli("vc", "-j", "1", "-lt", str(outside), "-rt", str(net.golden_dir), data=data)
    assert by_name.status == 0, by_name.out + by_name.err
    assert "first divergent op:" not in by_name.out and "name-only matching" in by_name.out
    later = cli("vcs", data=data)
    assert "first divergent op:" not in later.out and "name-only matching" in later.out


def test_vc_g_takes_a_bare_graph_file_name_and_refuses_a_folder(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    data = net.root
    bare = cli("vc", "-j", "1", "-g", net.graph_txt.name, data=data)
    assert bare.status == 0, bare.out + bare.err
    assert f"using {net.graph_txt}" in bare.out + bare.err
    assert "first divergent op: [3] relu1/Relu" in bare.out
    folder = cli("vc", "-g", str(tmp_path), data=data)
    assert folder.status == 1 and "is a folder" in folder.out + folder.err
    missing = cli("vc", "-g", "nothere_Build.txt", data=data)
    assert missing.status == 1 and "does not exist" in missing.out + missing.err
    assert str(data / "npu" / "debug_0" / "graph") in missing.out + missing.err


def test_unreadable_files_are_named_and_vc_exits_1(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data", corrupt=True)
    data = net.root
    golden = sorted(net.golden_dir.glob("relu1_Relu.0.*.npy"))[-1]
    golden.write_bytes(golden.read_bytes()[:100])
    for workers in ("1", "2"):
        result = cli("vc", "-j", workers, data=data)
        assert result.status == 1, result.out + result.err
        text = result.out + result.err
        assert f"could not read {net.corrupt}" in text
        assert f"could not read {golden}" in text
        assert "2 file(s) could not be read" in text and "CompareFailReason" in text
        assert "comparison runs" in text  # the results are still shown
    checked = cli("ac", "-c", data=data)
    assert f"could not read {golden}" in checked.out + checked.err


def test_resume_works_from_another_folder(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    import json

    net = make_net(tmp_path / "precision_data")
    first = cli("vc", "-j", "1", "-lt", "precision_data/npu/debug_0/dump/20240101000000", "-rt",
                "precision_data/tf/dump", "-g", "precision_data/npu/debug_0/graph/" + net.graph_txt.name,
                data=Path("precision_data"), cwd=tmp_path)
    assert first.status == 0, first.out + first.err
    folder = next((net.root / "temp" / "vector_compare").iterdir())
    run = json.loads((folder / "run.json").read_text())["runs"][0]
    assert all(Path(run[k]).is_absolute() for k in ("npu_dir", "golden_dir", "graph_path"))
    whole = next(folder.glob("result_*.csv"))
    expected = whole.read_text()
    whole.unlink()  # as if the run had been stopped before writing
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = cli("vc", "--resume", "-j", "1", data=net.root, cwd=elsewhere)
    assert resumed.status == 0, resumed.out + resumed.err
    assert whole.read_text() == expected
    # an older run.json with paths relative to the folder holding precision_data still resumes
    run.update(npu_dir="precision_data/npu/debug_0/dump/20240101000000", golden_dir="precision_data/tf/dump",
               graph_path="precision_data/npu/debug_0/graph/" + net.graph_txt.name)
    (folder / "run.json").write_text(json.dumps({"runs": [run]}))
    whole.unlink()
    old = cli("vc", "--resume", "-j", "1", data=net.root, cwd=elsewhere)
    assert old.status == 0, old.out + old.err
    assert whole.read_text() == expected


def test_cp_takes_bare_dump_names_and_says_no_such_file(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.shell.command import CompletionRequest
    from precision_tool.shell.table import build_table
    from precision_tool.workspace import Workspace

    net = make_net(tmp_path / "precision_data")
    dump = sorted(net.dump_dir.glob("Relu.relu1_Relu.*"))[0]
    golden = sorted(net.golden_dir.glob("relu1_Relu.0.*.npy"))[-1]
    by_name = cli("cp", f"{dump.name}:output:0", golden.name, data=net.root, cwd=tmp_path)
    assert by_name.status == 0, by_name.out + by_name.err
    assert f"{dump.name}:output:0" in by_name.out and "CosineSimilarity" in by_name.out
    missing = cli("cp", f"{dump.name}:output:0", str(tmp_path / "nonexist.npy"), data=net.root)
    assert missing.status == 1 and "no such file" in missing.out + missing.err
    assert "neither a file" not in missing.out + missing.err
    command = build_table().get("cp")
    workspace = Workspace(net.root)
    names = command.completer(CompletionRequest(["cp"], "Relu.relu1", None, workspace))
    assert dump.name in names
    tensors = command.completer(CompletionRequest(["cp", dump.name + ":output:0"], dump.name + ":", None, workspace))
    assert f"{dump.name}:output:0" in tensors


def test_vc_and_vcs_print_result_paths_whole_at_any_width(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path / "a_rather_long_folder_name_for_the_workspace" / "and_another_level_below_it"
    net = make_net(deep / "precision_data")
    ran = cli("vc", "-j", "1", data=net.root, env={"COLUMNS": "60"})
    assert ran.status == 0, ran.out + ran.err
    csv_path = str(next((net.root / "temp" / "vector_compare").glob("*/result_*.csv")))
    lines = ran.out.splitlines()
    run_line = next(line for line in lines if line.strip().startswith(f"{'ge_default'}") and " outputs: " in line)
    assert run_line.endswith(csv_path) and "[3] relu1/Relu" in run_line
    assert sum(csv_path in line for line in lines) == 2  # the summary title and the run line
    shown = cli("vcs", data=net.root, env={"COLUMNS": "60"})
    assert csv_path in shown.out.splitlines()[0]


def test_vcs_warns_about_corrupt_csv_values_and_header_only_files(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    assert cli("vc", "-j", "1", data=net.root).status == 0
    good = next((net.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    import csv

    with open(good, newline="") as handle:
        lines = handle.read().split("\r\n")

    records = list(csv.reader(lines))
    relu = next(i for i, record in enumerate(records) if "relu1/Relu:output:0" in record)
    value = records[relu][records[0].index("CosineSimilarity")]
    assert float(value) < 0.9 and lines[relu].count(value) == 1
    cases = {
        "bad.csv": ("\r\n".join(lines[:relu] + [lines[relu].replace(value, "abc")] + lines[relu + 1:]), f"line {relu + 1}: CosineSimilarity is 'abc'"),
        "cut.csv": ("\r\n".join(lines[:relu]) + "\r\n" + lines[relu][:40], f"line {relu + 1}: has "),
        "three.csv": ("\r\n".join(lines[:relu] + ["1,2,3"] + lines[relu:]), f"line {relu + 1}: has 3 fields"),
    }
    for name, (text, expected) in cases.items():
        target = tmp_path / name
        target.write_text(text, newline="")
        shown = cli("vcs", "-f", str(target), data=net.root)
        assert shown.status == 0, shown.out + shown.err
        assert f"{target}: {expected}" in shown.out, (name, shown.out)
        assert "first divergent op:" not in shown.out and "meets the threshold" not in shown.out
    header_only = tmp_path / "header.csv"
    header_only.write_text(lines[0] + "\r\n", newline="")
    shown = cli("vcs", "-f", str(header_only), data=net.root)
    assert "holds no rows" in shown.out and "meets the threshold" not in shown.out


def test_msaccucmp_npu_vs_npu_reads_an_nhwc_original_shape_as_nchw(make_case, cli, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    """Why `vc --backend cann` differs from ours on the demo's bn2 (docs/comparison.md, NPU vs NPU): msaccucmp turns
    NC1HWC0 into NCHW and slices it to the 4-D original shape read as NCHW, even when it is NHWC; ours
    compares the whole tensors (cosine computed here directly from the two dumps)."""
    import numpy as np

    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, _, _, read_rows = make_case
    case = make()
    right = case.data / "npu" / "debug_1" / "dump" / "20240101000001" / "0" / "g" / "1" / "0"
    right.mkdir(parents=True)
    rng = np.random.default_rng(3)
    nhwc = rng.standard_normal((2, 4, 4, 24)).astype(np.float16)
    other = (nhwc + rng.standard_normal(nhwc.shape).astype(np.float16)).astype(np.float16)
    devices = []
    for array, folder in ((nhwc, case.dump_dir), (other, right)):
        case.clock = 1704067200000000
        device = to_device(array, "NHWC", "NC1HWC0")
        devices.append(device.astype(np.float32))
        case.dump("BatchNorm", "bn2/FusedBatchNormV3", [], [TensorSpec(device, Format.NC1HWC0, (2, 4, 4, 24))],
                  folder=folder)

    def cosine(x: np.ndarray, y: np.ndarray) -> float:
        # In float64 and without BLAS: the tools' 6-digit strings are checked to within one unit of the
        # last digit, since which BLAS kernel a CPU gets changes the float32 rounding of norm().
        x, y = x.reshape(-1).astype(np.float64), y.reshape(-1).astype(np.float64)
        return float(np.sum(x * y) / np.sqrt(np.sum(x * x) * np.sum(y * y)))

    whole = cosine(*devices)
    # msaccucmp: NC1HWC0 → NCHW (2, 32, 4, 4), sliced to [2,4,4,24] read as N, C, H, W
    sliced = [d.transpose(0, 1, 4, 2, 3).reshape(2, 32, 4, 4)[:, :4, :4, :4] for d in devices]
    assert abs(cosine(*sliced) - whole) > 1e-3
    config = case.root / "config.py"
    config.write_text(f"CMD_ROOT_PATH = {str(reference_tool.parent)!r}\n")
    for backend, expected in (("native", whole), ("cann", cosine(*sliced))):
        ran = cli("vc", "--backend", backend, "-lt", str(case.dump_dir), "-rt", str(right), data=case.data,
                  env={"PRECISION_TOOL_CONFIG": str(config)})
        assert ran.status == 0, ran.out + ran.err
        csv_path = sorted((case.data / "temp" / "vector_compare").glob("*/result_*.csv"))[-1]
        rows = read_rows(csv_path)
        row = next(r for r in rows if r[rows[0].index("TensorIndex")] == "bn2_FusedBatchNormV3:output:0")
        assert abs(float(row[rows[0].index("CosineSimilarity")]) - expected) <= 1.5e-6, backend
