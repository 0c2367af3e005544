"""`ls`, `ni` and the graph sections of `ac` in the real shell in a pty at 80/120/200 columns (and in a
pipe), `ni`, `ls` and `ls dump` taller than the terminal going through $PAGER, and `ni -s` on a read-only
workspace (as the user nobody when root): the op is shown, then one line naming the folder."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pexpect
import pytest

from tests import users

from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.workspace import Workspace

ROOT = Path(__file__).resolve().parents[3]
CLI = str(ROOT / "precision_tool" / "cli.py")
PROMPT = "PrecisionTool >"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _spawn(command: list[str], columns: int, rows: int = 1000, home: str | None = None,
           env: dict[str, str] | None = None) -> pexpect.spawn:
    extra = env or {}
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA", "COLUMNS", "LINES", "PAGER", "MANPAGER")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", **extra})
    if home:
        env["HOME"] = home
    child = pexpect.spawn(command[0], command[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(rows, columns), cwd=str(ROOT))
    child.expect_exact(PROMPT)
    return child


def _type(child: pexpect.spawn, line: str) -> list[str]:
    """The screen lines a command printed (prompt and echo removed)."""
    child.sendline(line)
    child.expect_exact("\r\r\n")
    child.expect_exact(PROMPT)
    return [ANSI.sub("", x).rstrip() for x in child.before.replace("\r\n", "\n").split("\n")]


def _ops(root: Path) -> list:
    (path,) = Workspace(root).build_graph_files(0)
    return load_graph(path).graphs[0].ops


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_ls_ni_and_ac_sections_at_each_width(demo_root: Path, columns: int) -> None:
    ops = _ops(demo_root)
    child = _spawn([sys.executable, CLI, "--data", str(demo_root)], columns)
    listing = _type(child, "ls")
    assert all(len(line) <= columns for line in listing), [line for line in listing if len(line) > columns]
    rows, at = ls_rows(listing)
    assert [name for _, _, name, _ in rows] == [op.name for op in ops]  # the second run: said once
    assert "  the same 94 op(s) as debug_0" in listing
    type_w = at - listing[1].index("type") - 2
    for op_type, lines, name, column in rows:
        # names start at the name column; a name longer than the room there has a line of its own under the
        # types; a row takes two lines only for that, or for a type longer than the column
        assert column == (at if at + len(name) <= columns else 6), (name, column)
        assert len(lines) == 1 or at + len(name) > columns or len(op_type) > type_w or lines[1].strip()[0] == "["
    if columns >= 120:
        assert all(len(lines) == 1 for _, lines, _, _ in rows)
    conv = next(lines for _, lines, name, _ in rows if name == "conv1/Conv2D")
    assert "[AABiasaddConvFusion + TbeConvElemwiseFusionPass]" in "\n".join(conv)  # the marker whole
    # the graph sections of ac: names whole; the cast op names wrap as a list, never in a narrow cell
    checks = _type(child, "ac")
    fusion = next(i for i, line in enumerate(checks) if re.match(r"graph \S+: graph fusion passes", line))
    answer = next(i for i, line in enumerate(checks) if line.startswith("answer ─"))
    # the answer block: a path or a line to paste longer than the terminal is printed whole on a line of its
    # own, under what it belongs to (the terminal folds it); any other line fits
    pasted = [line for line in checks[answer:] if len(line) > columns]
    assert all(line.startswith("      custom_op = ") or len(line.split()) == 1 for line in pasted), pasted
    checks = checks[fusion:answer]  # the fusion, cast and similarity sections (the earlier ones are not ours)
    # (a path longer than the line has a line of its own; anything else fits)
    too_long = [line for line in checks if len(line) > columns and len(line.split()) > 1]
    assert not too_long, too_long
    casts = [op.name for op in ops if op.type == "Cast"]
    start = checks.index("Cast ops that can lose information")
    cast_words = {w.strip(",") for line in checks[start:] for w in line.split()}
    lossy = [n for n in casts if n in cast_words]
    assert len(lossy) >= 9
    name_lines = [line for line in checks[start:] if line.strip().startswith("trans_Cast_")]
    assert len(name_lines) == (1 if columns == 200 else 2), name_lines
    similarity = next(line for line in checks if line.startswith("debug_0 vs debug_1"))
    assert "ge_proto_00000001_graph_1_Build.txt" in similarity.split() or \
        "ge_proto_00000001_graph_1_Build.txt" in {w for line in checks for w in line.split()}
    # ni takes the op ids the panels print, brackets and all
    assert _type(child, "ni [16]")[0] == "[16] is the Id of bn2/FusedBatchNormV3 in debug_0, debug_1"
    # ni: the statistics table never cuts a number and fits the width
    info = _type(child, "ni bn2/FusedBatchNormV3")
    assert not [line for line in info if len(line) > columns and len(line.split()) > 1]
    table = info[next(i for i, line in enumerate(info) if line.startswith("  Tensors")):info.index("  Files")]
    rows = [line for line in table if re.match(r"^ +(debug_0|golden)", line)]
    number = r"-?\d[\d.e+-]*"
    whole = re.compile(rf"^ +(debug_0, debug_1|debug_\d|golden) +(\[[\d,]*\]|scalar)( +{number}){{3}}( +\d+){{3}}$")
    assert len(rows) == 17 and all(whole.match(line) for line in rows), rows  # 3 inputs' golden rows too
    child.sendline("exit")
    child.expect(pexpect.EOF)


def ls_rows(lines: list[str]) -> tuple[list[tuple[str, list[str], str, int]], int]:
    """The op rows of an `ls` listing: (type, the row's lines, name, column of the name), and the header's
    name column. A row is the line starting with its id and the indented lines below it without one."""
    header = next(line for line in lines if line.split()[:3] == ["id", "type", "name"])
    grouped: list[list[str]] = []
    for line in lines:
        if re.match(r"^ +\d+  \S", line):
            grouped.append([line])
        elif grouped and line.startswith("    ") and line.strip():
            grouped[-1].append(line)
    rows = []
    for row in grouped:
        words = [(m.start(), m.group()) for text in row for m in re.finditer(r"\S+", text)]
        rows.append((words[1][1], row, words[2][1], words[2][0]))  # id, type, then the name
    return rows, header.index("name")


def test_pipe_rows_are_one_line_each(cli, demo_root: Path) -> None:
    ops = _ops(demo_root)
    result = cli("ls", data=demo_root, env={"COLUMNS": "80"})
    lines = result.out.splitlines()
    rows, at = ls_rows(lines)
    assert [name for _, _, name, _ in rows] == [op.name for op in ops]
    assert all(len(row_lines) == 1 and column == at for _, row_lines, _, column in rows)  # aligned, one line each
    assert max(len(line) for line in lines) > 80  # as wide as it needs: nothing was wrapped or cut
    checks = cli("ac", data=demo_root, env={"COLUMNS": "80"})
    lines = checks.out.splitlines()
    cast = next(i for i, line in enumerate(lines) if line.startswith("  DT_FLOAT → DT_FLOAT16  9 op(s): "))
    assert lines[cast + 1] == "    " + ", ".join(f"trans_Cast_{i}" for i in (0, 1, 2, 3, 4, 5, 6, 7, 9))
    assert ("debug_0 vs debug_1 · ge_proto_00000001_graph_1_Build.txt · graph structure: the same in all 55 ops "
            "compared (types, inputs, dtypes, layouts, shapes; Cast, TransData, Variable, Constant and other "
            "plumbing left out)") in lines


PAGER = """import sys
text = sys.stdin.read()
with open(sys.argv[1], "w") as record:
    record.write(text)
print(f"[pager: {len(text.splitlines())} lines]")
"""


def _paging_shell(demo_root: Path, tmp_path: Path) -> tuple[pexpect.spawn, Path]:
    """The shell on a 20-row terminal whose $PAGER records what it was given in the returned file."""
    # The shell pages as git does, through $PAGER (less when unset); a pager that exists everywhere: python.
    pager, record = tmp_path / "pager.py", tmp_path / "paged.txt"
    pager.write_text(PAGER)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(pager))} {shlex.quote(str(record))}"
    return _spawn([sys.executable, CLI, "--data", str(demo_root)], 80, rows=20, env={"PAGER": command}), record


def _type_paged(child: pexpect.spawn, record: Path, command: str) -> list[str]:
    """What `command` sent to the pager; asserts that nothing else reached the screen."""
    screen = _type(child, command)
    paged = ANSI.sub("", record.read_text()).splitlines()  # (styles kept, as less -R shows them)
    assert screen == [f"[pager: {len(paged)} lines]", ""], screen  # nothing scrolled past: the pager had it all
    record.unlink()
    return paged


def test_ni_output_taller_than_the_terminal_is_paged(demo_root: Path, tmp_path: Path) -> None:
    child, record = _paging_shell(demo_root, tmp_path)
    paged = _type_paged(child, record, "ni bn2/FusedBatchNormV3")
    assert len(paged) > 20 and paged[0].startswith("bn2/FusedBatchNormV3  debug_0, debug_1"), paged[:3]
    assert "  Files" in paged
    child.sendline("exit")
    child.expect(pexpect.EOF)


def test_ls_and_ls_dump_taller_than_the_terminal_are_paged(demo_root: Path, tmp_path: Path) -> None:
    # Paged as ni and vcs are: the whole listing goes to $PAGER, nothing scrolls past on the screen.
    child, record = _paging_shell(demo_root, tmp_path)
    rows, _ = ls_rows(_type_paged(child, record, "ls"))
    assert [name for _, _, name, _ in rows] == [op.name for op in _ops(demo_root)]
    paged = _type_paged(child, record, "ls dump")
    dumps = sorted(p.name for p in (demo_root / "npu" / "debug_0" / "dump").rglob("*") if p.is_file())
    assert len(paged) > 20 and all(any(name in line for line in paged) for name in dumps[:5] + dumps[-5:])
    short = _type(child, "ls -n pool1")  # fits the screen: printed as is, no pager
    assert any(line.split()[2:3] == ["pool1/MaxPool"] for line in short if line.strip()), short
    assert not record.exists()
    child.sendline("exit")
    child.expect(pexpect.EOF)


def test_ni_save_on_a_read_only_workspace(demo_root: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ro"
    shutil.copytree(demo_root, ws)
    pictures = Path(tempfile.mkdtemp(prefix="pt", dir="/tmp"))  # short: the command line fits 80 columns
    pictures.chmod(0o777)  # the user the tool runs as saves there
    try:
        # As root: the user nobody, whom the modes bind (tests/users.py); else the current user.
        child = _spawn(users.read_only_user_command([sys.executable, CLI, "--data", str(ws)], ws), 80,
                       home="/proc/no-home-here")
        out = _type(child, "ni -s 1 pool1/MaxPool")
        text = "\n".join(out)
        assert "Traceback" not in text
        # (the shell's own warning about the history may come first)
        assert any(line.startswith("pool1/MaxPool  debug_0, debug_1") for line in out)
        assert "  Type         MaxPool" in out
        error = " ".join(line.strip() for line in out[out.index("  Files"):] if not line.startswith("    "))
        assert error.strip().endswith(f"ni -s: cannot write the picture folder {ws}/temp/op_graph/debug_0: Permission "
                              "denied; add -o DIR to save it in another folder"), out[-6:]
        saved = _type(child, f"ni -s 1 -o {pictures} pool1/MaxPool")
        assert f"saved {pictures}/debug_0/pool1_MaxPool_1.svg (and pool1_MaxPool_1.gv)" in \
            " ".join(line.strip() for line in saved)
        assert (pictures / "debug_1" / "pool1_MaxPool_1.gv").is_file()
        assert "Traceback" not in " ".join(_type(child, "ni pool1/MaxPool"))  # reading works as ever
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        users.make_writable_again(ws)
        shutil.rmtree(pictures, ignore_errors=True)
