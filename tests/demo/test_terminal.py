"""The demo workspace as a person sees it in a terminal: `ac -c` at 80 and 200 columns splits no word and
no path across lines, and every command on a read-only copy, run as a user who cannot write there (and
has no home), ends without a traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pexpect
import pytest

from precision_tool.formats.ge_graph import load_graph
from precision_tool.formats.npu_dump import sanitize_op_name
from precision_tool.workspace import Workspace

from .conftest import ROOT, run_demo_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
BOX = "│┃╭╮╰╯─━┏┓┗┛┡┩╇┳┻╋┼┬┴├┤└┘┌┐═║"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA", "PRECISION_TOOL_HOME", "XDG_STATE_HOME", "COLUMNS",
                                                            "LINES")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PAGER": "cat"}, **extra)
    return env


def _in_pty(argv: list[str], columns: int, env: dict[str, str] | None = None) -> str:
    child = pexpect.spawn(argv[0], argv[1:], dimensions=(50, columns), env=env or _env(), encoding="utf-8",
                          timeout=300, cwd=str(ROOT))
    child.expect(pexpect.EOF)
    child.close()
    return ANSI.sub("", child.before)


def _names(workspace: Path) -> set[str]:
    """Op names of the demo's compiled graph in both spellings, and every result CSV path."""
    (path,) = Workspace(workspace).build_graph_files(0)
    names: set[str] = set()
    for graph in load_graph(path).graphs:
        for op in graph.ops:
            names.update((op.name, sanitize_op_name(op.name)))
    names.update(str(p) for p in (workspace / "temp" / "vector_compare").rglob("*.csv"))
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
    # Every op name and CSV path that the output names, it names whole, at this width too.
    names = _names(demo_workspace)
    named_in_pipe = _tokens(piped) & names
    assert named_in_pipe, piped[-2000:]
    assert named_in_pipe <= _tokens(screen), sorted(named_in_pipe - _tokens(screen))
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


def _as_nobody(argv: list[str]) -> list[str]:
    """`argv` run so that file permissions bind it: as `nobody` when that user can run this Python, else
    (a Python under root's private home) as root without the capabilities that override permissions.
    A non-root tester is bound by the read-only modes already."""
    if os.geteuid() != 0:
        return argv
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if subprocess.run([*nobody, argv[0], "-c", "import precision_tool"], capture_output=True,
                      cwd="/").returncode == 0:
        return [*nobody, *argv]
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", *argv]


def test_every_command_on_a_read_only_workspace_without_home_has_no_traceback(demo_workspace: Path) -> None:
    copy = _readonly_copy(demo_workspace)
    try:
        dump = next(p for p in Workspace(copy).newest_dump_dir(0).rglob("*") if "bn2_FusedBatchNormV3" in p.name)
        golden = next((copy / "tf" / "dump").glob("bn2_FusedBatchNormV3.0.*.npy"))
        home = str(copy.parent / "home")  # does not exist and cannot be made
        env = _env(HOME=home)
        argv = _as_nobody([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(copy)])
        child = pexpect.spawn(argv[0], argv[1:], dimensions=(50, 100), env=env, encoding="utf-8", timeout=300,
                              cwd="/")
        child.expect_exact("PrecisionTool > ")
        reads = ["ls", "ls dump", "ni bn2/FusedBatchNormV3", f"pt {dump.name}", f"pt {golden}",
                 f"cp {dump}:output:0 {golden}", "help vc", "vcs"]
        writes = ["ni -s 2 bn2/FusedBatchNormV3", f"pt -c {golden}", f"dc {dump}", "vc", "ac -c", "tf_dump --force"]
        seen = {}
        for line in reads + writes:
            child.sendline(line)
            child.expect_exact("PrecisionTool > ")
            seen[line] = ANSI.sub("", child.before)
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        for folder, _, _ in os.walk(copy.parent):
            os.chmod(folder, 0o755)
        shutil.rmtree(copy.parent)
    everything = "\n".join(seen.values())
    for bad in ("Traceback", "Logging error", "unexpected error", "Exception"):
        assert bad not in everything, everything[-4000:]
    for line in reads[:-1]:
        assert "cannot write" not in seen[line], (line, seen[line])
        assert "error" not in seen[line].lower() or line.startswith("help"), (line, seen[line])
    for line in writes:
        assert "cannot write" in seen[line], (line, seen[line])
    assert "bn2/FusedBatchNormV3" in seen["ni bn2/FusedBatchNormV3"]
