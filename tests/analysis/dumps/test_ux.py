"""Fixes from the UX review of `pt`, `ls dump` and `dc`, driven through the one-shot CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def test_pt_refuses_non_numeric_npy_in_one_line(cli, tmp_path: Path) -> None:
    cases = {
        "s.npy": (np.array(["a", "b"]), "dtype <U1 is not numeric"),
        "rec.npy": (np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]), "structured (record) type, not numeric"),
        "when.npy": (np.array(["2020-01-01"], dtype="datetime64[D]"), "dtype datetime64[D] is not numeric"),
        "b.npy": (np.array([b"ab"]), "dtype |S2 is not numeric"),
    }
    for name, (array, problem) in cases.items():
        path = tmp_path / name
        np.save(path, array)
        result = cli("pt", str(path), data=tmp_path)
        assert result.status == 1, result.out + result.err
        lines = (result.out + result.err).strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"{path}: ") and problem in lines[0] and "pt shows numeric tensors" in lines[0]
        assert "Traceback" not in result.err and "unexpected" not in result.err


def test_pt_complex_says_the_numbers_are_magnitudes(cli, tmp_path: Path) -> None:
    path = tmp_path / "c.npy"
    np.save(path, np.array([1 + 2j, 3 - 4j]))
    result = cli("pt", str(path), data=tmp_path)
    assert result.status == 0, result.err
    assert "max |x|" in result.out and "min |x|" in result.out and "mean |x|" in result.out
    assert "magnitudes" in result.out
    assert "5" in result.out.split("max |x|")[1].splitlines()[0]


def test_pt_on_a_folder_says_it_is_a_folder_and_what_to_give(cli, tmp_path: Path, conv_dump) -> None:
    folder = tmp_path / "decoded"
    folder.mkdir()
    expected = f"pt: {folder} is a folder that holds no dump nor .npy file; pt prints one tensor (a .npy file or " \
               "DUMPFILE:output:N)"
    for content, expected in (
        (None, expected),
        ("x.npy", f"pt: {folder} is a folder; pt prints one tensor: name one .npy file in it"),
        ("dump", f"pt: {folder} is a folder; pt prints one tensor (a .npy file or DUMPFILE:output:N). To decode "
                 f"the dumps in a folder: dc {folder}"),
    ):
        if content == "x.npy":
            np.save(folder / content, np.zeros(2))
        elif content == "dump":
            conv_dump(folder, "net/conv1")
        result = cli("pt", str(folder), data=tmp_path)
        assert result.status == 1 and (result.out + result.err).strip() == expected, result.out + result.err


LONG_OP = "model/block_with_a_very_long_scope_name/GradientDescent_update_kernel_ResourceApplyGradientDescent"


def _listing_workspace(conv_dump, raw_dump, tmp_path: Path) -> tuple[Path, Path]:
    from precision_tool.formats.npu.npu_dump import dump_file_name

    root = tmp_path / "precision_data"
    folder = root / "npu/debug_0/dump/20240613143502/0/ge_default_20240613143502_1/1/0"
    folder.mkdir(parents=True)
    conv_dump(folder, "net/conv1", task_id=1, timestamp_us=1_718_260_502_000_001)
    conv_dump(folder, LONG_OP, task_id=2, timestamp_us=1_718_260_502_000_002, op_type="ApplyGradientDescent")
    bad = raw_dump(folder / dump_file_name("Conv2D", "net/broken_" + "x" * 60, 3, 1, 1_718_260_502_000_003),
                   header_length=1 << 40)
    return root, bad


def test_ls_dump_keeps_every_number_and_name_whole_and_fails_on_unreadable(cli, conv_dump, raw_dump,
                                                                            tmp_path: Path) -> None:
    from precision_tool.errors import FormatError
    from precision_tool.formats.npu.npu_dump import read_dump_header

    root, bad = _listing_workspace(conv_dump, raw_dump, tmp_path)
    try:
        read_dump_header(bad)
        raise AssertionError("the bad dump was read")
    except FormatError as exc:
        reason = exc.problem
    names = sorted(p.name for p in bad.parent.iterdir())
    for columns in ("44", "80", "120", "200"):
        result = cli("ls", "dump", data=root, env={"COLUMNS": columns})
        assert result.status == 1, result.out + result.err
        lines = result.out.splitlines()
        assert lines[0] == f"debug_0: 3 dump file(s) in {bad.parents[4]}", lines[0]
        assert lines[1].split()[:3] == ["in", "out", "dump"], lines[1]
        # One line per dump in a pipe (at any COLUMNS), in time order: both counts and the file name, none of
        # them cut.
        rows = [line.split() for line in lines[2:5]]
        assert [row[:2] for row in rows] == [["2", "1"], ["2", "1"], ["?", "?"]]
        assert sorted(row[2] for row in rows) == names and all(len(row) == 3 for row in rows), result.out
        # The unreadable file is listed by its full path with its reason, and the command fails.
        assert f"{bad}: {reason}" in lines, (columns, result.out)
        assert lines[-1].startswith("ls dump: 1 dump file(s) could not be read")


def _hwcn_weight_workspace(tmp_path: Path, *, with_graph: bool = True) -> tuple[Path, Path, np.ndarray]:
    """A workspace with one Conv2D dump whose weight (HWCN [3,3,3,16] as TF keeps it) is FRACTAL_Z on the
    device, and (optionally) the run's Build graph naming origin_format HWCN for that input."""
    from precision_tool.formats.ge.ge_graph import Graph, Model, Op, TensorDesc, attr_str, write_graph_text
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    root = tmp_path / "precision_data"
    folder = root / "npu/debug_0/dump/20240613143502/0/ge_default_20240613143502_1/1/0"
    folder.mkdir(parents=True)
    weight = np.random.default_rng(3).standard_normal((3, 3, 3, 16)).astype(np.float16)  # H, W, Cin, Cout
    path = folder / dump_file_name("Conv2D", "conv1/Conv2D", 5, 0, 1_718_260_502_000_005)
    write_dump(path, op_name="conv1/Conv2D", dump_time_us=1_718_260_502_000_005, inputs=[
        TensorSpec(to_device(weight, "HWCN", "FRACTAL_Z"), format=Format.FRACTAL_Z, original_shape=weight.shape)],
        outputs=[])
    if with_graph:
        desc = TensorDesc(dtype="DT_FLOAT16", layout="FRACTAL_Z", shape=(9, 1, 16, 16),
                          attrs={"origin_format": attr_str("HWCN")})
        model = Model(path=Path("ge_proto_00000001_graph_1_Build.txt"), name="graph_1",
                      graphs=[Graph(name="graph_1", ops=[Op(name="conv1/Conv2D", type="Conv2D", id=5,
                                                            inputs=["conv1/kernel:0"], input_descs=[desc])])])
        graph_dir = root / "npu/debug_0/graph"
        graph_dir.mkdir(parents=True)
        write_graph_text(model, graph_dir / "ge_proto_00000001_graph_1_Build.txt")
    return root, path, weight


def test_dc_format_takes_the_weight_layout_from_the_build_graph(cli, tmp_path: Path) -> None:
    root, path, weight = _hwcn_weight_workspace(tmp_path)
    result = cli("dc", "conv1/Conv2D", "-f", "NCHW", data=root)
    assert result.status == 0, result.out + result.err
    assert "taken from their run's Build graph" in result.out
    decoded = next((root / "temp/decode/dump_convert").rglob(f"{path.name}.input.0.16x3x3x3.npy"))
    np.testing.assert_array_equal(np.load(decoded), weight.transpose(3, 2, 0, 1))


def test_dc_format_outside_a_workspace_refuses_and_points_to_the_graph(cli, tmp_path: Path) -> None:
    root, path, _ = _hwcn_weight_workspace(tmp_path, with_graph=False)
    loose = tmp_path / "loose"
    loose.mkdir()
    copy = loose / path.name
    copy.write_bytes(path.read_bytes())
    for target, data in ((str(copy), tmp_path / "elsewhere"), ("conv1/Conv2D", root)):
        result = cli("dc", target, "-f", "NCHW", "-o", str(tmp_path / "out"), data=data)
        assert result.status == 1, result.out + result.err
        text = result.out + result.err
        assert "is ambiguous for the FRACTAL_Z" in text and "refusing to guess" in text
        assert "the graph's origin_format decides" in text and "--data" in text


def test_dc_name_over_two_runs_says_which_file_came_from_which_run(cli, conv_dump, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    made = {}
    for run, stamp in ((0, 1_718_260_502_000_001), (1, 1_718_260_602_000_001)):
        folder = root / f"npu/debug_{run}/dump/2024061314350{run}/0/ge_default_1/1/0"
        folder.mkdir(parents=True)
        made[run] = conv_dump(folder, "net/conv1", task_id=1, timestamp_us=stamp, seed=run)
    result = cli("dc", "net/conv1", data=root)
    assert result.status == 0, result.out + result.err
    lines = result.out.splitlines()
    for run, path in made.items():
        heading = next(n for n, line in enumerate(lines) if line.startswith(f"debug_{run}: 3 .npy from 1 dump file(s)"))
        listed = [line.strip() for line in lines[heading + 1:heading + 4]]
        assert listed == [f"{path.name}.input.0.npy", f"{path.name}.input.1.npy", f"{path.name}.output.0.npy"]
        assert str(path.parent) in lines[heading]
        for name in listed:
            assert (root / "temp/decode/dump_convert" / name).is_file()


def test_pt_prints_paths_whole_on_their_own_lines(cli, conv_dump, tmp_path: Path) -> None:
    folder = tmp_path / ("a_rather_long_folder_name_" * 3) / "0"
    folder.mkdir(parents=True)
    dump = conv_dump(folder, "scope/with_a_long_name/conv1", task_id=4)
    result = cli("pt", f"{dump}:output:0", "-c", data=tmp_path, env={"COLUMNS": "60"})
    assert result.status == 0, result.out + result.err
    lines = result.out.splitlines()
    assert f"output:0 of {dump}" in lines
    text_line = next(line for line in lines if line.startswith("values written to "))
    saved = Path(text_line.removeprefix("values written to "))
    assert saved.is_file() and saved.name == f"{dump.name}.output.0.txt"
    npy = tmp_path / ("decoded_tensor_with_a_long_file_name_" * 3 + ".npy")
    np.save(npy, np.arange(6, dtype=np.float32))
    result = cli("pt", str(npy), data=tmp_path, env={"COLUMNS": "60"})
    assert result.status == 0, result.err
    assert f"file {npy}" in result.out.splitlines()
