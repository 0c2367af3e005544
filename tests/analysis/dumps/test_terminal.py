"""The dump commands in a real terminal (pexpect pty): a read-only workspace (run as the user nobody when
root, see tests/users.py) never gives a traceback and names the folder it could not write, and the
overflow section of `ac` wraps like text at 80 and 200 columns (words and paths whole, table numbers never
cut)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect

from tests import users

ROOT = Path(__file__).resolve().parents[3]
CLI = str(ROOT / "precision_tool" / "cli.py")
PROMPT = "PrecisionTool >"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": str(columns),
                "LINES": "50", "HOME": "/proc/no-home-here"})  # cannot be created, not even by root
    return env


def _spawn(command: list[str], columns: int) -> pexpect.spawn:
    return pexpect.spawn(command[0], command[1:], env=_env(columns), encoding="utf-8", timeout=60,
                         dimensions=(50, columns), cwd=str(ROOT))


def _type(child: pexpect.spawn, line: str) -> str:
    child.sendline(line)
    child.expect_exact("\r\r\n")
    child.expect_exact(PROMPT)
    return ANSI.sub("", child.before).replace("\r", "")


def _joined(screen: str) -> str:
    """Wrapped prose back on one line (continuation lines are indented)."""
    return " ".join(line.strip() for line in screen.splitlines() if line.strip())


def _writable_copy(demo_data: Path, tmp_path: Path) -> Path:
    root = tmp_path / "precision_data"
    shutil.copytree(demo_data, root, symlinks=True)
    return root


def test_read_only_workspace_in_the_shell_names_the_folder_and_how_to_choose_another(demo_data: Path,
                                                                                     tmp_path: Path) -> None:
    import tempfile

    ws = _writable_copy(demo_data, tmp_path)
    # short, so the typed line fits the 80-column prompt (a wrapped echo would be redrawn)
    elsewhere = Path(tempfile.mkdtemp(prefix="pt_c_"))
    elsewhere.chmod(0o777)  # the user the tool runs as writes there
    try:
        child = _spawn(users.read_only_user_command([sys.executable, CLI, "--data", str(ws)], ws), columns=80)
        child.expect_exact(PROMPT)
        seen = ""
        out = _type(child, "pt conv1/Conv2D:output:0 -c")
        seen += out
        # (the first line typed also warns, once, that the shell history stays in memory)
        assert f"cannot write the folder for the -c values {ws}/temp/decode/dump_decode: " in _joined(out)
        assert _joined(out).endswith("; write them elsewhere with `pt conv1/Conv2D:output:0 -c -o DIR`"), out
        out = _type(child, f"pt conv1/Conv2D:output:0 -c -o {elsewhere}")
        seen += out
        saved = elsewhere / next((ws / "npu/debug_0/dump").rglob("Conv2D.conv1_Conv2D.*")).name
        assert f"values written to {saved}.output.0.txt" in _joined(out)
        assert Path(f"{saved}.output.0.txt").read_text().startswith("# shape [8, 16, 16, 16] dtype float16")
        out = _type(child, "dc conv1/Conv2D")
        seen += out
        assert _joined(out).startswith(f"cannot write the output folder {ws}/temp/decode/dump_convert: "), out
        assert _joined(out).endswith("; choose another with `dc conv1/Conv2D -o DIR`"), out
        # What only reads works as usual.
        out = _type(child, "pt conv1/Conv2D:output:0")
        seen += out
        assert "origin layout from the Build graph" in _joined(out)
        out = _type(child, "ls dump -n conv1_Conv2D")
        seen += out
        assert "debug_0: 1 dump file(s) in" in out or "debug_0: 2 dump file(s) in" in out, out
        child.sendline("exit")
        child.expect(pexpect.EOF)
        seen += ANSI.sub("", child.before or "")
        assert "Traceback" not in seen and "Error" not in seen.replace("cannot write", ""), seen
    finally:
        users.make_writable_again(ws)
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_read_only_workspace_one_shot_pt_c_and_dc_are_one_line(demo_data: Path, tmp_path: Path) -> None:
    ws = _writable_copy(demo_data, tmp_path)
    try:
        for args, folder, hint in (
            (["pt", "conv1_Relu:0", "-c"], ws / "tf/dump", "write them elsewhere with `pt conv1_Relu:0 -c -o DIR`"),
            (["dc", "bn2/FusedBatchNormV3"], ws / "temp/decode/dump_convert",
             "choose another with `dc bn2/FusedBatchNormV3 -o DIR`"),
        ):
            proc = subprocess.run(users.read_only_user_command([sys.executable, CLI, "--data", str(ws), *args], ws),
                                  capture_output=True, text=True, env=_env(80), timeout=120)
            text = proc.stdout + proc.stderr
            assert proc.returncode == 1, text
            lines = [line for line in text.splitlines() if line.strip()]
            assert len(lines) == 1 and lines[0].startswith("cannot write the ") and f" {folder}: " in lines[0], text
            assert lines[0].endswith(hint), text
        listing = subprocess.run(users.read_only_user_command([sys.executable, CLI, "--data", str(ws), "ls", "dump"],
                                                              ws),
                                 capture_output=True, text=True, env=_env(80), timeout=120)
        assert listing.returncode == 0 and "158 dump file(s) in 2 runs" in listing.stdout, listing.stderr
    finally:
        users.make_writable_again(ws)


def _overflow_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("overflow:"))
    end = next(n for n, line in enumerate(lines) if line.startswith("fusion:"))
    return lines[start:end]


def _table_cells(dump: Path) -> set[str]:
    """Every cell of the overflow table, from the dump itself: its values come from a float32 matmul whose
    rounding depends on the CPU's BLAS kernel, so no number is written here."""
    from precision_tool.analysis.dumps.origin_layout import origin_layout_array
    from precision_tool.shapes import shape_text
    from precision_tool.analysis.dumps.tensor_stats import tensor_stats
    from precision_tool.formats.npu.dump_types import data_type_name
    from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor
    from precision_tool.render.dumps import number

    header = read_dump_header(dump)
    cells = set()
    for tensor in header.tensors:
        array, story = origin_layout_array(tensor, read_tensor(header, tensor), None)
        stats = tensor_stats(array)
        cells |= {tensor.label, story.layout, data_type_name(tensor.data_type), shape_text(array.shape),
                  number(stats.max), number(stats.min), number(stats.mean), str(stats.nan_count), str(stats.inf_count)}
    assert {"[8,64]", "[8,10]", "[64,10]", "FLOAT16", "ND"} <= cells  # what the demo plants
    return cells


def test_ac_overflow_section_wraps_like_text_at_80_and_200_columns(demo_data: Path, tmp_path: Path) -> None:
    ws = tmp_path / "precision_data"
    shutil.copytree(demo_data / "overflow", ws / "overflow")
    dump = next((ws / "overflow").rglob("MatMulV2.*"))
    piped = subprocess.run([sys.executable, CLI, "--data", str(ws), "ac"], capture_output=True, text=True,
                           env=_env(80), timeout=120)
    assert piped.returncode == 0, piped.stdout + piped.stderr
    one_line = _overflow_section(piped.stdout)  # a pipe: prose one line per logical line
    path_line = f"      {dump}"  # indented under its label, whole
    assert path_line in one_line, one_line
    numbers = _table_cells(dump)
    for columns in (80, 200):
        child = _spawn([sys.executable, CLI, "--data", str(ws)], columns)
        child.expect_exact(PROMPT)
        section = _overflow_section(_type(child, "ac"))
        child.sendline("exit")
        child.expect(pexpect.EOF)
        # The dump path is whole, alone on its line under its label (the terminal may fold it; the text has no
        # break in it).
        assert path_line in section, section
        prose = [line for line in section if "│" not in line and "┃" not in line and "━" not in line
                 and line != path_line]
        # Within the width, but for a word longer than the line (a path), which gets a line of its own.
        assert all(len(line) <= columns or len(line.split()) == 1 for line in prose), section
        # Prose wraps between words only: the words are those of the one-line (piped) form, in order.
        piped_prose = [line for line in one_line if "│" not in line and "┃" not in line and "━" not in line
                       and line != path_line]
        assert _joined("\n".join(prose)).split() == _joined("\n".join(piped_prose)).split()
        # The op name in the spelling `ni` takes (the graph name), and every number of the table whole.
        assert "#1 MatMulV2 gradients/fc2/MatMul_grad/MatMul_1 at timestamp_us" in _joined("\n".join(prose))
        cells = {cell.strip() for line in section if "│" in line for cell in line.split("│")}
        assert numbers <= cells, (columns, section)
        assert all(len(line) <= columns for line in section if "│" in line), section


def test_overflow_op_name_is_accepted_by_ni(cli, demo_data: Path) -> None:
    result = cli("ac", data=demo_data)
    name = re.search(r"^#1 MatMulV2 (\S+) at timestamp_us", result.out, re.M).group(1)
    shown = cli("ni", name, data=demo_data)
    assert shown.status == 0 and name in shown.out, shown.out + shown.err
