"""A read-only workspace, no HOME: the shell as another user in a pty never shows a traceback.

As root the shell runs as `nobody` (setpriv) on a workspace only root may write; as a user, on a
workspace made read-only with chmod. Either way HOME=/nonexistent, so history and the log have
nowhere to go but memory and the temp folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = str(ROOT / "precision_tool" / "cli.py")
PROMPT = "PrecisionTool >"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory):
    """A demo workspace (NPU dumps, graphs, golden files) of our own, to make read-only."""
    root = tmp_path_factory.mktemp("ro") / "precision_data"
    built = subprocess.run([sys.executable, CLI, "demo", str(root), "--no-check"], capture_output=True, text=True,
                           cwd=ROOT, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    yield root
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)  # so pytest can remove it


def _spawn(command: list[str], columns: int = 80) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA", "PRECISION_TOOL_HISTORY", "PRECISION_TOOL_HOME",
                        "XDG_STATE_HOME")}
    # `ls` taller than the screen is paged: `cat` as the pager prints it all and returns, as a pipe would
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": str(columns),
                "LINES": "40", "PAGER": "cat"})
    return pexpect.spawn(command[0], command[1:], env=env, encoding="utf-8", timeout=30,
                         dimensions=(40, columns), cwd=str(ROOT))


def _type(child: pexpect.spawn, line: str) -> str:
    child.sendline(line)
    child.expect_exact("\r\r\n")
    child.expect_exact(PROMPT)
    return ANSI.sub("", child.before)


def _joined(screen: str) -> str:
    """Wrapped prose back on one line (continuation lines are indented)."""
    return " ".join(line.strip() for line in screen.splitlines())


def test_shell_on_a_read_only_workspace_without_home(demo_copy, read_only_user):
    ws = demo_copy
    child = _spawn(read_only_user([sys.executable, CLI, "--data", str(ws)], ws))
    child.expect_exact(PROMPT)
    seen = ANSI.sub("", child.before)
    assert f"workspace: {ws}" in _joined(seen)
    out = _type(child, "ls")
    seen += out
    assert "op(s)" in out  # reading works
    # The first accepted line could not be stored: one warning naming both places tried.
    assert (f"cannot write the shell history to {ws}/temp/history (Permission denied) nor "
            "/nonexistent/.local/state/precision_tool/history") in _joined(out)
    assert "this session's history stays in memory" in _joined(out)
    out = _type(child, "tf_dump --force")
    assert _joined(out).strip() == (
        f"cannot write the golden folder {ws}/tf/dump: Permission denied; write the golden files "
        "elsewhere with --out DIR, or choose another workspace with --data DIR")
    seen += out
    out = _type(child, f"demo {ws}/again")
    assert f"cannot write the demo folder {ws}/again: Permission denied" in _joined(out)
    seen += out
    out = _type(child, "vcs")
    assert "run `vc` (or `ac -c`) first" in _joined(out)
    seen += out
    # History works from memory: two lines back is `demo ...`.
    child.send("\x1b[A\x1b[A")
    child.expect_exact(f"demo {ws}/again")
    child.sendcontrol("c")
    seen += _type(child, "help vc")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    seen += ANSI.sub("", child.before)
    child.close()
    assert child.exitstatus == 0
    assert seen.count("cannot write the shell history") == 1
    assert "Traceback" not in seen and "Logging error" not in seen and "Unhandled exception" not in seen
