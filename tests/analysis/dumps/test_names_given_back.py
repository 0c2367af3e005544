"""Issue 10, as a newcomer tried it: every name the dump commands and `ni` print is taken back (`ni`'s golden
keys by `pt` and `cp`, a bare dump file by `pt` as by `cp`), `ls dump` never lets the terminal fold a
name that fits a line (80/120/200 columns in a pty), `dc -f` writes every tensor and says which stayed
in their own layout, refusals say what to do next, and a tensor a dump does not have is refused in one
line. Through the real CLI (one-shot, stdin and pexpect)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pexpect
import pytest

from .test_names_and_layouts import listing_rows

ROOT = Path(__file__).resolve().parents[3]
CLI = str(ROOT / "precision_tool" / "cli.py")
PROMPT = "PrecisionTool >"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _one_line(result) -> str:
    text = (result.out + result.err).strip()
    assert result.status == 1 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    return text


def test_golden_keys_printed_by_ni_are_taken_by_pt_and_cp(cli, demo_data: Path) -> None:
    shown = cli("ni", "bn2/FusedBatchNormV3", data=demo_data)
    keys = sorted(set(re.findall(r"golden (bn2_FusedBatchNormV3\.\d+)\b", shown.out)))
    assert keys == [f"bn2_FusedBatchNormV3.{n}" for n in range(6)], shown.out
    result = cli(data=demo_data, stdin="".join(f"pt {key}\n" for key in keys))
    assert result.status == 0, result.out + result.err
    for key in keys:
        golden = next((demo_data / "tf" / "dump").glob(f"{key}.*.npy"))
        assert f"{key} is the golden {golden.name}" in result.out.splitlines()
        assert f"golden tensor {golden}" in result.out.splitlines()
    compared = cli("cp", "bn2_FusedBatchNormV3.0", "bn2/FusedBatchNormV3:output:0", data=demo_data)
    assert compared.status == 0, compared.out + compared.err
    golden = next((demo_data / "tf" / "dump").glob("bn2_FusedBatchNormV3.0.*.npy"))
    assert f"A  float32 [8,8,8,24]  {golden.name}" in compared.out.splitlines()
    # A key with no file names the keys of that op there are.
    assert _one_line(cli("pt", "bn2_FusedBatchNormV3.9", data=demo_data)) == (
        f"pt: bn2_FusedBatchNormV3.9: no golden tensor bn2_FusedBatchNormV3.9.*.npy in {demo_data / 'tf/dump'}; "
        "it has " + ", ".join(f"bn2_FusedBatchNormV3.{n}" for n in range(6)))


def test_a_golden_key_with_several_timestamps_takes_the_newest_and_says_so(cli, demo_data: Path,
                                                                           tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    (root / "tf" / "dump").mkdir(parents=True)
    newest = next((demo_data / "tf" / "dump").glob("bn2_Relu.0.*.npy"))
    shutil.copy(newest, root / "tf" / "dump" / newest.name)
    older = root / "tf" / "dump" / "bn2_Relu.0.1000000000000000.npy"
    np.save(older, np.zeros(3, np.float32))
    for spelling in ("bn2_Relu.0", "bn2/Relu:0"):
        result = cli("pt", spelling, data=root)
        assert result.status == 0, result.out + result.err
        assert (f"{spelling} is the golden {newest.name} (the newest of 2 timestamps, as the comparison reads "
                f"it; also {older.name})") in result.out.splitlines()
        assert f"golden tensor {root / 'tf' / 'dump' / newest.name}" in result.out.splitlines()


def test_pt_takes_a_bare_dump_file_as_its_output_0_as_cp_does(cli, demo_data: Path, tmp_path: Path) -> None:
    dump = next((demo_data / "npu" / "debug_0" / "dump").rglob("Relu.bn2_Relu.*"))
    golden = next((demo_data / "tf" / "dump").glob("bn2_Relu.0.*.npy"))
    shown = cli("pt", dump.name, data=demo_data)
    compared = cli("cp", dump.name, golden.name, data=demo_data)
    assert shown.status == 0 and compared.status == 0, shown.out + shown.err + compared.out + compared.err
    note = f"{dump.name} is a dump file: {{}} its output:0 (name another as {dump.name}:output:N or :input:N)"
    assert shown.out.splitlines()[0] == note.format("showing")
    assert note.format("comparing") in compared.out.splitlines()
    assert f"output:0 of {dump}" in shown.out.splitlines()
    # The same tensor as its spelled-out name.
    spelled = cli("pt", f"{dump.name}:output:0", data=demo_data)
    assert shown.out.splitlines()[1:] == spelled.out.splitlines()
    # A dump with no outputs shows its input:0; a file that is no dump at all is one line.
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    sink = tmp_path / "Assign.sink.1.1.1718260502000000"
    write_dump(sink, op_name="sink", inputs=[TensorSpec(np.arange(4, dtype=np.float32))], outputs=[])
    (tmp_path / "ws").mkdir()
    result = cli("pt", str(sink), data=tmp_path / "ws")
    assert result.status == 0, result.out + result.err
    assert result.out.splitlines()[0] == (f"{sink} is a dump file with no outputs: showing its input:0 (name "
                                          f"another as {sink}:output:N or :input:N)")
    (tmp_path / "notes.txt").write_text("hello")
    assert _one_line(cli("pt", str(tmp_path / "notes.txt"), data=tmp_path / "ws")).startswith(
        f"pt: {tmp_path / 'notes.txt'} is neither a .npy file nor a readable NPU dump (")


def test_a_tensor_the_dump_does_not_have_is_refused_in_one_line(cli, demo_data: Path) -> None:
    dump = next((demo_data / "npu" / "debug_0" / "dump").rglob("Relu.bn2_Relu.*"))
    text = _one_line(cli("cp", "bn2/Relu:output:7", "bn2/Relu:0", data=demo_data))
    assert text == (f"cp: bn2/Relu:output:7: {dump.name} has no output 7; it has 1 input and 1 output; its only "
                    "output is bn2/Relu:output:0")
    bn = next((demo_data / "npu" / "debug_0" / "dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*"))
    assert _one_line(cli("pt", f"{bn.name}:input:3", data=demo_data)) == (
        f"pt: {bn.name}:input:3: {bn.name} has no input 3; it has 3 inputs and 5 outputs; its inputs are "
        f"{bn.name}:input:0 to {bn.name}:input:2")


def test_dc_with_a_layout_writes_every_tensor_as_plain_dc_does(cli, demo_data: Path, tmp_path: Path) -> None:
    plain = cli("dc", "bn2/FusedBatchNormV3", "-o", str(tmp_path / "plain"), data=demo_data)
    nchw = cli("dc", "bn2/FusedBatchNormV3", "-f", "NCHW", "-o", str(tmp_path / "nchw"), data=demo_data)
    assert plain.status == 0 and nchw.status == 0, plain.out + nchw.out + nchw.err
    written = sorted((tmp_path / "nchw").glob("*.npy"))
    assert len(written) == len(list((tmp_path / "plain").glob("*.npy"))) == 16
    assert f"decoded 2 of 2 dump file(s) as NCHW: 16 .npy in {tmp_path / 'nchw'}" in nchw.out.splitlines()
    dump = next((demo_data / "npu" / "debug_0" / "dump").rglob("BatchNorm.bn2_FusedBatchNormV3.*"))
    assert (f"12 tensor(s) of 2 file(s) written in their own layout, not converted (an ND tensor has no axis "
            f"names; cannot convert it to NCHW), e.g. {dump.name} input:1") in nchw.out.splitlines()
    # The ND tensors hold what plain dc wrote; the 4-d ones are NCHW.
    np.testing.assert_array_equal(np.load(tmp_path / "nchw" / f"{dump.name}.output.1.24.npy"),
                                  np.load(tmp_path / "plain" / f"{dump.name}.output.1.npy"))
    assert (tmp_path / "nchw" / f"{dump.name}.output.0.8x24x8x8.npy").is_file()


def test_dc_refusals_say_what_to_do(cli, demo_data: Path) -> None:
    runs = [next((demo_data / "npu" / f"debug_{n}" / "dump").iterdir()) for n in (0, 1)]
    assert _one_line(cli("dc", "nope", data=demo_data)) == (
        "dc: nope is not a file, a folder, or an op with dumps (`ls dump` lists the dump files and their ops); "
        f"looked in {runs[0]}, {runs[1]}")
    golden_dir = demo_data / "tf" / "dump"
    first = sorted(golden_dir.iterdir())[0]
    count = len(list(golden_dir.iterdir()))
    assert _one_line(cli("dc", str(golden_dir), data=demo_data)) == (
        f"dc: {golden_dir} holds no dump files (ignored {count} file(s) with non-dump suffixes); dc decodes NPU "
        f"dumps, and a .npy is printed by pt: pt {first}")
    golden = next(golden_dir.glob("bn2_Relu.0.*.npy"))
    for spelling in ("bn2/Relu:0", "bn2_Relu.0"):
        assert _one_line(cli("dc", spelling, data=demo_data)) == (
            f"dc: {spelling} is the golden tensor {golden.name}, already a .npy; dc decodes NPU dumps "
            f"(`pt {spelling}` prints it)")
    assert _one_line(cli("pt", str(golden_dir), data=demo_data)) == (
        f"pt: {golden_dir} is a folder; pt prints one tensor: name one .npy file in it")


def test_completion_offers_the_golden_tensor_of_an_op(demo_data: Path) -> None:
    from precision_tool.shell.command import CompletionRequest
    from precision_tool.shell.commands.dumps import complete_dump_files
    from precision_tool.workspace import Workspace

    workspace = Workspace(demo_data)
    assert complete_dump_files(CompletionRequest(["pt"], "bn2/Relu:", None, workspace)) == [
        "bn2/Relu:input:0", "bn2/Relu:output:0", "bn2/Relu:0"]
    # an op fused away has no dump, but its golden tensor
    assert complete_dump_files(CompletionRequest(["cp"], "conv1/Relu:", None, workspace)) == ["conv1/Relu:0"]


def _env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": str(columns),
                "LINES": "50", "HOME": "/proc/no-home-here"})
    return env


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_ls_dump_in_a_terminal_folds_no_name_that_fits_a_line(cli, demo_data: Path, columns: int) -> None:
    piped = listing_rows(cli("ls", "dump", data=demo_data).out)
    child = pexpect.spawn(sys.executable, [CLI, "--data", str(demo_data), "ls", "dump"], env=_env(columns),
                          encoding="utf-8", timeout=120, dimensions=(50, columns), cwd=str(ROOT))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    lines = ANSI.sub("", child.before).replace("\r", "").splitlines()
    # No line is longer than the terminal but one word longer than the whole line (a name, a run's folder),
    # alone on its line.
    names = {name for *_, name in piped}
    for line in lines:
        assert len(line) <= columns or len(line.split()) == 1, (columns, line)
    # Every name is whole on some line, after its counts or on its own line under them.
    seen = []
    for n, line in enumerate(lines):
        words = line.split()
        if words and words[-1] in names:
            seen.append(words[-1])
        elif words and words[-1] == "↓":
            assert lines[n + 1] in names and len(line) + len(lines[n + 1]) > columns, (line, lines[n + 1])
    assert sorted(seen) == sorted(name for *_, name in piped)
    # Exactly the rows whose counts and name do not fit put the name below (the counts are 9 wide here).
    below = sum(1 for line in lines if line.endswith("↓"))
    assert below == sum(1 for *_, name in piped if 9 + len(name) > columns)
    assert below > 0 if columns == 80 else True
