"""Issue 10 for the dump commands: every spelling of a tensor (analysis/ops/tensor_ref.py) reaches `pt` and `dc`,
`pt` shows an NPU tensor in the graph's origin layout so it lines up with the golden one, `ls dump` prints
names that paste back, and `dc` keeps every failure. Driven through the real CLI (one-shot and stdin mode)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

ROW = re.compile(r"^\s*(\[[\d, ]+\])\s+│\s+(\S+)\s*$")  # a row of pt's values table (inside the panel)


def _values(out: str) -> tuple[list[str], list[float]]:
    """(indexes, values) of the 'first N values' table of one `pt` output."""
    indexes, values = [], []
    for line in out.splitlines():
        match = ROW.match(line.strip("│ ").rstrip())
        if match:
            indexes.append(match.group(1))
            values.append(float(match.group(2)))
    return indexes, values


def _panel_rows(out: str) -> tuple[int, list[int]]:
    """(the panel's width, the column where each value of the values table ends)."""
    lines = out.splitlines()
    width = len(next(line for line in lines if line.startswith("╭")))
    ends = [len(line.rstrip("│ ").rstrip()) for line in lines if ROW.match(line.strip("│ ").rstrip())]
    assert len(ends) == 20, out
    return width, ends


def test_pt_shows_the_npu_tensor_in_its_graph_layout_lined_up_with_golden(cli, demo_data: Path) -> None:
    npu = cli("pt", "conv1/Conv2D:output:0", data=demo_data, env={"COLUMNS": "80"})
    golden = cli("pt", "conv1/Relu:0", data=demo_data, env={"COLUMNS": "80"})  # fused into conv1/Conv2D
    assert npu.status == 0 and golden.status == 0, npu.out + npu.err + golden.out + golden.err
    lines = npu.out.splitlines()
    assert ("layout NC1HWC0 [8,1,16,16,16] → NHWC [8,16,16,16] (origin layout from the Build graph)"
            in lines), npu.out
    assert "shape  [8, 16, 16, 16]" in npu.out and "shape  [8, 16, 16, 16]" in golden.out
    npu_index, npu_values = _values(npu.out)
    golden_index, golden_values = _values(golden.out)
    assert len(npu_values) == 20 and npu_index == golden_index
    # The same elements: equal within the fp16 rounding of the NPU's computation.
    np.testing.assert_allclose(npu_values, golden_values, rtol=4e-3, atol=1e-3)
    # The two panels have one width and their values end in the same column (fp16 and fp32 numbers alike);
    # the file each came from is named above its panel, as cp names its A and B.
    assert _panel_rows(npu.out)[0] == _panel_rows(golden.out)[0] == 80
    assert _panel_rows(npu.out)[1] == _panel_rows(golden.out)[1]
    for out, source in ((npu.out, "output:0 of "), (golden.out, "golden tensor ")):
        lines = out.splitlines()
        top = next(n for n, line in enumerate(lines) if line.startswith("╭"))
        assert any(line.startswith(source) for line in lines[:top]), out
    # 24 channels: padded to 2 blocks of 16 on the device, cut back to 24 for the NHWC view.
    bn = cli("pt", "bn2/FusedBatchNormV3:output:0", data=demo_data)
    assert "layout NC1HWC0 [8,2,8,8,16] → NHWC [8,8,8,24] (origin layout from the Build graph)" in bn.out


def test_every_tensor_spelling_reaches_pt(cli, demo_data: Path) -> None:
    dump = next((demo_data / "npu/debug_0/dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*"))
    golden = next((demo_data / "tf/dump").glob("bn2_FusedBatchNormV3.0.*.npy"))
    spellings = {
        f"{dump}:output:0": f"output:0 of {dump}",
        f"{dump.name}:output:0": f"output:0 of {dump}",
        "bn2/FusedBatchNormV3:output:0": f"output:0 of {dump}",
        "bn2_FusedBatchNormV3:output:0": f"output:0 of {dump}",
        "bn2/FusedBatchNormV3:0": f"golden tensor {golden}",
        "bn2_FusedBatchNormV3:0": f"golden tensor {golden}",
        golden.name: f"golden tensor {golden}",
        str(golden): f"file {golden}",
    }
    result = cli(data=demo_data, stdin="\n".join(f"pt {s}" for s in spellings) + "\n")
    assert result.status == 0, result.out + result.err
    for expected in spellings.values():
        assert expected in result.out.splitlines(), (expected, result.out)
    # An op name says which file it took, and that debug_1 dumped the op too.
    assert (f"bn2/FusedBatchNormV3:output:0 is output:0 of {dump.name} in debug_0 (also dumped in debug_1)"
            in result.out.splitlines())
    assert f"bn2/FusedBatchNormV3:0 is the golden {golden.name}" in result.out.splitlines()


def test_spellings_that_name_nothing_say_what_was_searched(cli, demo_data: Path) -> None:
    cases = {
        "bn2/FusedBatchNormV3": "pt: bn2/FusedBatchNormV3 is an op; name one of its tensors: "
                                "bn2/FusedBatchNormV3:output:0 (NPU dump) or bn2/FusedBatchNormV3:0 (golden)",
        "conv1/Relu:3": f"pt: conv1/Relu:3: no golden tensor conv1_Relu.3.*.npy in {demo_data / 'tf/dump'}; "
                        "it has conv1_Relu.0",
        "conv1/BiasAdd:output:0": "the Build graph fused it into conv1/Conv2D",
        "conv:output:0": "ops whose name contains it: ",
        "nosuch": f"pt: nosuch: no such file (nor a dump file or .npy of that name in {demo_data / 'npu/debug_0/dump'}",
        "/nowhere/x:output:0": "pt: /nowhere/x: no such file",
        "Add.x.1.1.1:0": "pt: Add.x.1.1.1:0: a dump file's tensor is Add.x.1.1.1:output:0 or Add.x.1.1.1:input:0",
    }
    for spelling, expected in cases.items():
        result = cli("pt", spelling, data=demo_data)
        text = result.out + result.err
        assert result.status == 1 and expected in text, (spelling, text)
        assert len(text.strip().splitlines()) == 1 and "Traceback" not in text, text


def test_a_file_name_in_two_folders_lists_both_in_one_line(cli, demo_data: Path, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    shutil.copytree(demo_data / "npu/debug_0", root / "npu/debug_0")
    folder = next((root / "npu/debug_0/dump").rglob("Conv2D.conv1_Conv2D.*")).parent
    twin = folder.parent / "1"
    twin.mkdir()
    name = next(folder.glob("Conv2D.conv1_Conv2D.*")).name
    shutil.copy(folder / name, twin / name)
    result = cli("pt", f"{name}:output:0", data=root)
    text = result.out + result.err
    assert result.status == 1 and len(text.strip().splitlines()) == 1, text
    assert f"pt: {name} is in 2 folders; give one path: {folder / name}, {twin / name}" in text


LISTING_ROW = re.compile(r"^ *(\d+|\?) +(\d+|\?)  (\S+)$")  # `ls dump`: inputs, outputs, name


def listing_rows(out: str) -> list[tuple[str, str, str, str]]:
    """(run, inputs, outputs, name) of each row of `ls dump` in a pipe (one line per row)."""
    rows, run = [], None
    for line in out.splitlines():
        heading = re.match(r"^(debug_\d+): \d+ dump file\(s\) in ", line)
        if heading:
            run = heading.group(1)
        elif LISTING_ROW.match(line):
            assert run is not None, line
            rows.append((run, *LISTING_ROW.match(line).groups()))  # type: ignore[union-attr]
    return rows


def test_ls_dump_names_paste_back_into_pt_and_dc(cli, demo_data: Path, tmp_path: Path) -> None:
    listing = cli("ls", "dump", data=demo_data, env={"COLUMNS": "80"})
    assert listing.status == 0, listing.err
    rows = listing_rows(listing.out)
    assert len(rows) == 158 and {r[0] for r in rows} == {"debug_0", "debug_1"}
    assert "158 dump file(s) in 2 runs" in listing.out.splitlines()
    # In a pipe a row is one line, however long, its name aligned with the others.
    assert len({line.index(name) for line in listing.out.splitlines() for *_, name in rows
                if line.endswith(f"  {name}")}) == 1
    commands = []
    for run, inputs, outputs, name in rows:
        assert inputs.isdigit() and outputs.isdigit(), (run, inputs, outputs, name)
        tensor = f"{name}:output:0" if int(outputs) else f"{name}:input:0"
        commands += [f"pt {tensor}", f"dc {name} -o {tmp_path / run}"]
    result = cli(data=demo_data, stdin="\n".join(commands) + "\n")
    assert result.status == 0 and "no such file" not in result.out + result.err, result.out + result.err
    for run, _, _, name in rows:
        assert f"of {next((demo_data / 'npu' / run).rglob(name))}" in result.out
        assert list((tmp_path / run).glob(f"{name}.*.npy")), name


def test_dc_takes_a_tensor_spelling_and_decodes_its_file(cli, demo_data: Path, tmp_path: Path) -> None:
    result = cli("dc", "bn2/FusedBatchNormV3:output:0", "-o", str(tmp_path), data=demo_data)
    assert result.status == 0, result.out + result.err
    dump = next((demo_data / "npu/debug_0/dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*"))
    assert f"dc decodes whole dump files: bn2/FusedBatchNormV3:output:0 is in {dump.name}" in result.out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{dump.name}.input.{i}.npy" for i in range(3)] + [f"{dump.name}.output.{i}.npy" for i in range(5)])
    golden = next((demo_data / "tf/dump").glob("conv1_Relu.0.*.npy")).name
    refused = cli("dc", golden, data=demo_data)
    assert refused.status == 1 and f"dc: {golden} is a .npy name; dc decodes NPU dumps" in refused.out + refused.err


def test_dc_over_many_broken_files_names_50_and_keeps_the_whole_list(cli, conv_dump, tmp_path: Path) -> None:
    good = conv_dump(tmp_path / "src", "net/conv1")
    data = good.read_bytes()
    folder = tmp_path / "broken"
    folder.mkdir()
    count = 1100
    for n in range(count):  # truncated copies: each fails on its own, fast
        (folder / f"Conv2D.net_conv{n}.{n}.1.{1_718_260_502_000_000 + n}").write_bytes(data[: 8 + n % 200])
    out = tmp_path / "out"
    result = cli("dc", str(folder), "-o", str(out), data=tmp_path / "ws")
    assert result.status == 1, result.out + result.err
    lines = result.out.splitlines()
    named = [line for line in lines if line.startswith(str(folder))]
    assert len(named) == 50, result.out
    assert f"... and {count - 50} more failures" in lines
    listed = (out / "decode_failures.tsv").read_text().splitlines()
    assert listed[0] == "file\ttensor\treason" and len(listed) == count + 1
    rows = [line.split("\t") for line in listed[1:]]
    assert {Path(r[0]).parent for r in rows} == {folder} and all(len(r) == 3 and r[2] for r in rows)
    assert f"all {count} failure(s), one per line (file, tensor, reason; tab-separated): {out / 'decode_failures.tsv'}" \
        in lines
    assert not list(out.glob("*.npy")) and "Traceback" not in result.err


def test_failure_list_goes_to_the_next_folder_when_one_refuses(tmp_path: Path) -> None:
    from precision_tool.analysis.dumps.decode import DecodeProblem, write_failure_list

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    problems = [DecodeProblem(tmp_path / "a", "truncated\nheader"), DecodeProblem(tmp_path / "b", "bad", "output:1")]
    written, refused = write_failure_list(problems, [blocker / "sub", tmp_path / "temp"])
    assert written == tmp_path / "temp" / "decode_failures.tsv"
    assert len(refused) == 1 and refused[0].startswith(f"{blocker / 'sub'}: ")
    assert written.read_text().splitlines() == ["file\ttensor\treason", f"{tmp_path / 'a'}\t\ttruncated header",
                                                f"{tmp_path / 'b'}\toutput:1\tbad"]
