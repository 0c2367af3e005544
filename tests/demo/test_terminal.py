"""The demo workspace as a person sees it in a terminal: `ac -c` at 80 and 200 columns splits no word and
no path across lines, and every command on a read-only copy, run as the user nobody (who cannot write
there and has no home), ends without a traceback."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pexpect
import pytest

from tests import users

from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.formats.npu.npu_dump import sanitize_op_name
from precision_tool.workspace import Workspace

from .conftest import ROOT, run_demo_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
PROMPT = "PrecisionTool >"  # prompt_toolkit draws the trailing space as a cursor move


def _screen(raw: str) -> str:
    """What stays on screen: escape codes dropped, and of a line redrawn after \r (a progress bar) the last."""
    lines = ANSI.sub("", raw).replace("\r\n", "\n").split("\n")
    return "\n".join(line.rstrip("\r").split("\r")[-1] for line in lines)
BOX = "│┃╭╮╰╯─━┏┓┗┛┡┩╇┳┻╋┼┬┴├┤└┘┌┐═║"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA", "PRECISION_TOOL_HOME", "XDG_STATE_HOME", "COLUMNS",
                                                            "LINES")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PAGER": "cat", "PROMPT_TOOLKIT_NO_CPR": "1"}, **extra)
    return env


def _in_pty(argv: list[str], columns: int, env: dict[str, str] | None = None) -> str:
    child = pexpect.spawn(argv[0], argv[1:], dimensions=(50, columns), env=env or _env(), encoding="utf-8",
                          timeout=300, cwd=str(ROOT))
    child.expect(pexpect.EOF)
    child.close()
    return _screen(child.before)


def _names(workspace: Path) -> set[str]:
    """Op names of the demo's compiled graph in both spellings."""
    (path,) = Workspace(workspace).build_graph_files(0)
    names: set[str] = set()
    for graph in load_graph(path).graphs:
        for op in graph.ops:
            names.update((op.name, sanitize_op_name(op.name)))
    return {n for n in names if len(n) >= 4}


def _tokens(text: str) -> set[str]:
    cleaned = text.translate({ord(c): " " for c in BOX})
    return {t.strip(",;:()[]'`\"") for t in cleaned.split()}


def _sentence(text: str, start: str) -> list[str]:
    """The words of the paragraph that begins with `start`: its line and the indented lines under it."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    words = lines[first].split()
    for line in lines[first + 1:]:
        if not line.startswith("  ") or line.strip().startswith(tuple(BOX)):
            break
        words += line.split()
    return words


@pytest.mark.parametrize("columns", [80, 200])
def test_ac_c_splits_no_word_and_no_path(demo_workspace: Path, columns: int) -> None:
    cli = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(demo_workspace)]
    screen = _in_pty([*cli, "ac", "-c"], columns)
    assert "Traceback" not in screen, screen[-3000:]
    piped = run_demo_cli("--data", str(demo_workspace), "ac", "-c").stdout
    # Nothing relies on the terminal folding a line, except one word too long for any line.
    for line in screen.split("\n"):
        assert len(line) <= columns or len(line.split()) == 1, line
    # Every op name that the output names, it names whole, at this width too.
    names = _names(demo_workspace)
    named_in_pipe = _tokens(piped) & names
    assert named_in_pipe, piped[-2000:]
    assert named_in_pipe <= _tokens(screen), sorted(named_in_pipe - _tokens(screen))
    # Each path it prints is whole: it names a file that exists.
    paths = [t for t in _tokens(screen) if t.startswith(str(demo_workspace))]
    assert any(p.endswith(".csv") for p in paths), screen[-2000:]
    assert all(Path(p).exists() for p in paths), [p for p in paths if not Path(p).exists()]
    # The sentence that matters reads word for word as in a pipe (where prose is never wrapped).
    for start in ("first divergent op:",):
        assert _sentence(screen, start) == _sentence(piped, start)
    # No number is cut to fit a column.
    assert not re.search(r"\d…", screen), re.findall(r"\S*\d…\S*", screen)


def _readonly_copy(workspace: Path) -> Path:
    """A copy of the demo workspace that everyone may read and nobody but root may write."""
    parent = Path(tempfile.mkdtemp(prefix="readonly_ws_"))
    copy = parent / "precision_data"
    shutil.copytree(workspace, copy, symlinks=True)
    shutil.rmtree(copy / "temp", ignore_errors=True)  # as someone else's dumps arrive: no results yet
    for folder, dirs, files in os.walk(parent):
        os.chmod(folder, 0o555)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
    return copy


def test_every_command_on_a_read_only_workspace_without_home_has_no_traceback(demo_workspace: Path) -> None:
    copy = _readonly_copy(demo_workspace)
    try:
        dump = next(p for p in Workspace(copy).newest_dump_dir(0).rglob("*") if p.name.startswith("BatchNorm.bn2_FusedBatchNormV3."))
        golden = next((copy / "tf" / "dump").glob("bn2_FusedBatchNormV3.0.*.npy"))
        command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(copy)]
        # As root: the user nobody (HOME=/nonexistent); as another user: that user, bound by the modes.
        argv = users.as_nobody(command, reach=[copy]) if os.geteuid() == 0 else command
        env = _env(HOME=str(copy.parent / "home"))  # does not exist and cannot be made
        child = pexpect.spawn(argv[0], argv[1:], dimensions=(50, 200), env=env, encoding="utf-8", timeout=300,
                              cwd="/")
        child.expect_exact(PROMPT)
        # The first line stored tells, once, that history stays in memory; then the commands that read.
        # Bare names, as `ls dump` prints them (and short lines: a line longer than the screen is redrawn).
        reads = ["help vc", "ls", "ls dump", "ni bn2/FusedBatchNormV3", f"pt {dump.name}:output:0",
                 f"pt {golden.name}", f"cp {dump.name}:output:0 {golden.name}", "vcs"]
        writes = ["ni -s 2 bn2/FusedBatchNormV3", f"pt -c {golden.name}", f"dc {dump.name}", "vc", "ac -c",
                  "tf_dump --force"]
        seen = {}
        for line in reads + writes:
            child.sendline(line)
            child.expect_exact("\r\r\n")  # Enter accepted
            child.expect_exact(PROMPT)
            seen[line] = _screen(child.before)
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        for folder, _, _ in os.walk(copy.parent):
            os.chmod(folder, 0o755)
        shutil.rmtree(copy.parent)
    everything = "\n".join(seen.values())
    for bad in ("Traceback", "Logging error", "unexpected error", "Exception"):
        assert bad not in everything, everything[-4000:]
    assert everything.count("cannot write the shell history") == 1, everything[-4000:]
    assert "history stays in memory" in seen["help vc"]
    # Each command that reads shows what it shows on a writable workspace.
    expected = ["--resume", "188 op(s)", "158 dump file(s)", "Tensors", "max", "golden tensor", "CosineSimilarity",
                "no comparison results"]
    for line, what in zip(reads, expected):
        assert what in seen[line], (line, seen[line])
        if line != reads[0]:
            assert "cannot write" not in seen[line], (line, seen[line])
    for line in writes:
        assert "cannot write" in seen[line], (line, seen[line])
    assert "bn2/FusedBatchNormV3" in seen["ni bn2/FusedBatchNormV3"]
